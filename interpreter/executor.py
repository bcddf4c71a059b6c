"""The executor protocol and the reference ``InterpreterExecutor`` (spec/executor.md).

An executor runs a finalized, lowered graph: ``execute(graph, inputs) -> outputs``.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import ExecutorInputError, ExecutorUnavailableError, UnsupportedGraphError
from .graph.core import Graph
from .graph.lowering import lower
from .registry import REGISTRY
from .types import BufferType

__all__ = ["Executor", "InterpreterExecutor", "UnsupportedGraphError", "validate_inputs"]


@runtime_checkable
class Executor(Protocol):
    """Anything with ``execute(graph, inputs) -> outputs`` (EXEC-1).

    ``inputs`` correspond to ``graph.inputs`` in order; ``BufferType`` inputs are mutated in
    place exactly once; the result has one fresh buffer per declared output (EXEC-4..6).
    ``UnsupportedGraphError`` may only be raised before any side effect (EXEC-3).
    """

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]: ...


def validate_inputs(who: str, graph: Graph, inputs: Sequence[Any]) -> None:
    """Check count, kind, dtype, shape and writability of ``inputs`` (EXEC-7)."""
    if len(inputs) != len(graph.inputs):
        raise ExecutorInputError(f"{who}: graph {graph.name!r} expected {len(graph.inputs)} "
                                 f"inputs, got {len(inputs)} [EXEC-7]")
    for i, (a, v) in enumerate(zip(inputs, graph.inputs, strict=True)):
        t = v.type
        if not isinstance(a, np.ndarray):
            raise ExecutorInputError(f"{who}: input {i} must be a numpy.ndarray for {t}, got "
                                     f"{type(a).__name__} [EXEC-7]")
        if a.dtype != t.dtype.to_numpy() or a.shape != t.shape:
            raise ExecutorInputError(f"{who}: input {i} is an array of dtype {a.dtype} and "
                                     f"shape {list(a.shape)}; expected {t} [EXEC-7]")
        if isinstance(t, BufferType) and not a.flags.writeable:
            raise ExecutorInputError(f"{who}: input {i} is declared {t} but the array is "
                                     "read-only [EXEC-7]")


def _env_max_ops() -> int:
    raw = os.environ.get("MAX_INTERPRETER_MAX_OPS", "")
    return int(raw.strip()) if raw.strip().isdigit() else 1024


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
        """Why this executor refuses ``graph`` (EXEC-2), or None if it accepts it."""
        lower(graph)
        if graph.outputs is None:
            return "graph has no outputs (call graph.output(...))"
        for v in graph.inputs:
            if not v.type.device.is_cpu():
                return f"input on {v.type.device} (the interpreter serves CPU devices only)"
        for node in graph.nodes:
            if REGISTRY.get(node.op.name) is not node.op:
                return f"unregistered op {node.op.name!r}"
            if node.op.name in self.compilation_required:
                return f"op {node.op.name!r} requires compilation"
            for r in node.results:
                if not r.type.device.is_cpu():
                    return f"{node.op.name} produces a value on {r.type.device}"
        if self.max_ops is not None and len(graph.nodes) > self.max_ops:
            return f"{len(graph.nodes)} ops is over the op-count threshold {self.max_ops!r}"
        return None

    def can_execute(self, graph: Graph) -> bool:
        return self.refusal(graph) is None

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(
                f"InterpreterExecutor: graph {graph.name!r} contains ops that require "
                f"compilation ({why}; threshold {self.max_ops!r})")
        validate_inputs("InterpreterExecutor", graph, inputs)
        if self.debug:
            from .debug import evaluate_debug

            return evaluate_debug(graph, inputs)
        from .evaluate import evaluate

        return evaluate(graph, inputs)


# -- executor selection (spec/realization.md, SEL-n) ---------------------------------------
#: Executor names accepted by ``MAX_EAGER_EXECUTOR`` and where their classes live (SEL-3).
EXECUTOR_NAMES: dict[str, str] = {
    "compile": "reference_executors.compiling:CompilingExecutor",
    "composite": "reference_executors.jit:JitExecutor",
    "interpreter": "interpreter.executor:InterpreterExecutor",
    "jit": "reference_executors.jit:JitExecutor",
}


def _read_env_executor() -> str:
    raw = os.environ.get("MAX_EAGER_EXECUTOR")
    name = "composite" if raw is None or not raw.strip() else raw.strip().lower()
    if name not in EXECUTOR_NAMES:
        raise ValueError(f"MAX_EAGER_EXECUTOR={raw!r}: expected one of "
                         f"{sorted(EXECUTOR_NAMES)} [SEL-3]")
    return name


#: The executor named by ``MAX_EAGER_EXECUTOR``, read once at import (SEL-3).
ENV_EXECUTOR: str = _read_env_executor()


def _load_class(target: str) -> type[Any]:
    module, _, name = target.partition(":")
    cls: type[Any] = getattr(importlib.import_module(module), name)
    return cls


class MissingExecutor:
    """Stands in for a named executor whose class cannot be imported (SEL-5).

    The import is retried at every ``execute``; while it fails, ``execute`` raises
    ``ExecutorUnavailableError`` naming the executor, the class and the reason."""

    def __init__(self, name: str, target: str, reason: str) -> None:
        self.name, self.target, self.reason = name, target, reason
        self._resolved: Any = None

    def __repr__(self) -> str:
        return f"MissingExecutor({self.name!r}, {self.target!r})"

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        if self._resolved is None:
            built = build_executor(self.name)
            if isinstance(built, MissingExecutor):
                raise ExecutorUnavailableError(
                    f"executor {self.name!r} is not available: {self.target} cannot be "
                    f"imported ({built.reason}) [SEL-5]")
            self._resolved = built
        result: Sequence[Any] = self._resolved.execute(graph, inputs)
        return result


def build_executor(name: str) -> Any:
    """A new executor for a ``MAX_EAGER_EXECUTOR`` name (SEL-3, SEL-4, SEL-5).

    ``interpreter``: ``InterpreterExecutor()`` (no op limit); ``compile``: the compiling
    executor; ``composite``/``jit``: the JIT executor around
    ``InterpreterExecutor(max_ops=MAX_INTERPRETER_MAX_OPS)``. A class that cannot be
    imported gives a ``MissingExecutor``.
    """
    if name not in EXECUTOR_NAMES:
        raise ValueError(f"unknown executor name {name!r}: expected one of "
                         f"{sorted(EXECUTOR_NAMES)} [SEL-3]")
    if name == "interpreter":
        return InterpreterExecutor()
    target = EXECUTOR_NAMES[name]
    try:
        cls = _load_class(target)
    except (ImportError, AttributeError) as e:
        return MissingExecutor(name, target, f"{type(e).__name__}: {e}")
    if name == "compile":
        return cls()
    return cls(interpreter=InterpreterExecutor(max_ops=_env_max_ops()))


class PreferInterpreterExecutor:
    """``use_interpreter=True`` (SEL-2): the interpreter with no op-count threshold; a graph it
    refuses statically goes to the compiling executor; its runtime errors propagate."""

    def __init__(self) -> None:
        self.interpreter = InterpreterExecutor(max_ops=None)
        self.compiling: Any = None

    def __repr__(self) -> str:
        return "PreferInterpreterExecutor()"

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        if self.interpreter.refusal(graph) is None:
            return self.interpreter.execute(graph, inputs)
        if self.compiling is None:
            self.compiling = build_executor("compile")
        result: Sequence[Any] = self.compiling.execute(graph, inputs)
        return result


_default_lock = threading.Lock()
_default: Any = None


def _initial_default() -> Any:
    e = build_executor(ENV_EXECUTOR)
    if isinstance(e, MissingExecutor) and os.environ.get("MAX_EAGER_EXECUTOR") is None:
        return InterpreterExecutor(max_ops=None)  # SEL-4: until the JIT executor exists
    return e


def default_executor() -> Any:
    """The process-wide default executor (the same object on every thread, SEL-1)."""
    e = _default
    if e is None:
        with _default_lock:
            e = _default
            if e is None:
                e = _set_default(_initial_default())
    return e


def _set_default(e: Any) -> Any:
    global _default
    _default = e
    return e


class SetterContext:
    """Undo handle: ``__enter__`` returns the new value, ``__exit__`` restores the previous."""

    def __init__(self, value: Any, previous: Any, restore: Any) -> None:
        self.value, self.previous, self._restore = value, previous, restore

    def __enter__(self) -> Any:
        return self.value

    def __exit__(self, *exc: object) -> None:
        self._restore(self.previous)


def set_default_executor(executor: Any) -> SetterContext:
    """Make ``executor`` the default now (SEL-1); the handle restores the previous one."""
    if not isinstance(executor, Executor):
        raise TypeError(f"set_default_executor: {executor!r} has no execute(graph, inputs) "
                        "method [SEL-1]")
    with _default_lock:
        previous = _default if _default is not None else None
        _set_default(executor)
    return SetterContext(executor, previous, _set_default)


__all__ += ["EXECUTOR_NAMES", "MissingExecutor", "PreferInterpreterExecutor", "SetterContext",
            "build_executor", "default_executor", "set_default_executor"]
