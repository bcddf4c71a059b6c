"""Front-end overhead: eager realization end to end and lazy staging cost, as ratios to numpy.

Run: ``pytest benchmarks/bench_frontend.py --benchmark-enable --benchmark-only -p no:xdist``.
Absolute times differ between machines, so each figure has a numpy baseline measured in the
same run (group ``a``, ``b``, ``c``); the targets are ratios of medians:
(a) ``x + x`` realized eagerly outside any context <= 25x numpy's ``x + x`` on the same [4]
array; (b) the 10-op chain with 6 Python scalars on [64, 64] float32 in one eager context
<= 8x the same chain in numpy; (c) staging one op in a lazy context <= 5x numpy's [4] add
(the staged loop of N_STAGED ops against N_STAGED numpy adds).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from interpreter.experimental.context import RealizationState
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.graph.core import Node, TensorValue, user_location
from interpreter.registry import get_op

N_STAGED = 1000


@pytest.fixture(scope="module")
def small() -> Tensor:
    return Tensor.from_dlpack(np.arange(4, dtype=np.float32))


@pytest.fixture(scope="module")
def square() -> Tensor:
    return Tensor.from_dlpack(np.random.default_rng(0).random((64, 64), np.float32))


@pytest.mark.benchmark(group="a: eager x + x [4]")
def test_a_numpy_add(benchmark, small: Tensor) -> None:  # type: ignore[no-untyped-def]
    x = small.to_numpy()
    y = benchmark(lambda: x + x)
    assert np.array_equal(y, np.arange(4, dtype=np.float32) * 2)


@pytest.mark.benchmark(group="a: eager x + x [4]")
def test_a_eager_add_outside_context(benchmark, small: Tensor) -> None:  # type: ignore[no-untyped-def]
    y = benchmark(lambda: small + small)
    assert y.real and np.array_equal(y.to_numpy(), np.arange(4, dtype=np.float32) * 2)


def chain10(x: Tensor) -> Tensor:
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        y = x + 1.0
        y = y * 2.0
        y = y - x
        y = y / 3.0
        y = y * y
        y = y + x
        y = y - 0.5
        y = y * x
        y = y + 2.0
        y = y / 4.0
    return y


def numpy_chain10(x: np.ndarray) -> np.ndarray:
    y = x + 1.0
    y = y * 2.0
    y = y - x
    y = y / 3.0
    y = y * y
    y = y + x
    y = y - 0.5
    y = y * x
    y = y + 2.0
    return y / 4.0


@pytest.mark.benchmark(group="b: 10-op chain [64, 64]")
def test_b_numpy_chain(benchmark, square: Tensor) -> None:  # type: ignore[no-untyped-def]
    y = benchmark(numpy_chain10, square.to_numpy())
    assert y.dtype == np.float32 and y.shape == (64, 64)


@pytest.mark.benchmark(group="b: 10-op chain [64, 64]")
def test_b_chain_of_10_ops_64x64(benchmark, square: Tensor) -> None:  # type: ignore[no-untyped-def]
    y = benchmark(chain10, square)
    x = square.to_numpy()
    one, two, three = np.float32(1), np.float32(2), np.float32(3)
    e = (x + one) * two
    e = (e - x) / three
    e = e * e + x
    e = (e - np.float32(0.5)) * x
    e = (e + two) / np.float32(4)
    assert y.real and np.allclose(y.to_numpy(), e, rtol=1e-6)


def stage_many(x: Tensor) -> Tensor:
    ctx = LazyRealizationContext()
    with ctx, realization_context(ctx):
        y = x
        for _ in range(N_STAGED):
            y = y + x
    return y


#: ``stage_many`` with its loop at line ~2000 of its function (a long notebook cell is one
#: code object): staging must not pay for finding the line (GRAPH-12). The filler assigns
#: one name (2000 distinct locals would make every call from the frame slow on CPython 3.11,
#: whatever it calls: the frame outgrows the interpreter's data stack chunk).
_DEEP_FILLER = 2000
_deep_source = ("def stage_many_deep(x):\n"
                + "".join(f"    _ = {i}\n" for i in range(_DEEP_FILLER))  # one local
                + "    ctx = LazyRealizationContext()\n"
                  "    with ctx, realization_context(ctx):\n"
                  "        y = x\n"
                  "        for _ in range(N_STAGED):\n"
                  "            y = y + x\n"
                  "    return y\n")
_deep_namespace: dict[str, Any] = {"LazyRealizationContext": LazyRealizationContext,
                                   "realization_context": realization_context,
                                   "N_STAGED": N_STAGED}
exec(compile(_deep_source, "<stage_many_deep>", "exec"), _deep_namespace)
stage_many_deep: Callable[[Tensor], Tensor] = _deep_namespace["stage_many_deep"]


def staging_floor(x: Tensor) -> None:
    """What staging an op cannot do without, N_STAGED times: the result value, the node
    (with its call site), the unrealized tensor with its state, the context's weakref to
    it. No type rule, no operand lookup, no layers: a lower bound for ``stage_many``."""
    ctx = LazyRealizationContext()
    g, op, ty = ctx.graph, get_op("add"), x.global_type
    v = g.add_input(ty)
    for _ in range(N_STAGED):
        r = TensorValue(g, ty)
        g.nodes.append(Node(op, (v, v), {}, (r,), user_location()))
        t = Tensor.from_state(RealizationState((r,), ctx), None, ty)
        ctx.unrealized.append(weakref.ref(t))


def numpy_many(x: np.ndarray) -> np.ndarray:
    y = x
    for _ in range(N_STAGED):
        y = x + x
    return y


@pytest.mark.benchmark(group="c: stage N_STAGED ops vs N_STAGED numpy [4] adds")
def test_c_numpy_adds(benchmark, small: Tensor) -> None:  # type: ignore[no-untyped-def]
    y = benchmark(numpy_many, small.to_numpy())
    assert y[1] == 2


@pytest.mark.benchmark(group="c: stage N_STAGED ops vs N_STAGED numpy [4] adds")
def test_c_lazy_staging_per_op(benchmark, small: Tensor) -> None:  # type: ignore[no-untyped-def]
    """Divide the reported time by N_STAGED for the per-op staging cost."""
    y = benchmark(stage_many, small)
    assert not y.real


@pytest.mark.benchmark(group="c: stage N_STAGED ops vs N_STAGED numpy [4] adds")
def test_c_lazy_staging_at_line_2000(benchmark, small: Tensor) -> None:  # type: ignore[no-untyped-def]
    """``stage_many`` at line ~2000 of its function: the same per-op cost (GRAPH-12)."""
    y = benchmark(stage_many_deep, small)
    assert not y.real
    node = y.state.values[0].graph.nodes[-1]  # type: ignore[union-attr]
    assert node.location == ("<stage_many_deep>", _DEEP_FILLER + 6)
