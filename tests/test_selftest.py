"""Self-test of the conformance suite (CONF-18): it must fail, for the right reason, on each
deliberately broken executor of ``tests/broken_executors.py``.

Each case runs a small selection of the suite in-process (``pytest.main`` with the ``ci``
hypothesis profile: derandomized, few examples) on one broken executor and checks that the
run fails, that a failure message names the problem, and that the failure left a runnable
``repro.py`` that exits non-zero. Crash and hang containment and the ``-n 2`` report merge
run the suite in a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conformance"
BROKEN = "tests.broken_executors"


@dataclass
class SuiteRun:
    code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    artifacts: Path | None = None

    def failed(self) -> list[str]:
        return [k for k, v in self.outcomes.items() if v == "failed"]

    def text(self) -> str:
        return "\n".join(self.messages[k] for k in self.failed())


class _Collector:
    def __init__(self, run: SuiteRun) -> None:
        self.run = run

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or not report.passed:
            if report.nodeid in self.run.outcomes and report.when == "teardown":
                return
            self.run.outcomes[report.nodeid] = report.outcome
            self.run.messages[report.nodeid] = report.longreprtext


def run_suite(tmp_path: Path, executor: str, files: list[str], k: str | None = None,
              *extra: str, module: str = BROKEN) -> SuiteRun:
    """Run ``conformance/<files>`` in-process on ``<module>:<executor>`` (default module:
    ``tests.broken_executors``)."""
    art = tmp_path / "artifacts"
    args = [str(CONF / f) for f in files] + [
        "-q", "-p", "no:cacheprovider", f"--executor={module}:{executor}",
        f"--conformance-artifacts={art}", "--hypothesis-profile=ci", "-W", "ignore"]
    if k:
        args += ["-k", k]
    run = SuiteRun(0, artifacts=art)
    profile = settings.get_current_profile_name()
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        run.code = int(pytest.main([*args, *extra], plugins=[_Collector(run)]))
    finally:
        os.chdir(cwd)
        settings.load_profile(profile)
    return run


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


# name, files, -k selection, words the failure message must contain
CATALOGUE: list[tuple[str, list[str], str | None, list[str]]] = [
    ("RoundHalfAwayFromZero", ["test_ops.py"], "round-float32 or round-float64", ["round"]),
    ("TruncatingFloorDiv", ["test_ops.py"], "floor_div-int32-general or floor_div-int8-broadcast",
     ["floor_div"]),
    ("NaNComparisonByNegation", ["test_ops.py"], "test_op and greater-float32",
     ["greater"]),
    ("DroppedMutation", ["test_protocol.py"], "mutation", ["mutation dropped", "EXEC-6"]),
    ("ReplayedMutation", ["test_protocol.py"], "mutation", ["mutation replayed", "EXEC-6"]),
    ("AliasingOutputs", ["test_protocol.py"], "aliasing", ["shares memory", "EXEC-5"]),
    ("WrongOutputDtype", ["test_protocol.py"], "aliasing or mutation_applied",
     ["dtype float64", "EXEC-4"]),
    ("RefusesAfterWrite", ["test_protocol.py"], "refusal", ["EXEC-3", "after modifying"]),
    ("IgnoredSeed", ["test_random.py"], "same_seed or bit_identical", ["seed"]),
    ("NondeterministicExecutor", ["test_determinism.py"],
     "test_op_deterministic and (exp or add or mul)", ["differs between two executions"]),
]


@pytest.mark.spec("CONF-18", "CONF-11")
@pytest.mark.parametrize(("broken", "files", "k", "words"), CATALOGUE,
                         ids=[c[0] for c in CATALOGUE])
def test_broken_executor_is_caught(tmp_path: Path, broken: str, files: list[str],
                                   k: str | None, words: list[str]) -> None:
    run = run_suite(tmp_path, broken, files, k)
    assert run.outcomes, f"nothing ran for {broken} (-k {k!r})"
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), (
        f"the suite did not catch {broken}: exit {run.code}, outcomes {run.outcomes}")
    text = run.text()
    for w in words:
        assert w in text, f"no failure message of the {broken} run mentions {w!r}:\n{text}"
    assert_repro_fails(run)  # every failure leaves a repro.py that reproduces it


@pytest.mark.spec("CONF-5", "CONF-6", "CONF-7")
def test_expectations_and_refusals(tmp_path: Path) -> None:
    xfails = tmp_path / "xfails.toml"
    xfails.write_text(
        '[[xfail]]\ntest = "*test_mutation_applied_exactly_once"\nreason = "replays"\n\n'
        '[[xfail]]\ntest = "*test_outputs_fresh_when_aliasing_is_tempting"\n'
        'reason = "stale: passes"\n\n'
        '[[xfail]]\ntest = "*no_such_test*"\nreason = "matches nothing"\n')
    run = run_suite(tmp_path, "ReplayedMutation", ["test_protocol.py"],
                    "mutation_applied or aliasing", f"--conformance-xfails={xfails}",
                    f"--conformance-report={tmp_path / 'r.json'}")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["xfail"] == 1 and report["totals"]["pass"] == 1
    stale = {s["entry"]: s["why"] for s in report["stale_expectations"]}
    assert set(stale) == {1, 2}, stale
    assert "passes now" in stale[1] and "matches no test" in stale[2]
    # refusals: their own outcome, a failure under --conformance-strict
    soft = run_suite(tmp_path / "soft", "RefusesAfterWrite", ["test_protocol.py"],
                     "mutation_applied", f"--conformance-report={tmp_path / 's.json'}")
    assert soft.code == pytest.ExitCode.OK
    assert json.loads((tmp_path / "s.json").read_text())["totals"]["refused"] == 1
    strict = run_suite(tmp_path / "strict", "RefusesAfterWrite", ["test_protocol.py"],
                       "mutation_applied", "--conformance-strict")
    assert strict.code == pytest.ExitCode.TESTS_FAILED and "REFUSED" in strict.text()


def _subprocess_suite(tmp_path: Path, *args: str, timeout: int = 300
                      ) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore",
           "--hypothesis-profile=ci", f"--conformance-artifacts={tmp_path / 'artifacts'}",
           *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.spec("CONF-12", "CONF-14", "CONF-18")
def test_crash_is_contained(tmp_path: Path) -> None:
    """SIGSEGV in the executor: the test fails naming the signal and its repro; the run goes
    on (the aliasing test, whose graph has no ``mul``, still passes)."""
    p = _subprocess_suite(tmp_path, "conformance/test_protocol.py", "--conformance-isolate",
                          f"--executor={BROKEN}:CrashingExecutor", "-k",
                          "aliasing or dead_after_use or unused_store", "-rfE")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "SIGSEGV" in out and "1 passed" in out and "2 failed" in out, out
    crashed = sorted((tmp_path / "artifacts" / "isolate").glob("*/repro.py"))
    assert crashed, "no repro directory was written before the crashing call"
    r = subprocess.run([sys.executable, str(crashed[0])], cwd=ROOT, capture_output=True,
                       timeout=120)
    assert r.returncode == -signal.SIGSEGV, (  # dies of the same signal, not of an error
        f"the crash repro.py exited {r.returncode}: {r.stdout!r} {r.stderr!r}")


@pytest.mark.spec("CONF-13", "CONF-18")
def test_hang_is_stopped(tmp_path: Path) -> None:
    p = _subprocess_suite(tmp_path, "conformance/test_protocol.py", "--conformance-isolate",
                          "--conformance-timeout=3", f"--executor={BROKEN}:HangingExecutor",
                          "-k", "aliasing or unused_store", "-rfE")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "did not return within 3 s" in out and "1 passed" in out, out
    hung = [r for r in sorted((tmp_path / "artifacts" / "isolate").glob("*/repro.py"))
            if " = sub(" in (r.parent / "graph.txt").read_text()]
    assert hung, "no repro directory was written before the hanging call"
    with pytest.raises(subprocess.TimeoutExpired):  # the repro hangs the same way
        subprocess.run([sys.executable, str(hung[0])], cwd=ROOT, capture_output=True,
                       timeout=8)


@pytest.mark.spec("CONF-8", "CONF-10")
def test_xdist_report_equals_serial(tmp_path: Path) -> None:
    """``-n 2`` gives the same verdicts and one merged report as a serial run."""
    common = ["conformance/test_protocol.py", "conformance/test_determinism.py",
              "conformance/test_ops.py", "-k",
              "not random_graph and (not test_op or add or round)",
              f"--executor={BROKEN}:ReplayedMutation"]
    serial = _subprocess_suite(tmp_path / "s", *common,
                               f"--conformance-report={tmp_path / 'serial.json'}")
    par = _subprocess_suite(tmp_path / "p", *common, "-n", "2",
                            f"--conformance-report={tmp_path / 'xdist.json'}")
    assert serial.returncode == par.returncode == 1, serial.stdout[-2000:] + par.stdout[-2000:]
    a = json.loads((tmp_path / "serial.json").read_text())
    b = json.loads((tmp_path / "xdist.json").read_text())
    assert b["meta"]["workers"] == 2
    assert a["totals"]["fail"] > 0
    for key in ("tests", "totals", "matrix", "not_covered", "rules"):
        assert a[key] == b[key], f"report section {key!r} differs between serial and -n 2"
    assert (tmp_path / "xdist.html").read_text().startswith("<!DOCTYPE html>")
