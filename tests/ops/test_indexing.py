"""``x[index]`` (getitem), canonical slice triples and index errors (spec/indexing.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphIndexError, GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.graph.ops.indexing import canonical_triple, slice_triples
from interpreter.testing import Buf, build, run

from .test_shape import assert_bits, random_bits


def random_index(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A random numpy basic index for ``shape``: ints, slices, Ellipsis and None."""
    items: list[Any] = []
    for d in shape:
        kind = rng.integers(4)
        if kind == 0 and d:
            items.append(int(rng.integers(-d, d)))
        else:
            bounds = [None, *range(-d - 3, d + 4)]
            start = bounds[rng.integers(len(bounds))]
            stop = bounds[rng.integers(len(bounds))]
            step = [None, 1, 2, 3, -1, -2, -5][rng.integers(7)]
            items.append(slice(start, stop, step))
    if items and rng.integers(3) == 0:  # replace a run of full slices by an Ellipsis
        k = int(rng.integers(len(items)))
        items[k:] = [Ellipsis]
    for _ in range(int(rng.integers(3))):
        items.insert(int(rng.integers(len(items) + 1)), None)
    return tuple(items)


@pytest.mark.spec("INDEX-1", "INDEX-2", "INDEX-3", "SLICE-1")
def test_basic_indexing_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    for trial in range(150):
        shape = tuple(int(d) for d in rng.integers(0, 5, size=rng.integers(0, 4)))
        dtype = list(DType)[trial % len(DType)]
        x = random_bits(dtype, shape, seed=trial)
        index = random_index(rng, shape)
        assert_bits(run(lambda x, i=index: x[i], x), x[index])


def _nested(data: Any, slices: list[slice]) -> Any:
    if not slices:
        return data
    return [_nested(item, slices[1:]) for item in data[slices[0]]]


@pytest.mark.spec("INDEX-2", "SLICE-1")
def test_negative_step_slices_match_python_lists() -> None:
    data = [[10 * r + c for c in range(5)] for r in range(4)]
    x = np.array(data, np.int32)
    cases = [
        [slice(None, None, -1), slice(None, None, -2)],
        [slice(3, 0, -1), slice(-1, -6, -2)],
        [slice(-100, 100, -1), slice(4, None, -3)],
        [slice(0, 4, 3), slice(100, -100, -1)],
        [slice(2, 2, -1), slice(None)],
    ]
    for sl in cases:
        expected = np.array(_nested(data, sl), np.int32).reshape(
            tuple(len(range(*s.indices(d))) for s, d in zip(sl, x.shape, strict=True)))
        assert_bits(run(lambda x, s=tuple(sl): x[s], x), expected)


@pytest.mark.spec("SLICE-1")
def test_canonical_triples() -> None:
    shape = (6,)
    expected = [
        (slice(None), (0, 6, 1)),
        (slice(1, 100), (1, 6, 1)),
        (slice(None, None, -1), (5, None, -1)),
        (slice(0, 6, 4), (0, 5, 4)),
        (slice(None, None, -4), (5, 0, -4)),
        (slice(4, 1), (0, 0, 1)),
        (slice(-100, -50), (0, 0, 1)),
        (slice(-2, None, -2), (4, None, -2)),
    ]
    for s, triple in expected:
        assert slice_triples("t", shape, s)[0] == (triple,), s
    assert slice_triples("t", (4, 3), (-1,))[0] == ((3, 4, 1), (0, 3, 1))
    # canonical form is unique per region and selects the same elements
    rng = np.random.default_rng(1)
    for _ in range(300):
        d = int(rng.integers(0, 7))
        a, b = (int(v) for v in rng.integers(-9, 10, size=2))
        step = int(rng.choice([-3, -2, -1, 1, 2, 3]))
        start, stop, st = slice(a, b, step).indices(d)
        t = canonical_triple(d, start, stop, st)
        region = list(range(d))[a:b:step]
        assert list(range(d))[slice(*t)] == region
        if not region:
            assert t == (0, 0, 1)
        else:
            assert t[0] == region[0] and 0 <= t[0] < d


