"""Shape and data-movement ops against independent numpy formulas and explicit loops.

Data movement must be bit-exact for every dtype (NaN payloads, signed zeros, float8), so
values are compared through an unsigned-integer view of their bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, ops
from interpreter.registry import REGISTRY, get_op
from interpreter.testing import build, run
from interpreter.testing.sampling import RandomArgSource
from interpreter.types import TensorType

ALL_DTYPES = list(DType)
SHAPE_OPS = ["broadcast_to", "reshape", "slice", "permute", "concat", "split", "gather",
             "scatter", "select", "pad", "tile", "squeeze", "unsqueeze"]


# -- helpers -------------------------------------------------------------------------------
def bits(a: Any) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fV" else a


def assert_bits(got: Any, expected: Any) -> None:
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert np.array_equal(bits(got), bits(expected)), f"\n{got!r}\n!=\n{expected!r}"


def random_bits(dtype: DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Arbitrary bit patterns of ``dtype`` (NaN payloads, -0.0, subnormals, ...)."""
    rng = np.random.default_rng(seed)
    if dtype is DType.bool:
        return rng.integers(0, 2, size=shape).astype(bool)
    nbytes = dtype.size_in_bytes
    raw = rng.integers(0, 256, size=(*shape, nbytes), dtype=np.uint8)
    return raw.view(dtype.to_numpy()).reshape(shape)


def stage_primitive(name: str, attrs: dict[str, Any]) -> Callable[..., Any]:
    def fn(*xs: Any) -> Any:
        return Graph.current.stage(get_op(name), xs, attrs)

    return fn


# -- independent references for sampled calls ----------------------------------------------
def _nested_slice(data: Any, slices: tuple[Any, ...]) -> Any:
    if not slices:
        return data
    (a, b, c), rest = slices[0], slices[1:]
    return [_nested_slice(item, rest) for item in data[a:b:c]]


def ref_slice(x: np.ndarray, slices: tuple[Any, ...]) -> np.ndarray:
    """Python list slicing on the bit patterns (independent of numpy indexing)."""
    out_shape = tuple(len(range(*slice(a, b, c).indices(d))) for (a, b, c), d
                      in zip(slices, x.shape, strict=True))
    nested = _nested_slice(bits(x).tolist(), slices)
    return np.array(nested, dtype=bits(x).dtype).reshape(out_shape).view(x.dtype)


def ref_scatter(x: np.ndarray, updates: np.ndarray, indices: np.ndarray, axis: int
                ) -> np.ndarray:
    """Explicit loop in row-major order of the update positions: later writes win."""
    out = x.copy()
    n = x.shape[axis]
    for p in np.ndindex(*indices.shape):
        q = list(p)
        q[axis] = int(indices[p]) % n
        out[tuple(q)] = updates[p]
    return out


REFERENCES: dict[str, Callable[..., Any]] = {
    "broadcast_to": lambda x, shape: np.broadcast_to(x, shape),
    "reshape": lambda x, shape: np.reshape(x, shape),
    "slice": lambda x, slices: ref_slice(x, slices),
    "permute": lambda x, perm: np.transpose(x, perm),
    "concat": lambda *xs, axis: np.concatenate(xs, axis=axis),
    "split": lambda x, sizes, axis: np.split(x, np.cumsum(sizes)[:-1], axis=axis),
    "gather": lambda x, i, axis: np.take(x, i, axis=axis),
    "scatter": ref_scatter,
    "select": lambda c, x, y: np.where(c, x, y),
    "pad": lambda x, paddings, value, mode: (
        x.copy() if not x.ndim else np.pad(x, paddings, constant_values=value)
        if mode == "constant" else np.pad(x, paddings, mode)),
    "tile": lambda x, repeats: np.tile(x, repeats),
    "squeeze": lambda x, axis: x.reshape(x.shape[:axis % x.ndim] + x.shape[axis % x.ndim + 1:]),
    "unsqueeze": lambda x, axis: x.reshape((*x.shape[:axis % (x.ndim + 1)], 1,
                                            *x.shape[axis % (x.ndim + 1):])),
}


