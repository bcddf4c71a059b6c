"""Tensor construction, accessors, dunders, mutation, reductions, repr (REAL-12, 20..28, 36..38)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

import interpreter.experimental.functional as F
from interpreter.dtype import DType
from interpreter.errors import EagerConformanceError
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    GraphRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import RealizationState, Tensor, realization_context
from interpreter.graph import DeviceRef, Graph, TensorType
from interpreter.testing import assert_same
from tests.frontend.helpers import Counting, f32


def real(a: np.ndarray) -> Tensor:
    return Tensor.from_dlpack(a)


# -- construction and accessors -------------------------------------------------------------
@pytest.mark.spec("REAL-21")
def test_constructors() -> None:
    a = Tensor(np.array([1, 2], np.int32))
    assert a.real and a.dtype is DType.int32 and a.shape == (2,)
    b = Tensor([1, 2, 3])
    assert b.dtype is DType.float32 and b.device == DeviceRef.CPU()
    c = Tensor(2.5, dtype=DType.float64)
    assert c.dtype is DType.float64 and c.rank == 0 and c.item() == 2.5
    arr = f32(1, 2)
    d = Tensor.from_dlpack(arr)
    assert np.shares_memory(d.storage, arr) and Tensor.from_dlpack(d) is d
    e = Tensor(storage=arr)
    assert e.storage is arr
    assert_same(Tensor.zeros([2], DType.int64).to_numpy(), np.zeros(2, np.int64))
    assert_same(Tensor.ones([1, 2]).to_numpy(), np.ones((1, 2), np.float32))
    assert_same(Tensor.arange(4).to_numpy(), f32(0, 1, 2, 3))
    z = Tensor.zeros_like(a)
    assert z.dtype is DType.int32 and z.shape == (2,)
    assert_same(Tensor.full_like(a, 7).to_numpy(), np.array([7, 7], np.int32))


@pytest.mark.spec("REAL-21")
def test_constructor_errors() -> None:
    with pytest.raises(TypeError, match="Cannot supply both"):
        Tensor([1.0], storage=f32(1))
    with pytest.raises(TypeError, match="only valid when 'data'"):
        Tensor(dtype=DType.float32)
    with pytest.raises(TypeError, match="exactly one of"):
        Tensor()
    with pytest.warns(DeprecationWarning, match="Tensor.constant"):
        assert Tensor.constant(1.0).item() == 1.0


@pytest.mark.spec("REAL-20")
def test_realization_state() -> None:
    g = Graph("g")
    t1 = TensorType(DType.float32, (1,))
    v1, v2 = g.add_input(t1), g.add_input(t1)
    ctx = GraphRealizationContext(g)
    s = RealizationState((v1, v2), ctx)
    assert s.num_values == 2
    with pytest.raises(TypeError, match="sharded RealizationState"):
        _ = s.value
    with pytest.raises(TypeError, match="Cannot set single value"):
        s.value = v1
    assert RealizationState((v1,), ctx) == RealizationState((v1,), ctx)
    assert RealizationState((v1,), ctx) != RealizationState((v2,), ctx)


@pytest.mark.spec("REAL-23", "REAL-37")
def test_accessors_never_realize() -> None:
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        y = real(np.ones((2, 3), np.float64)) + 1
        assert (y.shape, y.dtype, y.rank, y.device) == ((2, 3), DType.float64, 2,
                                                        DeviceRef.CPU())
        assert y.type == TensorType(DType.float64, (2, 3))
        assert repr(y).startswith("Tensor(<unrealized>, shape=[2, 3], dtype=DType.float64")
        assert not y.real
        with pytest.raises(TypeError, match="unrealized"):
            _ = y.storage
        with pytest.raises(TypeError, match="unrealized"):
            _ = y.buffers
    with pytest.raises(TypeError, match="symbolic value for real"):
        _ = y._graph_value


@pytest.mark.spec("REAL-12")
def test_item_bool_and_numpy() -> None:
    assert Tensor(np.array([3], np.int64)).item() == 3
    assert isinstance(Tensor(np.array(True)).item(), bool)
    assert bool(Tensor(np.array([0.0], np.float32))) is False
    with pytest.raises(ValueError, match="2 elements"):
        Tensor([1.0, 2.0]).item()
    t = Tensor(f32(1, 2))
    view = np.asarray(t)
    assert not view.flags.writeable
    copy = t.to_numpy()
    copy[0] = 9
    assert t.to_numpy()[0] == 1.0


# -- dunders ---------------------------------------------------------------------------------
@pytest.mark.spec("REAL-24")
def test_ieee_comparisons_with_nan() -> None:
    x = real(f32(math.nan, 1.0, 2.0))
    y = real(f32(1.0, math.nan, 2.0))
    assert (x < y).to_numpy().tolist() == [False, False, False]
    assert (x <= y).to_numpy().tolist() == [False, False, True]
    assert (x > y).to_numpy().tolist() == [False, False, False]
    assert (x >= y).to_numpy().tolist() == [False, False, True]
    assert (x == y).to_numpy().tolist() == [False, False, True]
    assert (x != y).to_numpy().tolist() == [True, True, False]


_DUNDERS: list[tuple[str, Any, Any]] = [  # (name, the operator, the F function it is)
    ("+", lambda x, y: x + y, F.add), ("r+", lambda x, y: 2.5 + x, lambda x, y: F.add(2.5, x)),
    ("-", lambda x, y: x - y, F.sub), ("r-", lambda x, y: 1 - x, lambda x, y: F.sub(1, x)),
    ("*", lambda x, y: x * 3.0, lambda x, y: F.mul(x, 3.0)), ("/", lambda x, y: x / y, F.div),
    ("//", lambda x, y: x // y, F.floor_div), ("%", lambda x, y: x % y, F.mod),
    ("**", lambda x, y: x ** y, F.pow), ("==", lambda x, y: x == y, F.equal),
    ("!=", lambda x, y: x != y, F.not_equal), (">", lambda x, y: x > y, F.greater),
    (">=", lambda x, y: x >= y, F.greater_equal), ("<", lambda x, y: x < y, F.less),
    ("<=", lambda x, y: x <= y, F.less_equal), ("neg", lambda x, y: -x, lambda x, y: F.negate(x)),
    ("abs", lambda x, y: abs(x), lambda x, y: F.abs(x)),
    ("&", lambda x, y: (x > 0) & (y > 0), lambda x, y: F.logical_and(x > 0, y > 0)),
    ("|", lambda x, y: (x > 0) | (y > 0), lambda x, y: F.logical_or(x > 0, y > 0)),
    ("^", lambda x, y: (x > 0) ^ (y > 0), lambda x, y: F.logical_xor(x > 0, y > 0)),
    ("~", lambda x, y: ~(x > 0), lambda x, y: F.logical_not(x > 0)),
]


@pytest.mark.spec("REAL-24")
@pytest.mark.parametrize(("name", "dunder", "function"), _DUNDERS, ids=[d[0] for d in _DUNDERS])
def test_each_dunder_stages_what_its_f_function_stages(name: str, dunder: Any,
                                                       function: Any) -> None:
    """The operators stage their registry op directly (not through ``F``/``ops``): the graph
    is the one the ``F`` function builds, node for node, weak scalars included."""
    def staged(fn: Any) -> str:
        ctx = LazyRealizationContext()
        x, y = real(f32(1.0, -2.0)), real(f32(3.0, 0.5))
        with ctx, realization_context(ctx):
            out = fn(x, y)
        ctx.graph.output(out.state.value)  # type: ignore[union-attr]
        return ctx.graph.to_text()

    assert staged(dunder) == staged(function)


@pytest.mark.spec("REAL-24")
def test_arithmetic_and_logical_dunders() -> None:
    a, b = real(np.array([7, -7], np.int64)), real(np.array([2, 2], np.int64))
    assert (a + b).to_numpy().tolist() == [9, -5]
    assert (10 - a).to_numpy().tolist() == [3, 17]
    assert (a * 3).to_numpy().tolist() == [21, -21]
    assert (a // b).to_numpy().tolist() == [3, -4]  # floor semantics
    assert (a % b).to_numpy().tolist() == [1, 1]
    q, r = divmod(a, b)
    assert q.to_numpy().tolist() == [3, -4] and r.to_numpy().tolist() == [1, 1]
    assert (b ** 3).to_numpy().tolist() == [8, 8]
    assert (-a).to_numpy().tolist() == [-7, 7] and abs(a).to_numpy().tolist() == [7, 7]
    p, q2 = real(np.array([True, False])), real(np.array([True, True]))
    assert (p & q2).to_numpy().tolist() == [True, False]
    assert (p | q2).to_numpy().tolist() == [True, True]
    assert (p ^ q2).to_numpy().tolist() == [False, True]
    assert (~p).to_numpy().tolist() == [False, True]
    m = real(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert (m @ m).to_numpy().tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert m.T.to_numpy().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert m[1].to_numpy().tolist() == [3.0, 4.0]
    assert m[:, 0].to_numpy().tolist() == [1.0, 3.0]
    assert m.clip(min=1.5, max=3.5).to_numpy().tolist() == [[1.5, 2.0], [3.0, 3.5]]


@pytest.mark.spec("REAL-46")
def test_cast_and_to() -> None:
    x = real(f32(1.5, 2.5))
    assert x.cast(DType.float32) is x
    assert_same(x.cast(DType.float64).to_numpy(), np.array([1.5, 2.5]))
    assert x.to(DeviceRef.CPU()) is x
    y = x.to(DeviceRef.CPU(1))
    assert y.device == DeviceRef.CPU(1) and y.real
    assert not np.shares_memory(y.storage, x.storage)
    with pytest.raises(TypeError):
        x.to("gpu")
    ctx = EagerRealizationContext()
    with ctx, realization_context(ctx):
        z = x + 0
        assert z.cast(DType.float32) is not z  # unrealized: stages a cast
    assert z.real


# -- mutation ------------------------------------------------------------------------------------
@pytest.mark.spec("REAL-25", "REAL-26")
def test_setitem_mutates_in_place_and_is_real_afterwards() -> None:
    arr = f32(0, 0, 0, 0)
    t = Tensor(storage=arr)
    t[1:3] = real(f32(5, 6))
    assert t.real and t.storage is arr
    assert_same(arr, f32(0, 5, 6, 0))
    t[0] = real(np.array(9.0, np.float32))
    assert_same(arr, f32(9, 5, 6, 0))
    with pytest.raises(TypeError, match="requires a Tensor value"):
        t[0] = 1.0


@pytest.mark.spec("REAL-25", "REAL-26")
def test_setitem_inside_a_context_unrealizes_until_exit() -> None:
    arr = np.zeros((2, 2), np.float32)
    t = real(arr)
    ex = Counting()
    ctx = EagerRealizationContext(ex)
    with ctx, realization_context(ctx):
        t[0] = real(f32(1, 2))
        t[1, :] = real(np.array(7.0, np.float32))  # broadcast to the region
        assert not t.real
        s = t + 1  # reads after the stores
    assert t.real and t.storage is arr and ex.calls == 1
    assert_same(arr, np.array([[1, 2], [7, 7]], np.float32))
    assert_same(s.to_numpy(), np.array([[2, 3], [8, 8]], np.float32))


@pytest.mark.spec("REAL-25")
def test_buffer_store_with_unused_result_still_mutates() -> None:
    arr = f32(1, 2)
    a = Tensor(storage=arr)
    F.buffer_store(a, real(f32(8, 9)))
    assert a.real and a.storage is arr
    assert_same(arr, f32(8, 9))
    F.buffer_store_slice(a, real(f32(3)), (slice(1, 2),))
    assert_same(arr, f32(8, 3))


@pytest.mark.spec("REAL-27")
def test_mutating_an_unrealized_tensor_copies_it_into_a_buffer() -> None:
    ctx = EagerRealizationContext()
    x = real(f32(1, 2))
    with ctx, realization_context(ctx):
        y = x + 0
        y[0] = real(f32(5))
        z = y * 2
    assert_same(y.to_numpy(), f32(5, 2))
    assert_same(z.to_numpy(), f32(10, 4))
    assert_same(x.to_numpy(), f32(1, 2))


@pytest.mark.spec("REAL-27")
def test_mutating_a_graph_tensor_argument_raises() -> None:
    g = Graph("g", [TensorType(DType.float32, (2,))])
    ctx = GraphRealizationContext(g)
    with ctx, realization_context(ctx):
        t = Tensor.from_graph_value(g.inputs[0])
        with pytest.raises(TypeError, match="staged as a tensor"):
            t[0] = real(f32(1))


@pytest.mark.spec("REAL-16")
def test_graph_context_refuses_to_mutate_a_realized_tensor() -> None:
    with Graph("g"):
        t = real(f32(1, 2))
        with pytest.raises(TypeError, match="cannot be mutated inside a graph context"):
            t[0] = real(f32(1))


# -- reductions --------------------------------------------------------------------------------
@pytest.mark.spec("REAL-28")
def test_reductions_keep_the_axis_and_axis_none_gives_shape_1() -> None:
    m = real(np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], np.float32))
    assert m.sum().shape == (2, 1) and m.sum().to_numpy().tolist() == [[9.0], [12.0]]
    assert m.sum(axis=0).to_numpy().tolist() == [[5.0, 7.0, 9.0]]
    assert m.sum(axis=None).to_numpy().tolist() == [21.0]
    assert m.max(axis=None).to_numpy().tolist() == [6.0]
    assert m.min().to_numpy().tolist() == [[1.0], [2.0]]
    assert m.mean(axis=None).to_numpy().tolist() == [3.5]
    assert m.prod(axis=0).to_numpy().tolist() == [[4.0, 10.0, 18.0]]
    am = m.argmax()
    assert am.dtype is DType.int64 and am.to_numpy().tolist() == [[1], [2]]
    assert m.argmin(axis=None).to_numpy().tolist() == [0]


@pytest.mark.spec("REAL-28")
def test_split_with_int_is_torch_like() -> None:
    parts = F.split(real(np.arange(5, dtype=np.float32)), 2)
    assert [p.to_numpy().tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0], [4.0]]


# -- repr -----------------------------------------------------------------------------------------
def strip_device(text: str) -> str:
    return re.sub(r", device=Device\(type=cpu,id=0\)\)$", ")", text)


REPRS = [
    (np.array(42.5, np.float32), "Tensor(42.5, dtype=DType.float32)"),
    (f32(1, 2, 3), "Tensor([1 2 3], dtype=DType.float32)"),
    (np.array([[1, 2], [3, 4]], np.float32), "Tensor([1 2\n 3 4], dtype=DType.float32)"),
    (np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], np.int32),
     "Tensor([1 2 | 5 6\n 3 4 | 7 8], dtype=DType.int32)"),
    (np.array([[True, False], [False, True]]),
     "Tensor([ True False\n False  True], dtype=DType.bool)"),
    (np.zeros(0, np.float32), "Tensor([], dtype=DType.float32)"),
    (f32(1.2345, 2.5, 100), "Tensor([1.235   2.5   100], dtype=DType.float32)"),
    (np.array([[-1, 2], [3, -4]], np.int32), "Tensor([-1  2\n  3 -4], dtype=DType.int32)"),
    (f32(math.nan, math.inf, -math.inf), "Tensor([ nan  inf -inf], dtype=DType.float32)"),
]


@pytest.mark.spec("REAL-36")
@pytest.mark.parametrize(("array", "expected"), REPRS)
def test_realized_repr(array: np.ndarray, expected: str) -> None:
    assert strip_device(repr(real(array))) == expected


@pytest.mark.spec("REAL-36")
def test_repr_device_and_python_data() -> None:
    t = Tensor([1, -2, 3, -4, 5])
    assert repr(t) == ("Tensor([ 1 -2  3 -4  5], dtype=DType.float32, "
                       "device=Device(type=cpu,id=0))")


@pytest.mark.spec("REAL-36")
def test_repr_of_four_dims_stacks_vertically() -> None:
    t = real(np.arange(16, dtype=np.int32).reshape(2, 2, 2, 2))
    assert strip_device(repr(t)) == ("Tensor([ 0  1 |  4  5\n  2  3 |  6  7\n\n"
                                     "  8  9 | 12 13\n 10 11 | 14 15], dtype=DType.int32)")


@pytest.mark.spec("REAL-38")
def test_repr_summarizes_above_1000_elements() -> None:
    t = real(np.arange(2000, dtype=np.int32))
    assert strip_device(repr(t)) == ("Tensor([   0    1    2  ... 1997 1998 1999], "
                                     "dtype=DType.int32)")
    small = real(np.arange(1000, dtype=np.int32))
    assert "..." not in repr(small)


@pytest.mark.spec("REAL-12")
def test_failures_are_project_errors() -> None:
    with pytest.raises(EagerConformanceError):
        _ = real(f32(1)) + real(np.array([1], np.int32))
