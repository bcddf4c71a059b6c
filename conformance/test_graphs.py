"""Random-graph differential tests: type-correct DAGs of up to ~30 registry ops.

One test per op family (registry category) plus several ``mixed`` chunks (all ops), so
pytest-xdist spreads them. Graphs mix dtypes, broadcasts, shape ops, reductions, mutable
buffer inputs with stores and slice stores, and random ops with seed inputs; outputs and
final buffer contents are compared with the reference, and a mismatch is bisected to the
first diverging node (artifacts: ``divergence/``). A cell's graphs are judged in merged
graphs first (CONF-136); at the first merged graph that does not pass, the cell runs graph
by graph, so a failing graph keeps its own bisection and repro.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .harness import Harness, graphs_per_cell
from .strategies import INPUT_SETS, Case, build_random_graph, graph_families

#: Random-graph value checks per test, as a multiple of the profile's ``max_examples``
#: (graphs x ``INPUT_SETS`` input sets each, CONF-30).
EXAMPLES_FACTOR = 6
MIXED_CHUNKS = 4
MAX_OPS = 30
RULES = ("TOL-1", "TOL-2", "EXEC-4", "MUT-1", "MUT-2", "MUT-5")

FAMILIES = graph_families()


def _params() -> list[Any]:
    out = []
    for fam in sorted(FAMILIES):
        chunks = MIXED_CHUNKS if fam == "mixed" else 1
        for c in range(chunks):
            out.append(pytest.param(fam, c, id=f"{fam}-{c}" if chunks > 1 else fam))
    return out


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize(("family", "chunk"), _params())
def test_graph(family: str, chunk: int, executor: Any, reference: Any,
               conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    ops = FAMILIES[family]
    label = f"random graph [{family}]"
    h = Harness(request, executor, reference, conformance_artifacts, label, op=None,
                dtype=None, shape_class=f"graph:{family}", rules=RULES)
    salt = chunk * 0x9E3779B1

    base = settings.default.max_examples if settings.default is not None else 10
    @settings(max_examples=graphs_per_cell(request.config, base * EXAMPLES_FACTOR))
    @given(seed=st.integers(0, 2**32 - 1), n_ops=st.integers(1, MAX_OPS))
    def prop(seed: int, n_ops: int) -> None:
        case: Case = build_random_graph((seed ^ salt) & 0xFFFFFFFF, n_ops, ops,
                                        name=f"{family}_graph", input_sets=INPUT_SETS)
        h.check(case)

    h.run(prop, batch=True)  # the cell's graphs in merged graphs (CONF-136)
    h.finish()
