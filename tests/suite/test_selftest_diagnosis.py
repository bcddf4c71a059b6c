"""The suite names the platform effect it finds (CONF-40) and lets a declared one pass as a
*deviation* without hiding a real bug in the same cell (CONF-41, CONF-42): in-process runs of
``conformance/test_ops.py`` slices (``ci`` profile) on executors of
``tests/suite/broken_executors.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suite.suite_runner import SuiteRun, run_suite


def _run_with(tmp_path: Path, executor: str, k: str, *extra: str) -> SuiteRun:
    """A ``test_ops.py`` slice without minimisation (``run.meta``: the report metadata)."""
    return run_suite(tmp_path, executor, ["test_ops.py"], k, "--conformance-minimize=0", *extra)


# executor, -k selection, class, rule
CAUGHT = [
    ("FlushToZero", "[add-float32", "ftz", "NUM-11"),
    ("NaNIgnoringMaximum", "[max-float32-general", "nan-dropped",
     "NUM-8"),
    ("SaturatingInt8Negate", "negate-int8", "int-saturation", "NUM-2"),
]


@pytest.mark.spec("CONF-40", "CONF-18")
@pytest.mark.parametrize(("broken", "k", "cls", "rule"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_platform_effect_is_caught_and_diagnosed(tmp_path: Path, broken: str, k: str,
                                                 cls: str, rule: str) -> None:
    run = _run_with(tmp_path, broken, k)
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), run.outcomes
    for nodeid in run.failed():
        assert f"diagnosis:\n  {cls}: " in run.messages[nodeid], run.messages[nodeid]
        assert f"[{rule}]" in run.messages[nodeid]
        found = run.meta[nodeid]["diagnosis"]
        assert [d["class"] for d in found] == [cls], found
        assert found[0]["rule"] == rule and found[0]["detail"]


@pytest.mark.spec("CONF-41", "CONF-42")
def test_declared_ftz_is_a_deviation_and_a_sign_bug_in_the_same_cell_still_fails(
        tmp_path: Path) -> None:
    xfails = tmp_path / "expect.toml"
    xfails.write_text('deviations = ["ftz"]\n')
    opt = f"--conformance-xfails={xfails}"
    clean = _run_with(tmp_path / "a", "FlushToZero", "[add-float32", opt)
    assert clean.code == pytest.ExitCode.OK, clean.outcomes
    deviated = [n for n, m in clean.meta.items() if m.get("outcome") == "deviation"]
    assert deviated, clean.meta
    for n in deviated:
        assert clean.meta[n]["deviations"] == ["ftz"] and clean.meta[n]["deviation_examples"] > 0

    bug = _run_with(tmp_path / "b", "FlushToZeroSignBug", "[add-float32", opt)
    assert bug.code == pytest.ExitCode.TESTS_FAILED
    assert set(deviated) <= set(bug.failed()), (deviated, bug.outcomes)
    for n in bug.failed():
        assert "diagnosis: unexplained" in bug.messages[n]
