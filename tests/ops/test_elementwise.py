"""Elementwise ops against independent references: Python ``math``/``operator`` on exact
values (``fractions.Fraction``) rounded once by a hand-written IEEE rounding, and literals."""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import ops
from interpreter.promotion import broadcast_shapes, promote_dtypes
from interpreter.registry import REGISTRY
from interpreter.testing import Buf, assert_same, build, run
from interpreter.testing.sampling import RandomArgSource, special_values

FAMILY = ("add sub mul div floor_div mod pow max min equal not_equal greater greater_equal "
          "logical_and logical_or logical_xor logical_not negate abs exp log log1p sqrt rsqrt "
          "tanh sin cos erf sigmoid silu gelu floor ceil round trunc is_nan is_inf "
          "cast relu atanh").split()
FLOATS = [DType.float16, DType.bfloat16, DType.float32, DType.float64]
INTS = [DType.int8, DType.int16, DType.int32, DType.int64,
        DType.uint8, DType.uint16, DType.uint32, DType.uint64]
PREDICATES = {"equal", "not_equal", "greater", "greater_equal", "is_nan", "is_inf"}
nan, inf = math.nan, math.inf

# -- independent IEEE rounding: (significand bits, min normal exponent, max exponent, inf?) --
FMT = {DType.float16: (11, -14, 15, True), DType.bfloat16: (8, -126, 127, True),
       DType.float32: (24, -126, 127, True), DType.float64: (53, -1022, 1023, True),
       DType.float8_e4m3fn: (4, -6, 8, False), DType.float8_e5m2: (3, -14, 15, True)}


def round_exact(q: Fraction | float | int, dtype: DType) -> float:
    """The value of ``dtype`` nearest to ``q`` (ties to even), as a Python float (NUM-4)."""
    p, emin, emax, has_inf = FMT[dtype]
    if isinstance(q, float):
        if math.isnan(q) or q == 0:
            return q
        if math.isinf(q):
            return q if has_inf else nan
    q = Fraction(q)
    if q == 0:
        return 0.0
    sign, a = (-1 if q < 0 else 1), abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    n = math.floor(a / quantum)
    rem = a / quantum - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    v = n * quantum
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax if has_inf else Fraction(448)
    if v > largest:
        return sign * inf if has_inf else nan
    return sign * float(v)


def wrap(v: int, dtype: DType) -> int:
    """``v`` modulo 2**bits in the range of integer ``dtype`` (NUM-2)."""
    bits = dtype.size_in_bits
    v %= 1 << bits
    return v - (1 << bits) if dtype.is_signed() and v >= 1 << (bits - 1) else v


def ordered(x: np.ndarray) -> list[int]:
    """Float bit patterns as integers that are consecutive in value order (NUM-10)."""
    sign = 1 << (8 * x.dtype.itemsize - 1)
    return [b if b < sign else sign - b for b in x.view(f"u{x.dtype.itemsize}").tolist()]


