"""random_uniform / random_normal against an independent scalar Philox (spec/random.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError, GraphTypeError
from interpreter.graph import Graph, ops
from interpreter.registry import get_op
from interpreter.registry.random import philox4x32_10
from interpreter.testing import assert_same, build, run
from tests.ops.test_buffer import run_samples

FLOATS = [DType.float16, DType.bfloat16, DType.float32, DType.float64]
#: precision p (significant bits) and minimum normal exponent of each float dtype
FORMAT = {DType.float16: (11, -14), DType.bfloat16: (8, -126), DType.float32: (24, -126),
          DType.float64: (53, -1022)}
MASK = 0xFFFFFFFF


# -- an independent, straightforward scalar implementation -------------------------------------
def philox_scalar(ctr: list[int], key: list[int]) -> list[int]:
    """Philox4x32-10 on Python ints, written from the Random123 description."""
    c, k = list(ctr), list(key)
    for r in range(10):
        if r > 0:
            k = [(k[0] + 0x9E3779B9) & MASK, (k[1] + 0xBB67AE85) & MASK]
        prod0 = 0xD2511F53 * c[0]
        prod1 = 0xCD9E8D57 * c[2]
        hi0, lo0 = prod0 >> 32, prod0 & MASK
        hi1, lo1 = prod1 >> 32, prod1 & MASK
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
    return c


def round_scalar(x: float, dt: DType) -> float:
    """Round a float64 to nearest even in ``dt`` (finite, in range) with Python ints."""
    if dt is DType.float64 or x == 0:
        return x
    p, emin = FORMAT[dt]
    _, e = math.frexp(x)  # |x| in [2^(e-1), 2^e)
    q = max(e - p, emin - p + 1)  # exponent of the quantum (subnormals share emin's)
    return round(x / 2.0**q) * 2.0**q  # round() of a float ties to even


def largest_below(high: float, dt: DType) -> float:
    p, emin = FORMAT[dt]
    m, e = math.frexp(high)
    step_exp = (e - 1 - p) if m == 0.5 else (e - p)
    return high - 2.0 ** max(step_exp, emin - p + 1)


def uniform_scalar(seed: int, i: int, dt: DType, low: float, high: float) -> float:
    x0, x1, _, _ = philox_scalar([i & MASK, i >> 32, 0, 0], [seed & MASK, seed >> 32])
    if dt is DType.float64:
        u = ((x0 >> 5) * 2**26 + (x1 >> 6)) / 2.0**53
    else:
        u = (x0 >> 8) / 2.0**24
    r = round_scalar(low + (high - low) * u, dt)
    return largest_below(high, dt) if r >= high else r


def normal_scalar(seed: int, i: int) -> float:
    """The standard normal z of element ``i`` (Box-Muller with Python's math)."""
    x0, x1, _, _ = philox_scalar([i & MASK, i >> 32, 0, 0], [seed & MASK, seed >> 32])
    u1, u2 = ((x0 >> 8) + 1) / 2.0**24, (x1 >> 8) / 2.0**24
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)


def seed_arr(s: int) -> np.ndarray:
    return np.array([s], np.uint64)


def uniform(seed: int, shape: tuple[int, ...], dt: DType = DType.float32, low: float = 0.0,
            high: float = 1.0) -> np.ndarray:
    out: np.ndarray = run(lambda s: ops.uniform(s, shape, low, high, dt), seed_arr(seed))
    return out


# -- RNG-1: Philox KATs -----------------------------------------------------------------------
KATS = [
    ([0, 0, 0, 0], [0, 0], [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]),
    ([MASK] * 4, [MASK, MASK], [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]),
    ([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], [0xA4093822, 0x299F31D0],
     [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]),
]


@pytest.mark.spec("RNG-1")
@pytest.mark.parametrize(("ctr", "key", "expected"), KATS)
def test_philox_known_answers(ctr: list[int], key: list[int], expected: list[int]) -> None:
    assert philox_scalar(ctr, key) == expected  # the independent implementation
    got = philox4x32_10([np.array([c], np.uint64) for c in ctr], (key[0], key[1]))
    assert [int(w[0]) for w in got] == expected


# -- RNG-2..4: uniform, bit for bit -----------------------------------------------------------
@pytest.mark.spec("RNG-2", "RNG-3")
def test_first_values_by_hand() -> None:
    # seed 0 / element 0 is the first KAT: x0 = 0x6627E8D5 -> (x0 >> 8) / 2^24
    assert uniform(0, (1,))[0] == np.float32(0x6627E8 / 2**24) == np.float32(0.3990464210510254)
    x0, x1 = 0x6627E8D5, 0xE169C58D
    assert uniform(0, (1,), DType.float64)[0] == ((x0 >> 5) * 2**26 + (x1 >> 6)) / 2.0**53
    assert_same(uniform(42, (2,)), np.array([0x9CEAF0 / 2**24, 0xFCDB21 / 2**24], np.float32))


