"""Composition and rounding hazards: graphs built so a platform effect changes the result.

``test_hazard[<family>-<dtype>[-<target>]]`` runs the small graphs of
``conformance.hazards`` (FMA contraction, excess intermediate precision in float16/bfloat16
chains, double rounding of narrowing casts, integer overflow) on the executor and the
reference, several input sets per cell, and judges them like every other differential test
(exact ops: any difference fails, CONF-50).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import Harness
from .hazards import Hazard, build_case, hazards

#: Input sets per cell at most (each holds ~64 hazard values; one already catches an effect).
MAX_EXAMPLES = 6


@pytest.mark.spec("CONF-50")
@pytest.mark.parametrize("hazard", hazards(), ids=lambda h: h.id)
def test_hazard(hazard: Hazard, executor: Any, reference: Any, conformance_artifacts: Any,
                request: pytest.FixtureRequest) -> None:
    label = f"hazard {hazard.id} (targets: {hazard.target_effect})"
    h = Harness(request, executor, reference, conformance_artifacts, label,
                op=None, dtype=hazard.dtype.value, shape_class=f"hazard:{hazard.id}",
                rules=("CONF-50", *hazard.rules))
    base = settings.default.max_examples if settings.default is not None else MAX_EXAMPLES

    @settings(max_examples=min(base, MAX_EXAMPLES))
    @given(seed=st.integers(0, 2**32 - 1))
    def prop(seed: int) -> None:
        h.check(build_case(hazard, seed))

    h.run(prop)
    h.finish()
