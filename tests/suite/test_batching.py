"""Batched cells (CONF-136): a cell's cases judged in merged graphs, failures case by case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conformance.batching import BATCH_ELEMENTS, batches, merge_cases, merged_input_sets
from conformance.strategies import Case, case_from_call
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, TensorType, ops
from interpreter.registry import REGISTRY
from interpreter.registry.core import OpCall
from interpreter.types import DeviceRef
from tests.suite import suite_runner as runner

CPU = DeviceRef.CPU()


def _add_case(shape: tuple[int, ...], value: float) -> Case:
    a = np.full(shape, value, np.float32)
    b = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return case_from_call(REGISTRY["add"], OpCall([a, b]))


@pytest.mark.spec("CONF-136")
def test_side_by_side_graph_computes_each_part_on_its_own_inputs() -> None:
    parts = [_add_case((2,), 1.0), _add_case((3,), 10.0)]
    with Graph("neg", [TensorType(DType.int32, (2, 2), CPU)]) as g:
        g.output(ops.negate(g.inputs[0]))
    parts.append(Case(g, [np.array([[1, -2], [3, 4]], np.int32)]))
    merged = merge_cases(parts, name="batch")
    assert [t.shape for t in merged.input_types] == [(2,), (2,), (3,), (3,), (2, 2)]
    assert len(merged.outputs or ()) == 3 and not merged.needs_lowering
    for part in parts:  # the parts are not changed
        assert part.graph.outputs is not None and part.graph.outputs[0].graph is part.graph
    (inputs,) = merged_input_sets([[p] for p in parts])
    out = InterpreterExecutor().execute(merged, [np.copy(a) for a in inputs])
    np.testing.assert_array_equal(out[0], [1.0, 2.0])
    np.testing.assert_array_equal(out[1], [10.0, 11.0, 12.0])
    np.testing.assert_array_equal(out[2], [[-1, 2], [-3, -4]])


@pytest.mark.spec("CONF-136")
def test_batches_bound_cases_and_elements_and_input_sets_cycle() -> None:
    small = [_add_case((3,), float(i)) for i in range(11)]
    assert list(batches(small)) == [list(range(8)), [8, 9, 10]]
    assert list(batches(small, 4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]
    half = BATCH_ELEMENTS // 4  # an add case of (half,) has 2 * half input elements
    big = [_add_case((half,), 0.0), _add_case((half,), 1.0), _add_case((half,), 2.0),
           _add_case((2 * BATCH_ELEMENTS,), 3.0)]
    assert list(batches(big)) == [[0, 1], [2], [3]]  # a case over the bound goes alone
    one, three = small[0], small[1]
    sets = [[one], [three, three, three]]
    merged = list(merged_input_sets(sets))
    assert len(merged) == 3 and all(len(m) == 4 for m in merged)


def _run(tmp_path: Path, executor: str, k: str, *extra: str) -> runner.SuiteRun:
    return runner.run_suite(tmp_path, executor, ["test_ops.py"], k, *extra)


@pytest.mark.spec("CONF-136", "CONF-30", "CONF-32")
def test_a_passing_cell_is_one_structure_with_every_value_check(tmp_path: Path) -> None:
    cell = "[add-float32-general]"
    batched = _run(tmp_path / "on", f"{runner.VENDOR}:SlowCompiler", cell)
    alone = _run(tmp_path / "off", f"{runner.VENDOR}:SlowCompiler", cell,
                 "--conformance-batch=1")
    assert batched.code == alone.code == pytest.ExitCode.OK, (batched.outcomes, alone.outcomes)
    (on,), (off,) = batched.meta.values(), alone.meta.values()
    # ci: 5 graphs x 4 input sets, judged in one merged graph on 4 merged input sets
    assert on["structures"] == 1 and on["calls"] == 4 and on["batches"] == 1, on
    assert on["value_checks"] == off["value_checks"] == 20, (on, off)
    assert on["examples"] == off["examples"], (on, off)
    assert off["structures"] > 1 and off["calls"] == 20 and off["batches"] == 0, off
    assert off["batch_stop"] == "batching off (--conformance-batch=1)", off


@pytest.mark.spec("CONF-136", "CONF-19")
def test_a_failing_batch_keeps_each_cases_verdict_and_repro(tmp_path: Path) -> None:
    run = _run(tmp_path, "TruncatingFloorDiv", "[floor_div-int32-general]")
    (node,) = run.failed()
    text, meta = run.messages[node], run.meta[node]
    assert meta["batch_stop"] == "batch 0: values differ", meta
    assert "floor_div [int32, general]: the executor's results differ" in text, text
    assert "rounding-mode" in text and "CONF-136" not in text, text
    repro = run.artifacts / "test_ops.test_op_floor_div-int32-general" / "repro.py"
    graph = (repro.parent / "graph.txt").read_text()
    assert graph.count("= floor_div(") == 1, graph  # the minimised case, not the batch


@pytest.mark.spec("CONF-136", "EXEC-4")
def test_cases_that_interfere_in_one_graph_fail_the_cell(tmp_path: Path) -> None:
    cell = "[add-float32-scalar]"  # rank 0: every case's output has the same type
    batched = _run(tmp_path / "on", "OutputSlotPerType", cell)
    alone = _run(tmp_path / "off", "OutputSlotPerType", cell, "--conformance-batch=1")
    assert alone.code == pytest.ExitCode.OK, alone.text()  # one output per graph: right
    (node,) = batched.failed()
    assert "each case passing alone [CONF-136]" in batched.messages[node]


@pytest.mark.spec("CONF-136", "CONF-128")
def test_a_cell_with_stored_examples_replays_them_unbatched(tmp_path: Path) -> None:
    db = f"--conformance-db={tmp_path / 'db'}"
    first = _run(tmp_path / "1", "TruncatingFloorDiv", "[floor_div-int32-general]", db)
    again = _run(tmp_path / "2", "TruncatingFloorDiv", "[floor_div-int32-general]", db)
    assert len(first.failed()) == len(again.failed()) == 1
    (meta,) = again.meta.values()
    assert meta["batch_stop"] == "the example database holds examples of this test", meta
