"""Attribute checks shared by graph builders and primitive type rules.

Each check returns what is wrong (a phrase for an error message) or ``None``; the caller
raises in its own style (``OpDef.fail`` in type rules, a ``Graph*Error`` in builders), so one
definition of "a valid shape", "an axis" or "a slice triple" serves both layers. Slice
triples are SLICE-1's canonical ``(start, stop, step)`` per axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Slices", "axis_problem", "int_tuple_problem", "is_int", "slice_objects",
           "sliced_shape", "slices_problem"]

#: One ``(start, stop, step)`` triple per axis; start/stop may be None (SLICE-1).
Slices = tuple[tuple[Any, Any, int], ...]


def is_int(v: object, *, numpy_ints: bool = False) -> bool:
    """A Python int that is not a bool (with ``numpy_ints``: numpy integers too)."""
    kinds = (int, np.integer) if numpy_ints else int
    return isinstance(v, kinds) and not isinstance(v, bool | np.bool_)


def int_tuple_problem(name: str, value: object, length: int | None = None) -> str | None:
    """``value`` must be a tuple of ints >= 0 (of ``length`` if given)."""
    if (not isinstance(value, tuple) or not all(is_int(v) and v >= 0 for v in value)
            or (length is not None and len(value) != length)):
        n = "" if length is None else f"{length} "
        return f"attribute {name} must be a tuple of {n}ints >= 0, got {value!r}"
    return None


def axis_problem(axis: object, rank: int, *, numpy_ints: bool = False) -> str | None:
    """``axis`` must be an int in [-rank, rank) (negative counts from the end)."""
    if not is_int(axis, numpy_ints=numpy_ints) or not -rank <= axis < rank:  # type: ignore[operator]
        return f"axis {axis!r} is out of range for rank {rank}; expected an int in " \
               f"[{-rank}, {rank})"
    return None


def slices_problem(slices: object, rank: int) -> str | None:
    """``slices`` must be ``rank`` triples ``(int|None, int|None, nonzero int)``."""
    if not isinstance(slices, tuple) or len(slices) != rank:
        return (f"attribute slices must be a tuple of {rank} (start, stop, step) triples, "
                f"got {slices!r}")
    for s in slices:
        ok = isinstance(s, tuple) and len(s) == 3 and all(
            v is None or is_int(v) for v in s[:2]) and is_int(s[2]) and s[2] != 0
        if not ok:
            return f"bad slice triple {s!r}; expected (int|None, int|None, nonzero int)"
    return None


def slice_objects(slices: Slices) -> tuple[slice, ...]:
    """The triples as Python ``slice`` objects (for numpy indexing)."""
    return tuple(slice(a, b, c) for a, b, c in slices)


def sliced_shape(shape: tuple[int, ...], slices: Slices) -> tuple[int, ...]:
    """The shape of the region ``slices`` selects from a value of ``shape``."""
    return tuple(len(range(*slice(a, b, c).indices(d)))
                 for (a, b, c), d in zip(slices, shape, strict=True))
