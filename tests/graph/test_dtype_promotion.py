"""DType facts and the promotion/broadcasting rules, checked against brute force."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.promotion import broadcast_shapes, can_hold, promote_dtypes


@pytest.mark.spec("DT-1", "DT-2")
@pytest.mark.parametrize("dtype", list(DType))
def test_numpy_round_trip(dtype: DType) -> None:
    np_dtype = dtype.to_numpy()
    assert DType.from_numpy(np_dtype) is dtype
    assert dtype.size_in_bytes == np_dtype.itemsize
    assert DType.from_short(dtype.short) is dtype


@pytest.mark.spec("DT-2")
def test_ml_dtypes_backing() -> None:
    assert DType.bfloat16.to_numpy() == np.dtype(ml_dtypes.bfloat16)
    assert DType.float8_e4m3fn.to_numpy() == np.dtype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match="unsupported numpy dtype"):
        DType.from_numpy(np.complex128)


@pytest.mark.spec("DT-3")
def test_classification() -> None:
    floats = {d for d in DType if d.is_float()}
    assert floats == {DType.float16, DType.bfloat16, DType.float32, DType.float64,
                      DType.float8_e4m3fn, DType.float8_e5m2}
    assert {d for d in DType if d.is_integral()} == {
        DType.int8, DType.int16, DType.int32, DType.int64,
        DType.uint8, DType.uint16, DType.uint32, DType.uint64}
    assert not DType.bool.is_integral() and not DType.bool.is_signed()
    assert DType.int8.is_signed() and DType.float16.is_signed()
    assert not DType.uint64.is_signed()


def _source_samples(d: DType) -> np.ndarray:
    """Every value for types of <= 16 bits, else the hard cases."""
    np_dtype = d.to_numpy()
    if d is DType.bool:
        return np.array([False, True])
    if d.size_in_bits <= 16:
        raw = np.arange(2 ** d.size_in_bits, dtype=np.uint64).astype(f"u{d.size_in_bytes}")
        return raw.view(np_dtype)
    if d.is_integral():
        info = np.iinfo(np_dtype)
        vals = {int(info.min), int(info.max), int(info.min) + 1, int(info.max) - 1}
        for k in range(d.size_in_bits):
            for v in (2 ** k - 1, 2 ** k, 2 ** k + 1, -(2 ** k) - 1):
                if info.min <= v <= info.max:
                    vals.add(v)
        return np.array(sorted(vals), dtype=np_dtype)
    fi = np.finfo(np_dtype)
    return np.array([fi.max, -fi.max, fi.smallest_subnormal, fi.smallest_normal,
                     1 + fi.eps, 1 / 3], dtype=np_dtype)


def _exact(a: np.ndarray) -> list[float | int]:
    """Exact Python values (floats of <= 64 bits are exact in float64; ints stay ints)."""
    return a.astype(np.float64).tolist() if a.dtype.kind in "fV" else a.tolist()


def _holds_brute_force(target: DType, source: DType) -> bool:
    """Cast every (or every hard) value of ``source`` to ``target`` and compare exactly."""
    vals = _source_samples(source)
    if source.is_float():
        with np.errstate(invalid="ignore"):
            vals = vals[np.isfinite(vals.astype(np.float64))]
        if not target.is_float():
            return False  # NaN, inf and fractions cannot be held by bool or integers
    if target is DType.bool:
        return source is DType.bool
    with np.errstate(all="ignore"):
        wide = vals.astype(np.float64) if source.is_float() else vals
        there = wide.astype(target.to_numpy())
    # Python compares ints and floats exactly, so no rounding hides here.
    return all(t == v for t, v in zip(_exact(there), _exact(vals), strict=True))


@pytest.mark.spec("PROMO-2")
@pytest.mark.parametrize(("target", "source"), list(itertools.product(DType, DType)),
                         ids=lambda d: d.value)
def test_can_hold_matches_brute_force(target: DType, source: DType) -> None:
    assert can_hold(target, source) == _holds_brute_force(target, source)


@pytest.mark.spec("PROMO-1", "PROMO-2")
@pytest.mark.parametrize(("a", "b"), list(itertools.product(DType, DType)),
                         ids=lambda d: d.value)
def test_promote_is_one_of_the_operands_and_holds_both(a: DType, b: DType) -> None:
    p = promote_dtypes([a, b])
    assert p == promote_dtypes([b, a])  # symmetric
    holders = [d for d in (a, b) if can_hold(d, a) and can_hold(d, b)]
    if p is None:
        assert not holders
    else:
        assert p in (a, b) and can_hold(p, a) and can_hold(p, b)


@pytest.mark.spec("PROMO-1", "PROMO-2")
def test_promotion_table_spot_checks() -> None:
    D = DType
    assert promote_dtypes([D.uint8, D.int8]) is None
    assert promote_dtypes([D.float32, D.int32]) is None
    assert promote_dtypes([D.float16, D.bfloat16]) is None
    assert promote_dtypes([D.float32, D.float64]) is D.float64
    assert promote_dtypes([D.int16, D.float32]) is D.float32
    assert promote_dtypes([D.uint8, D.int16]) is D.int16
    assert promote_dtypes([D.bool, D.float8_e5m2]) is D.float8_e5m2
    assert promote_dtypes([D.int8, D.bfloat16]) is D.bfloat16
    assert promote_dtypes([D.uint8, D.bfloat16]) is D.bfloat16
    assert promote_dtypes([D.uint8, D.float8_e4m3fn]) is None


shapes = st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple)


@pytest.mark.spec("BCAST-1")
@settings(max_examples=50, deadline=None)
@given(shapes, shapes)
def test_broadcast_matches_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    try:
        want: tuple[int, ...] | None = np.broadcast_shapes(a, b)
    except ValueError:
        want = None
    assert broadcast_shapes([a, b]) == want
