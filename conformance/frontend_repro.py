"""Graph repros for front-end failures (CONF-97).

A front-end test compares what a tensor program gives with a numpy model; when realization
boundaries change a value, the vendor needs the graph that diverged, not the program. The
failing plan is run again through :class:`Recorder`, which keeps a copy of every graph and
host input the front end hands to the executor; each is then judged on its own like a
random graph (:func:`conformance.differential.check_case`), and the first that fails gets
an artifact directory with ``repro.py`` and the diagnosis (CONF-40).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from interpreter.executor import InterpreterExecutor
from interpreter.graph.core import Graph

from .artifacts import ArtifactDir
from .diagnosis import annotate
from .differential import check_case, prefix_graph
from .strategies import Case

__all__ = ["Recorder", "artifacts_for", "diverging_graph"]


class Recorder:
    """Passes ``execute`` through; records a copy of each graph and its host inputs."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[tuple[Graph, list[np.ndarray]]] = []

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Any:
        if all(isinstance(a, np.ndarray) for a in inputs) and graph.outputs:
            try:
                copy = prefix_graph(graph, len(graph.nodes), list(graph.outputs), graph.name)
                self.calls.append((copy, [np.array(a, copy=True) for a in inputs]))
            except Exception:  # a graph the suite cannot copy: not recorded
                pass
        return self.inner.execute(graph, inputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def artifacts_for(config: pytest.Config, test_id: str) -> ArtifactDir:
    """The artifact directory of ``test_id`` (as the ``conformance_artifacts`` fixture)."""
    from .plugin import executor_spec

    root = Path(config.invocation_params.dir) / config.getoption("conformance_artifacts")
    return ArtifactDir(root, test_id, executor_spec(config), config.invocation_params.dir)


def diverging_graph(calls: Sequence[tuple[Graph, list[np.ndarray]]], executor: Any,
                    artifacts: ArtifactDir | None) -> str:
    """Text to add to a front-end failure: the first recorded graph whose executor results
    differ from the reference, with its diagnosis and graph repro."""
    for k, (graph, inputs) in enumerate(calls):
        try:
            verdict = check_case(Case(graph, inputs), executor, InterpreterExecutor(),
                                 label=f"graph #{k} of the failing realization ({graph.name})")
            if verdict.ok:
                continue
            text, _ = annotate(graph, inputs, verdict.expected, verdict.actual)
        except Exception:  # refused or raised: this call is no evidence either way
            continue
        lines = [f"the executor diverges on graph #{k} of {len(calls)} the front end handed it "
                 f"[CONF-97]:", verdict.message]
        if text:
            lines.append(text)
        if artifacts is not None:
            where = artifacts.write_case(graph, inputs, sub=f"graph{k}")
            artifacts.write_results(verdict.expected, verdict.actual, verdict.message,
                                    sub=f"graph{k}")
            lines.append(f"graph repro: python {where / 'repro.py'}")
        return "\n" + "\n".join(lines)
    return (f"\nevery one of the {len(calls)} graphs the front end handed to the executor "
            "gives the reference's results when run again on its own: the difference lies in "
            "state kept between executions or in the front end [CONF-97]")
