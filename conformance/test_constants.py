"""Constant and weak-scalar reach with twin graphs (CONF-88, CONF-89).

``test_constant_reach[div-float32]`` runs two graphs of the op at that data dtype
(``conformance.constants``): ``op(x, c)`` and ``op(c, x)`` for every hard constant ``c``
(inexact reciprocals, powers of two, +-0, NaN payloads, subnormals, +-max, ...), once with
``c`` as a rank-0 ``constant`` node and once as a weak scalar staged the way the front end
stages a Python scalar (PROMO-4). Each graph is followed at once, on the same executor
instance, by its *twin*: the same graph with every constant negated (a NaN: another payload),
so a plan cache that keys graphs without their constants' values, sign bits or payloads
serves the twin a stale plan. Every graph runs on the usual input sets (CONF-30) and is
judged against the reference like any cell.
"""

from __future__ import annotations

from typing import Any

import pytest
from _pytest.outcomes import Failed
from hypothesis import given, settings
from hypothesis import strategies as st

from interpreter.registry import REGISTRY

from .constants import (
    CONSTANT_OPS,
    constant_case,
    constant_groups,
    fails_alone,
    twins,
    write_pair,
)
from .harness import Harness

RULES = ("CONF-88", "CONF-89", "TOL-1", "TOL-2")


def _cells() -> list[Any]:
    return [pytest.param(name, dtype, id=f"{name}-{dtype.value}") for name in CONSTANT_OPS
            for dtype in sorted(REGISTRY[name].data_dtypes, key=lambda d: d.value)]


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize(("op_name", "dtype"), _cells())
def test_constant_reach(op_name: str, dtype: Any, executor: Any, reference: Any,
                        conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    op = REGISTRY[op_name]
    h = Harness(request, executor, reference, conformance_artifacts,
                f"{op_name} [{dtype.value}, constants]", op=op_name, dtype=dtype.value,
                shape_class="constant", rules=list(RULES))

    groups = constant_groups(dtype)
    plans = [(weak, group) for weak in (False, True) for group in groups]

    @settings(max_examples=len(plans), database=None)  # each (staging, group) once
    @given(k=st.sampled_from(range(len(plans))))
    def prop(k: int) -> None:
        weak, group = plans[k]
        cs = groups[group]
        first = constant_case(op, dtype, weak, cs, group)
        h.check(first)
        for name, other in twins(group, cs, weak):  # back to back (CONF-89)
            try:
                h.check(constant_case(op, dtype, weak, other, f"{group}_{name}_twin"))
            except Failed as e:
                if not fails_alone(conformance_artifacts):  # only after its twin
                    script = write_pair(conformance_artifacts, first)
                    pytest.fail(f"{e.msg}\nthis graph is the {name} twin of the graph run just "
                                f"before it on the same executor instance and passes on a "
                                f"fresh one (CONF-89): a plan or state kept across graphs "
                                f"that differ only in constants\nrepro of the pair (twin "
                                f"first, one executor instance): python {script}",
                                pytrace=False)
                raise

    h.run(prop)
    h.finish()