@pytest.mark.spec("SPEC-2", "OPDT-1")
@pytest.mark.parametrize("name", SHAPE_OPS)
def test_samples_build_execute_and_match_reference(name: str) -> None:
    op = REGISTRY[name]
    assert op.sample is not None and op.tolerance.kind == "exact"
    src = RandomArgSource(seed=SHAPE_OPS.index(name))
    for _ in range(50):
        call = op.sample(src)
        g = build(stage_primitive(name, call.attrs), *call.operands)
        outs = InterpreterExecutor().execute(g, call.operands)
        declared = g.output_types
        assert len(outs) == len(declared)
        for out, t in zip(outs, declared, strict=True):
            assert out.dtype == t.dtype.to_numpy() and out.shape == t.shape, (out, t)
        expected = REFERENCES[name](*call.operands, **call.attrs)
        expected = list(expected) if isinstance(expected, list | tuple) else [expected]
        for out, exp in zip(outs, expected, strict=True):
            assert_bits(out, exp)


# -- bit-exact data movement for every dtype -----------------------------------------------
@pytest.mark.spec("OPDT-1", "permute.C1", "concat.C1", "split.C2", "tile.C1", "pad.C1")
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.value)
def test_every_dtype_moves_bits_exactly(dtype: DType) -> None:
    x = random_bits(dtype, (2, 3, 4), seed=1)
    y = random_bits(dtype, (2, 1, 4), seed=2)
    idx = np.array([[2, -1], [0, 0]], np.int64)
    assert_bits(run(lambda x: ops.permute(x, [2, 0, 1]), x), np.transpose(x, (2, 0, 1)))
    assert_bits(run(lambda x: x.T, x), np.swapaxes(x, -1, -2))
    assert_bits(run(lambda x, y: ops.concat([x, y, x], axis=1), x, y),
                np.concatenate([x, y, x], axis=1))
    for got, exp in zip(run(lambda x: ops.split(x, [1, 0, 3], axis=2), x),
                        np.split(x, [1, 1], axis=2), strict=True):
        assert_bits(got, exp)
    assert_bits(run(lambda x, i: ops.gather(x, i, 1), x, idx), np.take(x, idx, axis=1))
    assert_bits(run(lambda x: ops.tile(x, [1, 2, 0]), x), np.tile(x, (1, 2, 0)))
    assert_bits(run(lambda x: ops.tile(x, [2, 1, 1]), x), np.tile(x, (2, 1, 1)))
    assert_bits(run(lambda x: ops.reshape(x, (4, 6)), x), x.reshape(4, 6))
    assert_bits(run(lambda y: ops.broadcast_to(y, (3, 2, 5, 4)), y),
                np.broadcast_to(y, (3, 2, 5, 4)))
    assert_bits(run(lambda x: x[1, ::-2, 1:3], x), x[1, ::-2, 1:3])
    cond = np.random.default_rng(3).integers(0, 2, (3, 4)).astype(bool)
    assert_bits(run(lambda c, x, y: ops.where(c, x, y), cond, x, y), np.where(cond, x, y))
    fill = True if dtype is DType.bool else 1
    assert_bits(run(lambda x: ops.pad(x, [(0, 1), (2, 0), (1, 1)], value=fill), x),
                np.pad(x, [(0, 1), (2, 0), (1, 1)], constant_values=fill))
    upd = random_bits(dtype, (2, 2, 4), seed=4)
    sidx = np.array([[[0, 1, 2, 0], [2, 2, 1, 0]], [[1, 1, 1, 1], [-1, 0, -3, 2]]], np.int32)
    assert_bits(run(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd, sidx),
                ref_scatter(x, upd, sidx, 1))


