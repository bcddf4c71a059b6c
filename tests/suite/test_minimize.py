"""Failures shrink to their cause (CONF-19, CONF-20): the stored case of a failure is
minimised (graph and values, within a budget), and the first diverging node named for a
graph is upstream of a failing output."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.artifacts import load_case
from conformance.differential import check_case, cone
from conformance.minimize import Budget, in_final_example, minimize
from conformance.strategies import Case, build_random_graph
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import Graph, TensorValue
from interpreter.types import TensorType
from tests.suite.broken_executors import (
    OverflowingSigmoid,
    PatchedInterpreter,
    RoundHalfAwayFromZero,
)
from tests.suite.suite_runner import ROOT, run_suite

F32 = np.float32
REF = InterpreterExecutor()


def _sqrt_high(x: Any) -> Any:
    return (np.sqrt(x) * x.dtype.type(1.5)).astype(x.dtype)


def _exp_one_ulp_low(x: Any) -> Any:
    e = np.exp(x)
    return np.nextafter(e, np.asarray(-np.inf, e.dtype)).astype(x.dtype)


class SqrtWrongExpOneUlpLow(PatchedInterpreter):
    """sqrt is wrong; exp is 1 ULP low (within its tolerance) everywhere."""

    overrides: ClassVar[dict[str, Any]] = {"sqrt": _sqrt_high, "exp": _exp_one_ulp_low}


class SqrtWrongExpWorseAlone(SqrtWrongExpOneUlpLow):
    """As above, but exp is 64 ULP low in a graph of its own (graph-dependent code): its
    local check fails although its output in the full graph is within tolerance."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        outs = super().raw_outputs(graph, inputs)
        if [n.op.name for n in graph.nodes] == ["exp"]:
            o = outs[0]
            outs[0] = (o.view(np.int32) - 63).view(F32)
        return outs


def _exp_sqrt_graph() -> tuple[Graph, list[np.ndarray]]:
    """``exp(x)`` as output 0 (node #0), ``sqrt(y)`` as output 1 (node #1)."""
    t = TensorType(DType.float32, (3,))
    with Graph("two_outputs", input_types=[t, t]) as g:
        x, y = g.inputs
        assert isinstance(x, TensorValue) and isinstance(y, TensorValue)
        g.output(ops.exp(x), ops.sqrt(y))
    return g, [np.array([0.5, 1.0, 2.0], F32), np.array([4.0, 9.0, 2.0], F32)]


@pytest.mark.spec("CONF-20")
@pytest.mark.parametrize("executor", [SqrtWrongExpOneUlpLow, SqrtWrongExpWorseAlone])
def test_first_diverging_node_is_upstream_of_the_failing_output(executor: type) -> None:
    g, inputs = _exp_sqrt_graph()
    v = check_case(Case(g, inputs), executor(), REF)
    assert not v.ok
    outs = g.outputs or []
    assert len(v.failing) == 1 and v.failing[0] is outs[1]  # exp's output is within ulp(2)
    assert v.divergence is not None and v.divergence.index == 1
    assert v.divergence.index in cone(g, v.failing)
    assert "first diverging node: #1 sqrt(" in v.message
    assert "exp(" not in v.message and "#0" not in v.message and "output 0" not in v.message


def _random_failure(executor: Any, op: str, min_nodes: int = 8) -> tuple[Case, Any]:
    """The first random graph (deterministic seeds) with ``op`` on which ``executor``
    fails, with at least ``min_nodes`` nodes."""
    for seed in range(2000):
        case = build_random_graph(seed, 30)
        if len(case.graph.nodes) < min_nodes or all(n.op.name != op for n in case.graph):
            continue
        try:
            v = check_case(case, executor, REF)
        except Exception:
            continue  # another class of problem (not this test's)
        if not v.ok:
            return case, v
    pytest.fail(f"no random graph with {op} fails on {type(executor).__name__}")


def _not_simple(inputs: Sequence[np.ndarray]) -> list[float]:
    """The input elements other than 0 and 1."""
    out: list[float] = []
    for a in inputs:
        f = np.asarray(a).astype(np.float64).reshape(-1)
        out += [float(x) for x in f if not (x == 0 or x == 1)]
    return out


