"""The one in-process runner of the conformance suite for the self-tests (CONF-18).

``run_suite(tmp_path, executor, files, k, *extra)`` runs ``conformance/<files>`` with
``pytest.main`` (``ci`` hypothesis profile, artifacts under ``tmp_path``) and returns a
:class:`SuiteRun`: exit code, per-test outcome, failure message, the suite's report metadata
(``conformance`` user property), the selected test ids and the recorded warnings.

``executor`` is a name in ``tests/suite/broken_executors.py`` or a ``module:attr`` spec.

Runs use the ``selftest`` hypothesis profile: the suite's ``ci`` profile without hypothesis'
shrink phase. A self-test checks that a broken executor is caught and how the failure is
told, which the first failing example shows as well as the shrunk one; shrinking cost most
of a self-test's time (every shrink step runs the executor and the reference on every input
set). ``shrink=True`` runs the ``ci`` profile itself, for tests that check the shrunk case.
Vendors' runs of the suite are unchanged.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis.core as hypothesis_core
import pytest
from hypothesis import Phase, settings

from conformance.plugin import PROFILES

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conformance"
BROKEN = "tests.suite.broken_executors"
VENDOR = "tests.suite.vendor_executors"

#: ``ci`` without shrinking (hypothesis still replays the failing example as its final one,
#: where the suite minimises and diagnoses it).
SELFTEST_PROFILE = "selftest"
settings.register_profile(SELFTEST_PROFILE, **{
    **PROFILES["ci"], "phases": (Phase.explicit, Phase.reuse, Phase.generate)})


@dataclass
class SuiteRun:
    """What an in-process run of the suite reported."""

    code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)
    warnings: list[tuple[str, str, str]] = field(default_factory=list)  # category, file, text
    artifacts: Path | None = None

    def failed(self) -> list[str]:
        return [k for k, v in self.outcomes.items() if v == "failed"]

    def failures(self) -> dict[str, str]:
        """Failed test id -> its failure message."""
        return {k: self.messages[k] for k in self.failed()}

    def text(self) -> str:
        return "\n".join(self.messages[k] for k in self.failed())


class _Collector:
    def __init__(self, run: SuiteRun) -> None:
        self.run = run

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.run.selected = [it.nodeid for it in session.items]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or not report.passed:
            if report.when == "teardown" and report.nodeid in self.run.outcomes:
                return
            self.run.outcomes[report.nodeid] = report.outcome
            self.run.messages[report.nodeid] = report.longreprtext
            for key, value in report.user_properties:
                if key == "conformance" and isinstance(value, dict):
                    self.run.meta[report.nodeid] = dict(value)

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage, when: str,
                                nodeid: str, location: Any) -> None:
        self.run.warnings.append((warning_message.category.__name__,
                                  str(warning_message.filename), str(warning_message.message)))


def executor_spec(executor: str) -> str:
    """``module:attr`` as given, or a class name of ``tests/suite/broken_executors.py``."""
    return executor if ":" in executor else f"{BROKEN}:{executor}"


def run_suite(tmp_path: Path, executor: str, files: list[str], k: str | None = None,
              *extra: str, quiet_warnings: bool = True, shrink: bool = False,
              plugins: tuple[Any, ...] = ()) -> SuiteRun:
    """Run ``conformance/<files> [-k k] [extra]`` in-process on ``executor``."""
    art = tmp_path / "artifacts"
    args = [str(CONF / f) for f in files] + [
        "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
        f"--executor={executor_spec(executor)}", f"--conformance-artifacts={art}",
        f"--hypothesis-profile={'ci' if shrink else SELFTEST_PROFILE}"]
    if quiet_warnings:
        args += ["-W", "ignore"]
    if k:
        args += ["-k", k]
    run = SuiteRun(0, artifacts=art)
    profile = settings.get_current_profile_name()
    forced_seed = hypothesis_core.global_force_seed  # --hypothesis-seed sets it for good
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        run.code = int(pytest.main([*args, *extra], plugins=[_Collector(run), *plugins]))
    finally:
        os.chdir(cwd)
        settings.load_profile(profile)
        hypothesis_core.global_force_seed = forced_seed
    return run


_SHARED: dict[tuple[Any, ...], SuiteRun] = {}


def shared_run(factory: pytest.TempPathFactory, executor: str, files: list[str],
               k: str | None = None, *extra: str) -> SuiteRun:
    """``run_suite`` once per argument list in this process: for tests that assert different
    things about the same run (never for runs whose result a test mutates)."""
    key = (executor, tuple(files), k, extra)
    if key not in _SHARED:
        _SHARED[key] = run_suite(factory.mktemp("suite"), executor, files, k, *extra)
    return _SHARED[key]


def repros(run: SuiteRun) -> list[Path]:
    return sorted(run.artifacts.rglob("repro.py")) if run.artifacts else []


def assert_repro_fails(run: SuiteRun) -> None:
    """Some ``repro.py`` left by the run reproduces the failure on its own (CONF-11): it
    exits 1 with a ``FAIL:`` verdict (not with an import error or a traceback)."""
    scripts = repros(run)
    assert scripts, "the failing run left no repro.py"
    seen = []
    for script in scripts[:3]:
        p = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        seen.append((p.returncode, (p.stdout + p.stderr)[-300:]))
        if p.returncode == 1 and "FAIL:" in p.stdout:
            return
    pytest.fail(f"no repro.py reproduced the failure: {seen} ({scripts[:3]})")
