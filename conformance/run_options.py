"""The run's options, hypothesis profiles and header lines (CONF-1..3, CONF-33..36).

Read by the plugin (``conformance.plugin``), which registers every hook.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

from .executors import ExecutorSpecError, ResolvedExecutor, relevant_env
from .run_meta import seed_line
from .selection import add_selection_options

__all__ = ["PROFILES", "add_options", "header_lines", "targets_conformance"]

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


def add_options(parser: pytest.Parser) -> None:
    """The suite's command-line options."""
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
    group.addoption("--conformance-shrink-calls", type=int, default=None, metavar="N",
                    help="executor calls a failing test may spend shrinking (hypothesis' "
                         "shrink, minimisation, divergence search, history replays); default "
                         "9x a passing test's calls, so a failing test costs at most 10x")
    group.addoption("--conformance-shrink-structures", type=int, default=None, metavar="N",
                    help="new graph structures (compiles) a failing test may give the "
                         "executor while shrinking; default 9x a passing test's graphs")
    group.addoption("--conformance-db", default=None, metavar="DIR|redis://HOST:PORT/N",
                    help="hypothesis example database for every profile (a directory or a "
                         "Redis URL): failing examples are saved there and replayed first, "
                         "by every run and host sharing it")
    _add_generation_options(group)
    add_selection_options(group)
    _add_shard_options(group)


def _add_shard_options(group: Any) -> None:
    """Splitting a run across CI jobs or machines (CONF-120, CONF-121)."""
    group.addoption("--conformance-shard", default=None, metavar="I/N",
                    help="run only the I-th of N deterministic parts of the selected tests "
                         "(balanced by --conformance-durations when given); merge the "
                         "shards' reports with 'python -m conformance.report merge'")
    group.addoption("--conformance-durations", default=None, metavar="PATH",
                    help="per-test cost file (JSON: node id -> seconds) that balances "
                         "--conformance-shard")
    group.addoption("--conformance-store-durations", default=None, metavar="PATH",
                    help="write (update) the per-test cost file with this run's durations")


def _add_generation_options(group: Any) -> None:
    """Options for compiling executors and long runs (CONF-33, CONF-35, CONF-36,
    CONF-136)."""
    group.addoption("--conformance-max-graphs-per-cell", type=int, default=None,
                    metavar="N", help="at most N distinct graph structures per test (each "
                    "still runs on several input sets): a budget for slow compilers")
    group.addoption("--conformance-batch", type=int, default=None, metavar="N",
                    help="judge up to N independent cases of a cell in one merged graph "
                         "first (default 8; 1 turns batching off)")
    group.addoption("--conformance-smoke", action="store_true", default=False,
                    help="a coarse subset for pre-merge CI: one op cell per op family and "
                         "dtype kind, one random-graph test, few graphs each")
    group.addoption("--conformance-slow-call", type=float, default=60.0, metavar="SECONDS",
                    help="report an executor call running longer than this, with the "
                         "test id (0: off; default 60)")


def targets_conformance(config: pytest.Config, here: Path) -> bool:
    """Whether this run collects the conformance suite (else the plugin stays silent)."""
    opt = config.option
    if getattr(opt, "executor", None) or any(
            getattr(opt, name, None) for name in ("conformance_xfails", "conformance_report",
                                                  "conformance_db", "conformance_ops",
                                                  "conformance_list",
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
        if p == here or here in p.parents or p in here.parents:
            return True
    return False


def header_lines(config: pytest.Config, executor: Callable[[], ResolvedExecutor]) -> list[str]:
    """The pytest header of a run of the suite (CONF-2): ``executor()`` resolves it."""
    try:
        line = f"eager-conformance executor: {executor().describe()}"
    except ExecutorSpecError as e:
        line = f"eager-conformance executor: ERROR {e}"
    env = relevant_env()
    shown = ", ".join(f"{k}={v!r}" for k, v in env.items()) or "(none set)"
    flags = [f"profile {settings.get_current_profile_name()!r}",
             f"artifacts {config.getoption('conformance_artifacts')}"]
    for opt in ("conformance_xfails", "conformance_report", "conformance_timeout",
                "conformance_shard"):
        if config.getoption(opt) is not None:
            flags.append(f"{opt.split('_', 1)[1]} {config.getoption(opt)}")
    for opt in ("conformance_strict", "conformance_isolate"):
        if config.getoption(opt):
            flags.append(opt.split("_", 1)[1])
    return [line, f"eager-conformance: {'; '.join(flags)}", _generation_header(config),
            seed_line(config), f"eager-conformance environment: {shown}"]


def _generation_header(config: pytest.Config) -> str:
    from .strategies import INPUT_SETS

    parts = [f"{INPUT_SETS} input sets per graph"]
    if config.getoption("conformance_max_graphs_per_cell") is not None:
        parts.append(f"at most {config.getoption('conformance_max_graphs_per_cell')} "
                     "graph structures per test")
    batch = config.getoption("conformance_batch")
    if batch is not None:
        parts.append(f"{batch} cases per batch" if batch > 1 else "batching off")
    if config.getoption("conformance_smoke"):
        parts.append("smoke subset")
    slow = config.getoption("conformance_slow_call")
    parts.append(f"slow-call report after {slow:g} s" if slow else "slow-call report off")
    return f"eager-conformance generation: {'; '.join(parts)}"
