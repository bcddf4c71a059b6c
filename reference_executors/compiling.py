"""The compiling executor (spec/reference-executors.md, "Compiling executor").

# STAND-IN: replaced at merge by the real compiler
This minimal stand-in only provides the interface the JIT executor relies on:
``CompilingExecutor.compile(graph) -> CompiledPlan`` (``UnsupportedGraphError`` for what it
cannot compile), ``CompiledPlan.run(inputs) -> list``, ``CompiledPlan.kernel_count`` and
``CompilingExecutor.execute(graph, inputs)``. Its "plan" runs the reference interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, lower

__all__ = ["CompiledPlan", "CompilingExecutor"]


class CompiledPlan:
    """A compiled graph: ``run(inputs)`` executes it. STAND-IN: one "kernel" per op."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.kernel_count = len(graph.nodes)
        self._interpreter = InterpreterExecutor()

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        return self._interpreter.execute_accepted(self.graph, inputs)


class CompilingExecutor:
    """Compiles every graph it is given, then runs the plan (STAND-IN)."""

    def __repr__(self) -> str:
        return "CompilingExecutor()"

    def compile(self, graph: Graph) -> CompiledPlan:
        """A plan for ``graph``; ``UnsupportedGraphError`` before any side effect."""
        why = InterpreterExecutor().refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"CompilingExecutor: graph {graph.name!r} refused: "
                                        f"{why} [EXEC-2]")
        return CompiledPlan(lower(graph))

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        return self.compile(graph).run(inputs)