@pytest.mark.spec("RNG-1", "RNG-2", "RNG-3", "RNG-4")
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize(("seed", "low", "high"), [
    (0, 0.0, 1.0), (1, -1.0, 1.0), (42, -3.0, -1.0), (2**32 + 5, 10.0, 12.0),
    (2**64 - 1, 0.0, 1.0), (123456789, -0.5, 3.75),
])
def test_uniform_bit_exact_vs_scalar(dt: DType, seed: int, low: float, high: float) -> None:
    n = 300
    got = uniform(seed, (n,), dt, low, high)
    expected = np.array([uniform_scalar(seed, i, dt, low, high) for i in range(n)],
                        np.float64).astype(dt.to_numpy())  # exact: values are representable
    assert_same(got, expected)


@pytest.mark.spec("RNG-4")
def test_bfloat16_rounds_once() -> None:
    # seed 5, element 2320: low + (high - low) * u = 2.77343746... lies just below the
    # midpoint 2.7734375 of bfloat16 2.765625 and 2.78125; rounding through float32 first
    # would give the midpoint and then (ties to even) 2.78125
    v = uniform(5, (2321,), DType.bfloat16, -0.5, 3.75)
    assert float(v[2320]) == 2.765625 == uniform_scalar(5, 2320, DType.bfloat16, -0.5, 3.75)


@pytest.mark.spec("RNG-4")
def test_clamp_below_high() -> None:
    # seed 0, element 902: x0 = 0xFFF63B25, u rounds to 1.0 in float16
    h = uniform(0, (903,), DType.float16)
    assert h[902] == np.float16(1 - 2**-11)
    assert uniform_scalar(0, 902, DType.float16, 0.0, 1.0) == 1 - 2**-11
    for dt in (DType.bfloat16, DType.float16):
        v = uniform(7, (4000,), dt).astype(np.float64)
        assert v.max() == 1 - 2.0 ** -FORMAT[dt][0]  # clamped values exist and are < high


@pytest.mark.spec("RNG-4")
@pytest.mark.parametrize("dt", FLOATS, ids=str)
def test_uniform_range(dt: DType) -> None:
    for seed, (low, high) in enumerate([(0.0, 1.0), (-2.0, -1.5), (0.25, 0.375), (-8, 8)]):
        v = uniform(seed, (500,), dt, low, high).astype(np.float64)
        assert v.min() >= low and v.max() < high


@pytest.mark.spec("RNG-2")
def test_shape_only_matters_through_flat_index() -> None:
    flat = uniform(3, (24,))
    assert_same(uniform(3, (2, 3, 4)), flat.reshape(2, 3, 4))
    assert_same(uniform(3, (5,)), flat[:5])
    assert uniform(3, (0, 4)).shape == (0, 4)
    assert_same(uniform(3, ()), flat[0].reshape(()))


@pytest.mark.spec("RNG-6")
def test_deterministic_and_seeds_differ() -> None:
    a = uniform(5, (64,))
    assert_same(uniform(5, (64,)), a)
    for other in (6, 5 + 2**32, 2**63 + 5):  # the key's high word matters too
        assert np.mean(uniform(other, (64,)) == a) < 0.1
    n1 = run(lambda s: ops.normal(s, (64,)), seed_arr(5))
    assert_same(run(lambda s: ops.normal(s, (64,)), seed_arr(5)), n1)
    assert not np.array_equal(run(lambda s: ops.normal(s, (64,)), seed_arr(6)), n1)


@pytest.mark.spec("RNG-6", "RNG-7")
def test_builder_int_seed_and_bound_rounding() -> None:
    assert_same(run(lambda: ops.uniform(9, (8,))), uniform(9, (8,)))
    # 0.1 and 0.3 are rounded to float16 first: 0.0999755859375 and 0.300048828125
    v = run(lambda: ops.uniform(0, (200,), 0.1, 0.3, DType.float16)).astype(np.float64)
    assert v.min() >= 0.0999755859375 and v.max() < 0.300048828125
    g = build(lambda: ops.uniform(0, (2,), 0.1, 0.3, DType.float16))
    node = next(n for n in g.nodes if n.name == "random_uniform")
    assert (node.attrs["low"], node.attrs["high"]) == (0.0999755859375, 0.300048828125)
    with pytest.raises(GraphTypeError, match=r"random_uniform.C1"):
        build(lambda: ops.uniform(-1, (2,)))


