"""Executor selection (spec/realization.md, SEL-n): names, environment, the process default.

Executors are named through the entry point group ``eager_conformance.executors`` (SEL-8):
each entry point is a callable that builds an executor with no arguments, and the one named
``default`` is what an unset ``MAX_EAGER_EXECUTOR`` means. Installed distributions register
their names in their metadata (this project's ``pyproject.toml`` registers its shipped
executors), so ``interpreter/`` names no executor outside itself; ``interpreter`` is built
in. ``MAX_EAGER_EXECUTOR`` and ``MAX_INTERPRETER_MAX_OPS`` are read when the default
executor is first needed (not at import), so a bad value fails there with a clear
``ValueError``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from .errors import ExecutorUnavailableError
from .executor import Executor, InterpreterExecutor
from .graph.core import Graph

__all__ = ["DEFAULT_NAME", "GROUP", "MissingExecutor", "PreferInterpreterExecutor",
           "SetterContext", "build_executor", "default_executor", "env_executor",
           "env_max_ops", "executor_names", "set_default_executor"]

#: The entry point group naming executors (SEL-8).
GROUP = "eager_conformance.executors"
#: The registered name an unset ``MAX_EAGER_EXECUTOR`` selects (SEL-3, SEL-4).
DEFAULT_NAME = "default"
_BUILT_IN = EntryPoint("interpreter", f"{InterpreterExecutor.__module__}:InterpreterExecutor",
                       GROUP)


def executor_names() -> dict[str, str]:
    """Every executor name, registered in ``GROUP`` or built in, with its target
    (``module:attr``), read from the installed distributions now (SEL-8)."""
    return {name: ep.value for name, ep in _registered().items()}


def _registered() -> dict[str, EntryPoint]:
    found = {_BUILT_IN.name: _BUILT_IN}
    for ep in entry_points(group=GROUP):
        name = ep.name.strip().lower()
        seen = found.get(name)
        if seen is not None and seen.value != ep.value:
            raise ValueError(f"executor name {name!r} is registered twice, as {seen.value} "
                             f"and as {ep.value} (entry point group {GROUP!r}) [SEL-8]")
        found[name] = ep
    return found


def env_executor() -> str:
    """The executor name ``MAX_EAGER_EXECUTOR`` gives now (SEL-3): ``DEFAULT_NAME`` when it
    is unset or blank; ``ValueError`` for a name no distribution registers."""
    raw = os.environ.get("MAX_EAGER_EXECUTOR")
    if raw is None or not raw.strip():
        return DEFAULT_NAME
    name = raw.strip().lower()
    names = executor_names()
    if name not in names:
        raise ValueError(f"MAX_EAGER_EXECUTOR={raw!r}: expected one of {sorted(names)} "
                         f"(entry point group {GROUP!r}) [SEL-3]")
    return name


def env_max_ops() -> int:
    """``MAX_INTERPRETER_MAX_OPS`` (default and non-numeric: 1024, SEL-4)."""
    raw = os.environ.get("MAX_INTERPRETER_MAX_OPS", "").strip()
    return int(raw) if raw.isdigit() else 1024


class MissingExecutor:
    """Stands in for a named executor that cannot be imported or cannot run here (SEL-5).

    It is built again at every ``execute``; while that fails, ``execute`` raises
    ``ExecutorUnavailableError`` naming the executor, its target and the reason."""

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
                    f"executor {self.name!r} is not available: {self.target} "
                    f"{built.reason} [SEL-5]")
            self._resolved = built
        result: Sequence[Any] = self._resolved.execute(graph, inputs)
        return result


def build_executor(name: str) -> Any:
    """A new executor for a registered name (SEL-3, SEL-5, SEL-8): its entry point's target
    called with no arguments (``interpreter``: ``InterpreterExecutor()``, no op limit). A
    target that cannot be imported, or whose constructor raises
    ``ExecutorUnavailableError``, gives a ``MissingExecutor``."""
    registered = _registered()
    ep = registered.get(name)
    if ep is None:
        raise ValueError(f"unknown executor name {name!r}: expected one of "
                         f"{sorted(registered)} (entry point group {GROUP!r}) [SEL-3]")
    try:
        factory = ep.load()
    except (ImportError, AttributeError) as e:
        return MissingExecutor(name, ep.value, f"cannot be imported ({type(e).__name__}: {e})")
    try:
        return factory()
    except ExecutorUnavailableError as e:
        return MissingExecutor(name, ep.value, f"cannot run here ({e})")


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
    """The executor ``MAX_EAGER_EXECUTOR`` names; unset, the one registered as
    ``DEFAULT_NAME``, or while none can be built, ``InterpreterExecutor(max_ops=None)`` (SEL-4);
    unset under ``EAGER_INTERPRETER_DEBUG=1``, that interpreter in debug mode (DEBUG-1)."""
    name = env_executor()
    unset = os.environ.get("MAX_EAGER_EXECUTOR") is None
    if unset and os.environ.get("EAGER_INTERPRETER_DEBUG", "") == "1":  # DEBUG-1
        return InterpreterExecutor(max_ops=None)  # in debug mode: it reads the variable
    if unset and DEFAULT_NAME not in executor_names():
        return InterpreterExecutor(max_ops=None)
    e = build_executor(name)
    if unset and isinstance(e, MissingExecutor):
        return InterpreterExecutor(max_ops=None)
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
