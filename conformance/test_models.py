"""Model graphs (CONF-111, CONF-112): a decoder block, a small CNN and an MLP
(``conformance/models.py``), staged through the front end, each in float32 and bfloat16.

A cell is one model in one dtype: ONE graph structure (staged once per cell), judged on
``INPUT_SETS`` seeded input sets per generated example (weights and activations drawn
afresh, activations at several scales) exactly like a random graph (CONF-30): outputs
compared under their producing op's tolerance, accumulated error settled node by node on
the executor's own operands (CONF-20), minimisation to the smallest failing sub-graph
(CONF-19), diagnosis (CONF-40) and repro (CONF-11).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from interpreter.dtype import DType
from interpreter.graph.core import Graph

from .harness import Harness, graphs_per_cell
from .models import MODEL_DTYPES, MODELS, input_sets, stage
from .strategies import Case

RULES = ("CONF-111", "CONF-112", "TOL-1", "TOL-2", "CONF-20")
_STAGED: dict[tuple[str, DType], Graph] = {}


def staged(model: str, dtype: DType) -> Graph:
    """The cell's graph, staged once per process: every example reuses the structure."""
    key = (model, dtype)
    if key not in _STAGED:
        _STAGED[key] = stage(MODELS[model], dtype)
    return _STAGED[key]


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize("dtype", MODEL_DTYPES, ids=lambda d: d.value)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_model(model: str, dtype: DType, executor: Any, reference: Any,
               conformance_artifacts: Any, request: pytest.FixtureRequest) -> None:
    graph = staged(model, dtype)
    h = Harness(request, executor, reference, conformance_artifacts,
                f"model {model} [{dtype.value}]", op=None, dtype=dtype.value,
                shape_class=f"model:{model}", rules=RULES)

    # no shrink phase: a seed has no size to shrink; the failing case is minimised (CONF-19)
    @settings(max_examples=graphs_per_cell(request.config),
              phases=(Phase.explicit, Phase.reuse, Phase.generate))
    @given(seed=st.integers(0, 2**32 - 1))
    def prop(seed: int) -> None:
        first, *more = input_sets(MODELS[model], dtype, seed)
        h.check(Case(graph, first, dtype=dtype, shape_class=f"model:{model}", seed=seed,
                     extra_inputs=more))

    h.run(prop)
    h.finish()
