"""JIT executor latency: first call against the interpreter, steady state against the plan.

Run: ``pytest benchmarks/bench_jit.py --benchmark-only -p no:xdist``. Targets (issue 10):
the JIT's first call of a new structure costs what the interpreter's does (it never waits
for the compile), and its steady state costs what running the compiled plan does.
Group ``jit-first-call``: every round is a structure never seen (a fresh constant); the
previous round's background compile is finished (untimed) before the next round.
Group ``jit-steady``: one structure, compiled before measuring: the plan's ``run`` alone,
``CompilingExecutor.execute`` (plan lookup by structural hash + run) and the JIT's
``execute`` (the same lookup + run). The chain has 65536 elements, so its plan runs the
native tier (COMP-14); the JIT's background compile includes the C compile.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, TensorType, ops
from reference_executors.compiling import CompilingExecutor
from reference_executors.jit import JitExecutor

N = 1 << 16
_fresh = itertools.count(1)


def chain(salt: float = 0.5) -> Graph:
    """16 elementwise ops on float32[N]; ``salt`` makes the structure new."""
    with Graph("chain", [TensorType(DType.float32, (N,)), TensorType(DType.float32, (N,))]) as g:
        x, y = g.inputs
        a = x + y
        b = a * x
        c = ops.maximum(b, y)
        d = ops.minimum(c, a)
        e = d - ops.constant(np.float32(salt))
        f = ops.where(ops.greater(e, x), e, y)
        h = ops.cast(f, DType.float64)
        k = ops.cast(h * 2.0, DType.float32)
        m = ops.exp(ops.minimum(k, y))
        g.output(m + a * b)
    return g


@pytest.fixture(scope="module")
def data() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(N).astype(np.float32) for _ in range(2)]


def _first_call(executor: Any, data: list[np.ndarray]) -> Any:
    """A pedantic ``setup``: a never-seen structure each round, no compile backlog."""
    def setup() -> tuple[tuple[Graph, list[np.ndarray]], dict[str, Any]]:
        if isinstance(executor, JitExecutor):
            executor.wait_compiled()
        return (chain(0.5 + next(_fresh) * 1e-3), data), {}

    return setup


@pytest.mark.benchmark(group="jit-first-call")
def test_first_call_interpreter(benchmark: Any, data: list[np.ndarray]) -> None:
    ex = InterpreterExecutor(max_ops=1024)
    out = benchmark.pedantic(ex.execute, setup=_first_call(ex, data), rounds=30)
    assert out[0].shape == (N,)


@pytest.mark.benchmark(group="jit-first-call")
def test_first_call_jit(benchmark: Any, data: list[np.ndarray]) -> None:
    ex = JitExecutor(cache_size=4)
    out = benchmark.pedantic(ex.execute, setup=_first_call(ex, data), rounds=30)
    assert out[0].shape == (N,)
    assert ex.submitted >= 1


@pytest.mark.benchmark(group="jit-steady")
def test_steady_compiled_plan(benchmark: Any, data: list[np.ndarray]) -> None:
    plan = CompilingExecutor().compile(chain())
    out = benchmark(plan.run, data)
    assert_close(out[0], InterpreterExecutor().execute(chain(), data)[0])


@pytest.mark.benchmark(group="jit-steady")
def test_steady_compiling_executor(benchmark: Any, data: list[np.ndarray]) -> None:
    """The compiled executor's steady state: ``execute`` (cache lookup by structural hash,
    then the plan), the like-for-like baseline of the JIT's steady state."""
    ex, g = CompilingExecutor(), chain()
    ex.execute(g, data)
    out = benchmark(ex.execute, g, data)
    assert_close(out[0], InterpreterExecutor().execute(chain(), data)[0])
    assert ex.compiles == 1


@pytest.mark.benchmark(group="jit-steady")
def test_steady_jit(benchmark: Any, data: list[np.ndarray]) -> None:
    ex = JitExecutor()
    ex.execute(chain(), data)
    ex.wait_compiled()
    assert ex.state(chain()) == "compiled"
    out = benchmark(ex.execute, chain(), data)
    assert_close(out[0], InterpreterExecutor().execute(chain(), data)[0])
    assert ex.submitted == 1


def assert_close(got: np.ndarray, expected: np.ndarray) -> None:
    np.testing.assert_allclose(got, expected, rtol=1e-6)
