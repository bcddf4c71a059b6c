"""pytest plugin of the conformance suite (entry point ``pytest11: eager_conformance``).

Loaded in every pytest run of an environment where the package is installed, so it is inert
unless the run targets the suite (a path inside ``conformance/``, ``--pyargs conformance``,
or an explicit ``--executor``): it then resolves the executor (CONF-1), prints it with its
version and the relevant environment in the header (CONF-2), loads the hypothesis profile
(CONF-3: ``dev`` unless ``--hypothesis-profile`` says otherwise, whatever ``CI`` is) and
registers the expectation/report/isolation plugins that live next to it.

Fixtures: ``executor`` (the executor under test, session-wide), ``reference`` (an
``InterpreterExecutor``), ``conformance_artifacts`` (the test's :class:`ArtifactDir`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from .artifacts import ArtifactDir
from .calls import (
    BlamedExecutor,
    ExecutorRaised,
    is_suite_error,
    quiet,
    suite_error_message,
    watch_calls,
)
from .devices import DeviceProtocolError, OnDevice
from .executors import REFERENCE_SPEC, ExecutorSpecError, ResolvedExecutor, relevant_env, resolve
from .outcomes import SUITE_ERROR_OUTCOME, mark_outcome, pop_strict, push_strict
from .unchanged import GraphChangedError

__all__ = ["PROFILES", "executor", "reference"]

_HERE = Path(__file__).resolve().parent
_RESOLVED = pytest.StashKey[ResolvedExecutor]()
_ACTIVE = pytest.StashKey[bool]()
_PREVIOUS = pytest.StashKey[tuple[str | None, Any]]()
#: sibling modules that are themselves pytest plugins (registered when importable)
_PLUGINS = ("expectations", "report", "isolate")

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
             HealthCheck.function_scoped_fixture]
#: Hypothesis profiles (CONF-3). No deadline anywhere: first executor calls may compile.
PROFILES: dict[str, dict[str, Any]] = {
    "dev": {"max_examples": 10, "deadline": None, "suppress_health_check": _SUPPRESS,
            "report_multiple_bugs": False},
    "ci": {"max_examples": 20, "deadline": None, "derandomize": True, "database": None,
           "print_blob": True, "suppress_health_check": _SUPPRESS,
           "report_multiple_bugs": False},
    "thorough": {"max_examples": 200, "deadline": None, "suppress_health_check": _SUPPRESS,
                 "report_multiple_bugs": False,
                 "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target,
                            Phase.shrink]},
}

# ``dev`` and ``thorough`` are new names: registering them changes nothing until loaded.
for _name in ("dev", "thorough"):
    settings.register_profile(_name, **PROFILES[_name])


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("eager-conformance", "conformance suite (pytest conformance/)")
    group.addoption("--executor", default=None, metavar="MODULE:ATTR",
                    help="executor under test: module:Class, module:factory or "
                         "module:attr.path, built with no arguments (default: the "
                         "reference interpreter)")
    group.addoption("--conformance-artifacts", default=".conformance", metavar="DIR",
                    help="where failing tests write graph.txt, inputs.npz, expected/actual "
                         "and repro.py (default: .conformance/)")
    group.addoption("--conformance-xfails", default=None, metavar="FILE",
                    help="TOML file of expected failures")
    group.addoption("--conformance-strict", action="store_true", default=False,
                    help="report refusals (UnsupportedGraphError) as failures")
    group.addoption("--conformance-report", default=None, metavar="PATH",
                    help="write the JSON report to PATH and the HTML page next to it")
    group.addoption("--conformance-isolate", action="store_true", default=False,
                    help="run every executor call in a child process (crash containment)")
    group.addoption("--conformance-timeout", type=float, default=None, metavar="SECONDS",
                    help="kill an executor call running longer than this (with "
                         "--conformance-isolate; default 60)")
    group.addoption("--conformance-minimize", type=float, default=5.0, metavar="SECONDS",
                    help="time to minimise each stored failing case (graph and values; "
                         "0 turns it off; default 5)")


    _add_generation_options(group)


def _add_generation_options(group: Any) -> None:
    """Options for compiling executors and long runs (CONF-33, CONF-35, CONF-36)."""
    group.addoption("--conformance-max-graphs-per-cell", type=int, default=None,
                    metavar="N", help="at most N distinct graph structures per test (each "
                    "still runs on several input sets): a budget for slow compilers")
    group.addoption("--conformance-smoke", action="store_true", default=False,
                    help="a coarse subset for pre-merge CI: one op cell per op family and "
                         "dtype kind, one random-graph test, few graphs each")
    group.addoption("--conformance-slow-call", type=float, default=60.0, metavar="SECONDS",
                    help="report an executor call running longer than this, with the "
                         "test id (0: off; default 60)")


def targets_conformance(config: pytest.Config) -> bool:
    """Whether this run collects the conformance suite (else the plugin stays silent)."""
    opt = config.option
    if getattr(opt, "executor", None) or any(
            getattr(opt, name, None) for name in ("conformance_xfails", "conformance_report",
                                                  "conformance_isolate",
                                                  "conformance_strict",
                                                  "conformance_smoke")):
        return True
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        target = str(arg).split("::", 1)[0]
        if getattr(opt, "pyargs", False) and target.split(".")[0] == "conformance":
            return True
        try:
            p = (base / target).resolve()
        except OSError:
            continue
        if p == _HERE or _HERE in p.parents or p in _HERE.parents:
            return True
    return False


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    active = targets_conformance(config)
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
    spec = config.getoption("executor")
    if spec:
        try:
            config.stash[_RESOLVED] = resolve(spec)
        except ExecutorSpecError as e:
            raise pytest.UsageError(str(e)) from None
    config.pluginmanager.register(RunCounts(), "eager_conformance_counts")
    for name in _PLUGINS:
        modname = f"{__package__}.{name}"
        if config.pluginmanager.has_plugin(modname):
            continue
        if importlib.util.find_spec(modname) is None:
            continue
        module = importlib.import_module(modname)
        if not config.pluginmanager.is_registered(module):
            config.pluginmanager.register(module, modname)


def pytest_unconfigure(config: pytest.Config) -> None:
    pop_strict()
    previous = config.stash.get(_PREVIOUS, None)
    if previous is not None:
        name, ci = previous
        settings.register_profile("ci", ci)
        if name is not None:
            settings.load_profile(name)


def resolved_executor(config: pytest.Config) -> ResolvedExecutor:
    """The executor under test for this run (resolved once per session)."""
    if _RESOLVED not in config.stash:
        config.stash[_RESOLVED] = resolve(config.getoption("executor"))
    return config.stash[_RESOLVED]


def executor_spec(config: pytest.Config) -> str:
    return config.getoption("executor") or REFERENCE_SPEC


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not config.stash.get(_ACTIVE, False):
        return []
    try:
        r = resolved_executor(config)
        line = f"eager-conformance executor: {r.describe()}"
    except ExecutorSpecError as e:
        line = f"eager-conformance executor: ERROR {e}"
    env = relevant_env()
    shown = ", ".join(f"{k}={v!r}" for k, v in env.items()) or "(none set)"
    flags = [f"profile {settings.get_current_profile_name()!r}",
             f"artifacts {config.getoption('conformance_artifacts')}"]
    for opt in ("conformance_xfails", "conformance_report", "conformance_timeout"):
        if config.getoption(opt) is not None:
            flags.append(f"{opt.split('_', 1)[1]} {config.getoption(opt)}")
    for opt in ("conformance_strict", "conformance_isolate"):
        if config.getoption(opt):
            flags.append(opt.split("_", 1)[1])
    return [line, f"eager-conformance: {'; '.join(flags)}", _generation_header(config),
            f"eager-conformance environment: {shown}"]


def _generation_header(config: pytest.Config) -> str:
    from .strategies import INPUT_SETS

    parts = [f"{INPUT_SETS} input sets per graph"]
    if config.getoption("conformance_max_graphs_per_cell") is not None:
        parts.append(f"at most {config.getoption('conformance_max_graphs_per_cell')} "
                     "graph structures per test")
    if config.getoption("conformance_smoke"):
        parts.append("smoke subset")
    slow = config.getoption("conformance_slow_call")
    parts.append(f"slow-call report after {slow:g} s" if slow else "slow-call report off")
    return f"eager-conformance generation: {'; '.join(parts)}"


class RunCounts:
    """Totals of the per-test ``structures``/``calls``/``value_checks`` metadata, shown in
    the terminal summary (CONF-32); fed by every report, so xdist runs add up too."""

    KEYS = ("structures", "calls", "value_checks")

    def __init__(self) -> None:
        self.totals = dict.fromkeys(self.KEYS, 0)
        self.tests = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        for key, value in report.user_properties:
            if key == "conformance" and isinstance(value, dict) and "calls" in value:
                self.tests += 1
                for k in self.KEYS:
                    self.totals[k] += int(value.get(k, 0))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tests:
            return
        t = self.totals
        terminalreporter.write_line(
            f"eager-conformance: {t['structures']} distinct graph structures (summed per "
            f"test), {t['calls']} executor calls, {t['value_checks']} value checks in "
            f"{self.tests} differential tests")


_DROP = ("drop",)


def _smoke_op_key(item: pytest.Item) -> tuple[Any, ...] | None:
    """CONF-100: the per-op key of a ``test_op`` cell: one float32 cell and one integer
    cell (int32 first) per op; an op with neither keeps one cell of another dtype."""
    if getattr(item, "originalname", "") != "test_op":
        return None
    params = getattr(getattr(item, "callspec", None), "params", {})
    d = params["dtype"]
    kind = "float32" if d.value == "float32" else "int" if d.is_integral() else "other"
    return ("op-dtype", params["op_name"], kind)


def _smoke_rank(item: pytest.Item) -> tuple[int, int]:
    params = getattr(getattr(item, "callspec", None), "params", {})
    order = {"general": 0, "broadcast": 1, "scalar": 2, "empty": 3}
    d = params.get("dtype")
    prefer = 0 if getattr(d, "value", None) in ("float32", "int32") else 1
    return order.get(str(params.get("shape_class")), 4), prefer


def _smoke_key(item: pytest.Item) -> tuple[Any, ...] | None:
    """What a smoke run keeps one test of (None: keep every such test; ``_DROP``: none)."""
    from interpreter.registry import REGISTRY

    params = getattr(getattr(item, "callspec", None), "params", {})
    name = getattr(item, "originalname", "")
    if name == "test_op":
        d = params["dtype"]
        kind = ("bool" if d.value == "bool" else "float8" if d.is_float8() else "float"
                if d.is_float() else "signed" if d.is_signed() else "unsigned")
        return ("op", REGISTRY[params["op_name"]].category, kind)
    if name in ("test_special_sweep", "test_special_sweep_not_covered"):
        return None  # every sweep (CONF-100)
    if name == "test_graph":  # mixed-0 only
        return ("graph",) if (params["family"], params["chunk"]) == ("mixed", 0) else _DROP
    if name == "test_state_sequence":  # CONF-93: the smoke families of the state tests
        from .sequences import SMOKE_FAMILIES

        return ("state", params["family"]) if params["family"] in SMOKE_FAMILIES else _DROP
    if params.get("op_name") in REGISTRY:  # other per-op families: one per op family
        return (name, REGISTRY[params["op_name"]].category)
    return None


@pytest.hookimpl(trylast=True)  # after -k/-m: pick among what is selected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--conformance-smoke`` (CONF-35): one ``test_op`` cell per (op family, dtype kind),
    plus one float32 and one integer cell per op (CONF-100), ``general`` shape class first,
    every special-value sweep, one random-graph test, one test per op family of the other
    per-op families; the rest is deselected."""
    if not config.stash.get(_ACTIVE, False) or not config.getoption("conformance_smoke"):
        return
    ranked = sorted(items, key=_smoke_rank)
    keep: set[int] = set()
    seen: set[tuple[Any, ...]] = set()
    others: dict[tuple[str, str], int] = {}  # an op's cells of other dtypes (CONF-100)
    for item in ranked:
        key = _smoke_key(item) if _in_suite(item) else None
        op_key = _smoke_op_key(item) if _in_suite(item) else None
        if key is None or (key not in seen and key is not _DROP) or (
                op_key is not None and op_key[2] != "other" and op_key not in seen):
            keep.add(id(item))
            seen.update(k for k in (key, op_key) if k is not None)
        elif op_key is not None and op_key[2] == "other":
            others.setdefault(op_key[:2], id(item))
    covered = {k[:2] for k in seen if k[0] == "op-dtype"}
    keep.update(i for k, i in others.items() if k not in covered)
    dropped = [it for it in items if id(it) not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for it in items if id(it) in keep]


