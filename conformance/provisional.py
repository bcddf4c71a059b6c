"""Provisional rules: a new rule that can fail a previously passing executor reports its
failures as *warnings* for one release, with a migration note (CONF-133).

``PROVISIONAL`` is the one place a rule is made provisional. A failing test all of whose
``@pytest.mark.spec`` ids are provisional (and still in their window: the suite's version
below ``fails_from``) ends as *warning*: reported (``W`` / ``WARNING``, the terminal
summary lists each with its rule, first line and migration note, the report's verdict is
``warning``), not failing. A suite error stays an error. Rules that guard against data
loss (``NEVER_PROVISIONAL``: buffers written, stores kept, results fresh, refusals without
side effects) are never provisional.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from . import version as _version
from .outcomes import attach
from .version import version_tuple

__all__ = ["NEVER_PROVISIONAL", "PROVISIONAL", "WARNING", "Provisional", "apply",
           "is_provisional", "status", "summary"]

WARNING = "warning"


@dataclass(frozen=True)
class Provisional:
    since: str  # the release that added the rule
    fails_from: str  # the release from which its failures fail
    migration: str  # what a vendor changes to comply


PROVISIONAL: dict[str, Provisional] = {
    "EXEC-17": Provisional(
        since="0.2.0", fails_from="0.3.0",
        migration="check the inputs before running anything: call "
                  "interpreter.executor.validate_inputs(name, graph, inputs) (raises "
                  "ExecutorInputError on a wrong count, kind, dtype or shape)"),
}

#: rules whose violation loses or corrupts the caller's data: never provisional
NEVER_PROVISIONAL = frozenset({"EXEC-3", "EXEC-5", "EXEC-6", "EXEC-11", "EXEC-12", "MUT-1",
                               "MUT-2", "MUT-5", "MUT-6"})

_WARNINGS = pytest.StashKey[list[dict[str, Any]]]()


def is_provisional(rule: str, version: str | None = None) -> bool:
    """Whether ``rule``'s failures are warnings in the suite release ``version`` (default:
    this suite's, ``conformance.version.__version__``)."""
    version = version or _version.__version__
    p = PROVISIONAL.get(rule)
    return (p is not None and rule not in NEVER_PROVISIONAL
            and version_tuple(version) < version_tuple(p.fails_from))


def _rules(item: pytest.Item) -> list[str]:
    return [str(r) for m in item.iter_markers("spec") for r in m.args]


def apply(item: pytest.Item, rep: pytest.TestReport, suite_error: bool) -> None:
    """A failed call of a test checking only provisional rules becomes a warning."""
    rules = _rules(item)
    if (rep.when != "call" or not rep.failed or suite_error or not rules
            or not all(is_provisional(r) for r in rules)):
        return
    text = rep.longreprtext.strip()
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    notes = {r: PROVISIONAL[r] for r in rules}
    record = {"rules": sorted(notes), "message": first[:500],
              "fails_from": min((p.fails_from for p in notes.values()), key=version_tuple),
              "migration": "; ".join(f"{r}: {p.migration}" for r, p in notes.items())}
    attach(item, outcome=WARNING, warning=record)
    rep.user_properties = [(k, ({**v, "outcome": WARNING, "warning": record}
                                if k == "conformance" and isinstance(v, dict) else v))
                           for k, v in rep.user_properties]
    if not any(k == "conformance" for k, _ in rep.user_properties):
        rep.user_properties.append(("conformance", {"outcome": WARNING, "warning": record}))
    rep.outcome = "passed"
    rep.longrepr = None


def _warning(report: pytest.TestReport) -> dict[str, Any] | None:
    for key, value in getattr(report, "user_properties", ()):
        if key == "conformance" and isinstance(value, dict) and value.get("outcome") == WARNING:
            w = value.get("warning")
            return w if isinstance(w, dict) else {}
    return None


def status(report: pytest.TestReport) -> tuple[str, str, str] | None:
    if report.passed and report.when == "call" and _warning(report) is not None:
        return WARNING, "W", "WARNING"
    return None


def add_result(config: pytest.Config, report: pytest.TestReport) -> None:
    """Collect the warnings (on the controller under xdist)."""
    w = _warning(report) if report.when == "call" else None
    if w is not None:
        config.stash.setdefault(_WARNINGS, []).append({"test": report.nodeid, **w})


def summary(terminalreporter: Any, config: pytest.Config) -> None:
    seen = config.stash.get(_WARNINGS, [])
    if not seen or hasattr(config, "workerinput"):
        return
    tr = terminalreporter
    tr.section("conformance warnings: provisional rules")
    for w in seen:
        tr.write_line(f"WARNING {w['test']} [{', '.join(w.get('rules', []))}]: "
                      f"{w.get('message', '')}")
        tr.write_line(f"  fails from release {w.get('fails_from')}; migration: "
                      f"{w.get('migration', '')}")
    tr.write_line(f"{len(seen)} tests failed only provisional rules: reported as warnings, "
                  "not failures, in this release [CONF-133]")
