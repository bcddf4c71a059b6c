"""The ONNX Runtime peer adapter (peers/onnxruntime.py, peers/onnx_graph.py).

Engine-free tests (the op table, refusals, slices) run everywhere: CI does not install the
``peer-onnx`` extra. Engine tests are skipped with the reason when onnx or onnxruntime does
not import.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import BufferType, Graph, TensorType, lowered, ops
from peers import onnx_graph, onnxruntime
from peers.onnx_graph import ONNX_TYPES, OPS, UNMAPPED, refusal
from tests.peers.graphs import store_then_exp

pytestmark = pytest.mark.peer

MISSING = onnxruntime.onnxruntime_available()
needs_ort = pytest.mark.skipif(
    MISSING is not None,
    reason=f"onnx/onnxruntime (the peer-onnx extra) are not installed: {MISSING}")




# ---- engine-free: the op table --------------------------------------------------------

def test_mapped_dtypes_are_registry_dtypes_with_onnx_types() -> None:
    assert set(ONNX_TYPES) == {d.name for d in DType}
    for name, row in OPS.items():
        assert row.dtypes <= set(ONNX_TYPES), name
        assert row.onnx, name


def test_refusal_names_the_reason_and_changes_nothing() -> None:
    g = lowered(store_then_exp(DType.bfloat16))  # exp has no bfloat16 kernel in ORT
    text = g.to_text()
    why = refusal(g)
    assert why is not None and "exp on bfloat16" in why
    assert g.to_text() == text
    assert refusal(lowered(store_then_exp())) is None


def test_unmapped_op_is_refused_with_its_reason() -> None:
    with Graph("g", input_types=[TensorType(DType.float32, (3,))]) as g:
        (x,) = g.inputs
        g.output(ops.rsqrt(x))
    why = refusal(lowered(g))
    assert why is not None and "rsqrt" in why and UNMAPPED["rsqrt"] in why


@pytest.mark.parametrize(("paddings", "refused"), [(((1, 1),), False), (((3, 0),), True)])
def test_reflect_padding_longer_than_the_axis_is_refused(
        paddings: tuple[tuple[int, int], ...], refused: bool) -> None:
    with Graph("g", input_types=[TensorType(DType.float32, (3,))]) as g:
        (x,) = g.inputs
        g.output(ops.pad(x, list(paddings), mode="reflect"))
    why = refusal(lowered(g))
    assert (why is not None and "mirrors once" in why) if refused else why is None


def _one(build: Any, *types: TensorType) -> Graph:
    with Graph("g", input_types=list(types)) as g:
        g.output(build(*g.inputs))
    return g


@pytest.mark.parametrize(("graph", "reason"), [
    (lambda: _one(lambda x: ops.pad(x, []), TensorType(DType.float32, ())), "rank-0"),
    (lambda: _one(lambda x: ops.layer_norm(x, ops.constant(np.ones(0, np.float32),
                                                           DType.float32),
                                           ops.constant(np.zeros(0, np.float32),
                                                        DType.float32), 1e-5),
                  TensorType(DType.float32, (2, 0))), "empty normalized axis"),
    (lambda: _one(lambda x, i: ops.gather(x, i, axis=0), TensorType(DType.float32, (0, 2)),
                  TensorType(DType.int64, (1,))), "empty axis"),
])
def test_shapes_ort_rejects_are_refused_before_running(graph: Any, reason: str) -> None:
    why = refusal(lowered(graph()))
    assert why is not None and reason in why


def test_constructor_without_onnxruntime_says_why() -> None:
    if MISSING is None:
        pytest.skip("onnxruntime is installed: the constructor succeeds")
    from interpreter.errors import ExecutorUnavailableError
    with pytest.raises(ExecutorUnavailableError, match="peer-onnx"):
        onnxruntime.OnnxRuntimeExecutor()


def _onnx_slice(x: list[int], start: int, end: int, step: int) -> list[int]:
    """ONNX ``Slice`` on one axis, as its operator page defines it."""
    dim = len(x)
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return [x[i] for i in range(start, end, step)]


@pytest.mark.parametrize("size", [0, 1, 5])
@pytest.mark.parametrize("triple", [(None, None, 1), (None, None, -1), (-2, None, -2),
                                    (1, -1, 1), (4, 0, -1), (-9, 9, 2), (3, -9, -3)])
def test_slice_arguments_select_python_slices(size: int, triple: tuple[Any, Any, int]
                                              ) -> None:
    (start,), (end,), (step,) = onnx_graph._slice_args([triple], [size])
    x = list(range(size))
    assert _onnx_slice(x, start, end, step) == x[slice(*triple)]


# ---- engine tests -----------------------------------------------------------------------

def _graph() -> Graph:
    with Graph("g", input_types=[TensorType(DType.float32, (2, 3)),
                                 BufferType(DType.float32, (3,))]) as g:
        x, buf = g.inputs
        before = ops.buffer_load(buf)
        y = ops.exp(x) + 1.0
        ops.buffer_store(buf, y[0])
        g.output(y, x * 2.0, before, ops.buffer_load(buf))
    return g


def _inputs() -> list[np.ndarray]:
    return [np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3),
            np.full(3, 7.0, np.float32)]


@needs_ort
def test_engine_matches_reference_and_writes_the_store_back() -> None:
    ex = onnxruntime.OnnxRuntimeExecutor()
    g = _graph()
    ref_in, got_in = _inputs(), _inputs()
    ref = InterpreterExecutor().execute(g, ref_in)
    got = ex.execute(g, got_in)
    for r, o in zip(ref, got, strict=True):
        np.testing.assert_allclose(o, r, rtol=1e-6)
        assert o.dtype == r.dtype and o.shape == r.shape
    assert (got[2] == 7.0).all()  # the load before the store sees the old contents
    np.testing.assert_array_equal(got[3], got_in[1])  # the load after it, the stored ones
    np.testing.assert_allclose(got_in[1], ref_in[1], rtol=1e-6)  # written back (EXEC-6)
    assert not any(np.shares_memory(o, a) for o in got for a in got_in)


@needs_ort
def test_a_cached_structure_is_loaded_once_and_rerun() -> None:
    ex = onnxruntime.OnnxRuntimeExecutor()
    for k in range(3):
        x = np.array([1.0, -2.0, 0.5], np.float32) * (k + 1)
        buf = np.zeros(3, np.float32)
        (out,) = ex.execute(store_then_exp(), [x, buf])
        np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
        assert (buf == x).all()
    assert ex.compiles == 1
    ex.execute(_graph(), _inputs())
    assert ex.compiles == 2


@needs_ort
def test_refusal_leaves_the_buffer_untouched() -> None:
    ex = onnxruntime.OnnxRuntimeExecutor()
    buf = np.full(3, 7, np.float16)
    with Graph("g", input_types=[TensorType(DType.float16, (3,)),
                                 BufferType(DType.float16, (3,))]) as g:
        x, b = g.inputs
        ops.buffer_store(b, x)
        g.output(ops.rsqrt(x))
    with pytest.raises(UnsupportedGraphError, match="rsqrt"):
        ex.execute(g, [np.ones(3, np.float16), buf])
    assert (buf == 7).all()


@needs_ort
def test_missing_kernel_is_a_refusal_before_the_store() -> None:
    """An (op, dtype) outside the table is refused; so is one ORT fails to load."""
    ex = onnxruntime.OnnxRuntimeExecutor()
    buf = np.full(3, 7, np.float32)
    saved = OPS["exp"].dtypes
    object.__setattr__(OPS["exp"], "dtypes", saved | {"bfloat16"})
    try:
        import ml_dtypes
        bbuf = np.full(3, 7, ml_dtypes.bfloat16)
        with pytest.raises(UnsupportedGraphError, match="no CPU kernel"):
            ex.execute(store_then_exp(DType.bfloat16), [np.ones(3, ml_dtypes.bfloat16), bbuf])
        assert (bbuf == 7).all()
    finally:
        object.__setattr__(OPS["exp"], "dtypes", saved)
    ex.execute(store_then_exp(), [np.ones(3, np.float32), buf])
    assert (buf == 1).all()


@needs_ort
def test_integer_division_by_zero_does_not_raise_or_kill_the_process() -> None:
    with Graph("g", input_types=[TensorType(DType.int32, (5,)),
                                 TensorType(DType.int32, (5,))]) as g:
        a, b = g.inputs
        g.output(ops.floor_div(a, b), ops.mod(a, b))
    lo = np.iinfo(np.int32).min
    a = np.array([7, -7, lo, 5, -7], np.int32)
    b = np.array([2, 2, -1, 0, -2], np.int32)
    q, r = onnxruntime.OnnxRuntimeExecutor().execute(g, [a, b])
    # element 3 is unspecified (NUM-3); the others are floor semantics, MIN // -1 wraps
    assert q[[0, 1, 2, 4]].tolist() == [3, -4, lo, 3]
    assert r[[0, 1, 2, 4]].tolist() == [1, 1, 0, -1]


@needs_ort
@pytest.mark.parametrize("dt", [DType.bfloat16, DType.bool, DType.float16])
def test_slice_store_and_other_dtypes_cross_by_their_bits(dt: DType) -> None:
    np_dt = dt.to_numpy()
    with Graph("g", input_types=[TensorType(dt, (2,)), BufferType(dt, (5,))]) as g:
        x, buf = g.inputs
        ops.buffer_store_slice(buf, x, (slice(3, 0, -2),))
        g.output(ops.buffer_load(buf), ops.reshape(x, (2, 1)))
    x = np.array([1.5, 0.0], np_dt)
    buf = np.zeros(5, np_dt)
    want = buf.copy()
    want[3:0:-2] = x
    loaded, shaped = onnxruntime.OnnxRuntimeExecutor().execute(g, [x, buf])
    assert loaded.tobytes() == want.tobytes() == buf.tobytes()
    assert shaped.tobytes() == x.tobytes() and shaped.shape == (2, 1)


def test_float8_slice_store_is_refused() -> None:
    dt = DType.float8_e4m3fn
    with Graph("g", input_types=[TensorType(dt, (2,)), BufferType(dt, (5,))]) as g:
        x, buf = g.inputs
        ops.buffer_store_slice(buf, x, (slice(3, 0, -2),))
        g.output(ops.buffer_load(buf))
    why = refusal(lowered(g))
    assert why is not None and "buffer_store_slice on float8_e4m3fn" in why


@needs_ort
def test_out_of_range_indices_are_clamped_not_raised() -> None:
    """ORT raises for an out-of-bounds index; the guard clamps it (those elements are
    unspecified, gather.C3), in-range indices read what they index."""
    x = np.arange(4, dtype=np.float32)
    idx = np.array([9, -9, 1, -1], np.int64)
    g = _one(lambda a, i: ops.gather(a, i, axis=0), TensorType(DType.float32, (4,)),
             TensorType(DType.int64, (4,)))
    (out,) = onnxruntime.OnnxRuntimeExecutor().execute(g, [x, idx])
    assert out[2:].tolist() == [1.0, 3.0]
