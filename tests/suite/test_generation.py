"""Compile-aware generation and long-run controls of the conformance suite (CONF-30..36):
several input sets per graph, shape buckets, structure/call counts, the graph budget,
the smoke subset, the refusal stop and slow-call reports.

Suite runs are in-process (``pytest.main``, ``ci`` profile) on the small executors of
``tests/suite/vendor_executors.py``, with a ``-k`` selection of a few cells.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies import (
    INPUT_SETS,
    SIDE_BUCKETS,
    Case,
    build_random_graph,
    single_op_calls,
)
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.registry import REGISTRY
from tests.suite import suite_runner as runner
from tests.suite.suite_runner import SuiteRun

VENDOR = "tests.suite.vendor_executors"


def run_suite(tmp_path: Path, executor: str, files: list[str], k: str | None,
              *extra: str) -> SuiteRun:
    """The shared in-process runner on an executor of ``tests/suite/vendor_executors.py``."""
    return runner.run_suite(tmp_path, f"{VENDOR}:{executor}", files, k, *extra,
                            quiet_warnings=False)


# -- CONF-30/31: input sets and shape buckets -----------------------------------------------
@pytest.mark.spec("CONF-30")
@settings(max_examples=15, deadline=None, database=None)
@given(case=single_op_calls(REGISTRY["add"], DType.float32, "general"))
def test_extra_input_sets_share_the_graph(case: Case) -> None:
    assert len(case.extra_inputs) == INPUT_SETS - 1
    types = [(a.dtype, a.shape) for a in case.inputs]
    for inputs in case.extra_inputs:
        assert [(a.dtype, a.shape) for a in inputs] == types
        ref = InterpreterExecutor().execute(case.graph, [np.copy(a) for a in inputs])
        assert ref[0].shape == np.broadcast_shapes(*(a.shape for a in inputs))
    firsts = {a.tobytes() for a in (s[0] for s in [case.inputs, *case.extra_inputs])}
    if case.inputs[0].size:
        assert len(firsts) > 1  # fresh values, not copies


@pytest.mark.spec("CONF-30")
def test_random_graph_input_sets_keep_structure() -> None:
    with_sets = 0
    for seed in range(6):
        case = build_random_graph(seed, 12, input_sets=INPUT_SETS)
        plain = build_random_graph(seed, 12)
        assert case.graph.structural_hash() == plain.graph.structural_hash()
        for inputs in case.extra_inputs:
            assert [(a.dtype, a.shape) for a in inputs] == \
                [(a.dtype, a.shape) for a in case.inputs]
        with_sets += len(case.extra_inputs) == INPUT_SETS - 1
    assert with_sets >= 3


@pytest.mark.spec("CONF-31")
@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data())
def test_shapes_come_from_buckets(data: Any) -> None:
    op = REGISTRY[data.draw(st.sampled_from(["add", "exp", "reduce_sum", "mul"]))]
    case = data.draw(single_op_calls(op, DType.float32, "general"))
    for a in case.inputs:
        assert set(a.shape) <= set(SIDE_BUCKETS), a.shape


# -- CONF-30/32/33: counts and the graph budget ----------------------------------------------
CELLS = "[add-float32-general or exp-float16-broadcast"


@pytest.mark.spec("CONF-30", "CONF-32", "CONF-136")
def test_cells_count_structures_calls_and_value_checks(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    run = run_suite(tmp_path, "SlowCompiler", ["test_ops.py"], CELLS)
    assert run.code == pytest.ExitCode.OK and len(run.meta) == 2, run.outcomes
    for node, meta in run.meta.items():
        # ci: max_examples 20 -> 5 graphs x 4 input sets, judged in one merged graph on
        # 4 merged input sets (CONF-136)
        assert meta["value_checks"] == 20, (node, meta)
        assert meta["calls"] == 4, (node, meta)
        assert meta["structures"] == 1, (node, meta)
    out = capsys.readouterr().out
    total = sum(m["structures"] for m in run.meta.values())
    assert f"eager-conformance: {total} distinct graph structures" in out
    assert "8 executor calls, 40 value checks in 2 differential tests" in out


@pytest.mark.spec("CONF-33")
def test_graph_budget_bounds_structures(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "SlowCompiler", ["test_ops.py"], CELLS,
                    "--conformance-max-graphs-per-cell=1")
    assert run.code == pytest.ExitCode.OK and len(run.meta) == 2, run.outcomes
    for node, meta in run.meta.items():
        assert meta["structures"] == 1, (node, meta)
        assert meta["value_checks"] >= INPUT_SETS, (node, meta)


# -- CONF-34: refusal stop -----------------------------------------------------------------
@pytest.mark.spec("CONF-34", "CONF-5")
def test_refused_cell_stops_after_a_few_calls(tmp_path: Path) -> None:
    from tests.suite.vendor_executors import RefusesEverything

    RefusesEverything.calls = 0
    run = run_suite(tmp_path, "RefusesEverything", ["test_ops.py", "test_graphs.py"],
                    "[add-float32-general or test_graph and elementwise-unary")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    assert len(run.outcomes) == 2 and set(run.outcomes.values()) == {"skipped"}, run.outcomes
    for node, text in run.messages.items():
        assert "REFUSED:" in text and "stopped after 5 consecutive refusals" in text, text
        assert run.meta[node]["calls"] <= 5, run.meta[node]
    assert RefusesEverything.calls <= 10


# -- CONF-35: smoke subset -----------------------------------------------------------------
@pytest.mark.spec("CONF-35")
def test_smoke_selects_one_cell_per_family_and_dtype_kind(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "SlowCompiler", ["test_ops.py", "test_graphs.py"],
                    "test_op and (float32 or int8) or test_graph", "--conformance-smoke",
                    "--collect-only")
    ops = [n for n in run.selected if "::test_op[" in n]
    graphs = [n for n in run.selected if "::test_graph[" in n]
    assert graphs == ["conformance/test_graphs.py::test_graph[mixed-0]"], graphs
    kinds: dict[tuple[str, str], list[str]] = {}
    for n in ops:
        name, dtype = n.split("[", 1)[1].rstrip("]").split("-")[:2]
        kind = "float" if dtype.startswith("float") else dtype[:4]  # uint / int8
        kinds.setdefault((REGISTRY[name].category, kind), []).append(n)
    categories = {REGISTRY[n].category for n in REGISTRY if REGISTRY[n].sample is not None}
    assert len(kinds) >= len(categories), kinds  # every (family, dtype kind) is there
    # CONF-100: beyond those, only one float32 and one integer cell per op
    per_op: dict[tuple[str, str], list[str]] = {}
    for n in ops:
        name, dtype = n.split("[", 1)[1].rstrip("]").split("-")[:2]
        per_op.setdefault((name, "float32" if dtype == "float32" else dtype[:4]), []).append(n)
    assert all(len(v) <= 2 for v in per_op.values()), per_op


@pytest.mark.spec("CONF-100", "CONF-98")
def test_smoke_keeps_float32_and_integer_cells_of_every_op_and_every_sweep(
        tmp_path: Path) -> None:
    run = run_suite(tmp_path, "SlowCompiler", ["test_ops.py", "test_specials.py"], None,
                    "--conformance-smoke", "--collect-only")
    cells = [n.split("[", 1)[1].rstrip("]") for n in run.selected if "::test_op[" in n]
    sweeps = [n for n in run.selected if "::test_special_sweep[" in n]
    from conformance.sweeps import sweep_cells

    assert len(sweeps) == len(sweep_cells()) > 800, len(sweeps)
    for name, op in REGISTRY.items():
        if op.sample is None:
            continue
        mine = [c for c in cells if c.split("-")[0] == name]
        assert mine, name
        if DType.float32 in op.data_dtypes:
            assert any(c.startswith(f"{name}-float32-") for c in mine), (name, mine)
        if any(d.is_integral() for d in op.data_dtypes):
            assert any(c.split("-")[1].startswith(("int", "uint")) for c in mine), (name, mine)
        if DType.int32 in op.data_dtypes:
            assert any(c.startswith(f"{name}-int32-") for c in mine), (name, mine)


@pytest.mark.spec("CONF-151", "CONF-150")
def test_smoke_keeps_float32_signed_and_unsigned_tier_cells_of_every_elementwise_op(
        tmp_path: Path) -> None:
    from conformance.test_reach import tier_ops

    run = run_suite(tmp_path, "SlowCompiler", ["test_reach.py"], "test_op_tier",
                    "--conformance-smoke", "--collect-only")
    cells = [n.split("[", 1)[1].rstrip("]") for n in run.selected if "::test_op_tier[" in n]
    casts = len(REGISTRY["cast"].data_dtypes)
    assert len(cells) == len(set(cells)) <= 3 * len(tier_ops()) + casts, cells
    for name in tier_ops():
        op = REGISTRY[name]
        mine = [c.split("-", 1)[1] for c in cells if c.split("-", 1)[0] == name]
        if name == "cast":  # every source dtype
            assert sorted(mine) == sorted(d.value for d in op.data_dtypes), mine
            continue
        assert 1 <= len(mine) <= 3, (name, mine)
        if DType.float32 in op.data_dtypes:
            assert "float32" in mine, (name, mine)
        if DType.int32 in op.data_dtypes:
            assert "int32" in mine, (name, mine)
        elif any(d.is_integral() and not d.is_unsigned() for d in op.data_dtypes):
            assert any(DType(d).is_integral() and not DType(d).is_unsigned()
                       for d in mine), (name, mine)
        unsigned = sorted((d for d in op.data_dtypes if d.is_unsigned()),
                          key=lambda d: d.size_in_bytes)
        assert [d for d in mine if DType(d).is_unsigned()] == [
            d.value for d in unsigned[-1:]], (name, mine)


@pytest.mark.spec("CONF-35")
def test_smoke_runs_few_graphs(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "SlowCompiler", ["test_ops.py"], "[add-float32",
                    "--conformance-smoke")
    assert run.code == pytest.ExitCode.OK and len(run.meta) == 1, run.outcomes
    (meta,) = run.meta.values()
    assert meta["shape_class"] == "general"
    assert meta["value_checks"] == 2 * INPUT_SETS and meta["structures"] <= 2, meta


# -- CONF-36: slow calls -------------------------------------------------------------------
@pytest.mark.spec("CONF-36")
def test_slow_call_is_reported_with_test_id(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    run = run_suite(tmp_path, "SlowCalls", ["test_ops.py"], "[add-float32-general",
                    "--conformance-slow-call=0.01", "-W", "always::UserWarning")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    out = capsys.readouterr().out
    node = "test_op[add-float32-general]"
    assert "SlowCallWarning" in out and node in out and "one executor call took" in out, out
    assert "an executor call has been running for" in out, out  # seen while it runs


@pytest.mark.spec("CONF-36")
def test_slow_call_report_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_suite(tmp_path, "SlowCalls", ["test_ops.py"], "[add-float32-general",
                    "--conformance-slow-call=0", "-W", "always::UserWarning")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    assert "SlowCallWarning" not in capsys.readouterr().out


def test_slow_compiler_pays_once_per_structure() -> None:
    from tests.suite.vendor_executors import SlowCompiler

    ex = SlowCompiler()
    case = build_random_graph(3, 5)
    for _ in range(3):
        ex.execute(case.graph, [np.copy(a) for a in case.inputs])
    assert ex.calls == 3 and len(ex.compiled) == 1