@pytest.fixture(scope="session")
def executor(request: pytest.FixtureRequest) -> Any:
    """The executor under test (``--executor``; default the reference interpreter)."""
    ex = resolved_executor(request.config).executor
    if importlib.util.find_spec(f"{__package__}.isolate") is not None:
        isolate = importlib.import_module(f"{__package__}.isolate")
        wrap = getattr(isolate, "wrap_executor", None)
        if wrap is not None:
            ex = wrap(request.config, ex)
    return BlamedExecutor(ex)  # its exceptions are told apart from the suite's (CONF-22)


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
    ex = resolved_executor(config).executor
    art = ArtifactDir(root, request.node.nodeid, executor_spec(config),
                      config.invocation_params.dir,
                      placed=ex.placed if isinstance(ex, OnDevice) else None)  # CONF-76
    yield art
    rep = getattr(request.node, "_conformance_call_report", None)
    if rep is not None and (rep.passed or rep.skipped) and not hasattr(rep, "wasxfail"):
        art.discard()


def _in_suite(item: pytest.Item) -> bool:
    return bool(item.config.stash.get(_ACTIVE, False)) and _HERE in Path(item.path).parents


def pytest_report_teststatus(report: pytest.TestReport | pytest.CollectReport,
                             config: pytest.Config) -> tuple[str, str, str] | None:
    """A suite error is a failure (exit status, FAILURES section) shown as ``S`` /
    ``SUITE ERROR`` (CONF-22). Collection reports carry no properties: left to pytest."""
    if report.failed and any(key == "conformance" and isinstance(value, dict)
                             and value.get("outcome") == SUITE_ERROR_OUTCOME
                             for key, value in getattr(report, "user_properties", ())):
        return "failed", "S", "SUITE ERROR"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    """The suite's numpy warnings stay inside (CONF-24); executor calls are not silenced."""
    if not _in_suite(pyfuncitem):
        return (yield)
    with quiet(), _watch(pyfuncitem):
        return (yield)