# -- hand-written values, empty and rank-0 tensors -----------------------------------------
@pytest.mark.spec("permute.C1", "AXIS-1")
def test_permute_and_transpose_values() -> None:
    x = np.array([[[1, 2], [3, 4], [5, 6]]], np.int32)  # (1, 3, 2)
    assert_bits(run(lambda x: ops.permute(x, [2, 0, 1]), x),
                np.array([[[1, 3, 5]], [[2, 4, 6]]], np.int32))
    assert_bits(run(lambda x: ops.transpose(x, -1, 0), x),
                np.array([[[1], [3], [5]], [[2], [4], [6]]], np.int32))
    assert_bits(run(lambda s: ops.permute(s, ()), np.array(7, np.int8)), np.array(7, np.int8))
    assert_bits(run(lambda e: ops.transpose(e, 0, 1), np.zeros((0, 2), np.float32)),
                np.zeros((2, 0), np.float32))
    for perm in ([0, 1], [0, 1, 1], [0, 1, 3], (0.0, 1, 2)):
        with pytest.raises(GraphShapeError, match=r"permute\.C1"):
            build(stage_primitive("permute", {"perm": tuple(perm)}), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda x: ops.permute(x, [0, 1, 3]), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda v: v.T, np.zeros(3, np.float32))


@pytest.mark.spec("concat.C1", "concat.C2", "AXIS-1", "GRAPH-4")
def test_concat_values_and_errors() -> None:
    a = np.array([[1.0, -0.0]], np.float64)
    b = np.array([[np.inf, 2.5]], np.float64)
    assert_bits(run(lambda a, b: ops.concat([a, b], axis=-2), a, b),
                np.array([[1.0, -0.0], [np.inf, 2.5]]))
    assert_bits(run(lambda a, b: ops.concat([b, a], axis=1), a, b),
                np.array([[np.inf, 2.5, 1.0, -0.0]]))
    e = np.zeros((1, 0), np.float64)
    assert_bits(run(lambda e: ops.concat([e, e], axis=1), e), np.zeros((1, 0)))
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda a: ops.concat([a], axis=2), a)
    with pytest.raises(GraphShapeError, match=r"concat\.C2"):
        build(lambda a, c: ops.concat([a, c]), a, np.zeros(2))
    with pytest.raises(GraphTypeError, match=r"concat\.C1"):
        build(lambda a, c: ops.concat([a, c]), a, np.zeros((1, 2), np.float32))
    with pytest.raises(GraphShapeError, match=r"GRAPH-4"):
        ops.concat([])


@pytest.mark.spec("split.C1", "split.C2", "split.C3", "AXIS-1")
def test_split_sizes_and_chunks() -> None:
    x = np.arange(7, dtype=np.int16)
    got = run(lambda x: ops.split(x, 3), x)  # torch-like: 3, 3, 1
    assert [list(g) for g in got] == [[0, 1, 2], [3, 4, 5], [6]]
    got = run(lambda x: ops.split(x, 7), x)
    assert_bits(got, x)
    got = run(lambda x: ops.split(x, 10), x)
    assert_bits(got, x)
    m = np.arange(6, dtype=np.uint8).reshape(2, 3)
    got = run(lambda m: ops.split(m, [0, 2, 1], axis=-1), m)
    assert [g.tolist() for g in got] == [[[], []], [[0, 1], [3, 4]], [[2], [5]]]
    with pytest.raises(GraphShapeError, match=r"split\.C2"):
        build(lambda x: ops.split(x, [3, 3]), x)
    with pytest.raises(GraphShapeError, match=r"split\.C1"):
        build(lambda x: ops.split(x, [8, -1]), x)
    with pytest.raises(GraphShapeError, match=r"split\.C1"):
        build(lambda x: ops.split(x, []), np.zeros(0, np.int8))
    with pytest.raises(GraphShapeError, match=r"split\.C3"):
        build(lambda x: ops.split(x, -2), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda x: ops.split(x, 2, axis=1), x)