@pytest.mark.spec("INDEX-3")
def test_rank0_none_and_ellipsis() -> None:
    s = np.array(2.5, np.float32)
    assert_bits(run(lambda s: s[()], s), s)
    assert_bits(run(lambda s: s[...], s), s)
    assert_bits(run(lambda s: s[None, ..., None], s), np.array([[2.5]], np.float32))
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    assert_bits(run(lambda x: x[..., 1], x), x[:, :, 1])
    assert_bits(run(lambda x: x[1, ...], x), x[1])
    assert_bits(run(lambda x: x[None, 0, None, :, -1], x), x[None, 0, None, :, -1])
    with pytest.raises(GraphIndexError, match=r"INDEX-3"):
        build(lambda x: x[..., 0, ...], x)
    with pytest.raises(GraphIndexError, match=r"INDEX-3"):
        build(lambda x: x[0, 0, 0, 0], x)
    with pytest.raises(GraphIndexError, match=r"INDEX-3"):
        build(lambda s: s[0], s)
    with pytest.raises(GraphIndexError, match=r"INDEX-3"):
        build(lambda s: s[[0]], s)


@pytest.mark.spec("INDEX-1", "INDEX-2")
def test_index_errors_out_of_range_and_zero_step() -> None:
    x = np.zeros((3, 2), np.float32)
    indices: list[Any] = [3, -4, (0, 2), (0, -3), np.int64(5), [0, 3], [-4],
                          np.array([[0], [5]]), (slice(None), [2])]
    for index in indices:
        with pytest.raises(GraphIndexError, match=r"INDEX-1"):
            build(lambda x, i=index: x[i], x)
    assert issubclass(GraphIndexError, IndexError)
    with pytest.raises(GraphShapeError, match=r"INDEX-2"):
        build(lambda x: x[::0], x)
    assert run(lambda x: x[-3, -2:100], x).shape == (2,)


@pytest.mark.spec("INDEX-4")
def test_unsupported_index_kinds() -> None:
    x = np.zeros((3, 2), np.float32)
    bad: list[Any] = [0.5, True, np.bool_(False), "a", [True, False, True], [[0], [1]],
                      [0.0], slice(0.5, 2), (0, [1]), ([0], [1]), (None, [0]),
                      np.array([0.0, 1.0]), {0}]
    for index in bad:
        with pytest.raises(GraphTypeError, match=r"INDEX-4"):
            build(lambda x, i=index: x[i], x)
    for idx in (np.array([True, False, True]), np.array([0.0, 1.0], np.float32),
                np.array([0, 1], np.uint8)):
        with pytest.raises(GraphTypeError, match=r"INDEX-4"):
            build(lambda x, i: x[i], x, idx)


@pytest.mark.spec("INDEX-5")
def test_list_and_tensor_indices_gather() -> None:
    x = random_bits(DType.bfloat16, (4, 3), seed=5)
    assert_bits(run(lambda x: x[[0, 2]], x), x[[0, 2]])  # never x[0, 2]
    assert_bits(run(lambda x: x[[3, -1, 0, 3]], x), x[[3, -1, 0, 3]])
    assert_bits(run(lambda x: x[[]], x), np.zeros((0, 3), x.dtype))
    assert_bits(run(lambda x: x[:, [2, 0]], x), x[:, [2, 0]])
    assert_bits(run(lambda x: x[1:, [-1]], x), x[1:, [-1]])
    assert_bits(run(lambda x: x[::-1, [1]], x), x[::-1, [1]])
    assert_bits(run(lambda x: x[..., [0, 0]], x), x[..., [0, 0]])
    assert_bits(run(lambda x: x[np.array([[1], [2]])], x), x[np.array([[1], [2]])])
    for idx in (np.array([1, -4], np.int32), np.array([[3, 0]], np.int64),
                np.array(2, np.int64)):
        assert_bits(run(lambda x, i: x[i], x, idx), x[idx])
        assert_bits(run(lambda x, i: x[:, i], x, idx % 3), x[:, idx % 3])
    # the staged graph is a gather with an int64 constant, not a slice
    g = build(lambda x: x[[0, 2]], x)
    assert [n.name for n in g.nodes] == ["constant", "gather"]


@pytest.mark.spec("SLICE-1", "INDEX-2")
def test_buffer_store_slice_with_negative_steps() -> None:
    buf = np.zeros((2, 4), np.int16)
    src = np.array([[1, 2], [3, 4]], np.int16)
    run(lambda b, s: ops.buffer_store_slice(b, s, (slice(None, None, -1), slice(3, None, -2))),
        Buf(buf), src)
    assert buf.tolist() == [[0, 4, 0, 3], [0, 2, 0, 1]]
