"""Who is to blame: the executor's own calls versus the suite's code around them (CONF-22).

Every call into the executor under test goes through :func:`call_executor`, which wraps
*only* ``executor.execute(...)`` (and the iteration of its result). A refusal
(``UnsupportedGraphError``) passes through unchanged; any other exception becomes
:class:`ExecutorRaised`, carrying the original exception and the executor's own traceback.
Every other exception that escapes a test is the suite's: a **suite error**
(:func:`suite_error_message`), never an executor failure.

numpy floating-point warnings of the suite's own computations are silenced at the suite's
boundary (:func:`quiet`); :func:`call_executor` runs the executor under the error state that
was in force outside that boundary, so the executor's own warnings still reach the vendor
(CONF-24).

The graph must come back unchanged (EXEC-15): its structure is compared before and after
each call (:class:`~conformance.unchanged.Unchanged`, CONF-83); a change is blamed on the
executor like a device protocol violation, without the suite's traceback.

A call running longer than ``--conformance-slow-call`` seconds is reported while it runs (a
terminal line, where the run has a terminal) and, when it returns, as a
:class:`SlowCallWarning` naming the test and the elapsed time (CONF-36): without
``--conformance-isolate`` a call that never returns would otherwise stall a worker silently.
"""

from __future__ import annotations

import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError

from .devices import DeviceProtocolError
from .unchanged import GraphChangedError, Unchanged

__all__ = [
    "SUITE_ERROR",
    "BlamedExecutor",
    "ExecutorRaised",
    "SlowCallWarning",
    "SuiteError",
    "call_executor",
    "executor_traceback",
    "is_suite_error",
    "quiet",
    "suite_error_message",
    "watch_calls",
]

SUITE_ERROR = "SUITE ERROR:"
PLEASE_REPORT = ("this is a bug in the conformance suite, not in your executor; "
                 "please report it (with the traceback below)")

#: numpy error state outside the outermost :func:`quiet` block (None: not inside one)
_OUTER: ContextVar[Any] = ContextVar("conformance_outer_errstate",
                                                       default=None)


class SuiteError(Exception):
    """A failure of the suite's own machinery (reference, comparison, artifacts, isolation
    worker); never the executor's fault."""


class ExecutorRaised(Exception):
    """The executor under test raised something other than ``UnsupportedGraphError``."""

    def __init__(self, original: BaseException, tb: str) -> None:
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original
        self.traceback = tb

    def describe(self) -> str:
        """``the executor raised T: msg`` followed by the executor's traceback."""
        if isinstance(self.original, DeviceProtocolError):
            return f"the executor broke the device protocol: {self.original}"
        if isinstance(self.original, GraphChangedError):
            return str(self.original)
        return (f"the executor raised {type(self.original).__name__}: {self.original}\n"
                f"{self.traceback.rstrip()}")


def executor_traceback(exc: BaseException, skip: int = 1) -> str:
    """``exc``'s traceback without its first ``skip`` frames (the suite's calling frame),
    with chained exceptions and notes (e.g. an isolated worker's traceback)."""
    tb = exc.__traceback__
    for _ in range(skip):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


@contextmanager
def quiet() -> Iterator[None]:
    """The suite's boundary: numpy floating-point warnings of the suite's own code are
    ignored inside; :func:`call_executor` restores the outer state for the executor."""
    outer = np.geterr()
    token = _OUTER.set(outer) if _OUTER.get() is None else None
    try:
        with np.errstate(all="ignore"):
            yield
    finally:
        if token is not None:
            _OUTER.reset(token)


class SlowCallWarning(UserWarning):
    """One executor call took longer than ``--conformance-slow-call`` (CONF-36)."""


@dataclass(frozen=True)
class _Watch:
    test: str
    threshold: float
    notify: Callable[[str], None] | None


_WATCH: ContextVar[_Watch | None] = ContextVar("conformance_call_watch", default=None)
_IN_CALL: ContextVar[bool] = ContextVar("conformance_in_call", default=False)


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


def call_executor(executor: Any, graph: Any, inputs: Sequence[Any]) -> list[Any]:
    """``list(executor.execute(graph, inputs))``; the executor's exceptions (other than a
    refusal or a :class:`SuiteError` of a suite-side proxy) become :class:`ExecutorRaised`.
    The outermost call is timed against :func:`watch_calls` (CONF-36)."""
    watch = None if _IN_CALL.get() else _WATCH.get()
    if watch is None:
        return _call(executor, graph, inputs)
    start = time.perf_counter()
    timer = threading.Timer(watch.threshold, _still_running, (watch, start))
    timer.daemon = True
    timer.start()
    token = _IN_CALL.set(True)
    try:
        return _call(executor, graph, inputs)
    finally:
        _IN_CALL.reset(token)
        timer.cancel()
        elapsed = time.perf_counter() - start
        if elapsed > watch.threshold:
            warnings.warn(SlowCallWarning(
                f"{watch.test}: one executor call took {elapsed:.2f} s on graph "
                f"{getattr(graph, 'name', '?')!r} (over --conformance-slow-call="
                f"{watch.threshold:g} s) [CONF-36]"), stacklevel=2)


def _call(executor: Any, graph: Any, inputs: Sequence[Any]) -> list[Any]:
    outer = _OUTER.get()
    state = np.errstate(**outer) if outer is not None else nullcontext()
    watch = Unchanged(graph)  # the graph's key before the call (CONF-83)
    try:
        with state, watch:
            return list(executor.execute(graph, inputs))
    except (UnsupportedGraphError, SuiteError, ExecutorRaised):
        raise
    except (DeviceProtocolError, GraphChangedError) as e:
        raise ExecutorRaised(e, "") from e  # found by the suite around the call: no traceback
    except Exception as e:
        raise ExecutorRaised(e, executor_traceback(e)) from e


def is_suite_error(exc: BaseException) -> bool:
    """Whether an exception escaping a conformance test is the suite's own fault: anything
    but a verdict (assertion / pytest outcome), a refusal or the executor's exception."""
    from _pytest.outcomes import OutcomeException

    if isinstance(exc, SuiteError):
        return True
    if isinstance(exc, AssertionError | OutcomeException | ExecutorRaised
                  | UnsupportedGraphError):
        return str(exc).startswith(SUITE_ERROR)
    if isinstance(exc, BaseExceptionGroup):
        return any(is_suite_error(e) for e in exc.exceptions)
    return isinstance(exc, Exception) and type(exc).__module__.split(".")[0] != "hypothesis"


def suite_error_message(exc: BaseException, where: str = "") -> str:
    """The failure message of a suite error: what happened, "please report", the full
    traceback."""
    if str(exc).startswith(SUITE_ERROR):
        return str(exc)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    at = f" in {where}" if where else ""
    return (f"{SUITE_ERROR} the conformance suite raised {type(exc).__name__}{at}: {exc}\n"
            f"  {PLEASE_REPORT}.\n{tb.rstrip()}")


class BlamedExecutor:
    """The executor under test as the tests see it: every ``execute`` goes through
    :func:`call_executor`; other attributes are the executor's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def execute(self, graph: Any, inputs: Sequence[Any]) -> list[Any]:
        return call_executor(self.inner, graph, inputs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return repr(self.inner)