@pytest.mark.spec("CONF-19")
def test_single_nan_failure_in_a_random_graph_minimises_to_one_node() -> None:
    ex = OverflowingSigmoid()
    case, verdict = _random_failure(ex, "sigmoid")
    small = minimize(case, verdict, ex, REF, budget=Budget(seconds=30, calls=2000))
    assert small is not None and not small.exhausted
    g = small.case.graph
    assert [n.op.name for n in g.nodes] == ["sigmoid"], g.to_text()
    assert len(g.inputs) == 1 and len(g.outputs or []) == 1
    assert len(small.case.graph.nodes) < len(case.graph.nodes)
    (needed,) = _not_simple(small.case.inputs)  # one element keeps its value: x > 709
    assert needed > 709
    assert "NaN mismatch: 1" in small.verdict.message and "sigmoid" in small.verdict.message


@pytest.mark.spec("CONF-19")
def test_values_are_replaced_by_zero_and_one_where_the_failure_persists() -> None:
    with Graph("r", input_types=[TensorType(DType.float32, (6,))]) as g:
        (x,) = g.inputs
        assert isinstance(x, TensorValue)
        g.output(ops.round(x))
    case = Case(g, [np.array([0.3, 2.5, -7.25, 3.0, 1.0, 12.5], F32)])
    ex = RoundHalfAwayFromZero()
    v = check_case(case, ex, REF)
    assert not v.ok
    small = minimize(case, v, ex, REF)
    assert small is not None
    # one half-way element is enough: 2.5 goes with the first half, 12.5 stays
    assert small.case.inputs[0].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 12.5]
    assert list(case.inputs[0]) == [0.3, 2.5, -7.25, 3.0, 1.0, 12.5]  # the case is kept
    assert "1 of 6 compared elements differ" in small.verdict.message


