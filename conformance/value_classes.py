"""Value-reach accounting (CONF-102..104): which value classes reached each op operand.

* :func:`classify` maps one operand array to the classes present in it (NaN, +-inf, +-0,
  +-subnormal, +-max, smallest normal, exact tie x.5, integer min/max, 0, False/True) and
  its shape classes (rank 0, empty, an axis >= 8 / >= 64 / > 4096); vectorised, a few
  microseconds per operand.
* :func:`accepted` is what an operand *accepts* (CONF-103): every value class of its dtype,
  unless the sampler drew it with a domain kind (``index:N``/``uindex:N``: in-range integers).
* :class:`ValueReach` accumulates, per (op, data dtype, operand), the classes met by every
  judged one-op case and the classes the sampler's kinds make applicable; it is recorded
  in each test's report metadata as ``value_reach`` and merged by :func:`merge`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from interpreter.dtype import DType

__all__ = ["INFORMATIONAL", "SHAPE_CLASSES", "VALUE_CLASSES", "ValueReach", "accepted",
           "classify", "dtype_classes", "gaps", "merge", "operand_name"]

#: Value classes, in the report's column order.
VALUE_CLASSES = ("nan", "nan_payload", "+inf", "-inf", "+0", "-0", "+subnormal", "-subnormal",
                 "+max", "-max", "min_normal", "tie", "int_min", "int_max", "zero", "false",
                 "true")
#: Shape classes of one operand (recorded and shown; CONF-103 requires none of them).
SHAPE_CLASSES = ("rank0", "empty", "axis>=8", "axis>=64", "axis>4096")
#: Classes recorded when present but never required (CONF-103): NaN with a payload or sign
#: other than the dtype's default NaN, and the shape classes.
INFORMATIONAL = frozenset(("nan_payload", *SHAPE_CLASSES))

_FLOAT = frozenset(("nan", "+inf", "-inf", "+0", "-0", "+subnormal", "-subnormal", "+max",
                    "-max", "min_normal", "tie"))


def dtype_classes(dtype: DType) -> frozenset[str]:
    """The required value classes a dtype can hold: bool False/True; unsigned 0 and max;
    signed min, max and 0; floats everything but the integer classes (float8_e4m3fn has no
    infinities)."""
    if dtype is DType.bool:
        return frozenset(("false", "true"))
    if dtype.is_integral():
        return frozenset(("zero", "int_max") + (("int_min",) if dtype.is_signed() else ()))
    if dtype is DType.float8_e4m3fn:
        return _FLOAT - {"+inf", "-inf"}
    return _FLOAT


@functools.lru_cache(maxsize=4096)
def accepted(dtype: DType, kind: str | None) -> frozenset[str]:
    """The classes an operand of ``dtype`` sampled with ``values`` kind ``kind`` accepts
    (CONF-103). Bias kinds (``any``, ``finite``, ``small``, ``positive``, ``nonzero``,
    ``halfway``) only steer sampling: every class of the dtype. Domain kinds
    ``index:N``/``uindex:N`` accept the integers of ``[-N, N)``/``[0, N)``. None (the
    operand did not come from ``values``): nothing is required."""
    if kind is None:
        return frozenset()
    if kind.startswith(("index:", "uindex:")):
        bound = int(kind.split(":")[1])
        lo = -bound if kind.startswith("index:") else 0
        hi = max(bound, lo + 1)  # exclusive, as the samplers draw
        out = {"zero"} if dtype.is_integral() else {"+0"}
        if dtype.is_integral():
            info = np.iinfo(dtype.to_numpy())
            if dtype.is_signed() and lo <= int(info.min):
                out.add("int_min")
            if int(info.max) < hi:
                out.add("int_max")
        return frozenset(out) & dtype_classes(dtype)
    return dtype_classes(dtype)


def _shape_classes(shape: tuple[int, ...]) -> set[str]:
    out = set()
    if not shape:
        out.add("rank0")
    elif 0 in shape:
        out.add("empty")
    biggest = max(shape, default=0)
    if biggest >= 8:
        out.add("axis>=8")
    if biggest >= 64:
        out.add("axis>=64")
    if biggest > 4096:
        out.add("axis>4096")
    return out


_DTYPES: dict[np.dtype[Any], DType] = {}
_FINFO: dict[DType, tuple[float, float, Any]] = {}


def _dtype(np_dtype: np.dtype[Any]) -> DType:
    """``DType.from_numpy``, memoised (it costs microseconds; this runs on every case)."""
    d = _DTYPES.get(np_dtype)
    if d is None:
        d = _DTYPES[np_dtype] = DType.from_numpy(np_dtype)
    return d


def classify(a: Any) -> set[str]:
    """The value and shape classes present in array ``a`` (any registry dtype)."""
    a = np.asarray(a)
    out = _shape_classes(tuple(a.shape))
    if a.size == 0:
        return out
    dtype = _dtype(a.dtype)
    if dtype is DType.bool:
        if a.any():
            out.add("true")
        if not a.all():
            out.add("false")
        return out
    if dtype.is_integral():
        info = np.iinfo(a.dtype)
        lo, hi = a.min(), a.max()
        if dtype.is_signed() and lo == info.min:
            out.add("int_min")
        if hi == info.max:
            out.add("int_max")
        if lo <= 0 <= hi and (a == 0).any():
            out.add("zero")
        return out
    return out | _float_classes(a, dtype)


def _float_info(dtype: DType) -> tuple[float, float, Any]:
    """(smallest normal, max, the bits of the default NaN) of a float dtype."""
    got = _FINFO.get(dtype)
    if got is None:
        import ml_dtypes

        fi = ml_dtypes.finfo(dtype.to_numpy())
        size = dtype.to_numpy().itemsize
        got = _FINFO[dtype] = (float(fi.smallest_normal), float(fi.max),
                               np.array(np.nan, dtype.to_numpy()).view(f"u{size}"))
    return got


def _float_classes(a: np.ndarray, dtype: DType) -> set[str]:
    """Ordinary elements (normal, below max, no tie) are screened out in numpy; the few
    others are looked at one by one."""
    tiny, big, default_nan = _float_info(dtype)
    x = a.astype(np.float64).ravel()  # exact for every registry float dtype
    with np.errstate(invalid="ignore"):
        ax = np.abs(x)
        odd = np.flatnonzero(~((ax > tiny) & (ax < big)) | (x - np.floor(x) == 0.5))
    out: set[str] = set()
    nan = False
    for v in x[odd].tolist() if odd.size else ():  # no set(): it merges 0.0 and -0.0
        if v != v:
            nan = True
        elif math.isinf(v):
            out.add("+inf" if v > 0 else "-inf")
        elif v == 0:
            out.add("-0" if math.copysign(1.0, v) < 0 else "+0")
        else:
            m = abs(v)
            if m < tiny:
                out.add("-subnormal" if v < 0 else "+subnormal")
            elif m == tiny:
                out.add("min_normal")
            elif m == big:
                out.add("-max" if v < 0 else "+max")
            if v - math.floor(v) == 0.5:
                out.add("tie")
    if nan:
        out.add("nan")
        bits = a.ravel().view(default_nan.dtype)
        if (bits[np.isnan(x)] != default_nan).any():
            out.add("nan_payload")
    return out


def operand_name(op: Any, index: int) -> str:
    """``OpDef.operands[index]``; every operand of a variadic op has its one name."""
    names = tuple(getattr(op, "operands", ()) or ())
    if getattr(op, "variadic", False) and names:
        return str(names[0])
    if index < len(names):
        return str(names[index])
    return f"operand{index}"


class ValueReach:
    """Per (op, data dtype, operand): classes met, classes accepted, kinds sampled."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str], dict[str, set[str]]] = {}

    def add(self, op: Any, dtype: str, inputs: Sequence[Any],
            kinds: Sequence[str | None] = ()) -> None:
        """Account one judged one-op case: ``inputs[i]`` is operand ``i`` of ``op``,
        sampled with ``values`` kind ``kinds[i]`` (None or missing: not from ``values``).

        An operand whose dtype set holds the data dtype ``dtype`` is accounted only where
        it has that dtype (CONF-102: a promoting op's mixed-dtype draws are not its row);
        other operands (indices, a condition, a seed) in every dtype drawn."""
        sets = tuple(getattr(op, "operand_dtype_sets", ()) or ())
        for i, a in enumerate(inputs):
            arr = np.asarray(a)
            allowed = sets[min(i, len(sets) - 1)] if sets else ()
            if any(d.value == dtype for d in allowed) \
                    and _dtype(arr.dtype).value != dtype:
                continue
            row = self.rows.setdefault((op.name, dtype, operand_name(op, i)),
                                       {"met": set(), "accepts": set(), "kinds": set()})
            row["met"] |= classify(arr)
            kind = kinds[i] if i < len(kinds) else None
            if kind is not None:
                row["kinds"].add(kind)
                row["accepts"] |= accepted(_dtype(arr.dtype), kind)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"op": op, "dtype": d, "operand": name, **{k: sorted(v) for k, v in r.items()}}
                for (op, d, name), r in sorted(self.rows.items())]


def merge(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Union of ``value_reach`` entries (of many tests, any xdist worker) per (op, dtype,
    operand), each with its ``gaps``: accepted, required and never met (CONF-104)."""
    rows: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    for e in entries:
        row = rows.setdefault((str(e["op"]), str(e["dtype"]), str(e["operand"])),
                              {"met": set(), "accepts": set(), "kinds": set()})
        for k in row:
            row[k].update(str(c) for c in e.get(k) or ())
    out = []
    for (op, d, name), r in sorted(rows.items()):
        item: dict[str, Any] = {"op": op, "dtype": d, "operand": name,
                                **{k: sorted(v) for k, v in r.items()}}
        item["gaps"] = sorted(r["accepts"] - r["met"] - INFORMATIONAL)
        out.append(item)
    return out


def gaps(merged: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """Every (op, dtype, operand, class) accepted but never met, sorted."""
    return sorted((m["op"], m["dtype"], m["operand"], c) for m in merged for c in m["gaps"])
