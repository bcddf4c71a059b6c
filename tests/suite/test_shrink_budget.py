"""A failing test's shrinking is bounded (CONF-114..116): executor calls and new structures
within the budget, an early stop said in the message and the report, and the stored repro
of a budget-stopped failure still fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from conformance.artifacts import ArtifactDir, load_case
from conformance.differential import check_case
from conformance.harness import Harness
from conformance.minimize import Budget, minimize
from conformance.pipeline import under_test
from conformance.shrink_budget import SHRINK_FACTOR, ShrinkBudget
from conformance.strategies import INPUT_SETS, Case
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import Graph, TensorValue
from interpreter.types import TensorType
from tests.suite.broken_executors import RoundHalfAwayFromZero
from tests.suite.suite_runner import ROOT, run_suite

REF = InterpreterExecutor()
F32 = np.float32
#: FTZ fails every float32 add cell (subnormal operands are flushed)
CELL = "test_op and add-float32-general and not scatter"


@pytest.mark.spec("CONF-114")
def test_budget_counts_calls_and_new_structures_only() -> None:
    ex = under_test(InterpreterExecutor())
    tally = ex.start_tally()
    tally.calls, tally.structures = 7, {"a", "b"}
    b = ShrinkBudget(calls=3, structures=1)
    b.start(tally)
    assert (b.used_calls(), b.used_structures()) == (0, 0)
    assert b.allows("a", calls=3) and not b.allows("a", calls=4)
    tally.calls += 2
    tally.structures.add("c")  # one new structure: the budget's only one
    assert (b.used_calls(), b.used_structures()) == (2, 1)
    assert b.allows("a") and b.allows("c")  # structures already given cost no compile
    assert not b.allows("d")
    b.add(calls=1, structures=4)  # a replay on a fresh executor
    assert (b.used_calls(), b.used_structures()) == (3, 5) and not b.allows("a")


def _round_case() -> tuple[Graph, list[np.ndarray]]:
    with Graph("r", input_types=[TensorType(DType.float32, (6,))]) as g:
        (x,) = g.inputs
        assert isinstance(x, TensorValue)
        g.output(ops.round(x), ops.negate(x))  # output 1 is right: dropped when affordable
    return g, [np.array([0.3, 2.5, -7.25, 3.0, 1.0, 12.5], F32)]


@pytest.mark.spec("CONF-114", "CONF-19")
def test_minimiser_without_new_structures_shrinks_values_on_the_structure_it_has() -> None:
    """No structure left: no graph candidate is tried (each would be a compile), the value
    step still runs on the graph already given to the executor, and the budget says it
    stopped the minimiser."""
    g, inputs = _round_case()
    ex = under_test(RoundHalfAwayFromZero())
    tally = ex.start_tally()
    v = check_case(Case(g, inputs), ex, REF, locate=False)
    assert not v.ok and tally.structures == {g.structural_hash()}
    b = ShrinkBudget(calls=100, structures=0)
    b.start(tally)
    small = minimize(Case(g, inputs), v, ex, REF, budget=Budget(seconds=60, calls=1000),
                     shrink=b)
    assert small is not None
    assert [n.op.name for n in small.case.graph.nodes] == ["round", "negate"]
    assert tally.structures == {g.structural_hash()}  # nothing new was given
    assert small.case.inputs[0].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 12.5]
    assert b.stopped == ["minimisation", "divergence search"] and small.exhausted
    # the final judgment's search for the first diverging node needed new prefix graphs
    assert "the search for the first diverging node stopped" in small.verdict.message
    # with structures to spend, the graph step isolates the failing node
    ex2 = under_test(RoundHalfAwayFromZero())
    free = minimize(Case(g, inputs), v, ex2, REF, budget=Budget(seconds=60, calls=1000))
    assert free is not None and [n.op.name for n in free.case.graph.nodes] == ["round"]


def _meta(tmp_path: Path, *extra: str) -> tuple[dict, str, Path]:
    run = run_suite(tmp_path, "FlushToZero", ["test_ops.py"], CELL, *extra, shrink=True)
    assert len(run.selected) == 1 and run.failed() == run.selected, run.outcomes
    (test,) = run.selected
    assert run.artifacts is not None
    return run.meta[test], run.messages[test], run.artifacts


def _past_budget(art: Path) -> int:
    """The calls CONF-114 lets run past the budget: hypothesis' final replay of the failing
    example, one judgment of up to ``1 + 2 x nodes`` calls, and the minimiser's final check
    of its case (one call)."""
    (d,) = [p for p in art.iterdir() if p.is_dir()]  # the one failing test's directory
    graph, _ = load_case(d / "original" if (d / "original").exists() else d)
    return 1 + 2 * len(graph.nodes) + 1


@pytest.mark.spec("CONF-114", "CONF-115", "CONF-116", "CONF-11")
def test_budget_stopped_failure_says_so_and_its_repro_still_fails(tmp_path: Path) -> None:
    meta, text, art = _meta(tmp_path, "--conformance-shrink-calls=6",
                            "--conformance-shrink-structures=2")
    assert 0 < meta["shrink_calls"] <= 6 + _past_budget(art), meta
    assert meta["shrink_structures"] <= 2, meta
    assert meta["shrink_stopped"] and meta["calls"] >= meta["shrink_calls"], meta
    assert (f"shrinking: {meta['shrink_calls']} executor calls, "
            f"{meta['shrink_structures']} new graph structures (budget 6 calls, 2 "
            "structures") in text, text
    assert "shrinking stopped early, its budget spent" in text, text
    assert "the repro is the smallest failing case found so far [CONF-114]" in text
    (repro,) = [p for p in art.rglob("repro.py") if p.parent.name not in
                ("original", "divergence", "history")]
    p = subprocess.run([sys.executable, str(repro)], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 1 and "FAIL:" in p.stdout, (p.stdout[-800:], p.stderr[-800:])


@pytest.mark.spec("CONF-115", "CONF-116")
def test_default_budget_is_nine_passing_tests(tmp_path: Path) -> None:
    """A ``ci`` cell generates 5 graphs (20 value checks when it passes): its shrinking
    spends at most 9 x 20 calls and 9 x 5 new structures, plus the step that finishes past
    the budget and the final replay of the reported example."""
    meta, text, art = _meta(tmp_path)
    graphs = 20 // INPUT_SETS
    calls, structures = SHRINK_FACTOR * graphs * INPUT_SETS, SHRINK_FACTOR * graphs
    assert f"(budget {calls} calls, {structures} structures" in text, text
    assert meta["shrink_calls"] <= calls + _past_budget(art), meta
    assert meta["shrink_structures"] <= structures, meta


@pytest.mark.spec("CONF-115")
def test_zero_budget_reports_the_first_failing_example(tmp_path: Path) -> None:
    meta, text, art = _meta(tmp_path, "--conformance-shrink-calls=0")
    assert "minimised from" not in text and "shrinking stopped early" in text, text
    assert not list(art.glob("*/original"))
    # only the replays of the failing example judged it again
    assert meta["shrink_calls"] <= _past_budget(art), meta


class _RefusesNegate(InterpreterExecutor):
    def execute(self, graph: Graph, inputs: Any) -> list[Any]:
        if any(n.op.name == "negate" for n in graph.nodes):
            raise UnsupportedGraphError("negate: not supported here")
        return super().execute(graph, inputs)


def _one_op(op: Any, name: str) -> Case:
    with Graph(name, input_types=[TensorType(DType.float32, (3,))]) as g:
        g.output(op(g.inputs[0]))
    return Case(g, [np.array([0.5, -1.0, 2.0], F32)])


@pytest.mark.spec("CONF-114")
def test_a_replayed_example_keeps_its_outcome_whatever_the_budget(tmp_path: Path) -> None:
    """Hypothesis may run an example again while it shrinks (a cache miss): an example
    judged passing passes again and one rejected (here refused) is rejected again, without
    a call, even with the budget spent; rejecting the passing one would be a FlakyFailure
    ("last: VALID, this: INVALID") reported instead of the executor's failure."""
    node = SimpleNamespace(user_properties=[], nodeid="tests::replay")
    art = ArtifactDir(tmp_path / "art", "tests::replay", "x:Y", ROOT)
    h = Harness(SimpleNamespace(node=node), _RefusesNegate(), REF, art, "replay")
    passing, refused = _one_op(ops.exp, "e"), _one_op(ops.negate, "n")
    seen: list[int] = []

    @settings(max_examples=1, database=None)
    @given(st.just(0))
    def shrink_phase(_: int) -> None:
        assert h.check(passing).ok
        with pytest.raises(UnsatisfiedAssumption):
            h.check(refused)
        h.shrink = ShrinkBudget(calls=0, structures=0)
        h.shrink.start(h.tally)  # a failure elsewhere: shrinking, nothing left to spend
        calls = h.tally.calls
        assert h.check(passing).ok
        with pytest.raises(UnsatisfiedAssumption):
            h.check(refused)
        seen.append(h.tally.calls - calls)

    shrink_phase()
    assert seen == [0] and h.examples == 1 and h.refusals == 1
