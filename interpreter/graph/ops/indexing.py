"""Indexing: numpy-style basic indexing normalized to per-axis (start, stop, step) triples,
and the graph builders of the indexing ops (MAX ``ops`` names; ``registry/indexing.py``).

spec/indexing.md: INDEX-1 (bounds-checked ints), INDEX-2 (slices clamp as numpy), INDEX-3
(Ellipsis, None, too many indices), INDEX-4 (unsupported index kinds), SLICE-1 (the
canonical triple). The basic-indexing helpers (``expand_index``, ``canonical_triple``,
``slice_triples``, ``result_shape``) are imported by name by the shape and buffer builders;
``__all__`` lists the builders only (``ops`` re-exports them).
"""

from __future__ import annotations

from typing import Any

from ...errors import GraphIndexError, GraphShapeError, GraphTypeError
from ...validators import axis_problem, is_int
from ..core import TensorValue
from .staging import stage, stage1

Triple = tuple[int | None, int | None, int]



def expand_index(op: str, rank: int, index: Any) -> list[Any]:
    """The index as a list with Ellipsis replaced by full slices and missing trailing
    indices added, so every item but ``None`` consumes one axis (INDEX-3)."""
    items = list(index) if isinstance(index, tuple) else [index]
    n_ellipsis = sum(1 for i in items if i is Ellipsis)
    if n_ellipsis > 1:
        raise GraphIndexError(f"{op}: an index can only have a single ellipsis [INDEX-3]")
    used = sum(1 for i in items if i is not None and i is not Ellipsis)
    if used > rank:
        raise GraphIndexError(f"{op}: too many indices ({used}) for a rank-{rank} value "
                              "[INDEX-3]")
    if n_ellipsis:
        pos = items.index(Ellipsis)
        items[pos:pos + 1] = [slice(None)] * (rank - used)
    else:
        items += [slice(None)] * (rank - used)
    return items


def canonical_triple(dim: int, start: int, stop: int, step: int) -> Triple:
    """The SLICE-1 canonical form of ``slice(start, stop, step).indices(dim)``: an empty
    selection is ``(0, 0, 1)``; otherwise ``start`` is the first element taken and ``stop``
    is one step-direction past the last (``None`` when a negative step ends at index 0)."""
    n = len(range(start, stop, step))
    if n == 0:
        return (0, 0, 1)
    last = start + (n - 1) * step
    end = last + (1 if step > 0 else -1)
    return (start, end if end >= 0 else None, step)


def slice_triples(op: str, shape: tuple[int, ...], index: Any
                  ) -> tuple[tuple[Triple, ...], tuple[int, ...]]:
    """Normalize a basic index into one canonical triple per axis and the region's shape.

    Integer indices are bounds-checked (negative counts from the end) and keep their axis as
    size 1 in the region shape; ``None`` (new axes) is not allowed here.
    """
    triples: list[Triple] = []
    region: list[int] = []
    for axis, item in enumerate(expand_index(op, len(shape), index)):
        if item is None:
            raise GraphTypeError(f"{op}: None (new axis) is not allowed here [INDEX-3]")
        dim = shape[axis]
        if isinstance(item, slice):
            for v in (item.start, item.stop, item.step):
                if v is not None and not is_int(v, numpy_ints=True):
                    raise GraphTypeError(f"{op}: slice bounds must be ints or None, got "
                                         f"{item!r} [INDEX-4]")
            if item.step is not None and int(item.step) == 0:
                raise GraphShapeError(f"{op}: slice step cannot be zero [INDEX-2]")
            start, stop, step = slice(item.start, item.stop, item.step).indices(dim)
            triples.append(canonical_triple(dim, start, stop, step))
            region.append(len(range(start, stop, step)))
        elif is_int(item, numpy_ints=True):
            i = int(item)
            if not -dim <= i < dim:
                raise GraphIndexError(f"{op}: index {i} is out of bounds for axis {axis} with "
                                      f"size {dim} [INDEX-1]")
            i %= dim
            triples.append((i, i + 1, 1))
            region.append(1)
        else:
            raise GraphTypeError(f"{op}: unsupported index {item!r} of type "
                                 f"{type(item).__name__}; expected int, slice, Ellipsis, None, "
                                 "a 1-D list of ints or an integer tensor [INDEX-4]")
    return tuple(triples), tuple(region)