# -- RNG-5: normal ----------------------------------------------------------------------------
@pytest.mark.spec("RNG-5", "RNG-8")
@pytest.mark.parametrize("dt", FLOATS, ids=str)
@pytest.mark.parametrize(("seed", "mean", "std"), [(0, 0.0, 1.0), (11, 3.0, 0.5),
                                                    (2**40 + 1, -1.0, 2.0)])
def test_normal_vs_scalar(dt: DType, seed: int, mean: float, std: float) -> None:
    n = 200
    got = run(lambda s: ops.normal(s, (n,), mean, std, dt), seed_arr(seed)).astype(np.float64)
    p, _ = FORMAT[dt]
    for i in range(n):
        z = normal_scalar(seed, i)
        exp = mean + std * z
        scale = max(abs(exp), abs(std * z))  # RNG-8: relative to |std * z| on cancellation
        budget = 4 * 2.0 ** (math.frexp(scale)[1] - p)  # 4 ULP of the dtype near scale
        assert abs(got[i] - exp) <= budget, (i, got[i], exp)


@pytest.mark.spec("RNG-5")
def test_normal_statistics() -> None:
    z = run(lambda s: ops.normal(s, (20000,), 2.0, 3.0, DType.float64), seed_arr(1))
    assert abs(z.mean() - 2.0) < 0.1 and abs(z.std() - 3.0) < 0.1
    assert np.all(np.isfinite(z))
    frac = np.mean(np.abs(z - 2.0) < 3.0)  # within one std: about 68.3%
    assert 0.66 < frac < 0.70
    u = uniform(1, (20000,), DType.float64)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005


@pytest.mark.spec("RNG-5")
def test_normal_std_zero_is_the_mean() -> None:
    assert_same(run(lambda s: ops.normal(s, (3,), -1.25, 0.0, DType.bfloat16), seed_arr(0)),
                np.full(3, -1.25, DType.bfloat16.to_numpy()))


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.spec("random_uniform.C1", "random_uniform.C2", "random_uniform.C3",
                  "random_normal.C1", "random_normal.C2", "random_normal.C3", "OPDT-1")
def test_errors() -> None:
    s = seed_arr(0)
    uni, nor = get_op("random_uniform"), get_op("random_normal")

    def stage(op: object, attrs: dict[str, object], seed: np.ndarray = s) -> None:
        build(lambda x: Graph.current.stage(op, [x], attrs)[0], seed)  # type: ignore[arg-type]

    base = {"shape": (2,), "dtype": DType.float32, "low": 0.0, "high": 1.0}
    with pytest.raises(GraphShapeError, match=r"random_uniform.C1"):
        stage(uni, base, np.zeros((), np.uint64))
    with pytest.raises(GraphTypeError, match=r"OPDT-1"):
        stage(uni, base, np.zeros(1, np.int64))
    with pytest.raises(GraphTypeError, match=r"float8_e5m2 is not supported.*OPDT-1"):
        stage(uni, {**base, "dtype": DType.float8_e5m2})
    with pytest.raises(GraphTypeError, match=r"random_uniform.C2"):
        stage(uni, {**base, "dtype": "float32"})
    with pytest.raises(GraphShapeError, match=r"random_uniform.C2"):
        stage(uni, {**base, "shape": [2]})
    with pytest.raises(GraphShapeError, match=r"random_uniform.C2"):
        stage(uni, {**base, "shape": (-1,)})
    for bad in ({"low": 1.0}, {"high": math.inf}, {"low": 0.1}, {"high": True},
                {"low": 2.0, "high": 1.0}):
        with pytest.raises(GraphShapeError, match=r"random_uniform.C3"):
            stage(uni, {**base, **bad})
    nbase = {"shape": (2,), "dtype": DType.float16, "mean": 0.0, "std": 1.0}
    stage(nor, nbase)
    with pytest.raises(GraphShapeError, match=r"random_normal.C1"):
        stage(nor, nbase, np.zeros(2, np.uint64))
    with pytest.raises(GraphTypeError, match=r"random_normal.C2"):
        stage(nor, {**nbase, "dtype": None})
    for bad2 in ({"std": -0.5}, {"mean": math.nan}, {"std": "1"}):
        with pytest.raises(GraphShapeError, match=r"random_normal.C3"):
            stage(nor, {**nbase, **bad2})


@pytest.mark.spec("RNG-4", "RNG-5")
@pytest.mark.parametrize("name", ["random_uniform", "random_normal"])
def test_samples_execute_with_declared_types(name: str) -> None:
    run_samples(name)

