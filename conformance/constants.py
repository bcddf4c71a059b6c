"""Constant and weak-scalar reach (CONF-88): hard constants, their twins, and the graphs.

Compilers rewrite graphs around constants: strength reduction (``x / c`` -> ``x * (1/c)``),
constant folding, plan caches keyed by value. ``hard_constants(dtype)`` is the set every
constant-reach graph meets: inexact reciprocals (3, 7, 10, 0.1, 1/3), powers of two, +-0,
NaN with the default and a non-default payload, +-inf, subnormals, the smallest normal,
+-max (integers: small values, powers of two, 0, +-1, min, max). ``twin(c)`` is the value a
twin graph puts in ``c``'s place: ``-c`` (a NaN: the same NaN with another payload).

``constant_case(op, dtype, weak, twin)`` is one graph: ``op(x, c)`` and ``op(c, x)`` for
every hard ``c`` (``select``: ``select(cond, x, c)`` and ``select(cond, c, x)``), with
``c`` staged as a rank-0 ``constant`` node or, ``weak=True``, as the front end stages a
Python scalar (a weak constant splatted to ``x``'s shape, PROMO-4); the same graph with
every constant replaced by its twin is ``twin=True``.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph.core import Graph, Value
from interpreter.graph.lowering import lower
from interpreter.graph.ops.staging import stage_op
from interpreter.graph.splat import splat
from interpreter.registry import REGISTRY, OpDef
from interpreter.testing.sampling import RandomArgSource, special_values
from interpreter.types import DeviceRef, TensorType

from .strategies import EXTRA_SET_RATES, Case

__all__ = ["CONSTANT_OPS", "X_SHAPE", "constant_case", "hard_constants", "twin"]

#: The shape of the tensor operand ``x`` of a constant-reach graph.
X_SHAPE = (3, 7)
#: Hard float constants (rounded to the dtype), besides the dtype's special values.
HARD_FLOATS = (3.0, 7.0, 10.0, 0.1, 1 / 3, 2.0, 4.0, 0.25, 1024.0, -3.0)
#: Hard integer constants (those the dtype holds), besides its special values.
HARD_INTS = (2, 3, 4, 7, 10, 16, 64, -3, -7)

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def constant_ops() -> tuple[str, ...]:
    """Ops with a constant-reach cell: every broadcasting binary elementwise op, ``select``."""
    return tuple(sorted(n for n, op in REGISTRY.items()
                        if op.category == "elementwise-binary" or n == "select"))


CONSTANT_OPS = constant_ops()


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(_UINT[a.dtype.itemsize])


def _payload_nan(dtype: DType) -> np.ndarray | None:
    """The dtype's default NaN with its highest payload bit below the quiet bit flipped
    (``None`` where the dtype has one NaN per sign)."""
    import ml_dtypes

    np_dtype = dtype.to_numpy()
    nan = np.array([np.nan], dtype=np_dtype)
    nmant = int(ml_dtypes.finfo(np_dtype).nmant)
    if nmant < 2:
        return None
    other = (_bits(nan) ^ (1 << (nmant - 2))).view(np_dtype)
    return other if np.isnan(other[0]) else None


def hard_constants(dtype: DType) -> np.ndarray:
    """The hard constants of ``dtype`` (1-D, no two with the same bytes)."""
    np_dtype = dtype.to_numpy()
    if dtype is DType.bool:
        return np.array([False, True])
    parts = [special_values(dtype)]
    if dtype.is_integral():
        info = np.iinfo(np_dtype)
        parts.append(np.array([v for v in HARD_INTS if info.min <= v <= info.max],
                              dtype=np_dtype))
    else:
        with np.errstate(over="ignore"):
            parts.append(np.array(HARD_FLOATS, dtype=np.float64).astype(np_dtype))
        nan = _payload_nan(dtype)
        if nan is not None:
            parts.append(nan)
    out: list[Any] = []
    seen: set[bytes] = set()
    for v in np.concatenate(parts).astype(np_dtype):
        key = np.array(v).tobytes()
        if key not in seen:
            seen.add(key)
            out.append(v)
    return np.array(out, dtype=np_dtype)


def twin(c: np.ndarray, weak: bool = False) -> np.ndarray:
    """Each value's twin: ``-c`` (bool: ``not c``; unsigned and the signed minimum, which
    have no negation: ``c`` with its lowest bit flipped); a NaN: the same NaN with another
    payload where the dtype has one (``weak``: one that survives the front end's staging),
    else with the sign flipped."""
    dtype = DType.from_numpy(c.dtype)
    if dtype is DType.bool:
        return ~c
    if dtype.is_integral():
        info = np.iinfo(c.dtype)
        flip = _bits(c.copy()) ^ 1
        if dtype.is_unsigned():
            return flip.view(c.dtype)
        return np.where(c == info.min, flip.view(c.dtype), -np.where(c == info.min, 0, c))
    sign = 1 << (8 * c.dtype.itemsize - 1)
    out = np.array(c, copy=True)
    nmant = _nmant(c.dtype)
    for i, v in enumerate(c):
        if not np.isnan(v):
            out[i] = -v
            continue
        b = _bits(np.array([v]))
        other = (b ^ (1 << (nmant - 2))).view(c.dtype) if nmant >= 2 else b.view(c.dtype)
        ok = np.isnan(other[0]) and _bits(other)[0] != b[0]
        if ok and weak:  # the front end stages a Python float: keep what survives it
            ok = _bits(np.array(splat(float(other[0]), dtype, ())).reshape(1))[0] == _bits(other)[0]
        out[i] = other[0] if ok else (b ^ np.array(sign, b.dtype)).view(c.dtype)[0]
    return out


def _nmant(np_dtype: Any) -> int:
    import ml_dtypes

    return int(ml_dtypes.finfo(np_dtype).nmant)


def _python(v: Any, dtype: DType) -> bool | int | float:
    if dtype is DType.bool:
        return bool(v)
    return int(v) if dtype.is_integral() else float(v)


def _constant_node(g: Graph, v: Any) -> Value:
    value = np.array(v)
    value.flags.writeable = False
    (out,) = g.stage(REGISTRY["constant"], (), {"value": value, "device": DeviceRef.CPU()})
    return out


def constant_case(op: OpDef, dtype: DType, weak: bool, twinned: bool = False) -> Case:
    """The constant-reach graph of ``(op, dtype)`` (module docstring) with its input sets
    (CONF-30): ``x`` (and ``select``'s ``cond``) drawn at each special-value rate."""
    cs = hard_constants(dtype)
    if twinned:
        cs = twin(cs, weak)
    is_select = op.name == "select"
    x_t = TensorType(dtype, X_SHAPE, DeviceRef.CPU())
    types = [TensorType(DType.bool, X_SHAPE, DeviceRef.CPU()), x_t] if is_select else [x_t]
    kind = "weak" if weak else "constant"
    with Graph(f"conformance_{op.name}_{kind}{'_twin' if twinned else ''}",
               input_types=types) as g:
        x = g.inputs[-1]
        outs = []
        for v in cs:
            for first in (True, False):
                c: Any = _python(v, dtype) if weak else _constant_node(g, v)
                pair = [x, c] if first else [c, x]
                (r,) = stage_op(op, [g.inputs[0], *pair] if is_select else pair)
                outs.append(r)
        g.output(*outs)
    lower(g)
    seed = zlib.crc32(f"constants/{op.name}/{dtype.value}".encode())
    sets = []
    for k, rate in enumerate((0.2, *EXTRA_SET_RATES)):
        src = RandomArgSource(seed + k, rate)
        sets.append([src.values(t.dtype, t.shape) for t in types])
    return Case(g, sets[0], op.name, dtype, "constant", None, seed, extra_inputs=sets[1:])
