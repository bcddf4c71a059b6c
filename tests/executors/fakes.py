"""Fake compilers for the JIT executor's tests: gated, failing, and counting."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from interpreter.executor import InterpreterExecutor
from interpreter.graph import Graph, lower

WAIT_S = 10.0  # no test waits this long unless it is broken


class FakePlan:
    """Runs the graph with the interpreter (or ``fn``) and counts its runs."""

    def __init__(self, graph: Graph, fn: Callable[[Sequence[Any]], list[Any]] | None,
                 inner: Any = None) -> None:
        self.inner = inner.compile(graph) if inner is not None else None
        self.graph = graph if self.inner is not None else lower(graph)
        self.fn = fn
        self.runs = 0
        self.kernel_count = 1

    def run(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        self.runs += 1
        if self.fn is not None:
            return self.fn(inputs)
        if self.inner is not None:
            return list(self.inner.run(inputs))
        return InterpreterExecutor().execute_accepted(self.graph, inputs)


class FakeCompiler:
    """Counts compiles; each waits for ``gate`` (open by default) and may raise ``error``.

    ``fn`` replaces the plan's computation (to tell compiled results from interpreted);
    ``inner``: a real compiler that builds the plan (default: the plan interprets)."""

    def __init__(self, *, gated: bool = False, error: BaseException | None = None,
                 fn: Callable[[Sequence[Any]], list[Any]] | None = None,
                 inner: Any = None) -> None:
        self.inner = inner
        self.gate = threading.Event()
        if not gated:
            self.gate.set()
        self.error = error
        self.fn = fn
        self.graphs: list[Graph] = []
        self.texts: list[str] = []
        self.plans: list[FakePlan] = []
        self.started = threading.Event()
        self._lock = threading.Lock()

    @property
    def compiles(self) -> int:
        return len(self.graphs)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.plans)

    def compile(self, graph: Graph) -> FakePlan:
        with self._lock:
            self.graphs.append(graph)
            self.texts.append(graph.to_text())
        self.started.set()
        assert self.gate.wait(WAIT_S), "test never opened the compile gate"
        if self.error is not None:
            raise self.error
        plan = FakePlan(graph, self.fn, self.inner)
        self.plans.append(plan)
        return plan


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    """Poll ``predicate`` until true (fails the test after ``WAIT_S``)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)
