"""Type promotion and broadcasting (spec/promotion-and-broadcasting.md).

PROMO-1: the result dtype is one of the operand dtypes: the highest by category
(bool < unsigned < signed < float), then by width.
PROMO-2: every operand dtype must be safely representable in that result, else error.
BCAST-1: shapes broadcast as in numpy (align trailing dims; a dim of 1 stretches).
"""

from __future__ import annotations

from collections.abc import Sequence

from .dtype import DType

__all__ = ["broadcast_shapes", "can_hold", "promote_dtypes"]

_CATEGORY = {DType.bool: 0}
for _d in (DType.uint8, DType.uint16, DType.uint32, DType.uint64):
    _CATEGORY[_d] = 1
for _d in (DType.int8, DType.int16, DType.int32, DType.int64):
    _CATEGORY[_d] = 2
for _d in (DType.float8_e4m3fn, DType.float8_e5m2, DType.float16, DType.bfloat16,
           DType.float32, DType.float64):
    _CATEGORY[_d] = 3

# Significand bits (incl. the implicit one) and the largest finite exponent of the floats.
_FLOAT_PRECISION = {
    DType.float8_e4m3fn: (4, 8), DType.float8_e5m2: (3, 15), DType.float16: (11, 15),
    DType.bfloat16: (8, 127), DType.float32: (24, 127), DType.float64: (53, 1023),
}
_FLOAT_MIN_EXP = {  # smallest subnormal exponent
    DType.float8_e4m3fn: -9, DType.float8_e5m2: -16, DType.float16: -24,
    DType.bfloat16: -133, DType.float32: -149, DType.float64: -1074,
}


def _int_bits(d: DType) -> int:
    """Magnitude bits an integer type needs (uint8 -> 8, int8 -> 7, bool -> 1)."""
    if d is DType.bool:
        return 1
    return d.size_in_bits - (1 if _CATEGORY[d] == 2 else 0)


def can_hold(target: DType, source: DType) -> bool:
    """True when every value of ``source`` is exactly representable in ``target`` (PROMO-2)."""
    if target is source or source is DType.bool:
        return True
    ct, cs = _CATEGORY[target], _CATEGORY[source]
    if ct == 0:
        return False
    if ct == 3:
        prec, max_exp = _FLOAT_PRECISION[target]
        if cs == 3:
            sp, smax = _FLOAT_PRECISION[source]
            return (prec >= sp and max_exp >= smax
                    and _FLOAT_MIN_EXP[target] <= _FLOAT_MIN_EXP[source])
        return prec >= _int_bits(source)  # every integer up to 2**bits exact
    if cs == 3:
        return False
    if ct == 1:
        return cs == 1 and target.size_in_bits >= source.size_in_bits
    # signed target
    return _int_bits(target) >= _int_bits(source)


def promote_dtypes(dtypes: Sequence[DType]) -> DType | None:
    """The promoted dtype of ``dtypes`` (PROMO-1), or None if PROMO-2 forbids it."""
    best = dtypes[0]
    for d in dtypes[1:]:
        if (_CATEGORY[d], d.size_in_bits) > (_CATEGORY[best], best.size_in_bits):
            best = d
    if all(can_hold(best, d) for d in dtypes):
        return best
    return None


def broadcast_shapes(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """numpy broadcasting of ``shapes`` (BCAST-1), or None if they are incompatible."""
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        off = rank - len(s)
        for i, d in enumerate(s):
            o = out[off + i]
            if o == 1:
                out[off + i] = d
            elif d != 1 and d != o:
                return None
    return tuple(out)
