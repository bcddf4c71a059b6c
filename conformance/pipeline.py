"""The one call pipeline: the executor under test, wrapped once.

Every call the suite makes into an executor goes through one :class:`ExecutorUnderTest`
(the ``executor`` fixture, the fresh instances of the state tests, replays), which per call:

1. counts it into the current :class:`Tally`: calls and distinct ``structural_hash``
   values (CONF-32);
2. times it against ``--conformance-slow-call`` (:func:`watch_calls`: a terminal line while
   it runs, a :class:`SlowCallWarning` once it returns, CONF-36);
3. hands it over (:meth:`ExecutorUnderTest.hand_over`): for an executor on a device
   (EXEC-10) the graph's device copy and the inputs through ``to_device``, the buffers
   brought back and the results checked and copied to the host
   (``conformance.devices.DeviceHandOver``: EXEC-5, EXEC-11, EXEC-12, EXEC-16); the
   graph handed over is snapshotted before and compared after, once (EXEC-15, CONF-83).
   Under ``--conformance-isolate`` a *transport* (``conformance.isolate.IsolatedExecutor``)
   runs that same hand-over in its worker process and sends back what :class:`Handed`
   holds;
4. gives the verdict of the call (:func:`settle`): the host outputs, a refusal as it is,
   a changed graph as ``GraphChangedError``, and blames (CONF-22): any other exception of
   the executor becomes ``ExecutorRaised`` (the finding, with the executor's traceback
   unless the suite found it around the call).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from interpreter.errors import UnsupportedGraphError
from interpreter.graph.core import Graph

from .calls import ExecutorRaised, SuiteError, executor_errstate, executor_traceback
from .devices import DeviceHandOver, DeviceProtocolError, declared_device
from .unchanged import GraphChangedError, Snapshot, change_verdict

__all__ = ["ExecutorUnderTest", "Handed", "SlowCallWarning", "Tally", "call_executor",
           "settle", "under_test", "watch_calls"]


@dataclass
class Handed:
    """One call as the executor answered it: its host outputs or its exception, and what it
    changed in the graph it was handed (None: nothing)."""

    outputs: list[Any] | None
    error: Exception | None
    change: str | None


class Transport(Protocol):
    """Runs :meth:`ExecutorUnderTest.hand_over` elsewhere (a worker process, CONF-12)."""

    def hand_over(self, graph: Graph, inputs: Sequence[Any]) -> Handed: ...


def settle(name: str, handed: Handed) -> list[Any]:
    """The outputs of a call, or its verdict raised: a change of graph ``name`` after a
    return or a refusal is the failure (EXEC-15); after another exception that exception,
    with a note about the change."""
    verdict = None if handed.change is None else change_verdict(name, handed.change,
                                                                handed.error)
    if verdict is not None:
        raise verdict from handed.error
    if handed.error is not None:
        raise handed.error
    assert handed.outputs is not None
    return handed.outputs


class Tally:
    """Calls and distinct graph structures since a test started counting (CONF-32)."""

    __slots__ = ("calls", "structures")

    def __init__(self) -> None:
        self.calls = 0
        self.structures: set[str] = set()


class ExecutorUnderTest:
    """The executor under test, wrapped once (see the module docstring); every other
    attribute is the executor's."""

    def __init__(self, executor: Any, transport: Transport | None = None) -> None:
        self.inner = executor
        self.transport = transport
        self.on_device = None if declared_device(executor).is_cpu() \
            else DeviceHandOver(executor)
        self.tally = Tally()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return repr(self.inner)

    def start_tally(self) -> Tally:
        """Count the calls from here on in a fresh :class:`Tally` (one per test)."""
        self.tally = Tally()
        return self.tally

    def placed(self, graph: Graph) -> Graph:
        """The graph the executor is handed: its device copy, or ``graph`` itself."""
        return graph if self.on_device is None else self.on_device.placed(graph)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        """One call: counted, timed, handed over, settled and blamed."""
        self.tally.calls += 1
        self.tally.structures.add(graph.structural_hash())
        with _timed(graph):
            try:
                transport = self.transport or self
                return settle(graph.name, transport.hand_over(graph, inputs))
            except (UnsupportedGraphError, SuiteError, ExecutorRaised):
                raise
            except (DeviceProtocolError, GraphChangedError) as e:
                raise ExecutorRaised(e, "") from e  # found around the call: no traceback
            except Exception as e:
                raise ExecutorRaised(e, executor_traceback(e)) from e

    def hand_over(self, graph: Graph, inputs: Sequence[Any]) -> Handed:
        """Run the executor once on ``graph`` as it is handed over; never raises what the
        executor raised (it is in :class:`Handed`)."""
        placed = self.placed(graph)
        snapshot = Snapshot(placed)  # outside the call: a graph without a key is ours
        devices = self.on_device
        handed = inputs if devices is None else devices.inputs(placed, inputs)
        outputs: list[Any] | None = None
        error: Exception | None = None
        try:
            with executor_errstate():
                outputs = list(self.inner.execute(placed, handed))
        except Exception as e:
            error = e
        change = snapshot.change()
        if devices is not None:
            try:
                devices.bring_back(placed, inputs, handed)
                if error is None and change is None:
                    outputs = devices.results(placed, handed, outputs or [])
            except DeviceProtocolError as e:
                outputs, error = None, e
        return Handed(outputs, error, change)