class FusedExpSigmoid(PatchedInterpreter):
    """``sigmoid(exp(x))`` is wrong (doubled) when both ops are in the graph (a bad fusion);
    each op alone is right."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        outs = super().raw_outputs(graph, inputs)
        fused = {n.results[0] for n in graph.nodes if n.op.name == "exp"}
        for node in graph.nodes:
            if node.op.name == "sigmoid" and node.operands[0] in fused:
                for k, v in enumerate(graph.outputs or []):
                    if v is node.results[0]:
                        outs[k] = (outs[k] * 2).astype(outs[k].dtype)
        return outs


@pytest.mark.spec("CONF-19")
def test_a_failure_that_needs_two_nodes_keeps_both_and_drops_the_rest() -> None:
    t = TensorType(DType.float32, (4,))
    with Graph("fused", input_types=[t, t, t]) as g:
        x, y, z = g.inputs
        assert isinstance(x, TensorValue) and isinstance(y, TensorValue)
        assert isinstance(z, TensorValue)
        g.output(ops.cos(z), ops.sigmoid(ops.exp(x)), ops.sin(y))
    inputs = [np.array([0.5, -1.0, 2.0, 0.25], F32) for _ in range(3)]
    ex = FusedExpSigmoid()
    v = check_case(Case(g, inputs), ex, REF)
    assert not v.ok and v.divergence is not None and v.divergence.node.startswith("sigmoid")
    small = minimize(Case(g, inputs), v, ex, REF)
    assert small is not None
    sg = small.case.graph
    assert [n.op.name for n in sg.nodes] == ["exp", "sigmoid"], sg.to_text()
    assert len(sg.inputs) == 1 and len(sg.outputs or []) == 1
    assert small.case.inputs[0].tolist() == [0.0, 0.0, 0.0, 0.0]  # any value shows it
    assert check_case(small.case, InterpreterExecutor(), REF).ok


class SlowOverflowingSigmoid(OverflowingSigmoid):
    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        time.sleep(0.02)
        return super().execute(graph, inputs)


@pytest.mark.spec("CONF-19")
@pytest.mark.parametrize("budget", [Budget(seconds=0.2, calls=10_000),
                                    Budget(seconds=60, calls=6)])
def test_minimisation_is_bounded(budget: Budget) -> None:
    ex = SlowOverflowingSigmoid()
    case, verdict = _random_failure(OverflowingSigmoid(), "sigmoid")
    t0 = time.monotonic()
    small = minimize(case, verdict, ex, REF, budget=budget)
    took = time.monotonic() - t0
    # the budget is checked before each candidate: one candidate (two calls here, as the
    # failing output is exact-upstream or found by a short local check) plus the final
    # full check can run past it
    assert took < budget.seconds + 2.0, took
    if small is not None:
        assert small.exhausted
        assert small.calls <= budget.calls + 8 + 2 * len(small.case.graph.nodes), small.calls


@pytest.mark.spec("CONF-19")
def test_only_hypothesis_final_example_is_minimised() -> None:
    """Shrinking runs the failing property many times; only the final replay of the
    shrunk example (or a call outside hypothesis) minimises."""
    seen: list[tuple[int, bool]] = []

    @settings(database=None, derandomize=True, max_examples=50)
    @given(st.integers(0, 1000))
    def prop(n: int) -> None:
        seen.append((n, in_final_example()))
        assert n < 7

    with pytest.raises(AssertionError):
        prop()
    finals = [n for n, final in seen if final]
    assert finals == [7] and seen[-1] == (7, True), seen[-5:]
    assert sum(1 for _, final in seen if not final) > 1  # it did shrink first
    assert in_final_example()


@pytest.mark.spec("CONF-19", "CONF-11")
def test_stored_case_is_minimised_and_its_repro_still_fails(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "OverflowingSigmoid", ["test_graphs.py"], "elementwise")
    assert run.failed(), run.outcomes
    text = run.text()
    assert "minimised from" in text and "original/repro.py" in text, text
    assert run.artifacts is not None
    (d,) = [p.parent for p in run.artifacts.glob("*/original")]
    small, inputs = load_case(d)
    big, _ = load_case(d / "original")
    assert [n.op.name for n in small.nodes] == ["sigmoid"], small.to_text()
    assert len(big.nodes) > 1 and len(_not_simple(inputs)) == 1
    for repro in (d / "repro.py", d / "original" / "repro.py"):
        p = subprocess.run([sys.executable, str(repro)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 1 and "FAIL:" in p.stdout and "sigmoid" in p.stdout, (
            repro, p.stdout[-500:], p.stderr[-500:])
    # turned off: the case is stored as hypothesis left it
    off = run_suite(tmp_path / "off", "OverflowingSigmoid", ["test_graphs.py"],
                    "elementwise", "--conformance-minimize=0")
    assert off.failed() and "minimised from" not in off.text()
    assert off.artifacts is not None and not list(off.artifacts.glob("*/original"))


@pytest.mark.spec("CONF-82", "CONF-19", "CONF-11")
def test_case_where_the_executor_raises_is_minimised(tmp_path: Path) -> None:
    """Minimised while the executor still raises the same exception type: the raising node
    alone, one negative element left; both repro.py still fail with that exception."""
    run = run_suite(tmp_path, "RaisingSigmoid", ["test_graphs.py"], "elementwise")
    assert run.failed(), run.outcomes
    text = run.text()
    assert "the executor raised ValueError" in text and "minimised from" in text, text
    assert run.artifacts is not None
    (d,) = [p.parent for p in run.artifacts.glob("*/original")]
    small, inputs = load_case(d)
    big, _ = load_case(d / "original")
    assert [n.op.name for n in small.nodes] == ["sigmoid"], small.to_text()
    assert len(big.nodes) > 1
    (needed,) = _not_simple(inputs)  # the one negative element the raise needs
    assert needed < 0
    for repro in (d / "repro.py", d / "original" / "repro.py"):
        p = subprocess.run([sys.executable, str(repro)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 1 and "FAIL:" in p.stdout and "ValueError" in p.stdout, (
            repro, p.stdout[-500:], p.stderr[-500:])