@pytest.mark.spec("gather.C1", "gather.C2", "gather.C3", "AXIS-1")
def test_gather_values_unspecified_and_errors() -> None:
    x = np.array([[10, 11, 12], [20, 21, 22]], np.int64)
    i = np.array([[2, 0], [-1, -3]], np.int32)
    assert_bits(run(lambda x, i: ops.gather(x, i, 1), x, i),
                np.array([[[12, 10], [12, 10]], [[22, 20], [22, 20]]], np.int64))
    assert_bits(run(lambda x, i: ops.gather(x, i, 0), x, np.array([1, 1, 0], np.int64)),
                np.array([[20, 21, 22], [20, 21, 22], [10, 11, 12]], np.int64))
    # out of range: the mask marks exactly the elements read through a bad index
    op = get_op("gather")
    assert op.unspecified is not None
    bad = np.array([0, 3, -4, 1], np.int64)
    mask = op.unspecified(x, bad, axis=1)
    assert mask.tolist() == [[False, True, True, False]] * 2
    out = run(lambda x, b: ops.gather(x, b, 1), x, bad)
    assert out[:, [0, 3]].tolist() == [[10, 11], [20, 21]]  # specified elements are exact
    out = run(lambda e, b: ops.gather(e, b, 1), np.zeros((2, 0), np.float32), bad)
    assert out.shape == (2, 4)  # every element unspecified, but no crash
    with pytest.raises(GraphTypeError, match=r"gather\.C1"):
        build(lambda x, f: ops.gather(x, f, 0), x, np.zeros(1, np.uint32))
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda x, i: ops.gather(x, i, -3), x, i)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda s, i: ops.gather(s, i, 0), np.array(1.0), i)


@pytest.mark.spec("scatter.C1", "scatter.C2", "scatter.C3", "scatter.C4", "scatter.C5")
def test_scatter_duplicates_last_wins_and_errors() -> None:
    x = np.zeros((2, 4), np.float32)
    upd = np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [-0.0, 7.0, 8.0, np.nan, 9.0]], np.float32)
    idx = np.array([[1, 1, -3, 0, 1], [3, 3, 3, -1, 0]], np.int64)
    # row 0: position 1 written thrice -> 5.0; row 1: position 3 written 4 times -> nan
    assert_bits(run(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd, idx),
                np.array([[4.0, 5.0, 0.0, 0.0], [9.0, 0.0, 0.0, np.nan]], np.float32))
    assert_bits(run(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd, idx),
                ref_scatter(x, upd, idx, 1))
    # axis 0, fewer updates than rows
    y = np.arange(6, dtype=np.int8).reshape(3, 2)
    assert_bits(run(lambda y, u, i: ops.scatter(y, u, i, 0), y,
                    np.array([[-1, -2]], np.int8), np.array([[2, 0]], np.int32)),
                np.array([[0, -2], [2, 3], [-1, 5]], np.int8))
    # out of range: the whole line along the axis is unspecified, other lines exact
    op = get_op("scatter")
    assert op.unspecified is not None
    bad = np.array([[0, 4], [1, 2]], np.int64)
    u2 = np.ones((2, 2), np.float32)
    assert op.unspecified(x, u2, bad, axis=1).tolist() == [[True] * 4, [False] * 4]
    out = run(lambda x, u, i: ops.scatter(x, u, i, 1), x, u2, bad)
    assert out[1].tolist() == [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(GraphTypeError, match=r"scatter\.C1"):
        build(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd.astype(np.float64), idx)
    with pytest.raises(GraphTypeError, match=r"scatter\.C2"):
        build(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd, idx.astype(np.int16))
    with pytest.raises(GraphShapeError, match=r"scatter\.C3"):
        build(lambda x, u, i: ops.scatter(x, u, i, 1), x, upd[:, :4], idx)
    with pytest.raises(GraphShapeError, match=r"scatter\.C3"):
        build(lambda x, u, i: ops.scatter(x, u, i, 0), x, upd, idx)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda x, u, i: ops.scatter(x, u, i, 2), x, upd, idx)


