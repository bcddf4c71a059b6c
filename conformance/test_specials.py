"""Special-value sweeps (CONF-98, NUM-20): one deterministic graph per op x data dtype (per
cast source x target) over the dtype's whole special set, judged like ``test_op``.

``test_special_sweep[add-float32]`` runs ``add`` on the full cross product of float32's
special values (NaN, +-inf, +-0, subnormals, extremes, 1, -1, 0.5); a reduction runs on a
small finite row with each special value at each position plus (inf, -inf), (NaN, inf),
all-NaN and all-equal rows; ``test_special_sweep[cast-float32-to-uint32]`` on the target's
boundaries (``conformance/sweeps.py``). The expected values are the reference's; the
generated special-value tables of the op pages (CONF-101) show the same answers. Specials
are compared exactly in every tolerance class (TOL-4); unspecified elements are masked
(TOL-2). An (op, dtype) without a sweep is reported *not covered* with the reason (CONF-21).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.registry import REGISTRY

from .harness import Harness
from .outcomes import not_covered, record
from .sweeps import sweep_case, sweep_cells, sweep_gaps, sweep_id

RULES = ("CONF-98", "TOL-1", "TOL-2", "TOL-4")


def _cells() -> list[Any]:
    return [pytest.param(name, dtype, target, id=sweep_id(name, dtype, target))
            for name, dtype, target in sweep_cells()]


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize(("op_name", "dtype", "target"), _cells())
def test_special_sweep(op_name: str, dtype: DType, target: DType | None, executor: Any,
                       reference: Any, conformance_artifacts: Any,
                       request: pytest.FixtureRequest) -> None:
    op = REGISTRY[op_name]
    case = sweep_case(op, dtype, target)
    to = f" -> {target.value}" if target is not None else ""
    rules = [*RULES, "NUM-20"] if target is not None else list(RULES)
    h = Harness(request, executor, reference, conformance_artifacts,
                f"{op_name} [{dtype.value}{to}, special-value sweep]", op=op_name,
                dtype=dtype.value, shape_class="sweep", rules=rules)

    @settings(max_examples=1, database=None)
    @given(st.just(case))
    def prop(c: Any) -> None:
        h.check(c)

    h.run(prop)
    h.finish()


def _gaps() -> list[Any]:
    params = [pytest.param(name, dtype.value, why, id=f"{name}-{dtype.value}")
              for (name, dtype), why in sorted(sweep_gaps().items(),
                                               key=lambda kv: (kv[0][0], kv[0][1].value))]
    return params or [pytest.param(None, None, None, marks=pytest.mark.skip(
        reason="every registry op x data dtype has a sweep"))]


@pytest.mark.spec("CONF-98", "CONF-21")
@pytest.mark.parametrize(("op_name", "dtype", "why"), _gaps())
def test_special_sweep_not_covered(op_name: str | None, dtype: str | None, why: str | None,
                                   request: pytest.FixtureRequest) -> None:
    """(op, data dtype) pairs without a sweep are reported with the reason (CONF-21)."""
    assert op_name is not None and dtype is not None
    record(request, op=op_name, dtype=dtype, rules=["CONF-98"], covered=False,
           not_covered=f"special-value sweep: {why}")
    not_covered(f"{op_name} [{dtype}] special-value sweep: {why}")
