"""Shared helpers for the front-end tests: counting and misbehaving executors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph


class Counting:
    """Delegates to the reference interpreter and records every call."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner or InterpreterExecutor()
        self.calls = 0
        self.graphs: list[Graph] = []
        self.inputs: list[list[np.ndarray]] = []

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        self.calls += 1
        self.graphs.append(graph)
        self.inputs.append(list(inputs))
        return self.inner.execute(graph, inputs)


class Failing:
    """Raises ``error`` for the first ``times`` calls, then behaves like the interpreter."""

    def __init__(self, error: BaseException, times: int = 1_000_000) -> None:
        self.error = error
        self.times = times
        self.calls = 0

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return InterpreterExecutor().execute(graph, inputs)


class Tampering:
    """Runs the interpreter, then passes the results through ``tamper``."""

    def __init__(self, tamper: Any) -> None:
        self.tamper = tamper

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        out: list[Any] = list(InterpreterExecutor().execute(graph, inputs))
        result: Sequence[Any] = self.tamper(out)
        return result


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)
