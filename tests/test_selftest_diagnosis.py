"""The suite names the platform effect it finds (CONF-40) and lets a declared one pass as a
*deviation* without hiding a real bug in the same cell (CONF-41, CONF-42): in-process runs of
``conformance/test_ops.py`` slices (``ci`` profile) on executors of
``tests/broken_executors.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.test_selftest import BROKEN, CONF, ROOT, SuiteRun, _Collector


class _Meta:
    """Collects each call report's ``conformance`` metadata and its teststatus word."""

    def __init__(self) -> None:
        self.meta: dict[str, dict[str, Any]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            for key, value in report.user_properties:
                if key == "conformance" and isinstance(value, dict):
                    self.meta[report.nodeid] = value


def _run_with(tmp_path: Path, executor: str, k: str, meta: _Meta, *extra: str) -> SuiteRun:
    """``run_suite`` (no minimisation) that also collects the report metadata."""
    art = tmp_path / "artifacts"
    args = [str(CONF / "test_ops.py"), "-q", "-p", "no:cacheprovider",
            f"--executor={BROKEN}:{executor}", f"--conformance-artifacts={art}",
            "--hypothesis-profile=ci", "-W", "ignore", "-k", k, "--conformance-minimize=0",
            *extra]
    run = SuiteRun(0, artifacts=art)
    profile = settings.get_current_profile_name()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        run.code = int(pytest.main(args, plugins=[_Collector(run), meta]))
    finally:
        os.chdir(cwd)
        settings.load_profile(profile)
    return run


# executor, -k selection, class, rule
CAUGHT = [
    ("FlushToZero", "add-float32", "ftz", "NUM-11"),
    ("NaNIgnoringMaximum", "max-float32-general and not reduce and not arg", "nan-dropped",
     "NUM-8"),
    ("SaturatingInt8Negate", "negate-int8", "int-saturation", "NUM-2"),
]


@pytest.mark.spec("CONF-40", "CONF-18")
@pytest.mark.parametrize(("broken", "k", "cls", "rule"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_platform_effect_is_caught_and_diagnosed(tmp_path: Path, broken: str, k: str,
                                                 cls: str, rule: str) -> None:
    meta = _Meta()
    run = _run_with(tmp_path, broken, k, meta)
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), run.outcomes
    for nodeid in run.failed():
        assert f"diagnosis:\n  {cls}: " in run.messages[nodeid], run.messages[nodeid]
        assert f"[{rule}]" in run.messages[nodeid]
        found = meta.meta[nodeid]["diagnosis"]
        assert [d["class"] for d in found] == [cls], found
        assert found[0]["rule"] == rule and found[0]["detail"]


@pytest.mark.spec("CONF-41", "CONF-42")
def test_declared_ftz_is_a_deviation_and_a_sign_bug_in_the_same_cell_still_fails(
        tmp_path: Path) -> None:
    xfails = tmp_path / "expect.toml"
    xfails.write_text('deviations = ["ftz"]\n')
    opt = f"--conformance-xfails={xfails}"
    meta = _Meta()
    clean = _run_with(tmp_path / "a", "FlushToZero", "add-float32", meta, opt)
    assert clean.code == pytest.ExitCode.OK, clean.outcomes
    deviated = [n for n, m in meta.meta.items() if m.get("outcome") == "deviation"]
    assert deviated, meta.meta
    for n in deviated:
        assert meta.meta[n]["deviations"] == ["ftz"] and meta.meta[n]["deviation_examples"] > 0

    bug_meta = _Meta()
    bug = _run_with(tmp_path / "b", "FlushToZeroSignBug", "add-float32", bug_meta, opt)
    assert bug.code == pytest.ExitCode.TESTS_FAILED
    assert set(deviated) <= set(bug.failed()), (deviated, bug.outcomes)
    for n in bug.failed():
        assert "diagnosis: unexplained" in bug.messages[n]
