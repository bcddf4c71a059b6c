"""NUM-13: the internal precision `silu` and `gelu` need for their float32 budget, checked
on a sample of the inputs the spec's measurement used."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conformance.compare import ulp_distance
from interpreter.registry import REGISTRY

_ERFC = np.frompyfunc(math.erfc, 1, 1)
_F = np.float32


def _ulps(op: str, x: np.ndarray, got: np.ndarray, **attrs: str) -> np.ndarray:
    ref = REGISTRY[op].kernel(x, **attrs)
    return np.asarray(ulp_distance(ref, got.astype(x.dtype)))


@pytest.fixture(scope="module")
def xs() -> np.ndarray:
    rng = np.random.default_rng(1)
    return np.concatenate([rng.uniform(-30, 30, 20_000), rng.uniform(-5, 5, 20_000),
                           np.linspace(-106.4, -88.8, 200)]).astype(np.float32)


@pytest.mark.spec("NUM-13", "NUM-7")
def test_silu_float32_needs_range_only_below_minus_88(xs: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        d = _ulps("silu", xs, xs / (_F(1) + np.exp(-xs)))
    inside = np.abs(xs) < 88
    assert d[inside].max() <= 4  # float32 arithmetic is enough there
    assert d[xs < -88.8].max() > 4  # exp(-x) overflows float32: the result flushes to -0


@pytest.mark.spec("NUM-13", "NUM-7")
def test_gelu_needs_float64_intermediates(xs: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        erfc32 = np.asarray(_ERFC((-xs / _F(math.sqrt(2))).astype(np.float64)),
                            np.float64).astype(np.float32)  # a correctly rounded erfc
        in32 = _F(0.5) * xs * erfc32
        x64 = xs.astype(np.float64)
        in64 = (0.5 * x64 * np.asarray(_ERFC(-x64 / math.sqrt(2)), np.float64))
    bad = _ulps("gelu", xs, in32, approximate="none") > 4
    assert bad.mean() > 0.02 and xs[bad].max() < -1.3  # the argument's rounding, amplified
    assert _ulps("gelu", xs, in64, approximate="none").max() == 0
