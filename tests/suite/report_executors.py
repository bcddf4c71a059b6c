"""Executors for the report tests (tests/suite/test_report.py): one failing op, one refused op."""

from __future__ import annotations

from interpreter.graph import Graph

from .broken_executors import RoundHalfAwayFromZero

__all__ = ["RoundsAwayRefusesArgmax"]


class RoundsAwayRefusesArgmax(RoundHalfAwayFromZero):
    """``round`` rounds half away from zero (a failure); graphs with ``argmax`` are refused."""

    def refusal(self, graph: Graph) -> str | None:
        if any(n.op.name == "argmax" for n in graph.nodes):
            return "argmax is not supported by this backend"
        return super().refusal(graph)
