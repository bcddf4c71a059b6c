"""CompilingExecutor benchmarks (issue 10).

Run: ``pytest benchmarks/bench_compiling.py --benchmark-enable -p no:xdist -s``. Groups:
``chain16`` (the 16-op elementwise chain on 4M float32: interpreter, compiled steady state,
and ``np.copyto`` of the same bytes), ``compile`` (compile latency of 10-, 100-, 1000-op
graphs) and ``mlp`` (3 x matmul + bias + gelu, batch 64, width 512, vs plain numpy).
``test_ratios`` measures all in one run (best of several repeats: the machine is shared) and
prints the ratios. With benchmarks disabled (the default) everything smoke-runs on small
sizes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from interpreter.executor import InterpreterExecutor
from reference_executors.compiling import CompilingExecutor
from tests.reference_executors.graphs import chain16, chain_n, mlp, mlp_inputs

N_FULL = 4 * 1024 * 1024


def _n(benchmark: Any) -> int:
    return 4096 if benchmark.disabled else N_FULL


def _inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(n, dtype=np.float32) for _ in range(2)]


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.benchmark(group="chain16")
def test_chain16_interpreter(benchmark: Any) -> None:
    n = _n(benchmark)
    g, ins = chain16(n), _inputs(n)
    (out,) = benchmark(InterpreterExecutor().execute, g, ins)
    assert out.shape == (n,)


@pytest.mark.benchmark(group="chain16")
def test_chain16_compiled(benchmark: Any) -> None:
    n = _n(benchmark)
    g, ins, ex = chain16(n), _inputs(n), CompilingExecutor()
    assert ex.compile(g).kernel_count == 1
    (out,) = benchmark(ex.execute, g, ins)
    np.testing.assert_array_equal(out, InterpreterExecutor().execute(chain16(n), ins)[0])


@pytest.mark.benchmark(group="chain16")
def test_chain16_copyto(benchmark: Any) -> None:
    n = _n(benchmark)
    src, dst = _inputs(n)
    benchmark(np.copyto, dst, src)
    assert np.array_equal(dst, src)


@pytest.mark.benchmark(group="compile")
@pytest.mark.parametrize("n_ops", [10, 100, 1000])
def test_compile_latency(benchmark: Any, n_ops: int) -> None:
    graphs = iter([chain_n(n_ops) for _ in range(200 if not benchmark.disabled else 1)])
    plan = benchmark.pedantic(lambda: CompilingExecutor().compile(next(graphs)),
                              rounds=1 if benchmark.disabled else 20, iterations=1)
    assert plan.kernel_count == 1


def _numpy_mlp(ins: list[np.ndarray]) -> np.ndarray:
    from math import erf, sqrt
    verf = np.vectorize(erf)
    v = ins[0]
    for i in range(3):
        h = (v @ ins[1 + 2 * i] + ins[2 + 2 * i]).astype(np.float64)
        v = (0.5 * h * (1 + verf(h / sqrt(2)))).astype(np.float32)
    return v


@pytest.mark.benchmark(group="mlp")
@pytest.mark.parametrize("who", ["numpy", "interpreter", "compiled"])
def test_mlp(benchmark: Any, who: str) -> None:
    ins = mlp_inputs()
    ref = InterpreterExecutor().execute(mlp(), ins)[0]
    if who == "numpy":
        out = benchmark(_numpy_mlp, ins)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        return
    ex = InterpreterExecutor() if who == "interpreter" else CompilingExecutor()
    g = mlp()
    (out,) = benchmark(ex.execute, g, ins)
    np.testing.assert_array_equal(out, ref)


def test_ratios(benchmark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """All issue-10 ratios from one run, printed (``-s``)."""
    n = _n(benchmark)
    rep = 3 if benchmark.disabled else 7
    g, ins, interp, comp = chain16(n), _inputs(n), InterpreterExecutor(), CompilingExecutor()
    plan = comp.compile(g)
    t_interp = _best(lambda: interp.execute(g, ins), rep)
    t_comp = _best(lambda: comp.execute(g, ins), rep)
    dst = np.empty_like(ins[0])
    t_copy = _best(lambda: np.copyto(dst, ins[0]), rep * 3)
    # bytes moved: the chain reads two inputs and writes one output (12 B/element);
    # copyto reads and writes one array (8 B/element): compare bandwidths
    bw_chain = 12 * n / t_comp
    bw_copy = 8 * n / t_copy
    lines = [f"chain16 n={n}: kernels={plan.kernel_count} interpreter={t_interp * 1e3:.2f} ms "
             f"compiled={t_comp * 1e3:.2f} ms copyto={t_copy * 1e3:.2f} ms",
             f"  speedup vs interpreter: {t_interp / t_comp:.2f}x; compiled bandwidth "
             f"{bw_chain / 1e9:.2f} GB/s = {100 * bw_chain / bw_copy:.0f}% of copyto's "
             f"{bw_copy / 1e9:.2f} GB/s; compiled time = {100 * t_copy / t_comp:.0f}% of "
             "copy speed (time of one copy of the output bytes / compiled time)"]
    for k in (10, 100, 1000):
        t = min(_best(lambda k=k: CompilingExecutor().compile(chain_n(k)), 1)
                for _ in range(rep))
        lines.append(f"compile latency {k:4d} ops: {t * 1e3:.2f} ms")
    m_ins = mlp_inputs()
    mg = mlp()
    t_np = _best(lambda: _numpy_mlp(m_ins), rep)
    t_mi = _best(lambda: interp.execute(mg, m_ins), rep)
    t_mc = _best(lambda: comp.execute(mg, m_ins), rep)
    lines.append(f"mlp: numpy={t_np * 1e3:.2f} ms interpreter={t_mi * 1e3:.2f} ms "
                 f"compiled={t_mc * 1e3:.2f} ms (compiled/numpy {t_mc / t_np:.2f})")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    # timing targets (>= 4x the interpreter) are reported, not asserted: the machine is shared
    assert plan.kernel_count == 1