def ulp_distance(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """ULP distance per element (NUM-10): NaN-NaN is 0, NaN-number is infinite."""
    g, w = np.atleast_1d(got), np.atleast_1d(want)
    assert g.dtype == w.dtype and g.shape == w.shape
    d = np.array([abs(a - b) for a, b in zip(ordered(g), ordered(w), strict=True)], float)
    gn, wn = np.isnan(g.astype(np.float64)), np.isnan(w.astype(np.float64))
    return np.where(gn & wn, 0.0, np.where(gn | wn, np.inf, d))


def test_ulp_distance_helper() -> None:
    x = np.array([0.0, -0.0, 1.0, nan, np.finfo(np.float32).max], np.float32)
    y = np.array([-0.0, np.finfo(np.float32).smallest_subnormal, np.nextafter(np.float32(1), 2),
                  nan, inf], np.float32)
    assert ulp_distance(x, y).tolist() == [0.0, 1.0, 1.0, 0.0, 1.0]
    assert ulp_distance(np.array([1.0]), np.array([nan]))[0] == inf
    assert ulp_distance(np.array([-1.0]), np.array([1.0]))[0] == 2 * 0x3FF0000000000000


def arr(values: list[Any], dtype: DType) -> np.ndarray:
    """Hand-written values (exactly representable) as an array of ``dtype``."""
    return np.array(values, dtype=np.float64 if dtype.is_float() else object).astype(
        dtype.to_numpy())


def floats_for(dtype: DType, n: int = 60, seed: int = 0, scale: float = 100.0) -> np.ndarray:
    """Special values plus random ones of ``dtype``."""
    rng = np.random.default_rng(seed)
    rand = rng.uniform(-scale, scale, n).astype(dtype.to_numpy())
    return np.concatenate([special_values(dtype), rand])


def ints_for(dtype: DType, n: int = 40, seed: int = 0) -> np.ndarray:
    info = np.iinfo(dtype.to_numpy())
    rng = np.random.default_rng(seed)
    rand = rng.integers(max(info.min, -1000), 1000, n).astype(dtype.to_numpy())
    return np.concatenate([special_values(dtype), rand, arr([7, 2, 3], dtype)])


def pyf(x: np.ndarray) -> list[float]:
    """Elements as Python floats (so the references use Python arithmetic, not numpy's)."""
    out: list[float] = x.astype(np.float64).tolist()
    return out


def same_float(g: float, e: float) -> bool:
    return (math.isnan(g) and math.isnan(e)) or (g == e and math.copysign(1, g) ==
                                                 math.copysign(1, e))


# -- every op, every dtype: rank-0, empty, no warnings ------------------------------------
def _operands(name: str, dtype: DType, shape: tuple[int, ...]) -> list[np.ndarray]:
    sv = special_values(dtype)
    n = int(np.prod(shape))
    vals = np.resize(sv, n).reshape(shape) if n else sv[:0].reshape(shape)
    return [vals, np.flip(vals).copy()][:len(REGISTRY[name].operands)]


def _attrs(name: str) -> dict[str, Any]:
    table: dict[str, dict[str, Any]] = {"gelu": {"approximate": "tanh"},
                                        "cast": {"dtype": DType.float32}}
    return table.get(name, {})


CASES = [(n, d) for n in FAMILY for d in sorted(REGISTRY[n].dtypes, key=lambda d: d.value)]


@pytest.mark.spec("OPDT-1", "NUM-5", "EXEC-4")
@pytest.mark.parametrize(("name", "dtype"), CASES, ids=[f"{n}-{d.value}" for n, d in CASES])
def test_every_dtype_rank0_empty_and_no_warnings(name: str, dtype: DType) -> None:
    op = REGISTRY[name]
    for shape in [(13,), (), (0, 2)]:
        xs = _operands(name, dtype, shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = run(lambda *v: v[0].graph.stage(op, v, _attrs(name))[0], *xs)
        want = (DType.bool if name in PREDICATES else
                DType.float32 if name == "cast" else dtype)
        assert out.dtype == want.to_numpy() and out.shape == shape, (name, dtype, shape)


# -- samples ------------------------------------------------------------------------------
@pytest.mark.spec("EXEC-4", "TOL-2")
@pytest.mark.parametrize("name", FAMILY)
def test_samples_build_and_execute(name: str) -> None:
    op = REGISTRY[name]
    assert op.sample is not None
    src = RandomArgSource(seed=len(name))
    for _ in range(50):
        call = op.sample(src)
        args = [Buf(a) if i in call.buffers else a for i, a in enumerate(call.operands)]
        out = run(lambda *v, attrs=call.attrs: v[0].graph.stage(op, v, attrs)[0], *args)
        promoted = promote_dtypes([DType.from_numpy(a.dtype) for a in call.operands])
        shape = broadcast_shapes([a.shape for a in call.operands])
        assert promoted is not None and shape is not None
        want: DType = (DType.bool if name in PREDICATES else call.attrs["dtype"]
                       if name == "cast" else promoted)
        assert out.dtype == want.to_numpy() and out.shape == shape
        if op.unspecified is not None:
            full = [np.broadcast_to(a.astype(want.to_numpy()) if name != "cast" else a, shape)
                    for a in call.operands]
            with np.errstate(all="ignore"):
                mask = op.unspecified(*full, **call.attrs)
            assert np.shape(mask) == shape and np.asarray(mask).dtype == bool


# -- binary arithmetic --------------------------------------------------------------------
def _pairs(dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    x = floats_for(dtype) if dtype.is_float() else ints_for(dtype)
    rng = np.random.default_rng(1)
    a = np.concatenate([np.repeat(x[:13], 13), rng.permutation(x)])
    b = np.concatenate([np.tile(x[:13], 13), x])
    return a, b


def _ieee_div(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return nan
        return math.copysign(inf, a) * math.copysign(1.0, b)
    return a / b


EXACT_F: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": _ieee_div}


@pytest.mark.spec("NUM-9", "NUM-5")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_float_arithmetic_is_correctly_rounded(name: str, dtype: DType) -> None:
    a, b = _pairs(dtype)
    got = run(lambda x, y: getattr(ops, name)(x, y), a, b)
    fn = EXACT_F[name]
    for x, y, g in zip(pyf(a), pyf(b), pyf(got), strict=True):
        f64 = fn(x, y)  # IEEE float64: right specials and sign of zero
        if math.isfinite(x) and math.isfinite(y) and not (name == "div" and y == 0):
            q = fn(Fraction(x), Fraction(y))
            e = round_exact(q, dtype) if q != 0 else f64
            if q != 0 and e == 0:
                e = math.copysign(0.0, f64)
        else:
            e = round_exact(f64, dtype)
        assert same_float(g, e), (name, dtype, x, y, g, e)


@pytest.mark.spec("NUM-2")
@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("name", ["add", "sub", "mul"])
def test_integer_arithmetic_wraps(name: str, dtype: DType) -> None:
    a, b = _pairs(dtype)
    got = run(lambda x, y: getattr(ops, name)(x, y), a, b)
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}[name]
    want = [wrap(fn(int(x), int(y)), dtype) for x, y in zip(a, b, strict=True)]
    assert got.tolist() == want


@pytest.mark.spec("NUM-2", "NUM-3", "TOL-2")
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_floor_div_and_mod(dtype: DType) -> None:
    a, b = _pairs(dtype)
    q, r = run(lambda x, y: (x // y, x % y), a, b)
    mask = REGISTRY["floor_div"].unspecified(a, b)  # type: ignore[misc]
    assert mask.tolist() == [int(y) == 0 for y in b]
    assert REGISTRY["mod"].unspecified(a, b).tolist() == mask.tolist()  # type: ignore[misc]
    for x, y, gq, gr in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist(), strict=True):
        if y != 0:
            assert (gq, gr) == (wrap(x // y, dtype), wrap(x % y, dtype)), (x, y)


@pytest.mark.spec("NUM-3")
def test_integer_division_literals() -> None:
    a = np.array([7, -7, 7, -7, -128, 0], np.int8)
    b = np.array([2, 2, -2, -2, -1, 3], np.int8)
    assert_same(run(lambda x, y: x // y, a, b), np.array([3, -4, -4, 3, -128, 0], np.int8))
    assert_same(run(lambda x, y: x % y, a, b), np.array([1, 1, -1, -1, 0, 0], np.int8))
    # division by zero: no crash, no warning; the value is unspecified
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dt in (np.int64, np.uint8):
            out = run(lambda x, y: (x // y, x % y), np.array([5, 0], dt), np.zeros(2, dt))
            assert out[0].dtype == dt and out[1].shape == (2,)


def _py_floor_div(a: float, b: float) -> float:
    if b == 0:
        return _ieee_div(a, b)
    return a // b


def _py_mod(a: float, b: float) -> float:
    return nan if b == 0 else a % b


@pytest.mark.spec("NUM-3")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_floor_div_and_mod_follow_python(dtype: DType) -> None:
    a, b = _pairs(dtype)
    q, r = run(lambda x, y: (x // y, x % y), a, b)
    for x, y, gq, gr in zip(pyf(a), pyf(b), pyf(q),
                            pyf(r), strict=True):
        assert same_float(gq, round_exact(_py_floor_div(x, y), dtype)), (x, y, gq)
        assert same_float(gr, round_exact(_py_mod(x, y), dtype)), (x, y, gr)


@pytest.mark.spec("NUM-3")
def test_float_floor_div_mod_literals() -> None:
    a = np.array([-7.0, 7.0, 1.0, 1.0, -1.0, inf, -5.0, 5.0, -4.0, 4.0, 0.0], np.float32)
    b = np.array([2.0, -2.0, 0.1, 0.0, 0.0, 1.0, inf, inf, 2.0, -2.0, 0.0], np.float32)
    assert_same(run(lambda x, y: x // y, a, b), np.array(
        [-4.0, -4.0, 9.0, inf, -inf, nan, -1.0, 0.0, -2.0, -2.0, nan], np.float32))
    assert_same(run(lambda x, y: x % y, a, b), np.array(
        [1.0, -1.0, 1 - 9 * float(np.float32(0.1)), nan, nan, nan, inf, 5.0, 0.0, -0.0,
         nan], np.float32))


@pytest.mark.spec("NUM-2", "NUM-6", "TOL-2")
@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_pow(dtype: DType) -> None:
    lo = -3 if dtype.is_signed() else 0
    base = np.repeat(np.arange(lo, 4), 12).astype(dtype.to_numpy())
    exp = np.tile(np.array([-2, -1, 0, 1, 2, 3, 5, 7, 9, 33, 63, 64]), 4 - lo)
    if not dtype.is_signed():
        exp = np.abs(exp)
    exp = exp.astype(dtype.to_numpy())
    got = run(lambda x, y: x ** y, base, exp)
    unspec = REGISTRY["pow"].unspecified(base, exp)  # type: ignore[misc]
    for x, y, g, u in zip(base.tolist(), exp.tolist(), got.tolist(), unspec.tolist(),
                          strict=True):
        assert u == (x == 0 and y < 0)
        if y >= 0:
            assert g == wrap(x**y, dtype), (x, y)
        elif x != 0:
            assert g == math.trunc(Fraction(x) ** y), (x, y)


def _ref_pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return inf if x > 0 or float(y) % 2 == 0 else -inf
    except ValueError:
        return inf if x == 0 else nan  # 0 ** negative (not odd-integer here) / domain error


@pytest.mark.spec("NUM-7")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_pow_within_ulp(dtype: DType) -> None:
    rng = np.random.default_rng(2)
    base = np.concatenate([rng.uniform(0, 8, 80), [0.0, 1.0, 2.0, -2.0, nan, 1.0, 0.5, inf, -8.0]])
    exp = np.concatenate([rng.uniform(-4, 4, 80), [2.0, nan, -2.0, 3.0, 0.0, inf, -inf, -1, 1 / 3]])
    b, e = base.astype(dtype.to_numpy()), exp.astype(dtype.to_numpy())
    got = run(lambda x, y: x ** y, b, e)
    want = np.array([round_exact(_ref_pow(x, y), dtype) for x, y in
                     zip(pyf(b), pyf(e), strict=True)]).astype(b.dtype)
    assert ulp_distance(got, want).max() <= REGISTRY["pow"].tolerance.ulps
    assert_same(run(lambda x, y: x ** y, arr([nan, 1.0, -8.0, 0.0], dtype),
                    arr([0.0, nan, 1 / 3, -1.0], dtype)), arr([1.0, 1.0, nan, inf], dtype))


def _ieee_max(a: float, b: float, pick: Callable[[float, float], float]) -> float:
    if math.isnan(a) or math.isnan(b):
        return nan
    if a == 0 and b == 0:
        neg = (math.copysign(1, a) < 0, math.copysign(1, b) < 0)
        return -0.0 if (all(neg) if pick is max else any(neg)) else 0.0
    return pick(a, b)


@pytest.mark.spec("NUM-8")
@pytest.mark.parametrize("dtype", [*FLOATS, *INTS, DType.bool], ids=str)
def test_max_min(dtype: DType) -> None:
    a, b = _pairs(dtype) if dtype is not DType.bool else (
        np.array([False, False, True, True]), np.array([False, True, False, True]))
    hi, lo = run(lambda x, y: (ops.maximum(x, y), ops.minimum(x, y)), a, b)
    if dtype.is_float():
        for x, y, h, m in zip(pyf(a), pyf(b), pyf(hi),
                              pyf(lo), strict=True):
            assert same_float(h, _ieee_max(x, y, max)) and same_float(m, _ieee_max(x, y, min))
    else:
        assert hi.tolist() == [max(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
        assert lo.tolist() == [min(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]


# -- comparisons and logic ----------------------------------------------------------------
CMP = {"equal": operator.eq, "not_equal": operator.ne, "greater": operator.gt,
       "greater_equal": operator.ge, "less": operator.lt, "less_equal": operator.le}
CMP_CASES = [(n, d) for n in CMP for d in sorted(
    REGISTRY["greater" if n.startswith("less") else n].dtypes, key=lambda d: d.value)]


@pytest.mark.spec("NUM-1")
@pytest.mark.parametrize(("name", "dtype"), CMP_CASES, ids=[f"{n}-{d}" for n, d in CMP_CASES])
def test_comparisons_are_ieee(name: str, dtype: DType) -> None:
    if dtype is DType.bool:
        a, b = np.array([False, False, True, True]), np.array([False, True, False, True])
    elif dtype.is_float():
        sv = special_values(dtype)
        a, b = np.repeat(sv, len(sv)), np.tile(sv, len(sv))
    else:
        a, b = _pairs(dtype)
    got = run(lambda x, y: getattr(ops, name)(x, y), a, b)
    conv = float if dtype.is_float() else int
    want = [CMP[name](conv(x), conv(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert got.dtype == np.bool_ and got.tolist() == want


@pytest.mark.spec("NUM-1")
def test_less_is_greater_with_swapped_operands() -> None:
    g = build(lambda x, y: (x < y, x <= y), np.zeros(2, np.float32), np.zeros(2, np.float32))
    assert [n.name for n in g.nodes] == ["greater", "greater_equal"]
    assert all(n.operands == (g.inputs[1], g.inputs[0]) for n in g.nodes)
    a, b = np.array([nan, 1.0, nan], np.float32), np.array([1.0, nan, nan], np.float32)
    assert_same(run(lambda x, y: [x < y, x <= y, x > y, x >= y], a, b), [np.zeros(3, bool)] * 4)


@pytest.mark.spec("NUM-1")
def test_comparison_literals() -> None:
    a = np.array([nan, -0.0, 1.0, -inf], np.float32)
    b = np.array([nan, 0.0, nan, -inf], np.float32)
    assert_same(run(lambda x, y: x == y, a, b), np.array([False, True, False, True]))
    assert_same(run(lambda x, y: x != y, a, b), np.array([True, False, True, False]))
    assert_same(run(lambda x, y: x >= y, a, b), np.array([False, True, False, True]))


def test_logic_truth_tables() -> None:
    a, b = np.array([False, False, True, True]), np.array([False, True, False, True])
    out = run(lambda x, y: [x & y, x | y, x ^ y, ~x, ops.logical_not(y)], a, b)
    assert_same(out, [np.array([False, False, False, True]), np.array([False, True, True, True]),
                      np.array([False, True, True, False]), np.array([True, True, False, False]),
                      np.array([True, False, True, False])])


# -- unary --------------------------------------------------------------------------------
@pytest.mark.spec("NUM-2", "NUM-9")
@pytest.mark.parametrize("dtype", [*FLOATS, *INTS], ids=str)
def test_negate_and_abs(dtype: DType) -> None:
    x = floats_for(dtype) if dtype.is_float() else ints_for(dtype)
    absx = run(lambda v: abs(v), x)
    if dtype.is_float():
        assert_same(absx, np.array([math.fabs(v) for v in pyf(x)]).astype(x.dtype))
        assert_same(run(lambda v: -v, x), np.array([-v for v in pyf(x)]).astype(x.dtype))
        return
    assert absx.tolist() == [wrap(abs(v), dtype) for v in x.tolist()]
    if dtype.is_signed():
        assert run(lambda v: -v, x).tolist() == [wrap(-v, dtype) for v in x.tolist()]


def _guard(fn: Callable[[float], float], at: list[tuple[float, float]] = ()  # type: ignore[assignment]
           ) -> Callable[[float], float]:
    """``fn`` with explicit values at special points (C99 Annex F) and domain errors -> NaN."""

    def ref(x: float) -> float:
        if math.isnan(x):
            return nan
        for k, v in at:
            if x == k and math.copysign(1, x) == math.copysign(1, k):
                return v
        try:
            return fn(x)
        except (ValueError, ZeroDivisionError):
            return nan
        except OverflowError:
            return inf

    return ref


def _sigmoid(x: float) -> float:
    return 0.0 if -x > 709 else 1 / (1 + math.exp(-x))


SQ = math.sqrt(2 / math.pi)
UNARY_REF: dict[str, Callable[[float], float]] = {
    "exp": _guard(math.exp, [(-inf, 0.0)]),
    "log": _guard(lambda x: nan if x < 0 else math.log(x), [(0.0, -inf), (-0.0, -inf),
                                                             (inf, inf)]),
    "log1p": _guard(lambda x: nan if x < -1 else math.log1p(x), [(-1.0, -inf), (inf, inf)]),
    "rsqrt": _guard(lambda x: 1 / math.sqrt(x), [(0.0, inf), (-0.0, -inf), (inf, 0.0)]),
    "tanh": _guard(math.tanh),
    "sin": _guard(math.sin),
    "cos": _guard(math.cos),
    "erf": _guard(math.erf),
    # math.erfc(-x / sqrt(2)) is itself ~100 ulp off for x << 0 (the rounded argument):
    # these three come from the mpmath oracle (NUM-14), correctly rounded to float64
    "sigmoid": lambda x: _oracle64("sigmoid", x),
    "silu": lambda x: _oracle64("silu", x),
    "gelu": lambda x: _oracle64("gelu", x),
}


def _oracle64(name: str, x: float) -> float:
    from tests.ops.oracle import exact, round_mpf
    return round_mpf(exact(name, [x], {"approximate": "none"} if name == "gelu" else {}),
                     np.dtype(np.float64))


@pytest.mark.spec("NUM-7")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY_REF))
def test_transcendental_within_ulp_budget(name: str, dtype: DType) -> None:
    x = np.concatenate([floats_for(dtype, 150, seed=3, scale=12.0),
                        floats_for(dtype, 30, seed=4, scale=1e-3)])
    got = run(lambda v: getattr(ops, name)(v), x)
    want = np.array([round_exact(UNARY_REF[name](v), dtype) for v in pyf(x)]
                    ).astype(x.dtype)
    dist = ulp_distance(got, want)
    assert dist.max() <= REGISTRY[name].tolerance.ulps, (x[dist.argmax()], got[dist.argmax()],
                                                         want[dist.argmax()])


@pytest.mark.spec("NUM-7")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_gelu_tanh_within_ulp_budget(dtype: DType) -> None:
    # the literal formula cancels for x < 0 (1 + tanh(u) -> 0): float64 has no spare digits
    lo = 0.0 if dtype is DType.float64 else -5.0
    x = np.concatenate([np.linspace(lo, 8, 131), [0.0, -0.0, inf, -inf, nan]]).astype(
        dtype.to_numpy())

    def ref(v: float) -> float:
        if math.isinf(v):
            return v if v > 0 else -0.0
        return 0.5 * v * (1 + math.tanh(SQ * (v + 0.044715 * v**3)))

    want = np.array([round_exact(ref(v), dtype) for v in pyf(x)]).astype(x.dtype)
    got = run(lambda v: ops.gelu(v, approximate="tanh"), x)
    assert ulp_distance(got, want).max() <= REGISTRY["gelu"].tolerance.ulps


@pytest.mark.spec("NUM-7")
def test_transcendental_literals() -> None:
    f32 = np.float32
    assert_same(run(lambda v: ops.exp(v), np.array([-inf, 0.0, inf, nan], f32)),
                np.array([0.0, 1.0, inf, nan], f32))
    assert_same(run(lambda v: ops.log(v), np.array([-0.0, 1.0, -1.0, inf], f32)),
                np.array([-inf, 0.0, nan, inf], f32))
    assert_same(run(lambda v: ops.rsqrt(v), np.array([0.0, -0.0, 4.0, inf], f32)),
                np.array([inf, -inf, 0.5, 0.0], f32))
    assert_same(run(lambda v: ops.tanh(v), np.array([-inf, -0.0, inf], f32)),
                np.array([-1.0, -0.0, 1.0], f32))
    assert_same(run(lambda v: ops.sigmoid(v), np.array([-inf, 0.0, inf], f32)),
                np.array([0.0, 0.5, 1.0], f32))
    assert_same(run(lambda v: ops.gelu(v), np.array([-inf, -0.0, inf], f32)),
                np.array([-0.0, -0.0, inf], f32))
    # no cancellation: gelu(-10) = -10 * Phi(-10) = -7.619853e-23
    got = run(lambda v: ops.gelu(v), np.array([-10.0], f32))
    assert abs(float(got[0]) / -7.619853024160527e-23 - 1) < 1e-6


@pytest.mark.spec("NUM-9")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sqrt_is_correctly_rounded(dtype: DType) -> None:
    x = floats_for(dtype, 200, seed=5)
    got = run(lambda v: ops.sqrt(v), x)
    # math.sqrt is correctly rounded in float64; a second rounding to <= 24 bits is exact
    # because 53 >= 2 * 24 + 2 (innocuous double rounding).
    want = [round_exact(v if v == 0 or math.isnan(v) else math.sqrt(v) if v > 0 else nan, dtype)
            for v in pyf(x)]
    for g, e in zip(pyf(got), want, strict=True):
        assert same_float(g, e)


ROUNDERS: dict[str, Callable[[float], float]] = {
    "floor": math.floor, "ceil": math.ceil, "round": round, "trunc": math.trunc}


@pytest.mark.spec("NUM-9")
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(ROUNDERS))
def test_rounding_ops(name: str, dtype: DType) -> None:
    x = np.concatenate([floats_for(dtype, 60, seed=6, scale=5.0),
                        arr([0.5, 1.5, 2.5, -0.5, -2.5, -0.2], dtype)])
    got = run(lambda v: getattr(ops, name)(v), x)
    for v, g in zip(pyf(x), pyf(got), strict=True):
        e = v if not math.isfinite(v) else math.copysign(float(ROUNDERS[name](v)), v)
        assert same_float(g, e), (name, v, g)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_is_nan_is_inf(dtype: DType) -> None:
    x = floats_for(dtype, 10)
    nan_mask, inf_mask = run(lambda v: (ops.is_nan(v), ops.is_inf(v)), x)
    assert nan_mask.tolist() == [math.isnan(v) for v in pyf(x)]
    assert inf_mask.tolist() == [math.isinf(v) for v in pyf(x)]


# -- cast ---------------------------------------------------------------------------------
ALL_DTYPES = sorted(DType, key=lambda d: d.value)


def _cast_sources(dtype: DType) -> np.ndarray:
    if dtype is DType.bool:
        return np.array([False, True])
    if dtype.is_integral():
        info = np.iinfo(dtype.to_numpy())
        extra = [v for k in range(7, dtype.size_in_bits - 1)
                 for v in (2**k + 2**(k - 8) + 1, -(2**k) - 2**(k - 4), 2**k + 2**(k - 3))]
        extra = [v for v in extra if info.min <= v <= info.max]
        return np.concatenate([ints_for(dtype, 20), np.array(extra, dtype.to_numpy())])
    x = np.concatenate([special_values(dtype).astype(np.float64),
                        [1 + 2**-8 + 2**-30, 1 + 2**-4 + 2**-40, -1.7, -0.5, 2.5, 200.7,
                         65519.0, 65520.0, 464.0, 470.0, 61440.0, 1e10, -3e9]])
    with np.errstate(all="ignore"):
        return np.concatenate([x.astype(dtype.to_numpy()), floats_for(dtype, 20, seed=7)])


@pytest.mark.spec("NUM-4", "TOL-2")
@pytest.mark.parametrize("src", ALL_DTYPES, ids=str)
def test_cast_every_pair(src: DType) -> None:
    x = _cast_sources(src)
    for dst in ALL_DTYPES:
        got = run(lambda v, d=dst: ops.cast(v, d), x)
        assert got.dtype == dst.to_numpy()
        unspec = REGISTRY["cast"].unspecified(x, dtype=dst)  # type: ignore[misc]
        for i, v in enumerate(x.tolist() if not src.is_float() else pyf(x)):
            g = got[i].item() if dst.to_numpy().kind in "biu" else float(got[i])
            if dst is DType.bool:
                assert g == (v != 0), (src, dst, v)
            elif dst.is_float():
                e = round_exact(float(v) if src.is_float() else int(v), dst)
                assert same_float(g, e), (src, dst, v, g, e)
            elif src.is_float():
                info = np.iinfo(dst.to_numpy())
                ok = math.isfinite(v) and info.min <= math.trunc(v) <= info.max
                assert bool(unspec[i]) == (not ok), (src, dst, v)
                if ok:
                    assert g == math.trunc(v), (src, dst, v, g)
            else:
                assert g == wrap(int(v), dst), (src, dst, v)


@pytest.mark.spec("NUM-4")
def test_cast_literals() -> None:
    import ml_dtypes

    x = np.array([1 + 2**-8 + 2**-30, 2.5, 3.5], np.float64)  # rounded once, ties to even
    assert_same(run(lambda v: ops.cast(v, DType.bfloat16), x),
                np.array([1 + 2**-7, 2.5, 3.5], ml_dtypes.bfloat16))
    big = np.array([2**24 + 2**16 + 1], np.int64)
    assert_same(run(lambda v: ops.cast(v, DType.bfloat16), big),
                np.array([2**24 + 2**17], ml_dtypes.bfloat16))
    assert_same(run(lambda v: ops.cast(v, DType.float8_e4m3fn), np.array([448, 464, 470, inf])),
                np.array([448, 448, nan, nan], ml_dtypes.float8_e4m3fn))
    assert_same(run(lambda v: ops.cast(v, DType.uint8), np.array([300, -1], np.int32)),
                np.array([44, 255], np.uint8))


# -- staging errors -----------------------------------------------------------------------
@pytest.mark.spec("OPDT-1")
@pytest.mark.parametrize(("fn", "dtype", "op"), [
    (lambda x: x + x, np.bool_, "add"),
    (lambda x: x / x, np.int32, "div"),
    (lambda x: ops.sqrt(x), np.int32, "sqrt"),
    (lambda x: -x, np.uint8, "negate"),
    (lambda x: x & x, np.int8, "logical_and"),
    (lambda x: ~x, np.int8, "logical_not"),
    (lambda x: ops.floor(x), np.int64, "floor"),
    (lambda x: ops.is_nan(x), np.int16, "is_nan"),
])
def test_unsupported_dtype_is_an_error(fn: Callable[..., Any], dtype: Any, op: str) -> None:
    with pytest.raises(GraphTypeError, match=rf"^{op}: .*\[OPDT-1\]"):
        build(fn, np.zeros(2, dtype))


@pytest.mark.spec("OPDT-1", "DT-5")
def test_float8_compares_for_equality_only() -> None:
    import ml_dtypes

    x = np.array([nan, 0.0, 1.0], ml_dtypes.float8_e5m2)
    y = np.array([nan, -0.0, 2.0], ml_dtypes.float8_e5m2)
    assert_same(run(lambda a, b: (a == b, a != b), x, y),
                [np.array([False, True, False]), np.array([True, False, True])])
    with pytest.raises(GraphTypeError, match=r"greater: .*float8_e5m2.*\[OPDT-1\]"):
        build(lambda a, b: a > b, x, y)


@pytest.mark.spec("PROMO-2", "BCAST-1", "PROMO-4")
def test_promotion_broadcast_and_scalar_errors() -> None:
    with pytest.raises(GraphTypeError, match=r"add: .*\[PROMO-2\]"):
        build(lambda a, b: a + b, np.zeros(2, np.uint8), np.zeros(2, np.int8))
    with pytest.raises(GraphTypeError, match=r"mul: .*\[PROMO-2\]"):
        build(lambda a, b: a * b, np.zeros(2, np.float32), np.zeros(2, np.int32))
    with pytest.raises(GraphShapeError, match=r"add: .*\[BCAST-1\]"):
        build(lambda a, b: a + b, np.zeros((2, 3), np.float32), np.zeros(4, np.float32))
    with pytest.raises(GraphTypeError, match=r"add: .*\[PROMO-4\]"):
        build(lambda a: a + 2.5, np.zeros(2, np.int32))
    with pytest.raises(GraphTypeError, match=r"\[PROMO-4\]"):
        build(lambda a: a + 300, np.zeros(2, np.uint8))
    assert_same(run(lambda a: a + 1, np.array([0.5], np.float16)), np.array([1.5], np.float16))
    assert_same(run(lambda a: 2 ** a, np.array([3], np.uint8)), np.array([8], np.uint8))


@pytest.mark.spec("gelu.C1", "cast.C1")
def test_attribute_errors() -> None:
    with pytest.raises(GraphShapeError, match=r"gelu: .*\[gelu\.C1\]"):
        build(lambda x: ops.gelu(x, approximate="fast"), np.zeros(2, np.float32))
    with pytest.raises(GraphShapeError, match=r"cast: .*\[cast\.C1\]"):
        build(lambda x: ops.cast(x, np.float32), np.zeros(2, np.float32))  # type: ignore[arg-type]


@pytest.mark.spec("PROMO-1", "BCAST-1", "LOWER-1")
def test_mixed_dtypes_and_shapes_lower_to_cast_and_broadcast() -> None:
    g = build(lambda a, b: a + b, np.zeros(2, np.int16), np.zeros((3, 1), np.float32))
    from interpreter.graph.lowering import lower

    assert [n.name for n in lower(g).nodes] == ["cast", "broadcast_to", "broadcast_to", "add"]
    out = run(lambda a, b: a + b, np.array([1, -2], np.int16),
              np.array([[0.5], [1.0], [2.0]], np.float32))
    assert_same(out, np.array([[1.5, -1.5], [2.0, -1.0], [3.0, 0.0]], np.float32))