def _watch(item: pytest.Item) -> Any:
    """Slow executor calls of this test are reported (CONF-36)."""
    reporter = item.config.pluginmanager.get_plugin("terminalreporter")
    notify = None
    if reporter is not None and not hasattr(item.config, "workerinput"):
        def notify(line: str) -> None:
            reporter.write_line(line)  # bypasses capture: seen while the call hangs
    return watch_calls(item.nodeid, item.config.getoption("conformance_slow_call"), notify)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    exc = call.excinfo.value if call.excinfo is not None else None
    suite_error = exc is not None and _in_suite(item) and is_suite_error(exc)
    if suite_error:
        mark_outcome(item, SUITE_ERROR_OUTCOME)  # before the report copies the properties
    rep = yield
    if suite_error and exc is not None:  # CONF-22: its own status, message and traceback
        text = suite_error_message(exc, item.nodeid)
        notes = [n for n in getattr(exc, "__notes__", ()) if n not in text]
        rep.longrepr = "\n".join([text, *notes])
    elif isinstance(exc, ExecutorRaised) and isinstance(exc.original, DeviceProtocolError
                                                        | GraphChangedError):
        rep.longrepr = f"{item.nodeid}: {exc.describe()}"  # CONF-72, CONF-83: no traceback
    if rep.when == "call":
        item._conformance_call_report = rep  # type: ignore[attr-defined]
    return rep
