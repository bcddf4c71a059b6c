"""The hazard family (CONF-50): executors with a platform effect that random graphs miss are
caught, by the right cell, with any seed; correct executors are never flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.differential import check_case
from conformance.hazards import FLOATS, NARROWINGS, Hazard, build_case, hazards
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor

from . import broken_executors as broken
from . import vendor_executors as vendor
from .suite_runner import assert_repro_fails, run_suite

# broken executor, the cells that must fail (and no others), words of the message (each
# failure is diagnosed by the class of its effect, CONF-40)
CAUGHT: list[tuple[str, set[str], list[str]]] = [
    ("FusedMultiplyAdd", {"fma-float64", "chain-float64"},
     ["add [float64]", "NUM-12", "diagnosis:\n  fma:"]),
    ("Float16ChainInFloat32", {"fma-float16", "fma-bfloat16", "chain-float16",
                               "chain-bfloat16"}, ["NUM-12", "excess-precision:"]),
    ("DoubleRoundingCast", {"narrow-float64-float16", "narrow-float64-bfloat16"},
     ["cast [float16]", "cast [bfloat16]", "NUM-4", "double-rounding:"]),
    ("SaturatingInt8Negate", {"overflow-int8"}, ["negate [int8]", "NUM-2", "int-saturation:"]),
]
SEEDS = range(12)


def _cells(name: str) -> list[Hazard]:
    return [h for h in hazards() if h.id in next(c for n, c, _ in CAUGHT if n == name)]


@pytest.mark.spec("CONF-50", "CONF-18", "CONF-40")
@pytest.mark.parametrize(("name", "cells", "words"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_hazard_family_catches(tmp_path: Path, name: str, cells: set[str],
                               words: list[str]) -> None:
    """The family as a vendor runs it (``ci`` profile, no ``-k``) fails exactly the cells of
    the effect, with the op, dtype and broken rule in the message and a repro.py."""
    run = run_suite(tmp_path, name, ["test_hazards.py"], None, "--conformance-minimize=1")
    failed = {k.split("[", 1)[1].rstrip("]") for k in run.failed()}
    assert run.code == pytest.ExitCode.TESTS_FAILED and failed == cells, (failed, run.outcomes)
    text = run.text()
    for w in words:
        assert w in text, f"no failure message of {name} mentions {w!r}:\n{text}"
    diagnosed = [k for k in run.failed() if "diagnosis:" in run.messages[k]]
    assert diagnosed == run.failed(), "every failure carries its diagnosis (CONF-40)"
    assert "SUITE ERROR" not in text
    assert_repro_fails(run)


@pytest.mark.spec("CONF-50", "NUM-12", "NUM-4", "NUM-2")
@pytest.mark.parametrize("name", [c[0] for c in CAUGHT])
def test_every_seed_exposes_the_effect(name: str) -> None:
    """Every input set of the effect's cells fails on its own: no seed hides it."""
    ex, ref = getattr(broken, name)(), InterpreterExecutor()
    for h in _cells(name):
        for seed in SEEDS:
            assert not check_case(build_case(h, seed), ex, ref).ok, (name, h.id, seed)


@pytest.mark.spec("CONF-50")
@pytest.mark.parametrize("executor", [InterpreterExecutor(), broken.RoundHalfAwayFromZero(),
                                      vendor.OneUlpExp(), vendor.OneUlpReductions(),
                                      vendor.OneUlpOnScalars()],
                         ids=lambda e: type(e).__name__)
def test_no_false_alarm(executor: Any) -> None:
    """Executors that are right (or wrong only in ops no hazard uses) pass every cell."""
    ref = InterpreterExecutor()
    for h in hazards():
        for seed in SEEDS[:3]:
            v = check_case(build_case(h, seed), executor, ref)
            assert v.ok, (h.id, seed, v.message)


@pytest.mark.spec("CONF-50")
def test_cells_cover_every_dtype() -> None:
    """fma and chain cells in every float dtype with arithmetic, overflow cells in every
    integer dtype, the narrowing pairs of the spec."""
    ids = {h.id for h in hazards()}
    for d in FLOATS:
        assert {f"fma-{d.value}", f"chain-{d.value}"} <= ids
    for d in DType:
        if d.is_integral() and d != DType.bool:
            assert f"overflow-{d.value}" in ids
    assert (DType.float64, DType.float16) in NARROWINGS
    assert {t for s, t in NARROWINGS if s == DType.float32} == {
        DType.float16, DType.bfloat16, DType.float8_e4m3fn, DType.float8_e5m2}


@pytest.mark.spec("CONF-50")
def test_narrowing_values_sit_on_midpoints() -> None:
    """A third of the narrowing inputs are exact ties of the target (rounding up and down are
    equally far); the ones next to them are not."""
    for h in hazards():
        if h.family != "narrow" or not h.dtype.is_float():
            continue
        assert h.target is not None
        x = build_case(h, 7).inputs[0].astype(np.float64)
        t = h.target.to_numpy()
        near = x.astype(t).astype(np.float64)
        bits = np.abs(x.astype(t)).view(f"u{t.itemsize}")
        other = np.where(np.abs(x) > np.abs(near), bits + 1, bits - 1)
        far = np.copysign(other.astype(bits.dtype).view(t).astype(np.float64), x)
        ties = np.abs(x - near) == np.abs(x - far)
        assert ties.sum() >= len(x) // 3 - 1, (h.id, int(ties.sum()), len(x))
