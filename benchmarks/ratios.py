"""The issue-9 speed table from one process: each figure next to its numpy baseline.

Run: ``python -m benchmarks.ratios [repeats]``. Every row times the front end or the
interpreter and the same work in plain numpy in the process's CPU time, ``repeats`` short
runs each, every run of the figure right before one of its baseline, and prints the median
times and the median of the per-run ratios with the target.
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.bench_frontend import (
    N_STAGED,
    chain10,
    numpy_chain10,
    numpy_many,
    stage_many,
    stage_many_deep,
    staging_floor,
)
from benchmarks.bench_interpreter import chain_graph, numpy_chain
from interpreter.executor import InterpreterExecutor
from interpreter.experimental.tensor import Tensor
from interpreter.selection import default_executor


def _timer(fn: Callable[[], Any], seconds: float) -> tuple[timeit.Timer, int]:
    timer = timeit.Timer(fn, timer=time.process_time)
    return timer, max(1, int(seconds / max(timer.timeit(1), 1e-9)))


def warm_up(fn: Callable[[], Any]) -> None:
    """Call ``fn`` until the default executor has compiled what it runs (a JIT compiles in
    the background, and that thread's CPU time would count against the figures)."""
    fn()
    wait = getattr(default_executor(), "wait_compiled", None)
    if wait is not None:
        wait()
    fn()


def paired(fn: Callable[[], Any], base: Callable[[], Any], repeats: int,
           seconds: float = 0.02) -> tuple[float, float, float]:
    """Median time of one call of ``fn`` and of ``base`` in the steady state (``warm_up``),
    in seconds, and the median of their per-repeat ratios: each repeat times a loop of
    ~``seconds`` of ``fn`` right before one of ``base``, so a pair sees the same load even
    on a machine whose speed drifts (a shared VM's does, by 2x within a minute)."""
    warm_up(fn)
    (tf, nf), (tb, nb) = _timer(fn, seconds), _timer(base, seconds)
    fs, bs = [], []
    for _ in range(repeats):
        fs.append(tf.timeit(nf) / nf)
        bs.append(tb.timeit(nb) / nb)
    return (statistics.median(fs), statistics.median(bs),
            statistics.median(f / b for f, b in zip(fs, bs, strict=True)))


def rows(repeats: int) -> list[tuple[str, float, float, float, float]]:
    """(name, time, numpy time, ratio, target ratio) per row; times in seconds."""
    small = Tensor.from_dlpack(np.arange(4, dtype=np.float32))
    square = Tensor.from_dlpack(np.random.default_rng(0).random((64, 64), np.float32))
    xs, xq = small.to_numpy(), square.to_numpy()
    graph, ex, data = chain_graph(), InterpreterExecutor(), np.arange(16, dtype=np.float32)
    a = paired(lambda: small + small, lambda: xs + xs, repeats)
    b = paired(lambda: chain10(square), lambda: numpy_chain10(xq), repeats)
    c = paired(lambda: stage_many(small), lambda: numpy_many(xs), repeats)
    d = paired(lambda: stage_many_deep(small), lambda: numpy_many(xs), repeats)
    f = paired(lambda: staging_floor(small), lambda: numpy_many(xs), repeats)
    i = paired(lambda: ex.execute(graph, [data]), lambda: numpy_chain(data), repeats)
    return [
        ("(a) eager x + x [4]", *a, 25.0),
        ("(b) eager 10-op chain [64,64]", *b, 8.0),
        (f"(c) lazy staging, per op (/{N_STAGED})", c[0] / N_STAGED, c[1] / N_STAGED, c[2],
         5.0),
        ("    the same at line 2000 of its function", d[0] / N_STAGED, d[1] / N_STAGED,
         d[2], 5.0),
        ("    floor: the objects one staged op makes", f[0] / N_STAGED, f[1] / N_STAGED,
         f[2], 5.0),
        ("interpreter 1000-node chain", *i, 1.5),
    ]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 21
    print(f"{'row':40} {'time':>10} {'numpy':>10} {'ratio':>7} {'target':>7}")
    for name, t, base, ratio, target in rows(repeats):
        print(f"{name:40} {t * 1e6:8.2f}us {base * 1e6:8.2f}us {ratio:6.1f}x "
              f"{target:6.1f}x")


if __name__ == "__main__":
    main()
