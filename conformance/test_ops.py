"""Per-op differential tests: op x dtype x shape class, hypothesis-driven within each cell.

Every registry op with a ``sample`` function gets one test per (data dtype, shape class)
cell its sampler can reach (``strategies.feasible_cells``); the dtype axis is the op's *data*
dtype (``OpDef.data_dtypes``, OPDT-3: ``select-float32-general`` varies select's values,
``random_uniform-bfloat16-scalar`` its result). ``test_op[add-float32-broadcast]`` runs the
executor under test and the reference on the same one-op graphs and compares outputs and
final buffer contents under the op's tolerance class (TOL-1), with unspecified elements
masked (TOL-2). Each generated graph runs on several input sets (CONF-30), so a cell
runs ``max_examples / INPUT_SETS`` graphs for ``max_examples`` value checks. Every (op,
data dtype) no cell reaches, ops without a ``sample`` function included, gets a
``test_op_not_covered`` test that reports it as *not covered* with the
reason (CONF-21).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings

from interpreter.registry import REGISTRY, OpDef

from .harness import Harness, graphs_per_cell
from .outcomes import not_covered, record
from .strategies import SHAPE_CLASSES, Case, cell_gaps, feasible_cells, single_op_calls

RULES = ("TOL-1", "TOL-2", "EXEC-4")


def _rules(op: OpDef) -> list[str]:
    rules = list(RULES)
    if op.side_effect or op.category == "buffer":
        rules += ["MUT-2", "MUT-5"]
    if op.category == "random":
        rules += ["RNG-6", "RNG-8"]
    return rules


def _cells() -> list[Any]:
    params = []
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        reachable = feasible_cells(op)
        for dtype in sorted(op.data_dtypes, key=lambda d: d.value):
            for cls in SHAPE_CLASSES:
                if (dtype, cls) in reachable:
                    params.append(pytest.param(name, dtype, cls,
                                               id=f"{name}-{dtype.value}-{cls}"))
    return params


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize(("op_name", "dtype", "shape_class"), _cells())
def test_op(op_name: str, dtype: Any, shape_class: str, executor: Any, reference: Any,
            conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    op = REGISTRY[op_name]
    label = f"{op_name} [{dtype.value}, {shape_class}]"
    h = Harness(request, executor, reference, conformance_artifacts, label, op=op_name,
                dtype=dtype.value, shape_class=shape_class, rules=_rules(op))

    @settings(max_examples=graphs_per_cell(request.config))  # each on INPUT_SETS sets
    @given(case=single_op_calls(op, dtype, shape_class))
    def prop(case: Case) -> None:
        h.check(case)

    h.run(prop, batch=True)  # the cell's cases in merged graphs (CONF-136)
    h.finish()


def _gaps() -> list[Any]:
    params = [pytest.param(name, dtype.value, why, id=f"{name}-{dtype.value}")
              for name in sorted(REGISTRY) for dtype, why in cell_gaps(REGISTRY[name]).items()]
    return params or [pytest.param(None, None, None, marks=pytest.mark.skip(
        reason="every registry op x data dtype has a cell"))]


@pytest.mark.spec("CONF-21")
@pytest.mark.parametrize(("op_name", "dtype", "why"), _gaps())
def test_op_not_covered(op_name: str | None, dtype: str | None, why: str | None,
                        request: pytest.FixtureRequest) -> None:
    """(op, data dtype) pairs no cell can test are reported with the reason, never silently
    left out (CONF-21)."""
    assert op_name is not None and dtype is not None
    record(request, op=op_name, dtype=dtype, rules=[], covered=False, not_covered=why)
    not_covered(f"{op_name} [{dtype}]: {why}")
