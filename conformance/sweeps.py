"""Deterministic special-value sweeps (CONF-98): one one-op graph per op x data dtype (and
per cast source x target, NUM-20) whose inputs hold the dtype's whole special set.

Derived from the registry alone, by the op's category and operand count:

* elementwise ops (``elementwise-*`` categories and broadcasting ops such as ``select``):
  the full cross product of every operand's special set (a bool condition: both values),
  laid out flat; attributes from one deterministic draw of the op's sampler. ``cast``: the
  cast edge values of each (source, target) pair (``cast_edge_values``).
* every other op: its sampler driven by :class:`SweepSource`, which hands out a
  ``(rows, ROW)`` shape wherever a rank-2 shape is allowed, the largest value of every
  small integer draw (so an ``axis`` is the last one and ``top_k``'s ``k`` the whole row) and, for
  every array of the data dtype, the sweep rows: a small finite row with each special value
  inserted at each position, plus (inf, -inf), (NaN, inf), all-NaN and all-equal rows
  (``sweep_rows``). Two-operand ``linalg`` ops take the rows as their left operand and a
  finite right one.

An op x dtype whose sampler draws no array of the data dtype (results made from attributes
or seeds: ``range``, ``buffer_create``, the random ops) has no sweep and is reported *not
covered* with that reason (CONF-21), never skipped silently.
"""

from __future__ import annotations

import functools

import numpy as np

from interpreter.dtype import DType
from interpreter.registry import REGISTRY, OpDef
from interpreter.registry.core import OpCall
from interpreter.testing.sampling import cast_edge_values, special_values

from .strategies import Case, RngArgSource, case_from_call

__all__ = ["ROW", "NoSweep", "SweepSource", "sweep_case", "sweep_cells", "sweep_gaps", "sweep_id",
           "sweep_rows"]

#: Length of a sweep row (the reduced axis).
ROW = 4


class NoSweep(Exception):
    """The op x dtype has no special-value sweep (the reason is the message)."""


def _base_row(dtype: DType) -> np.ndarray:
    if dtype is DType.bool:
        return np.array([True, False, True, True])
    if dtype.is_integral():
        vals = [3, 2, 5, 1] if not dtype.is_signed() else [3, -2, 5, 1]
        return np.array(vals, dtype=dtype.to_numpy())
    return np.array([1.5, -2.0, 3.0, 0.25]).astype(dtype.to_numpy())


def sweep_rows(dtype: DType, width: int = ROW) -> np.ndarray:
    """The rows of a reduction-like sweep: the finite base row with each special value of
    ``dtype`` at each position, then (inf, -inf, ...), (NaN, inf, ...), all-NaN and
    all-equal rows (those the dtype has)."""
    base = np.resize(_base_row(dtype), width)
    rows = []
    for s in special_values(dtype):
        for p in range(width):
            r = base.copy()
            r[p] = s
            rows.append(r)
    if dtype.is_float() and width >= 2:
        np_dtype = dtype.to_numpy()
        has_inf = dtype is not DType.float8_e4m3fn
        inf = np.array(np.inf if has_inf else np.nan).astype(np_dtype)
        for pair in ((inf, -inf), (np.array(np.nan).astype(np_dtype), inf)):
            r = base.copy()
            r[0], r[1] = pair
            rows.append(r)
        rows.append(np.full(width, np.nan).astype(np_dtype))
    rows.append(np.full(width, base[0]))
    return np.stack(rows)


