"""No blind cells (OPDT-2, OPDT-3, CONF-21): the per-op conformance cells iterate each op's
*data* dtype, every (op, data dtype) is exercised or reported *not covered* with a reason, and
a bug that only shows on one kind of data (float ``select``) is caught.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from conformance import test_ops
from conformance.strategies import (
    RngArgSource,
    call_dtype,
    case_from_call,
    cell_gaps,
    feasible_cells,
)
from interpreter.dtype import DType
from interpreter.registry import REGISTRY, OpDef
from interpreter.registry.core import ArgSource, OpCall
from interpreter.registry.dtypesets import ALL, BOOL, FLOATS
from tests.suite.suite_runner import assert_repro_fails, run_suite


def _cell_dtypes() -> dict[str, set[DType]]:
    cells: dict[str, set[DType]] = defaultdict(set)
    for p in test_ops._cells():
        name, dtype, cls = p.values
        assert p.id == f"{name}-{dtype.value}-{cls}"
        cells[name].add(dtype)
    return cells


@pytest.mark.spec("CONF-21", "OPDT-3")
def test_every_op_data_dtype_has_a_cell_or_a_not_covered_reason() -> None:
    cells = _cell_dtypes()
    gaps = {(p.values[0], p.values[1]): p.values[2] for p in test_ops._gaps()
            if p.values[0] is not None}
    for name, op in sorted(REGISTRY.items()):
        assert cells[name] <= op.data_dtypes, f"{name}: cells outside its data dtypes"
        for d in op.data_dtypes:
            if d not in cells[name]:
                why = gaps.get((name, d.value))
                assert why, f"{name} [{d.value}] has no cell and no not-covered entry"
            else:
                assert (name, d.value) not in gaps


@pytest.mark.spec("OPDT-3")
def test_data_dtypes_of_ops_whose_operand0_is_not_their_data() -> None:
    cells = _cell_dtypes()
    assert REGISTRY["select"].dtypes == BOOL  # the condition: staging rules unchanged
    assert cells["select"] == ALL  # the values
    assert {"select-float32-general", "select-int32-broadcast", "select-bool-scalar"} <= {
        p.id for p in test_ops._cells()}
    for name in ("random_uniform", "random_normal"):
        assert REGISTRY[name].dtypes == {DType.uint64}  # the seed
        assert cells[name] == FLOATS, cells[name]  # the result
    for name in ("gather", "scatter"):
        assert cells[name] == ALL  # the data, not the int32/int64 indices
    assert REGISTRY["argmax"].result_dtype_set == {DType.int64}
    assert REGISTRY["equal"].result_dtype_set == BOOL


@pytest.mark.spec("OPDT-2", "OPDT-3")
@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_sampled_calls_respect_the_declared_dtype_sets(name: str) -> None:
    """Each sampler draws its data dtype once, marked ``data=True``; the call's data dtype
    (``call_dtype``) is that draw; staged operands and results lie in the declared sets."""
    op = REGISTRY[name]
    assert op.sample is not None
    seen_results = False
    for seed in range(24):
        src = RngArgSource(seed)
        call = op.sample(src)
        assert len(src.data_draws) == 1, f"{name}: {len(src.data_draws)} data=True draws"
        assert call_dtype(op, call) == src.data_draws[0] in op.data_dtypes
        case = case_from_call(op, call)
        (node,) = [n for n in case.graph.nodes if n.op is op]
        sets = op.operand_dtype_sets
        for i, v in enumerate(node.operands):
            allowed = sets[min(i, len(sets) - 1)] if op.variadic else sets[i]
            assert v.type.dtype in allowed, f"{name}: operand {i} is {v.type.dtype.value}"
        for r in node.results:
            seen_results = True
            assert r.type.dtype in op.result_dtype_set, f"{name}: result {r.type.dtype.value}"
    assert seen_results or not op.result_dtype_set, f"{name}: declares results it never has"


def _call(src: ArgSource, dtype: DType, idtype: DType) -> OpCall:
    return OpCall([src.values(dtype, src.shape()), src.values(idtype, (2,), "index:1")])


def _pinned_draws(src: ArgSource) -> OpCall:
    """Draws an index dtype *before* the data dtype: only the marked draw is pinned."""
    idtype = src.dtype([DType.int32, DType.int64])
    return _call(src, src.dtype(FLOATS, data=True), idtype)


def _raising(src: ArgSource) -> OpCall:
    src.dtype(FLOATS, data=True)
    raise RuntimeError("sampler bug")


def _unmarked(src: ArgSource) -> OpCall:
    """Forgets ``data=True``: its data dtype is never pinned."""
    return _call(src, src.dtype([DType.int32, DType.int64]), src.dtype(FLOATS))


def _fake(name: str, sample: object) -> OpDef:
    abs_ = REGISTRY["abs"]
    return OpDef(name, summary="test op", category="elementwise-unary", operands=("x", "i"),
                 attrs=(), infer=lambda op, t, a: (t[0],), kernel=abs_.kernel, dtypes=FLOATS,
                 sample=sample,  # type: ignore[arg-type]
                 operand_dtypes=(FLOATS, frozenset({DType.int32, DType.int64})))


@pytest.mark.spec("CONF-21", "OPDT-3")
def test_pinning_targets_the_data_draw_and_raising_samplers_reach_nothing() -> None:
    pinned = _fake("zz_pinned", _pinned_draws)
    cells = feasible_cells(pinned)
    assert {d for d, _ in cells} == FLOATS and not cell_gaps(pinned)
    call = _pinned_draws(RngArgSource(3, DType.float16))
    assert call.operands[0].dtype == np.float16
    raising = _fake("zz_raising", _raising)
    assert feasible_cells(raising) == {}  # a sampler that raises is not a reachable cell
    gaps = cell_gaps(raising)
    assert set(gaps) == FLOATS and all("RuntimeError: sampler bug" in g for g in gaps.values())
    unmarked = cell_gaps(_fake("zz_unmarked", _unmarked))
    assert unmarked, "a sampler that never marks its data draw cannot reach every cell"
    assert all("data=True" in why for why in unmarked.values())


@pytest.mark.spec("CONF-21", "CONF-8")
def test_not_covered_cells_are_collected_and_reported_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An op whose sampler raises gets ``test_op_not_covered`` cells (not ``test_op`` cells
    counted as feasible) and the JSON report lists each (op, dtype) with the reason."""
    monkeypatch.setitem(REGISTRY, "zz_raising", _fake("zz_raising", _raising))
    monkeypatch.delitem(sys.modules, "conformance.test_ops")  # re-collect with the fake op
    report = tmp_path / "r.json"
    run = run_suite(tmp_path, "SelectSwapsFloatBranches", ["test_ops.py"], "zz_raising",
                    f"--conformance-report={report}")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    ids = sorted(k.split("::")[-1] for k in run.outcomes)
    assert ids == [f"test_op_not_covered[zz_raising-{d}]"
                   for d in ("bfloat16", "float16", "float32", "float64")], ids
    assert set(run.outcomes.values()) == {"skipped"}
    entries = [e for e in json.loads(report.read_text())["not_covered"]
               if e["op"] == "zz_raising"]
    assert sorted(e["dtype"] for e in entries) == ["bfloat16", "float16", "float32", "float64"]
    assert all("raised on all" in e["reason"] and "sampler bug" in e["reason"]
               for e in entries), entries


@pytest.mark.spec("CONF-18", "CONF-21", "OPDT-3")
def test_float_select_cells_catch_swapped_float_branches(tmp_path: Path) -> None:
    """``select`` right on bool and int data, branches swapped on float data: the float
    cells fail naming select, the others pass (before OPDT-3 every select cell had bool
    data and this executor passed)."""
    cells = ["select-float32-general", "select-bfloat16-broadcast", "select-int32-general",
             "select-bool-broadcast"]
    run = run_suite(tmp_path, "SelectSwapsFloatBranches", ["test_ops.py"],
                    "test_op and (" + " or ".join(cells) + ")")
    assert run.code == pytest.ExitCode.TESTS_FAILED
    verdicts = {k.split("[")[1].rstrip("]"): v for k, v in run.outcomes.items()}
    assert verdicts == {"select-float32-general": "failed", "select-bfloat16-broadcast":
                        "failed", "select-int32-general": "passed",
                        "select-bool-broadcast": "passed"}, verdicts
    assert "select [float32, general]" in run.text()
    assert_repro_fails(run)
