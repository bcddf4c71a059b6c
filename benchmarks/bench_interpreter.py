"""Interpreter overhead per node: a 1000-node chain of adds vs the same adds in raw numpy.

Run: ``pytest benchmarks/bench_interpreter.py --benchmark-only``. The figure of merit is
(interpreter time - numpy time) / 1000 nodes; the target is <= 1 µs/node.
"""

from __future__ import annotations

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, TensorType, lower, ops

N_NODES = 1000


def chain_graph(n: int = N_NODES) -> Graph:
    with Graph("chain", [TensorType(DType.float32, (16,))]) as g:
        (x,) = g.inputs
        y = x
        for _ in range(n):
            y = ops.add(y, x)
        g.output(y)
    return lower(g)


@pytest.fixture(scope="module")
def data() -> np.ndarray:
    return np.arange(16, dtype=np.float32)


def numpy_chain(x: np.ndarray, n: int = N_NODES) -> np.ndarray:
    y = x
    for _ in range(n):
        y = np.add(y, x)
    return y


@pytest.mark.benchmark(group="interpreter-chain")
def test_numpy_chain(benchmark: pytest.FixtureRequest, data: np.ndarray) -> None:
    out = benchmark(numpy_chain, data)
    assert out[1] == N_NODES + 1


@pytest.mark.benchmark(group="interpreter-chain")
def test_interpreter_chain(benchmark: pytest.FixtureRequest, data: np.ndarray) -> None:
    g = chain_graph()
    ex = InterpreterExecutor()
    (out,) = benchmark(ex.execute, g, [data])
    np.testing.assert_array_equal(out, numpy_chain(data))