class SweepSource(RngArgSource):
    """``ArgSource`` steering an op's own sampler to a sweep (see the module docstring)."""

    def __init__(self, dtype: DType) -> None:
        super().__init__(0, dtype, "general")
        self.sweep_dtype = dtype
        self.rows = sweep_rows(dtype)
        self.data_arrays = 0  # arrays of the data dtype handed out
        self.filled = 0

    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5, rest: int = 1) -> tuple[int, ...]:
        if min_rank <= 2 <= max_rank:
            out: tuple[int, ...] = (len(self.rows), ROW)
            self.drawn_shapes.append(out)
            return out
        return super().shape(min_rank, max_rank, min_side, max_side, rest)

    def _int(self, lo: int, hi: int) -> int:
        """The largest value of a small range (an axis: the last; ``k``: the whole row),
        a seeded draw of a wide one (slice bounds, which would be empty at their max)."""
        return hi if hi - lo <= 8 else super()._int(lo, hi)

    def _values(self, dtype: DType, shape: tuple[int, ...], kind: str) -> np.ndarray:
        if kind.startswith(("index:", "uindex:")) or dtype is not self.sweep_dtype:
            return self.arrays.values(dtype, shape, kind)
        self.data_arrays += 1
        n = int(np.prod(shape, dtype=np.int64))
        if shape and shape[-1] == ROW and n % ROW == 0:  # the rows, repeated
            flat = np.resize(self.rows, (n // ROW, ROW))
        else:  # the special set, cycled from where the last array stopped
            sv = special_values(dtype)
            flat = sv[(np.arange(n) + self.filled) % len(sv)]
            self.filled += n
        return np.ascontiguousarray(flat.reshape(shape))


def _is_elementwise(op: OpDef) -> bool:
    return op.category.startswith("elementwise") or op.broadcast


def _cross(sets: list[np.ndarray]) -> list[np.ndarray]:
    idx = np.meshgrid(*[np.arange(len(s)) for s in sets], indexing="ij")
    return [np.ascontiguousarray(s[i.ravel()]) for s, i in zip(sets, idx, strict=True)]


def _value_set(dtype: DType) -> np.ndarray:
    return np.array([False, True]) if dtype is DType.bool else special_values(dtype)


def _elementwise_call(op: OpDef, dtype: DType, target: DType | None) -> OpCall:
    assert op.sample is not None
    call = op.sample(RngArgSource(0, dtype, "general"))
    if target is not None:  # cast: the pair's edge values
        return OpCall([cast_edge_values(dtype, target)], {**call.attrs, "dtype": target})
    sets = []
    for i, a in enumerate(call.operands):
        allowed = op.operand_dtype_sets[min(i, len(op.operand_dtype_sets) - 1)]
        d = dtype if dtype in allowed else DType.from_numpy(a.dtype)
        sets.append(_value_set(d))
    return OpCall(_cross(sets), dict(call.attrs), call.buffers)


def _linalg_call(op: OpDef, dtype: DType) -> OpCall:
    rows = sweep_rows(dtype)
    rhs = np.resize(_base_row(dtype), (ROW, 2))
    return OpCall([rows] + [rhs] * (len(op.operands) - 1))


def sweep_case(op: OpDef, dtype: DType, target: DType | None = None) -> Case:
    """The sweep of ``op`` on data dtype ``dtype`` (``cast``: to ``target``); raises
    :class:`NoSweep` with the reason where the op has none."""
    if op.sample is None:
        raise NoSweep(f"op {op.name!r} has no sample function in the registry")
    if _is_elementwise(op):
        call = _elementwise_call(op, dtype, target)
    elif op.category == "linalg" and len(op.operands) == 2:  # matmul-like
        call = _linalg_call(op, dtype)
    else:
        src = SweepSource(dtype)
        call = op.sample(src)
        if not src.data_arrays:
            raise NoSweep(f"the sample function of {op.name!r} draws no array of its data "
                          f"dtype {dtype.value} (its result comes from attributes or a seed),"
                          " so there is no input to put special values in")
    case = case_from_call(op, call, name=f"sweep_{op.name}")
    case.shape_class = "sweep"
    return case


def _cast_targets(op: OpDef) -> list[DType | None]:
    """One sweep per result dtype for an elementwise op whose ``dtype`` attribute picks it
    (``cast``), else one sweep."""
    if _is_elementwise(op) and "dtype" in op.attrs:
        ordered: list[DType] = sorted(op.result_dtype_set, key=lambda d: d.value)
        return [t for t in ordered]
    return [None]


@functools.cache
def _all() -> tuple[list[tuple[str, DType, DType | None]], dict[tuple[str, DType], str]]:
    cells: list[tuple[str, DType, DType | None]] = []
    gaps: dict[tuple[str, DType], str] = {}
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        for dtype in sorted(op.data_dtypes, key=lambda d: d.value):
            for target in _cast_targets(op):
                try:
                    sweep_case(op, dtype, target)
                except NoSweep as e:
                    gaps[(name, dtype)] = str(e)
                    break
                except Exception as e:  # a sweep that does not stage is the suite's gap
                    gaps[(name, dtype)] = (f"the sweep does not stage ({type(e).__name__}: "
                                           f"{str(e).splitlines()[0] if str(e) else ''})")
                    break
                cells.append((name, dtype, target))
    return cells, gaps


def sweep_cells() -> list[tuple[str, DType, DType | None]]:
    """Every (op, data dtype, cast target or None) with a sweep."""
    return list(_all()[0])


def sweep_gaps() -> dict[tuple[str, DType], str]:
    """(op, data dtype) -> why it has no sweep (CONF-21)."""
    return dict(_all()[1])


def sweep_id(name: str, dtype: DType, target: DType | None) -> str:
    return f"{name}-{dtype.value}" + (f"-to-{target.value}" if target is not None else "")
