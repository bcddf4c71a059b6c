"""Provisional rules report warnings for one release (CONF-133); the suite's and spec's
versions (CONF-134)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import conformance
from conformance import provisional
from conformance.provisional import NEVER_PROVISIONAL, PROVISIONAL, is_provisional
from conformance.version import version_tuple
from interpreter.evaluate import evaluate
from interpreter.executor import InterpreterExecutor
from tests.suite.suite_runner import ROOT, run_suite
from tools.spec import defined_rules

TESTS = ("conformance/test_protocol.py::test_wrong_input_count_raises",
         "conformance/test_protocol.py::test_wrong_input_dtype_or_shape_raises[dtype]")


class TakesAnyInputs(InterpreterExecutor):
    """Runs the graph on whatever it is given (drops extra inputs, keeps any dtype):
    violates EXEC-17 in count (settled with EXEC-7) and dtype (provisional)."""

    def execute(self, graph: Any, inputs: Sequence[Any]) -> list[np.ndarray]:
        return [np.array(o, copy=True) for o in evaluate(graph, list(inputs)[:len(graph.inputs)])]


def _run(tmp_path: Path) -> Any:
    return run_suite(tmp_path, f"{__name__}:TakesAnyInputs", ["test_protocol.py"],
                     "wrong_input")


@pytest.mark.spec("CONF-133", "EXEC-17")
def test_failure_of_a_provisional_rule_is_a_warning(tmp_path: Path) -> None:
    run = _run(tmp_path)
    count, dtype = TESTS
    assert run.outcomes[count] == "failed" and "[EXEC-17]" in run.messages[count]
    assert "DID NOT RAISE" not in run.messages[count]
    assert run.outcomes[dtype] == "passed", run.outcomes
    meta = run.meta[dtype]
    assert meta["outcome"] == "warning"
    w = meta["warning"]
    assert w["rules"] == ["EXEC-17"] and w["fails_from"] == PROVISIONAL["EXEC-17"].fails_from
    assert "dtype float64" in w["message"] and "[EXEC-17]" in w["message"]
    assert "validate_inputs" in w["migration"]
    assert run.code == 1  # the count test still fails the run


@pytest.mark.spec("CONF-133")
def test_after_its_window_the_rule_fails(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conformance.version, "__version__", PROVISIONAL["EXEC-17"].fails_from)
    run = _run(tmp_path)
    assert run.outcomes[TESTS[1]] == "failed"
    assert "[EXEC-17]" in run.messages[TESTS[1]]


@pytest.mark.spec("CONF-133")
def test_the_provisional_list_is_sound() -> None:
    rules = defined_rules()
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert not set(PROVISIONAL) & NEVER_PROVISIONAL
    assert set(NEVER_PROVISIONAL) <= set(rules)
    for rule, p in PROVISIONAL.items():
        assert rule in rules and p.migration
        assert version_tuple(p.since) < version_tuple(p.fails_from)
        assert is_provisional(rule, p.since) and not is_provisional(rule, p.fails_from)
        entry = re.search(rf"^- {re.escape(rule)}\b(.*?)(?=^- |^#|\Z)", changelog, re.S | re.M)
        assert entry is not None, f"{rule} is not in CHANGELOG.md"
        assert "provisional" in entry.group(1) and p.fails_from in entry.group(1), rule
    assert not is_provisional("EXEC-6") and not is_provisional("EXEC-7")
    assert provisional.WARNING == "warning"


@pytest.mark.spec("CONF-134")
def test_versions_are_exposed() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", conformance.__version__)
    assert conformance.SPEC_VERSION == conformance.__version__
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{conformance.__version__}"' in pyproject
