"""JUnit XML of the conformance report (CONF-64, CONF-124).

Under pytest's ``--junitxml`` every test case carries the flat properties ``op``,
``dtype``, ``shape_class``, ``outcome``, ``diagnosis``, ``failing_rules`` and ``repro``;
the structured ``conformance`` and ``conformance_spec`` properties are written as JSON
(pytest writes ``str(value)``: the value is handed to it as a dict or list whose ``str``
is its JSON). ``conformance.report_merge.write_junit`` writes the same from a report's
results, for the merge of shards (``python -m conformance.report merge ... --junit PATH``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .report import SPEC_PROP, record_of
from .report_merge import junit_properties

__all__ = ["json_properties", "junit_after", "junit_before"]

_STRUCTURED = ("conformance", SPEC_PROP)


class _JsonDict(dict[str, Any]):
    def __str__(self) -> str:
        return json.dumps(self, default=str, sort_keys=True)


class _JsonList(list[Any]):
    def __str__(self) -> str:
        return json.dumps(self, default=str)


def json_properties(config: pytest.Config, report: pytest.TestReport) -> None:
    """Make the structured properties of ``report`` print as JSON in the JUnit file (on the
    process that writes it; a worker's report is shipped as it is)."""
    if not config.getoption("xmlpath", None) or hasattr(config, "workerinput"):
        return
    props = report.user_properties
    for i, (key, value) in enumerate(props):
        if key in _STRUCTURED and type(value) is dict:
            props[i] = (key, _JsonDict(value))
        elif key in _STRUCTURED and isinstance(value, list | tuple):
            props[i] = (key, _JsonList(value))


_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


def junit_before(item: pytest.Item, when: str) -> None:
    """Before the teardown report copies the properties: the flat JUnit properties of the
    test's first failing (or call) report."""
    if when == "teardown" and item.config.getoption("xmlpath", None):
        first = item.stash.get(_CALL_REPORT, None)
        if first is not None:
            _add_junit_properties(item, first)


def junit_after(item: pytest.Item, rep: pytest.TestReport) -> None:
    if item.config.getoption("xmlpath", None) and rep.when != "teardown" and (
            rep.when == "call" or not rep.passed):
        item.stash[_CALL_REPORT] = rep


def _add_junit_properties(item: pytest.Item, rep: pytest.TestReport) -> None:
    """Flat ``op``/``dtype``/``shape_class``/``outcome``/``diagnosis``/``repro`` properties
    (junitxml writes the teardown report's ``user_properties``)."""
    for key, value in junit_properties(record_of(rep)).items():
        item.user_properties.append((key, value))
