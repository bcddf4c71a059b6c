"""The executor protocol and the reference ``InterpreterExecutor`` (spec/executor.md).

An executor runs a finalized, lowered graph: ``execute(graph, inputs) -> outputs``.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np

from .debug import evaluate_debug
from .dtype import NUMPY_DTYPES
from .errors import ExecutorInputError, UnsupportedGraphError
from .evaluate import evaluate, plan
from .graph.core import Graph
from .graph.lowering import lowered, lowered_node_count
from .registry import REGISTRY
from .types import BufferType

__all__ = ["Executor", "InterpreterExecutor", "PlanCache", "UnsupportedGraphError",
           "validate_inputs"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@runtime_checkable
class Executor(Protocol):
    """Anything with ``execute(graph, inputs) -> outputs`` (EXEC-1).

    ``inputs`` correspond to ``graph.inputs`` in order; ``BufferType`` inputs are mutated in
    place exactly once; the result has one fresh buffer per declared output (EXEC-4..6).
    ``UnsupportedGraphError`` may only be raised before any side effect (EXEC-3).
    """

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]: ...


class PlanCache(Generic[K, V]):
    """An executor's per-structure cache (key: ``structural_key``): at most ``size``
    entries, the least recently used evicted first; ``builds`` counts the misses built.
    Thread-safe: a lock around each lookup and insertion, none around a build (two threads
    missing the same key may both build it; the later insertion is kept)."""

    def __init__(self, size: int = 256) -> None:
        if size < 1:
            raise ValueError(f"PlanCache: size must be at least 1, got {size}")
        self.size = size
        self.builds = 0
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The entry of ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
            return hit

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The entry of ``key``, else ``build()``'s, kept (an exception keeps nothing)."""
        hit = self.get(key)
        if hit is not None:
            return hit
        value = build()
        with self._lock:
            self.builds += 1
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


def validate_inputs(who: str, graph: Graph, inputs: Sequence[Any]) -> None:
    """Check count, kind, dtype, shape and writability of ``inputs`` (EXEC-7); the error
    names the first input that fails, as ``who``."""
    if len(inputs) != len(graph.inputs):
        raise ExecutorInputError(f"{who}: graph {graph.name!r} expected {len(graph.inputs)} "
                                 f"inputs, got {len(inputs)} [EXEC-7]")
    numpy_dtype = NUMPY_DTYPES
    for i, v in enumerate(graph.inputs):  # by index (lengths checked): no zip(strict) cost
        a, t = inputs[i], v.type
        if a.__class__ is not np.ndarray and not isinstance(a, np.ndarray):
            raise ExecutorInputError(f"{who}: input {i} must be a numpy.ndarray for {t}, got "
                                     f"{type(a).__name__} [EXEC-7]")
        if a.shape != t.shape or a.dtype != numpy_dtype[t.dtype]:
            raise ExecutorInputError(f"{who}: input {i} is an array of dtype {a.dtype} and "
                                     f"shape {list(a.shape)}; expected {t} [EXEC-7]")
        if t.__class__ is BufferType and not a.flags.writeable:
            raise ExecutorInputError(f"{who}: input {i} is declared {t} but the array is "
                                     "read-only [EXEC-7]")


class InterpreterExecutor:
    """The reference executor: lowers, checks, then interprets op by op with numpy.

    ``max_ops``: refuse graphs with more dispatchable ops (None: no limit). ``debug`` (or env
    ``EAGER_INTERPRETER_DEBUG=1``): check every op's result type and report the first op that
    turns finite inputs into NaN/Inf (DEBUG-1..3).
    """

    #: op names refused as "requiring compilation" (a test hook, as MAX's).
    compilation_required: frozenset[str] = frozenset()

    def __init__(self, max_ops: int | None = None, debug: bool | None = None) -> None:
        self.max_ops = max_ops
        self.debug = (os.environ.get("EAGER_INTERPRETER_DEBUG", "") == "1"
                      if debug is None else debug)

    def __repr__(self) -> str:
        return f"InterpreterExecutor(max_ops={self.max_ops!r}, debug={self.debug!r})"

    def refusal(self, graph: Graph) -> str | None:
        """Why this executor refuses ``graph`` (EXEC-2), or None; ``graph`` is not changed."""
        if graph.outputs is None:
            return "graph has no outputs (call graph.output(...))"
        for v in graph.inputs:
            if not v.type.device.is_cpu():
                return f"input on {v.type.device} (the interpreter serves CPU devices only)"
        facts = plan(graph)  # cached per graph state: a graph run again is checked cheaply
        for name, op in facts.ops.items():
            if REGISTRY.get(name) is not op:
                return f"unregistered op {name!r}"
            if name in self.compilation_required:
                return f"op {name!r} requires compilation"
        if facts.off_cpu:
            device, name = next(iter(facts.off_cpu.items()))
            return f"{name} produces a value on {device}"
        if self.max_ops is not None:
            n = lowered_node_count(graph)
            if n > self.max_ops:
                return (f"its {n} ops require compilation: over the op-count threshold "
                        f"{self.max_ops!r}")
        return None

    def can_execute(self, graph: Graph) -> bool:
        return self.refusal(graph) is None

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"InterpreterExecutor: graph {graph.name!r} refused: "
                                        f"{why} [EXEC-2]")
        return self.execute_accepted(graph, inputs)

    def execute_accepted(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        """``execute`` for a graph ``refusal`` already accepted: lower, validate, interpret."""
        graph = lowered(graph)  # a lowered copy: the graph given stays as it is (EXEC-15)
        validate_inputs("InterpreterExecutor", graph, inputs)
        if self.debug:
            return evaluate_debug(graph, inputs)
        return evaluate(graph, inputs)
