"""The issue-9 speed table from one process: each figure next to its numpy baseline.

Run: ``python -m benchmarks.ratios [repeats]``. Every row times the front end or the
interpreter and the same work in plain numpy, best of ``repeats`` timeit runs each of the
process's CPU time (the least-disturbed figure on a machine shared with other jobs; a
figure's runs interleaved with its baseline's, so both see the same load), and prints the
ratio with its target.
"""

from __future__ import annotations

import math
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.bench_frontend import N_STAGED, chain10, numpy_chain10, numpy_many, stage_many
from benchmarks.bench_interpreter import chain_graph, numpy_chain
from interpreter.executor import InterpreterExecutor
from interpreter.experimental.tensor import Tensor


def _timer(fn: Callable[[], Any], seconds: float) -> tuple[timeit.Timer, int]:
    timer = timeit.Timer(fn, timer=time.process_time)
    return timer, max(1, int(seconds / max(timer.timeit(1), 1e-9)))


def best(fn: Callable[[], Any], base: Callable[[], Any], repeats: int,
         seconds: float = 0.05) -> tuple[float, float]:
    """Best time of one call of ``fn`` and of ``base``, in seconds: ``repeats`` runs of a
    loop lasting ~``seconds`` each, the two interleaved so that both see the same load."""
    (tf, nf), (tb, nb) = _timer(fn, seconds), _timer(base, seconds)
    f = b = math.inf
    for _ in range(repeats):
        f = min(f, tf.timeit(nf) / nf)
        b = min(b, tb.timeit(nb) / nb)
    return f, b


def rows(repeats: int) -> list[tuple[str, float, float, float]]:
    """(name, time, numpy time, target ratio) per row; times in seconds."""
    small = Tensor.from_dlpack(np.arange(4, dtype=np.float32))
    square = Tensor.from_dlpack(np.random.default_rng(0).random((64, 64), np.float32))
    xs, xq = small.to_numpy(), square.to_numpy()
    graph, ex, data = chain_graph(), InterpreterExecutor(), np.arange(16, dtype=np.float32)
    a = best(lambda: small + small, lambda: xs + xs, repeats)
    b = best(lambda: chain10(square), lambda: numpy_chain10(xq), repeats)
    c = best(lambda: stage_many(small), lambda: numpy_many(xs), repeats)
    i = best(lambda: ex.execute(graph, [data]), lambda: numpy_chain(data), repeats)
    return [
        ("(a) eager x + x [4]", *a, 25.0),
        ("(b) eager 10-op chain [64,64]", *b, 8.0),
        (f"(c) lazy staging, per op (/{N_STAGED})", c[0] / N_STAGED, c[1] / N_STAGED, 5.0),
        ("interpreter 1000-node chain", *i, 1.5),
    ]


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"{'row':40} {'time':>10} {'numpy':>10} {'ratio':>7} {'target':>7}")
    for name, t, base, target in rows(repeats):
        print(f"{name:40} {t * 1e6:8.2f}us {base * 1e6:8.2f}us {t / base:6.1f}x "
              f"{target:6.1f}x")


if __name__ == "__main__":
    main()
