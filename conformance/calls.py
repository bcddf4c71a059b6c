"""Who is to blame: the executor's own calls versus the suite's code around them (CONF-22).

Every call into the executor under test goes through one object,
``conformance.pipeline.ExecutorUnderTest``, which wraps *only* ``executor.execute(...)``
(and the iteration of its result). A refusal (``UnsupportedGraphError``) passes through
unchanged; any other exception becomes :class:`ExecutorRaised`, carrying the original
exception and the executor's own traceback. Every other exception that escapes a test is
the suite's: a **suite error** (:func:`suite_error_message`), never an executor failure.

numpy floating-point warnings of the suite's own computations are silenced at the suite's
boundary (:func:`quiet`); the executor runs under :func:`executor_errstate`, the error state
that was in force outside that boundary, so its own warnings still reach the vendor
(CONF-24).
"""

from __future__ import annotations

import threading
import traceback
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError

from .devices import DeviceProtocolError
from .unchanged import GraphChangedError

__all__ = [
    "SUITE_ERROR",
    "ExecutorRaised",
    "SuiteError",
    "executor_errstate",
    "executor_traceback",
    "is_suite_error",
    "quiet",
    "suite_error_message",
]

SUITE_ERROR = "SUITE ERROR:"
PLEASE_REPORT = ("this is a bug in the conformance suite, not in your executor; "
                 "please report it (with the traceback below)")

#: numpy error state outside the outermost :func:`quiet` block (None: not inside one)
_OUTER: ContextVar[Any] = ContextVar("conformance_outer_errstate", default=None)
#: the warning filters outside the outermost :func:`quiet` block
_OUTER_FILTERS: ContextVar[list[Any] | None] = ContextVar("conformance_outer_filters",
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

    @property
    def found_around_the_call(self) -> bool:
        """A protocol violation the suite found around the call (a changed graph, a device
        array rule): reported without a traceback (CONF-72, CONF-83)."""
        return isinstance(self.original, DeviceProtocolError | GraphChangedError)

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
    ignored inside; :func:`executor_errstate` restores the outer state for the executor."""
    outer = np.geterr()
    if _OUTER.get() is not None:  # nested: the outermost block already holds
        with np.errstate(all="ignore"):
            yield
        return
    token = _OUTER.set(outer)
    with warnings.catch_warnings():
        # also the RuntimeWarnings numpy issues itself, which errstate does not govern
        # ("Mean of empty slice", "All-NaN slice encountered", "Degrees of freedom <= 0")
        filters = _OUTER_FILTERS.set(list(warnings.filters))
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        try:
            with np.errstate(all="ignore"):
                yield
        finally:
            _OUTER_FILTERS.reset(filters)
            _OUTER.reset(token)


def executor_errstate() -> AbstractContextManager[Any]:
    """The numpy error state and warning filters the executor runs under: those outside
    the suite's outermost :func:`quiet` block (CONF-24). Warning filters are process-wide:
    they are restored on the main thread only (threads the suite starts, EXEC-8, keep the
    suite's)."""
    outer = _OUTER.get()
    if outer is None:
        return nullcontext()
    stack = ExitStack()
    stack.enter_context(np.errstate(**outer))
    filters = _OUTER_FILTERS.get()
    if filters is not None and threading.current_thread() is threading.main_thread():
        stack.enter_context(warnings.catch_warnings())
        live: Any = warnings.filters
        live[:] = filters
        getattr(warnings, "_filters_mutated", lambda: None)()  # drop the filter cache
    return stack


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
