"""pytest plugin of the conformance suite (entry point ``pytest11: eager_conformance``).

Loaded in every pytest run of an environment where the package is installed, so it is inert
unless the run targets the suite (a path inside ``conformance/``, ``--pyargs conformance``,
or an explicit ``--executor``): it then resolves the executor (CONF-1), prints it with its
version and the relevant environment in the header (CONF-2) and loads the hypothesis profile
(CONF-3: ``dev`` unless ``--hypothesis-profile`` says otherwise, whatever ``CI`` is).

This module registers every pytest hook of the suite; each delegates to the module that
owns the work, imported here: ``run_options`` (options, profiles, header), ``smoke``
(CONF-35), ``expectations`` (xfails, refusals and deviations, CONF-5..7, CONF-41/42),
``report`` (JSON/HTML, CONF-8..10, CONF-60..63), ``report_junit`` (JUnit properties,
CONF-64, CONF-124), ``shard`` (CONF-120), ``run_meta`` (the run's metadata and the
header under ``-q``, CONF-122/123), ``isolate`` (CONF-12..14) and
``verdicts`` (the structured verdict of a failure, CONF-110).

Fixtures: ``executor`` (the executor under test in its one call pipeline,
``pipeline.ExecutorUnderTest``, session-wide), ``reference`` (an ``InterpreterExecutor``),
``conformance_artifacts`` (the test's :class:`ArtifactDir`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.outcomes import Failed
from hypothesis import settings

from . import (
    expectations,
    isolate,
    provisional,
    report_junit,
    run_profile,
    selection,
    shard,
    smoke,
)
from . import report as reporting
from .artifacts import ArtifactDir
from .calls import ExecutorRaised, is_suite_error, quiet, suite_error_message
from .executors import REFERENCE_SPEC, ExecutorSpecError, ResolvedExecutor, resolve
from .outcomes import SUITE_ERROR_OUTCOME, attach, mark_outcome, pop_strict, push_strict
from .pipeline import ExecutorUnderTest, watch_calls
from .run_meta import quiet_header
from .run_options import PROFILES, add_options, header_lines, targets_conformance
from .verdicts import Failure

__all__ = ["PROFILES", "executor", "executor_under_test", "reference"]

_HERE = Path(__file__).resolve().parent
_RESOLVED = pytest.StashKey[ResolvedExecutor]()
_UNDER_TEST = pytest.StashKey[ExecutorUnderTest]()
_ACTIVE = pytest.StashKey[bool]()
_PREVIOUS = pytest.StashKey[tuple[str | None, Any]]()
_COUNTS = pytest.StashKey[dict[str, int]]()
_ARTIFACTS = pytest.StashKey[ArtifactDir]()
#: the configs of the running sessions (a stack: in-process nested runs); hooks that get
#: only a report read the innermost
_SESSIONS: list[pytest.Config] = []
#: the per-test counts the terminal summary totals (CONF-32)
COUNTED = ("structures", "calls", "value_checks")


def _active(config: pytest.Config | None) -> bool:
    return config is not None and bool(config.stash.get(_ACTIVE, False))


def _in_suite(item: pytest.Item) -> bool:
    return _active(item.config) and _HERE in Path(item.path).parents


# -- configuration ------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    active = targets_conformance(config, _HERE)
    config.stash[_ACTIVE] = active
    push_strict(bool(config.getoption("conformance_strict")))
    if not active:
        return
    config.addinivalue_line("markers", "spec(*ids): the spec rule ids a test checks")
    # our ``ci`` replaces hypothesis' built-in one only in runs of the suite (restored in
    # pytest_unconfigure, so an in-process run of the suite leaves its caller unchanged)
    config.stash[_PREVIOUS] = (settings.get_current_profile_name(), settings.get_profile("ci"))
    settings.register_profile("ci", **PROFILES["ci"])
    settings.load_profile(config.getoption("hypothesis_profile", None) or "dev")
    run_profile.apply(config)  # --conformance-db, --conformance-max-examples
    selection.configure(config)
    spec = config.getoption("executor")
    if spec:
        try:
            config.stash[_RESOLVED] = resolve(spec)
        except ExecutorSpecError as e:
            raise pytest.UsageError(str(e)) from None
    config.stash[_COUNTS] = dict.fromkeys(("tests", *COUNTED), 0)
    expectations.configure(config)
    reporting.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    pop_strict()
    run_profile.restore(config)
    previous = config.stash.get(_PREVIOUS, None)
    if previous is not None:
        name, ci = previous
        settings.register_profile("ci", ci)
        if name is not None:
            settings.load_profile(name)
    if _active(config):
        isolate.close_all()
        reporting.close(config)
    if _SESSIONS and _SESSIONS[-1] is config:
        _SESSIONS.pop()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if _active(session.config):
        _SESSIONS.append(session.config)
        reporting.start(session.config)
        quiet_header(session.config, [  # CONF-123: executor, flags and seed
            x for x in _header(session.config)
            if not x.startswith(("eager-conformance generation", "eager-conformance env"))])


def _header(config: pytest.Config) -> list[str]:
    """The suite's header lines: executor, flags, generation, seed, environment."""
    lines = header_lines(config, lambda: resolved_executor(config))
    return lines + [f"eager-conformance: {said}" for said in run_profile.describe(config)]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _active(session.config):
        expectations.finish(session)  # stale entries, which the report lists
        shard.finish(session.config)
        reporting.finish(session, exitstatus)


