"""Executor selection (spec/realization.md, SEL-n): names, environment, the process default.

``MAX_EAGER_EXECUTOR`` and ``MAX_INTERPRETER_MAX_OPS`` are read when the default executor is
first needed (not at import), so a bad value fails there with a clear ``ValueError``.
The reference executors (``reference_executors.compiling``, ``reference_executors.jit``) are
named by string and imported only when one is built: ``interpreter/`` sits below them and
never imports them at module level (JIT-13).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from .errors import ExecutorUnavailableError
from .executor import Executor, InterpreterExecutor
from .graph.core import Graph

__all__ = ["EXECUTOR_NAMES", "MissingExecutor", "PreferInterpreterExecutor", "SetterContext",
           "build_executor", "default_executor", "env_executor", "env_max_ops",
           "set_default_executor"]

#: Executor names accepted by ``MAX_EAGER_EXECUTOR`` and where their classes live (SEL-3).
EXECUTOR_NAMES: dict[str, str] = {
    "compile": "reference_executors.compiling:CompilingExecutor",
    "composite": "reference_executors.jit:JitExecutor",
    "interpreter": "interpreter.executor:InterpreterExecutor",
    "jit": "reference_executors.jit:JitExecutor",
}


def env_executor() -> str:
    """The executor name ``MAX_EAGER_EXECUTOR`` gives now (SEL-3); ``ValueError`` if unknown."""
    raw = os.environ.get("MAX_EAGER_EXECUTOR")
    name = "composite" if raw is None or not raw.strip() else raw.strip().lower()
    if name not in EXECUTOR_NAMES:
        raise ValueError(f"MAX_EAGER_EXECUTOR={raw!r}: expected one of "
                         f"{sorted(EXECUTOR_NAMES)} [SEL-3]")
    return name


def env_max_ops() -> int:
    """``MAX_INTERPRETER_MAX_OPS`` (default and non-numeric: 1024, SEL-4)."""
    raw = os.environ.get("MAX_INTERPRETER_MAX_OPS", "").strip()
    return int(raw) if raw.isdigit() else 1024


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
    return cls(interpreter=InterpreterExecutor(max_ops=env_max_ops()))


class PreferInterpreterExecutor:
    """``use_interpreter=True`` (SEL-2): the interpreter with no op-count threshold; a graph it
    refuses statically goes to the compiling executor; its runtime errors propagate."""

    def __init__(self) -> None:
        self.interpreter = InterpreterExecutor(max_ops=None)
        self.compiling: Any = None

    def __repr__(self) -> str:
        return "PreferInterpreterExecutor()"

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        if self.interpreter.refusal(graph) is None:  # checked once, not again inside
            return self.interpreter.execute_accepted(graph, inputs)
        if self.compiling is None:
            self.compiling = build_executor("compile")
        result: Sequence[Any] = self.compiling.execute(graph, inputs)
        return result


_default_lock = threading.Lock()
_default: Any = None


def _initial_default() -> Any:
    e = build_executor(env_executor())
    if isinstance(e, MissingExecutor) and os.environ.get("MAX_EAGER_EXECUTOR") is None:
        return InterpreterExecutor(max_ops=None)  # SEL-4: until the JIT executor exists
    return e


def default_executor() -> Any:
    """The process-wide default executor (the same object on every thread, SEL-1).

    Built on first use from ``MAX_EAGER_EXECUTOR`` (SEL-3), which is read then, once."""
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
        previous = _default
        _set_default(executor)
    return SetterContext(executor, previous, _set_default)
