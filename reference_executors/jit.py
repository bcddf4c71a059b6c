"""The JIT (composite) executor: interpret while compiling in the background (JIT-1..JIT-14).

``JitExecutor`` keeps, per instance, an LRU cache (``CACHE_SIZE`` entries) of compile
entries keyed by the graph's structural key (``interpreter.graph.key``, JIT-2). The first
sight of a structure submits one compile of a snapshot of the graph (its structural copy,
``copy_graph``, taken before anything runs) to a background worker once the
interpreter has served that first call (so the compile does not slow it down); while it is
pending the interpreter serves the calls; once it has landed the compiled plan serves every
call without touching the interpreter. A graph the interpreter refuses waits for its
compile (running it on the calling thread if the worker has not started it). Failed
compiles are sticky. An interpreter runtime failure is recovered through the compiled plan,
with a ``UserWarning``, only when the graph cannot have mutated anything yet (no buffer
input, no side-effecting op). spec/reference-executors.md.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor, validate_inputs
from interpreter.graph import Graph
from interpreter.graph.copy import copy_graph
from interpreter.graph.key import structural_key
from interpreter.types import BufferType

__all__ = ["CACHE_SIZE", "CompositeExecutor", "JitExecutor", "may_mutate"]

#: Compile entries each executor keeps (least recently used evicted first; MAX's stage C
#: model cache default).
CACHE_SIZE = 128


def may_mutate(graph: Graph) -> bool:
    """True when running ``graph`` can have an effect outside its outputs: a buffer input
    (stores) or a side-effecting op (stores, prints). Such a graph is never replayed."""
    return (any(isinstance(v.type, BufferType) for v in graph.inputs)
            or any(n.op.side_effect for n in graph.nodes))


class _Entry:
    """One structure's compile: runs at most once, on whichever thread gets there first."""

    def __init__(self, snapshot: Graph) -> None:
        self._snapshot: Graph | None = snapshot  # the graph as given, dropped once compiled
        self._lock = threading.Lock()
        self.done = False
        self.plan: Any = None
        #: the plan's ``run`` for validated inputs (``run_validated`` where it has one)
        self.run: Any = None
        self.error: BaseException | None = None
        self.evicted = False  # the worker skips it; a caller that holds it still compiles

    def resolve(self, compiler: Any) -> Any:
        """The compiled plan; compiles now unless done (or being done elsewhere: then waits)
        and re-raises a failed compile (JIT-7)."""
        if not self.done:
            with self._lock:
                if not self.done:
                    try:
                        self.plan = compiler.compile(self._snapshot)
                        self.run = getattr(self.plan, "run_validated", self.plan.run)
                    except Exception as e:  # sticky: kept and re-raised, never recompiled
                        self.error = e
                    self._snapshot = None
                    self.done = True
        if self.error is not None:
            raise self.error
        return self.plan


