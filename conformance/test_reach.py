"""Shape reach: every op x data dtype on axes as long as vector and tile widths (CONF-86).

The ordinary cells draw sides from ``SIDE_BUCKETS`` (CONF-31), so no axis is ever 8, 16, 64
long or one past it, and kernel bugs in remainder loops, tiling and blocking stay invisible.
``test_op_reach[matmul-float32]`` runs the op's registry sampler through a *reach* source
(``BiasedArgSource(reach=...)``): two structures per (op, data dtype), one whose first long
axis is a size from ``REACH_SIDES`` (7, 8, 9, 15, 16, 17, ..., 255, 256, 257; rotating over
the op's dtypes) and one with a ``LONG_SIDE`` (4097) axis, further axes long or short within
``REACH_ELEMENTS`` elements per operand; each on the usual input sets (CONF-30), judged like
any cell (TOL-1, TOL-2). Ops whose sampler keeps every axis short (``max_side`` below 5:
``tile``, ``pad``, the random ops, ``debug_print``) or has none (``range``) have no reach
cell (CONF-87).

``test_op_tier[abs-int32]`` (CONF-150) runs every elementwise op (and ``select``) at every
data dtype on one *tier structure*: the sampler through a reach source whose headline axis
is ``TIER_SIDE`` (65537) long, each operand within ``TIER_ELEMENTS``, the result holding at
least ``TIER_SIDE`` elements: above the sizes from which compilers switch an elementwise
loop to another code path (a native, vectorized or blocked tier; ``CompilingExecutor``'s C
tier starts at 32768 elements), which no other cell reaches.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.registry import REGISTRY, OpDef

from .harness import Harness
from .outcomes import not_covered
from .strategies import LONG_SIDE, REACH_SIDES, reach_case, reach_cases, tier_case
from .test_ops import _rules

RULES = ("CONF-86", "TOL-1", "TOL-2")
TIER_RULES = ("CONF-150", "TOL-1", "TOL-2")


@functools.cache
def reach_ops() -> tuple[str, ...]:
    """Ops whose sampler keeps a long axis at its first data dtype (CONF-87)."""
    out = []
    for name in sorted(REGISTRY):
        op = REGISTRY[name]
        first = min(op.data_dtypes, key=lambda d: d.value, default=None)
        if first is not None and any(reach_case(op, first, r) is not None
                                     for r in (REACH_SIDES[0], LONG_SIDE)):
            out.append(name)
    return tuple(out)


def _cells() -> list[Any]:
    return [pytest.param(name, dtype, id=f"{name}-{dtype.value}") for name in reach_ops()
            for dtype in sorted(REGISTRY[name].data_dtypes, key=lambda d: d.value)]


def _judge(op_name: str, dtype: Any, shape_class: str, rule: str, cases: tuple[Any, ...],
           fixtures: tuple[Any, Any, Any, pytest.FixtureRequest], *, batch: bool) -> None:
    """Judge each of ``cases`` (a structure of ``shape_class``) once, like any cell."""
    executor, reference, artifacts, request = fixtures
    op: OpDef = REGISTRY[op_name]
    where = f"{op_name} [{dtype.value}, {shape_class}]"
    h = Harness(request, executor, reference, artifacts, where, op=op_name,
                dtype=dtype.value, shape_class=shape_class, rules=[rule, *_rules(op)])
    if not cases:
        not_covered(f"{where}: the sampler took no long axis")

    @settings(max_examples=len(cases), database=None)  # each structure once
    @given(k=st.sampled_from(range(len(cases))))
    def prop(k: int) -> None:
        h.check(cases[k])

    h.run(prop, batch=batch)
    h.finish()


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize(("op_name", "dtype"), _cells())
def test_op_reach(op_name: str, dtype: Any, executor: Any, reference: Any,
                  conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    # both structures in one merged graph (CONF-136)
    _judge(op_name, dtype, "reach", "CONF-86", tuple(reach_cases(REGISTRY[op_name], dtype)),
           (executor, reference, conformance_artifacts, request), batch=True)


# -- tier structures (CONF-150) ------------------------------------------------------------
def tier_ops() -> tuple[str, ...]:
    """The elementwise ops (categories ``elementwise-unary``/``-binary``) and ``select``:
    the ops a compiler runs as one loop over the elements (CONF-150)."""
    return tuple(name for name in sorted(REGISTRY)
                 if REGISTRY[name].category.startswith("elementwise") or name == "select")


def _tier_cells() -> list[Any]:
    return [pytest.param(name, dtype, id=f"{name}-{dtype.value}") for name in tier_ops()
            for dtype in sorted(REGISTRY[name].data_dtypes, key=lambda d: d.value)]


@pytest.mark.spec(*TIER_RULES)
@pytest.mark.parametrize(("op_name", "dtype"), _tier_cells())
def test_op_tier(op_name: str, dtype: Any, executor: Any, reference: Any,
                 conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    case = tier_case(REGISTRY[op_name], dtype)
    _judge(op_name, dtype, "tier", "CONF-150", () if case is None else (case,),
           (executor, reference, conformance_artifacts, request), batch=False)
