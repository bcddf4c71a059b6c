"""numpy-style indexing normalized to per-axis (start, stop, step) triples (INDEX-1..4)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import GraphIndexError, GraphTypeError

Triple = tuple[int | None, int | None, int]


def _expand(op: str, rank: int, index: Any) -> list[Any]:
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


def slice_triples(op: str, shape: tuple[int, ...], index: Any
                  ) -> tuple[tuple[Triple, ...], tuple[int, ...]]:
    """Normalize a basic index into one triple per axis and the region's shape.

    Integer indices are bounds-checked (negative counts from the end) and keep their axis as
    size 1 in the region shape; ``None`` (new axes) is not allowed here.
    """
    triples: list[Triple] = []
    region: list[int] = []
    items = _expand(op, len(shape), index)
    axis = 0
    for item in items:
        if item is None:
            raise GraphTypeError(f"{op}: None (new axis) is not allowed here [INDEX-3]")
        dim = shape[axis]
        if isinstance(item, slice):
            step = 1 if item.step is None else item.step
            for v in (item.start, item.stop, step):
                if v is not None and not isinstance(v, int | np.integer):
                    raise GraphTypeError(f"{op}: slice bounds must be ints or None, got "
                                         f"{item!r} [INDEX-2]")
            if step == 0:
                raise GraphIndexError(f"{op}: slice step cannot be zero [INDEX-2]")
            start, stop, step = slice(item.start, item.stop, step).indices(dim)
            n = len(range(start, stop, step))
            # canonical triple: stop None when a negative step runs past the beginning
            stop_c: int | None = stop if stop >= 0 else None
            triples.append((start, stop_c, int(step)))
            region.append(n)
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            i = int(item)
            if not -dim <= i < dim:
                raise GraphIndexError(f"{op}: index {i} is out of bounds for axis {axis} with "
                                      f"size {dim} [INDEX-1]")
            i %= dim
            triples.append((i, i + 1, 1))
            region.append(1)
        else:
            raise GraphTypeError(f"{op}: unsupported index {item!r}; expected int, slice, "
                                 "Ellipsis or None [INDEX-4]")
        axis += 1
    return tuple(triples), tuple(region)


def result_shape(shape: tuple[int, ...], index: Any, region: tuple[int, ...]
                 ) -> tuple[int, ...]:
    """numpy's result shape: integer-indexed axes dropped, ``None`` adds a size-1 axis."""
    items = _expand("getitem", len(shape), index)
    out: list[int] = []
    axis = 0
    for item in items:
        if item is None:
            out.append(1)
            continue
        if isinstance(item, slice):
            out.append(region[axis])
        axis += 1
    return tuple(out)