@pytest.mark.spec("select.C1", "select.C2", "PROMO-2", "BCAST-1")
def test_where_values_scalars_and_errors() -> None:
    c = np.array([[True, False], [False, True]])
    x = np.array([1.0, -0.0], np.float32)
    assert_bits(run(lambda c, x: ops.where(c, x, -x), c, x),
                np.array([[1.0, 0.0], [-1.0, -0.0]], np.float32))
    assert_bits(run(lambda c: ops.where(c, 1.0, 0.0), c),
                np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    assert_bits(run(lambda c: ops.where(c, 3, -2), c), np.array([[3, -2], [-2, 3]], np.int64))
    assert_bits(run(lambda c: ops.where(c, True, False), c), c)
    assert_bits(run(lambda x: ops.where(False, x, 5.0), x), np.array([5.0, 5.0], np.float32))
    i8 = np.array([1, 2], np.int8)
    assert_bits(run(lambda c, a: ops.where(c, a, 100), c, i8),
                np.array([[1, 100], [100, 2]], np.int8))
    s = np.array(True)
    assert_bits(run(lambda s, a: ops.where(s, a, a), s, np.array(2.5)), np.array(2.5))
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        build(lambda x: ops.where(x, x, x), x)
    with pytest.raises(GraphTypeError, match=r"select\.C1"):
        build(lambda x: ops.where(1, x, x), x)
    with pytest.raises(GraphTypeError, match=r"PROMO"):
        build(lambda c, a: ops.where(c, a, 0.5), c, i8)
    with pytest.raises(GraphShapeError, match=r"BCAST-1"):
        build(lambda c, a: ops.where(c, a, a), c, np.zeros(3, np.int8))


@pytest.mark.spec("pad.C1", "pad.C2")
def test_pad_values_and_errors() -> None:
    x = np.array([1, 2], np.uint64)
    big = 2**64 - 1
    assert_bits(run(lambda x: ops.pad(x, [(2, 1)], value=big), x),
                np.array([big, big, 1, 2, big], np.uint64))
    f = np.array([[1.0]], DType.bfloat16.to_numpy())
    got = run(lambda f: ops.pad(f, [1, 0, 0, 1], value=-0.0), f)
    assert bits(got).tolist() == [[0x8000, 0x8000], [0x3F80, 0x8000]]
    e4 = np.zeros((1,), DType.float8_e4m3fn.to_numpy())
    got = run(lambda e: ops.pad(e, [(0, 1)], value=float("inf")), e4)
    assert np.isnan(got[1].astype(np.float32))  # e4m3fn has no inf: NaN
    assert_bits(run(lambda b: ops.pad(b, [(1, 1)], value=True), np.zeros(0, bool)),
                np.array([True, True]))
    assert_bits(run(lambda s: ops.pad(s, [], value=5), np.array(3, np.int32)),
                np.array(3, np.int32))
    with pytest.raises(GraphShapeError, match=r"pad\.C1"):
        build(lambda x: ops.pad(x, [1, 2, 3]), x)
    with pytest.raises(GraphShapeError, match=r"pad\.C1"):
        build(lambda x: ops.pad(x, [(0, -1)]), x)
    with pytest.raises(GraphTypeError, match=r"pad\.C2"):
        build(lambda x: ops.pad(x, [(0, 1)], value=-1), x)
    with pytest.raises(GraphTypeError, match=r"pad\.C2"):
        build(lambda b: ops.pad(b, [(0, 1)], value=2), np.zeros(1, bool))
    with pytest.raises(GraphTypeError, match=r"pad\.C2"):
        build(lambda x: ops.pad(x, [(0, 1)], value="0"), x)  # type: ignore[arg-type]


@pytest.mark.spec("tile.C1")
def test_tile_values_and_errors() -> None:
    x = np.array([[1, 2], [3, 4]], np.int16)
    assert_bits(run(lambda x: ops.tile(x, [1, 2]), x),
                np.array([[1, 2, 1, 2], [3, 4, 3, 4]], np.int16))
    assert_bits(run(lambda x: ops.tile(x, [2, 1]), x),
                np.array([[1, 2], [3, 4], [1, 2], [3, 4]], np.int16))
    assert_bits(run(lambda x: ops.tile(x, [0, 5]), x), np.zeros((0, 10), np.int16))
    for reps in ([2], [1, 1, 1], [1, -1]):
        with pytest.raises(GraphShapeError, match=r"tile\.C1"):
            build(lambda x, r=reps: ops.tile(x, r), x)


@pytest.mark.spec("reshape.C1", "reshape.C3", "squeeze.C1", "AXIS-1", "AXIS-2", "SHAPE-1")
def test_reshape_family() -> None:
    x = np.arange(6, dtype=np.float16).reshape(1, 2, 3)
    assert run(lambda x: ops.squeeze(x, 0), x).shape == (2, 3)
    assert run(lambda x: ops.squeeze(x, -3), x).shape == (2, 3)
    assert run(lambda x: ops.unsqueeze(x, 3), x).shape == (1, 2, 3, 1)
    assert run(lambda x: ops.unsqueeze(x, -1), x).shape == (1, 2, 3, 1)
    assert run(lambda x: ops.unsqueeze(x, -4), x).shape == (1, 1, 2, 3)
    assert run(lambda x: ops.flatten(x), x).shape == (6,)
    assert run(lambda x: ops.flatten(x, 0, 1), x).shape == (2, 3)
    assert run(lambda s: ops.flatten(s), np.array(1.0)).shape == (1,)
    assert run(lambda e: ops.flatten(e, 1), np.zeros((2, 0, 3))).shape == (2, 0)
    assert_bits(run(lambda x: ops.reshape(x, (3, -1)), x), x.reshape(3, 2))
    with pytest.raises(GraphShapeError, match=r"reshape\.C1"):
        build(lambda x: ops.reshape(x, (4, 2)), x)
    with pytest.raises(GraphShapeError, match=r"reshape\.C1"):
        build(lambda x: ops.reshape(x, (-1, -1)), x)
    with pytest.raises(GraphShapeError, match=r"reshape\.C1"):
        build(lambda x: ops.reshape(x, (4, -1)), x)
    with pytest.raises(GraphShapeError, match=r"SHAPE-1"):
        build(lambda x: ops.reshape(x, (6, -2)), x)
    with pytest.raises(GraphShapeError, match=r"squeeze\.C1"):
        build(lambda x: ops.squeeze(x, 1), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda x: ops.squeeze(x, 3), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-2"):
        build(lambda x: ops.unsqueeze(x, 4), x)
    with pytest.raises(GraphShapeError, match=r"reshape\.C3"):
        build(lambda x: ops.flatten(x, 2, 1), x)


@pytest.mark.spec("BCAST-2", "SHAPE-1")
def test_broadcast_to_rules() -> None:
    x = np.array([[1], [2]], np.int8)
    assert_bits(run(lambda x: ops.broadcast_to(x, (1, 2, 3)), x),
                np.array([[[1, 1, 1], [2, 2, 2]]], np.int8))
    assert run(lambda x: ops.broadcast_to(x, (2, 0)), x).shape == (2, 0)
    for shape in [(2,), (3, 1), (3, 3), (1, 1)]:
        with pytest.raises(GraphShapeError, match=r"BCAST-2"):
            build(lambda x, s=shape: ops.broadcast_to(x, s), x)
    with pytest.raises(GraphShapeError, match=r"SHAPE-1"):
        build(lambda x: ops.broadcast_to(x, (2, -1)), x)


@pytest.mark.spec("DEV-1")
def test_operands_on_different_devices_are_rejected() -> None:
    from interpreter.types import DeviceRef

    cpu = TensorType(DType.float32, (2,), DeviceRef.CPU())
    gpu = TensorType(DType.float32, (2,), DeviceRef.GPU())
    with Graph("d", [cpu, gpu]) as g, pytest.raises(GraphShapeError, match=r"DEV-1"):
        ops.concat([g.inputs[0], g.inputs[1]])  # type: ignore[list-item]


# -- squeeze, unsqueeze, pad modes (issue 19) ----------------------------------------------
@pytest.mark.spec("squeeze.C1", "AXIS-1", "AXIS-2", "DT-6")
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.value)
def test_squeeze_unsqueeze_move_bits(dtype: DType) -> None:
    x = random_bits(dtype, (2, 1, 3), seed=5)
    flat = bits(x).ravel().tolist()
    for axis, shape in [(1, (2, 3)), (-2, (2, 3))]:
        got = run(lambda x, a=axis: ops.squeeze(x, a), x)
        assert got.shape == shape and bits(got).ravel().tolist() == flat
    for axis, shape in [(0, (1, 2, 1, 3)), (3, (2, 1, 3, 1)), (-1, (2, 1, 3, 1)),
                        (-4, (1, 2, 1, 3)), (2, (2, 1, 1, 3))]:
        got = run(lambda x, a=axis: ops.unsqueeze(x, a), x)
        assert got.shape == shape and bits(got).ravel().tolist() == flat
    with pytest.raises(GraphShapeError, match=r"squeeze\.C1"):
        build(lambda x: ops.squeeze(x, -1), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-1"):
        build(lambda s: ops.squeeze(s, 0), np.array(1, np.int8))
    with pytest.raises(GraphShapeError, match=r"AXIS-2"):
        build(lambda x: ops.unsqueeze(x, -5), x)
    with pytest.raises(GraphShapeError, match=r"AXIS-2"):
        build(lambda x: ops.unsqueeze(x, 1.0), x)  # type: ignore[arg-type]


def py_pad_index(j: int, n: int, mode: str) -> int:
    """The source of output position ``j - lo`` of one axis: mirror or clamp, one step at a
    time (an independent walk, not a closed formula)."""
    if mode == "edge" or n == 1:
        return 0 if j < 0 else n - 1 if j >= n else j
    while not 0 <= j < n:
        j = -j if j < 0 else 2 * (n - 1) - j
    return j


@pytest.mark.spec("pad.C3", "pad.C4", "DT-6")
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.value)
def test_pad_reflect_and_edge_copy_the_mirrored_bits(dtype: DType) -> None:
    x = random_bits(dtype, (3, 4), seed=9)
    for mode in ("reflect", "edge"):
        for paddings in [((2, 1), (0, 3)), ((0, 0), (3, 3)), ((1, 2), (1, 0)),
                         ((7, 5), (9, 4))]:  # reflect past the length: again and again
            got = run(lambda x, p=paddings, m=mode: ops.pad(x, p, m), x)
            (lo0, hi0), (lo1, hi1) = paddings
            want = np.empty((3 + lo0 + hi0, 4 + lo1 + hi1), x.dtype)
            for i, j in np.ndindex(*want.shape):
                want[i, j] = x[py_pad_index(i - lo0, 3, mode), py_pad_index(j - lo1, 4, mode)]
            assert_bits(got, want)


@pytest.mark.spec("pad.C3", "pad.C4")
def test_pad_mode_values_and_errors() -> None:
    x = np.array([1, 2, 3], np.int16)
    assert_bits(run(lambda x: ops.pad(x, [2, 2], "reflect"), x),
                np.array([3, 2, 1, 2, 3, 2, 1], np.int16))
    assert_bits(run(lambda x: ops.pad(x, [1, 3], mode="edge"), x),
                np.array([1, 1, 2, 3, 3, 3, 3], np.int16))
    assert_bits(run(lambda x: ops.pad(x, [0, 0], "reflect"), x), x)
    one = np.array([7.0], np.float32)
    assert_bits(run(lambda o: ops.pad(o, [2, 1], "edge"), one), np.full(4, 7.0, np.float32))
    assert_bits(run(lambda e: ops.pad(e, [0, 0], "edge"), np.zeros(0, np.int8)),
                np.zeros(0, np.int8))
    assert_bits(run(lambda s: ops.pad(s, [], "reflect"), np.array(5, np.uint8)),
                np.array(5, np.uint8))
    assert_bits(run(lambda x: ops.pad(x, [3, 3], "reflect"), x),  # checked on MAX 26.7
                np.array([2, 3, 2, 1, 2, 3, 2, 1, 2], np.int16))
    assert_bits(run(lambda x: ops.pad(x, [5, 0], "reflect"), x),
                np.array([2, 1, 2, 3, 2, 1, 2, 3], np.int16))
    assert_bits(run(lambda o: ops.pad(o, [1, 1], "reflect"), one), np.full(3, 7.0, np.float32))
    with pytest.raises(GraphShapeError, match=r"pad\.C4"):
        build(lambda e: ops.pad(e, [0, 1], "reflect"), np.zeros(0, np.int8))
    with pytest.raises(GraphShapeError, match=r"pad\.C4"):
        build(lambda e: ops.pad(e, [1, 0], "edge"), np.zeros(0, np.int8))
    with pytest.raises(GraphShapeError, match=r"pad\.C3"):
        build(lambda x: ops.pad(x, [1, 0], "wrap"), x)
    with pytest.raises(GraphShapeError, match=r"pad\.C3"):
        build(lambda x: ops.pad(x, [1, 0], 5), x)  # type: ignore[arg-type]