def under_test(executor: Any) -> ExecutorUnderTest:
    """``executor`` in the call pipeline: itself when it already is one (never wrapped
    twice), else a new :class:`ExecutorUnderTest` around it."""
    if isinstance(executor, ExecutorUnderTest):
        return executor
    return ExecutorUnderTest(executor)


def call_executor(executor: Any, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
    """``executor.execute(graph, inputs)`` through the call pipeline (:func:`under_test`)."""
    return under_test(executor).execute(graph, inputs)


# -- slow calls (CONF-36) ----------------------------------------------------------------------
class SlowCallWarning(UserWarning):
    """One executor call took longer than ``--conformance-slow-call`` (CONF-36)."""


@dataclass(frozen=True)
class _Watch:
    test: str
    threshold: float
    notify: Callable[[str], None] | None


_WATCH: ContextVar[_Watch | None] = ContextVar("conformance_call_watch", default=None)


@contextmanager
def watch_calls(test: str, threshold: float | None,
                notify: Callable[[str], None] | None = None) -> Iterator[None]:
    """Inside, every executor call longer than ``threshold`` seconds is reported for
    ``test``: ``notify(line)`` while it still runs, a :class:`SlowCallWarning` when it
    returns (CONF-36). ``threshold=None`` or ``<= 0`` watches nothing."""
    token = _WATCH.set(_Watch(test, threshold, notify) if threshold and threshold > 0
                       else None)
    try:
        yield
    finally:
        _WATCH.reset(token)


def _still_running(watch: _Watch, start: float) -> None:
    if watch.notify is not None:
        try:
            watch.notify(f"eager-conformance: {watch.test}: an executor call has been "
                         f"running for {time.perf_counter() - start:.1f} s "
                         f"(--conformance-slow-call={watch.threshold:g}) [CONF-36]")
        except Exception:
            pass  # a reporting hiccup must not disturb the call


class _Watchdog:
    """One daemon thread for every watched call of the process (CONF-36): a call enters
    with its deadline and leaves when it returns; the thread reports each call still
    running at its deadline, once. (A timer thread per call cost 0.1-1 ms a call.)"""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._calls: dict[int, tuple[float, _Watch, float]] = {}  # deadline, watch, start
        self._count = 0
        self._thread: threading.Thread | None = None

    def enter(self, watch: _Watch, start: float) -> int:
        with self._cond:
            self._count += 1
            self._calls[self._count] = (start + watch.threshold, watch, start)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="conformance-slow-call")
                self._thread.start()
            self._cond.notify()
            return self._count

    def leave(self, key: int) -> None:
        with self._cond:
            self._calls.pop(key, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.perf_counter()
                due = [k for k, (deadline, _, _) in self._calls.items() if deadline <= now]
                for key in due:
                    _, watch, start = self._calls.pop(key)
                    self._cond.release()  # notify outside the lock: calls go on
                    try:
                        _still_running(watch, start)
                    finally:
                        self._cond.acquire()
                nearest = min((d for d, _, _ in self._calls.values()), default=None)
                self._cond.wait(None if nearest is None
                                else max(0.0, nearest - time.perf_counter()))


_WATCHDOG = _Watchdog()


@contextmanager
def _timed(graph: Graph) -> Iterator[None]:
    """One call, timed against :func:`watch_calls` (CONF-36)."""
    watch = _WATCH.get()
    if watch is None:
        yield
        return
    start = time.perf_counter()
    key = _WATCHDOG.enter(watch, start)
    try:
        yield
    finally:
        _WATCHDOG.leave(key)
        elapsed = time.perf_counter() - start
        if elapsed > watch.threshold:
            warnings.warn(SlowCallWarning(
                f"{watch.test}: one executor call took {elapsed:.2f} s on graph "
                f"{getattr(graph, 'name', '?')!r} (over --conformance-slow-call="
                f"{watch.threshold:g} s) [CONF-36]"), stacklevel=4)