class JitExecutor:
    """Serve from the interpreter while the compiled plan is pending, then from the plan.

    ``interpreter`` (default ``InterpreterExecutor(max_ops=MAX_INTERPRETER_MAX_OPS)``),
    ``compiler`` (default ``CompilingExecutor()``; anything with ``compile(graph)`` returning
    an object with ``run(inputs)``, and optionally ``run_validated(inputs)``, called for
    inputs this executor has validated), ``sync_on_interpreter_fallback``: whether a refused or
    failing interpreter call waits for the compiled plan (else the interpreter's error
    propagates), ``cache_size``: compile entries kept (LRU).
    """

    def __init__(self, *, interpreter: Any = None, sync_on_interpreter_fallback: bool = True,
                 compiler: Any = None, cache_size: int = CACHE_SIZE) -> None:
        if interpreter is None:
            from interpreter.selection import env_max_ops

            interpreter = InterpreterExecutor(max_ops=env_max_ops())
        if compiler is None:
            from .compiling import CompilingExecutor

            compiler = CompilingExecutor()
        if cache_size < 1:
            raise ValueError(f"JitExecutor: cache_size must be at least 1, got {cache_size}")
        self.interpreter = interpreter
        self.compiler = compiler
        self.sync_on_interpreter_fallback = sync_on_interpreter_fallback
        self.cache_size = cache_size
        self._cache: OrderedDict[Hashable, _Entry] = OrderedDict()
        #: (key, entry) of the last structure served: a loop running one structure again
        #: compares keys once instead of hashing its key twice (get, then move_to_end).
        #: Whatever moves an entry to the LRU end sets it, so it is always the newest.
        self._last: tuple[Hashable, _Entry] | None = None
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        #: compiles submitted so far (a structure evicted and seen again counts twice).
        self.submitted = 0

    def __repr__(self) -> str:
        return (f"JitExecutor(interpreter={self.interpreter!r}, compiler={self.compiler!r}, "
                f"sync_on_interpreter_fallback={self.sync_on_interpreter_fallback!r})")

    def cached_keys(self) -> list[Hashable]:
        """The structural keys held, least recently used first."""
        with self._lock:
            return list(self._cache)

    def wait_compiled(self) -> None:
        """Finish every cached compile now (failures stay cached; JIT-12)."""
        with self._lock:
            entries = list(self._cache.values())
        for entry in entries:
            _resolve_quietly(entry, self.compiler)

    def state(self, graph: Graph) -> str:
        """``"absent"``, ``"pending"``, ``"compiled"`` or ``"failed"``: where the compile of
        ``graph``'s structure stands in this executor (JIT-12)."""
        with self._lock:
            entry = self._cache.get(structural_key(graph))
        if entry is None:
            return "absent"
        if not entry.done:
            return "pending"
        return "failed" if entry.error is not None else "compiled"

    def _entry(self, graph: Graph) -> tuple[_Entry, bool]:
        """The cache entry of ``graph``'s structure, and whether this call created it."""
        key = structural_key(graph)
        last = self._last
        if last is not None and (last[0] is key or last[0] == key):
            return last[1], False
        entry = self._cache.get(key)  # a hit needs no lock: each OrderedDict call is atomic
        if entry is not None:
            try:
                self._cache.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile: the entry still serves
                pass
            self._last = (key, entry)
            return entry, False
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                self._last = (key, entry)
                return entry, False
            # the compile sees the graph as given, whatever the interpreter does to it
            entry = self._cache[key] = _Entry(copy_graph(graph))
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)[1].evicted = True
            self._last = (key, entry)
            self.submitted += 1
        return entry, True

    def _submit(self, entry: _Entry) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="jit-compile")
            self._pool.submit(_resolve_quietly, entry, self.compiler)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> Sequence[Any]:
        if graph.outputs is None:
            raise UnsupportedGraphError(f"JitExecutor: graph {graph.name!r} refused: graph "
                                        "has no outputs (call graph.output(...)) [EXEC-2]")
        validate_inputs("JitExecutor", graph, inputs)
        entry, new = self._entry(graph)
        if entry.done and entry.error is None:  # inputs validated above
            result: Sequence[Any] = entry.run(inputs)
            return result
        try:
            return self._interpret(graph, inputs, entry)
        finally:
            if new:  # after the interpreter's call, so the compile does not slow it down
                self._submit(entry)

    def _interpret(self, graph: Graph, inputs: Sequence[Any], entry: _Entry) -> Sequence[Any]:
        """Serve a call whose plan is not ready: the interpreter, else the plan (JIT-6/10)."""
        mutates = may_mutate(graph)
        try:
            served: Sequence[Any] = self.interpreter.execute(graph, inputs)
            return served
        except UnsupportedGraphError:
            if not self.sync_on_interpreter_fallback:
                raise
        except Exception as e:
            if mutates or not self.sync_on_interpreter_fallback:
                raise
            warnings.warn(f"JitExecutor: the interpreter failed on graph {graph.name!r} "
                          f"({type(e).__name__}: {e}); serving it with the compiled plan "
                          "instead. Please file a bug [JIT-10]", UserWarning, stacklevel=3)
            try:
                plan = entry.resolve(self.compiler)
            except Exception as compile_error:
                e.add_note(f"JitExecutor: the compiled fallback failed too: "
                           f"{type(compile_error).__name__}: {compile_error} [JIT-10]")
                raise e from None
            recovered: Sequence[Any] = plan.run(inputs)
            return recovered
        compiled: Sequence[Any] = entry.resolve(self.compiler).run(inputs)
        return compiled


def _resolve_quietly(entry: _Entry, compiler: Any) -> None:
    """The background task: compile unless evicted meanwhile; a failure stays in the entry
    (JIT-7)."""
    if entry.evicted:
        return
    try:
        entry.resolve(compiler)
    except Exception:
        pass


#: MAX's other name for the same class.
CompositeExecutor = JitExecutor
