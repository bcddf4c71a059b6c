"""The budget of a failing test's shrinking (CONF-114..116).

Once a test has seen its first failure, everything it does to the executor is *shrinking*:
hypothesis' shrink phase, the suite's minimiser (CONF-19, CONF-82), the search for the
first diverging node (CONF-20) and the history replays on fresh executors (CONF-91). A
:class:`ShrinkBudget` bounds all of it together in executor calls and in *new* graph
structures (a structure the executor was not given before in this test: for a compiling
executor, a compile). When it is spent, each step keeps the best failing case found so far
and the failure message says that shrinking stopped early (:meth:`ShrinkBudget.summary`).

Defaults (``--conformance-shrink-calls``/``--conformance-shrink-structures`` unset): 9 x the
calls and 9 x the structures of a passing test's generated graphs (its graphs x
``INPUT_SETS``, and its graphs), so that a failing test costs at most 10 x a passing one.
"""

from __future__ import annotations

from typing import Any

from .pipeline import Tally

__all__ = ["SHRINK_FACTOR", "ShrinkBudget", "budget_option"]

#: Default budget as a multiple of a passing test's calls (and structures), CONF-115.
SHRINK_FACTOR = 9


def budget_option(config: Any, name: str) -> int | None:
    """``--conformance-shrink-<name>`` (None: the default)."""
    try:
        value = config.getoption(f"conformance_shrink_{name}")
    except (ValueError, AttributeError):
        return None
    return None if value is None else max(0, int(value))


class ShrinkBudget:
    """Executor calls and new structures a failing test may spend shrinking (CONF-114).

    ``tally`` is the test's (:class:`~conformance.pipeline.Tally`); counting starts at
    :meth:`start` (the first failure). Calls on fresh executors (history replays) are added
    with :meth:`add`."""

    def __init__(self, calls: int, structures: int) -> None:
        self.calls = calls
        self.structures = structures
        self.tally: Tally | None = None
        self.calls_at = 0
        self.known: frozenset[str] = frozenset()
        self.extra_calls = 0
        self.extra_structures = 0
        self.stopped: list[str] = []  # the steps the budget cut short

    @property
    def started(self) -> bool:
        return self.tally is not None

    def start(self, tally: Tally) -> None:
        """Count from here on (once: later calls keep the first start)."""
        if self.tally is None:
            self.tally = tally
            self.calls_at = tally.calls
            self.known = frozenset(tally.structures)

    def used_calls(self) -> int:
        live = 0 if self.tally is None else self.tally.calls - self.calls_at
        return live + self.extra_calls

    def used_structures(self) -> int:
        live = 0 if self.tally is None else len(self.tally.structures - self.known)
        return live + self.extra_structures

    def calls_left(self) -> int:
        return max(0, self.calls - self.used_calls())

    def new_structure(self, key: str) -> bool:
        return self.tally is not None and key not in self.tally.structures

    def allows(self, key: str | None = None, calls: int = 1) -> bool:
        """Whether ``calls`` more calls (on structure ``key``) fit in the budget."""
        if self.used_calls() + calls > self.calls:
            return False
        return key is None or not self.new_structure(key) \
            or self.used_structures() < self.structures

    def stop(self, step: str) -> None:
        """Record that ``step`` ended because the budget was spent."""
        if step not in self.stopped:
            self.stopped.append(step)

    def add(self, calls: int, structures: int) -> None:
        """Calls made outside the test's tally (fresh executors, CONF-91)."""
        self.extra_calls += calls
        self.extra_structures += structures

    def record(self) -> dict[str, Any]:
        """The report fields (CONF-116)."""
        return {"shrink_calls": self.used_calls(), "shrink_structures": self.used_structures(),
                "shrink_stopped": list(self.stopped)}

    def summary(self) -> str:
        """The failure message's line about shrinking (CONF-116)."""
        line = (f"shrinking: {self.used_calls()} executor calls, {self.used_structures()} new "
                f"graph structures (budget {self.calls} calls, {self.structures} structures: "
                f"--conformance-shrink-calls, --conformance-shrink-structures)")
        if self.stopped:
            line += (f"\nshrinking stopped early, its budget spent ({', '.join(self.stopped)}): "
                     "the repro is the smallest failing case found so far [CONF-114]")
        return line