def resolved_executor(config: pytest.Config) -> ResolvedExecutor:
    """The executor under test for this run (resolved once per session)."""
    if _RESOLVED not in config.stash:
        config.stash[_RESOLVED] = resolve(config.getoption("executor"))
    return config.stash[_RESOLVED]


def executor_under_test(config: pytest.Config) -> ExecutorUnderTest:
    """The run's executor in its one call pipeline (built once; under
    ``--conformance-isolate`` its calls run in a worker process)."""
    if _UNDER_TEST not in config.stash:
        raw = resolved_executor(config).executor
        config.stash[_UNDER_TEST] = ExecutorUnderTest(raw, isolate.transport(config, raw))
    return config.stash[_UNDER_TEST]


def executor_spec(config: pytest.Config) -> str:
    return config.getoption("executor") or REFERENCE_SPEC


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not _active(config):
        return []
    lines = _header(config)
    extra = isolate.header(config)
    return lines + ([extra] if extra else [])


# -- collection ---------------------------------------------------------------------------------
@pytest.hookimpl(trylast=True)  # after -k/-m: pick among what is selected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _active(config):
        return
    reporting.mark_spec_rules(items)
    selection.select_ops(config, items, _in_suite)  # --conformance-ops (CONF-130)
    if config.getoption("conformance_smoke"):
        smoke.select(config, items, _in_suite)
    shard.select(config, items)  # CONF-120: after every other selection


def pytest_collection_finish(session: pytest.Session) -> None:
    if _active(session.config):
        reporting.collected(session.config, len(session.items))


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """``--conformance-list`` prints the selection and runs nothing (CONF-132)."""
    if not _active(session.config) or not session.config.getoption("conformance_list"):
        return None
    selection.print_list(session.config, [it for it in session.items if _in_suite(it)])
    return True


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    if _SESSIONS:
        reporting.collected(_SESSIONS[-1], len(ids))


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def executor(request: pytest.FixtureRequest) -> Any:
    """The executor under test (``--executor``; default the reference interpreter), in the
    suite's one call pipeline: its exceptions are told apart from the suite's (CONF-22)."""
    return executor_under_test(request.config)


@pytest.fixture(scope="session")
def reference() -> Any:
    """The reference executor (a fresh ``InterpreterExecutor``)."""
    from interpreter.executor import InterpreterExecutor

    return InterpreterExecutor()


@pytest.fixture
def conformance_artifacts(request: pytest.FixtureRequest) -> Iterator[ArtifactDir]:
    """This test's artifact directory (written on demand; removed if the test passes)."""
    config = request.config
    root = Path(config.invocation_params.dir) / config.getoption("conformance_artifacts")
    ex = executor_under_test(config)
    art = ArtifactDir(root, request.node.nodeid, executor_spec(config),
                      config.invocation_params.dir,
                      placed=ex.placed if ex.on_device is not None else None)  # CONF-76
    request.node.stash[_ARTIFACTS] = art
    yield art
    rep = getattr(request.node, "_conformance_call_report", None)
    if rep is not None and (rep.passed or rep.skipped) and not hasattr(rep, "wasxfail"):
        art.discard()