def result_shape(shape: tuple[int, ...], index: Any, region: tuple[int, ...]
                 ) -> tuple[int, ...]:
    """numpy's result shape: integer-indexed axes dropped, ``None`` adds a size-1 axis."""
    out: list[int] = []
    axis = 0
    for item in expand_index("getitem", len(shape), index):
        if item is None:
            out.append(1)
            continue
        if isinstance(item, slice):
            out.append(region[axis])
        axis += 1
    return tuple(out)


# -- builders of the indexing ops (spec/ops/gather_nd.md ... argsort.md) ------------------------
def _axis_attr(x: TensorValue, axis: Any) -> Any:
    """A valid axis normalized to [0, rank); an invalid one passed on for the type rule."""
    return int(axis) % x.rank if axis_problem(axis, x.rank, numpy_ints=True) is None else axis


def gather_nd(x: TensorValue, indices: TensorValue, batch_dims: int = 0) -> TensorValue:
    """Slices of ``x`` picked by the index vectors on the last axis of ``indices``, after
    ``batch_dims`` leading dims both share; out-of-range vectors read unspecified values."""
    return stage1("gather_nd", (x, indices), {"batch_dims": batch_dims})


def gather_sum(x: TensorValue, indices: TensorValue) -> TensorValue:
    """``result[i, 0, :] = sum_j x[indices[i, j], :]`` (MAX's ``mo.gather_sum``)."""
    return stage1("gather_sum", (x, indices))


def scatter_nd(x: TensorValue, updates: TensorValue, indices: TensorValue) -> TensorValue:
    """Copy of ``x`` with the slice at each index vector overwritten by its updates."""
    return stage1("scatter_nd", (x, updates, indices))


def scatter_add(x: TensorValue, updates: TensorValue, indices: TensorValue, axis: int = -1
                ) -> TensorValue:
    """``scatter`` that adds: every update at a target is summed into it."""
    return stage1("scatter_add", (x, updates, indices), {"axis": _axis_attr(x, axis)})


def scatter_max(x: TensorValue, updates: TensorValue, indices: TensorValue, axis: int = -1
                ) -> TensorValue:
    """``scatter`` keeping the largest of the target and every update at it."""
    return stage1("scatter_max", (x, updates, indices), {"axis": _axis_attr(x, axis)})


def scatter_min(x: TensorValue, updates: TensorValue, indices: TensorValue, axis: int = -1
                ) -> TensorValue:
    """``scatter`` keeping the smallest of the target and every update at it."""
    return stage1("scatter_min", (x, updates, indices), {"axis": _axis_attr(x, axis)})


def scatter_mul(x: TensorValue, updates: TensorValue, indices: TensorValue, axis: int = -1
                ) -> TensorValue:
    """``scatter`` that multiplies: the target times every update at it."""
    return stage1("scatter_mul", (x, updates, indices), {"axis": _axis_attr(x, axis)})


def scatter_nd_add(x: TensorValue, updates: TensorValue, indices: TensorValue) -> TensorValue:
    return stage1("scatter_nd_add", (x, updates, indices))


def scatter_nd_max(x: TensorValue, updates: TensorValue, indices: TensorValue) -> TensorValue:
    return stage1("scatter_nd_max", (x, updates, indices))


def scatter_nd_min(x: TensorValue, updates: TensorValue, indices: TensorValue) -> TensorValue:
    return stage1("scatter_nd_min", (x, updates, indices))


def scatter_nd_mul(x: TensorValue, updates: TensorValue, indices: TensorValue) -> TensorValue:
    return stage1("scatter_nd_mul", (x, updates, indices))


def argsort(x: TensorValue, ascending: bool = True) -> TensorValue:
    """int64 indices sorting the rank-1 ``x`` (stable; NaN the largest)."""
    (order,) = stage("argsort", (x,), {"ascending": ascending})
    return order  # type: ignore[return-value]


__all__ = [
    "argsort",
    "gather_nd",
    "gather_sum",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_mul",
]