# -- running ------------------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """The suite's numpy warnings stay inside (CONF-24); executor calls are not silenced;
    slow executor calls are reported (CONF-36)."""
    if not _in_suite(pyfuncitem):
        return (yield)
    reporter = pyfuncitem.config.pluginmanager.get_plugin("terminalreporter")
    notify = None
    if reporter is not None and not hasattr(pyfuncitem.config, "workerinput"):
        def notify(line: str) -> None:
            reporter.write_line(line)  # bypasses capture: seen while the call hangs
    with quiet(), watch_calls(pyfuncitem.nodeid,
                              pyfuncitem.config.getoption("conformance_slow_call"), notify):
        return (yield)


def _verdict(item: pytest.Item, exc: BaseException, suite_error: bool) -> Failure:
    """The structured verdict of a failure no test code gave one (CONF-110)."""
    art = item.stash.get(_ARTIFACTS, None)
    repro = art.repro() if art is not None else None
    if suite_error:  # CONF-22: its own status, message and traceback
        text = suite_error_message(exc, item.nodeid)
        notes = [n for n in getattr(exc, "__notes__", ()) if n not in text]
        return Failure(text, notes=notes, suite_error=True)
    if isinstance(exc, ExecutorRaised) and exc.found_around_the_call:
        return Failure(f"{item.nodeid}: {exc.describe()}", repro=repro)  # CONF-72, CONF-83
    return Failure(str(exc) or type(exc).__name__, repro=repro)  # its message as it is


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    if not _active(item.config):
        return (yield)
    exc = call.excinfo.value if call.excinfo is not None else None
    failed = isinstance(exc, Exception | Failed) and _in_suite(item)
    suite_error = failed and exc is not None and is_suite_error(exc)
    verdict = None
    if failed and exc is not None:  # recorded before the report copies the properties
        if suite_error:
            mark_outcome(item, SUITE_ERROR_OUTCOME)
        if not any(k == "conformance" and isinstance(v, dict) and "failure" in v
                   for k, v in item.user_properties):
            verdict = _verdict(item, exc, suite_error)
            attach(item, failure=verdict.as_dict())
    report_junit.junit_before(item, call.when)
    rep = yield
    if verdict is not None and (suite_error or (isinstance(exc, ExecutorRaised)
                                and exc.found_around_the_call)):
        rep.longrepr = verdict.render()  # no traceback of the suite's
    if rep.when == "call":
        item._conformance_call_report = rep  # type: ignore[attr-defined]
    provisional.apply(item, rep, suite_error)  # CONF-133: before the expectations
    expectations.apply(item, rep)
    report_junit.junit_after(item, rep)
    return rep


def pytest_report_teststatus(report: pytest.TestReport | pytest.CollectReport,
                             config: pytest.Config) -> tuple[str, str, str] | None:
    """A suite error is a failure (exit status, FAILURES section) shown as ``S`` /
    ``SUITE ERROR`` (CONF-22); refusals and deviations have their own status (CONF-5,
    CONF-42). Collection reports carry no properties: left to pytest."""
    if not _active(config) or not isinstance(report, pytest.TestReport):
        return None
    if report.failed and any(key == "conformance" and isinstance(value, dict)
                             and value.get("outcome") == SUITE_ERROR_OUTCOME
                             for key, value in report.user_properties):
        return "failed", "S", "SUITE ERROR"
    return provisional.status(report) or expectations.status(report)


# -- results (on the controller under xdist) ---------------------------------------------------
@pytest.hookimpl(tryfirst=True)  # before junitxml writes the properties (CONF-124)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _SESSIONS[-1] if _SESSIONS else None
    if config is None:
        return
    report_junit.json_properties(config, report)
    _count(config, report)
    shard.record(config, report)
    provisional.add_result(config, report)
    expectations.add_result(config, report)
    reporting.add_result(config, report)


def _count(config: pytest.Config, rep: pytest.TestReport) -> None:
    """Totals of the per-test counts (CONF-32); fed by every report, so xdist runs add up."""
    if rep.when != "call" and not (rep.when == "setup" and not rep.passed):
        return
    counts = config.stash[_COUNTS]
    for key, value in rep.user_properties:
        if key == "conformance" and isinstance(value, dict) and "calls" in value:
            counts["tests"] += 1
            for k in COUNTED:
                counts[k] += int(value.get(k, 0))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    if not _active(config):
        return
    expectations.summary(terminalreporter, config)
    provisional.summary(terminalreporter, config)
    c = config.stash[_COUNTS]
    if c["tests"]:
        terminalreporter.write_line(
            f"eager-conformance: {c['structures']} distinct graph structures (summed per "
            f"test), {c['calls']} executor calls, {c['value_checks']} value checks in "
            f"{c['tests']} differential tests")
