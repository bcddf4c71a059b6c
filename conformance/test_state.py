"""Multi-execution state (CONF-90..93): one executor instance, long interleaved sequences.

Each test runs one sequence family (``conformance/sequences.py``) on a fresh executor
instance and judges every call; outputs returned earlier are re-checked after every later
call. A failure is replayed on fresh executors (alone, with its history, shrunk) and stored
with a ``repro.py`` that replays the kept calls (``conformance/history.py``).
"""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from .artifacts import ArtifactDir
from .harness import _option
from .history import History, Shrunk, fresh_executors, run_sequence, shrink, write_history
from .minimize import budget_from
from .outcomes import record
from .pipeline import under_test
from .sequences import FAMILIES, build_sequence
from .shrink_budget import SHRINK_FACTOR, budget_option
from .verdicts import Failure

RULES = ("CONF-90", "CONF-91", "CONF-92", "CONF-109", "EXEC-5", "MUT-4", "TOL-1")
#: Calls per sequence: ``CALLS_FACTOR`` x the profile's ``max_examples`` within the bounds
#: (``SMOKE_CALLS`` at most under ``--conformance-smoke``).
CALLS_FACTOR = 2
MIN_CALLS, MAX_CALLS, SMOKE_CALLS = 12, 400, 24


def calls_per_sequence(config: Any) -> int:
    from hypothesis import settings

    base = settings.default.max_examples if settings.default is not None else 10
    n = max(MIN_CALLS, min(MAX_CALLS, CALLS_FACTOR * base))
    return min(n, SMOKE_CALLS) if _option(config, "conformance_smoke", False) else n


@pytest.mark.spec(*RULES)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_state_sequence(family: str, executor: Any, reference: Any,
                        conformance_artifacts: ArtifactDir,
                        request: pytest.FixtureRequest) -> None:
    """One fresh executor instance runs the family's sequence; every call is judged, and
    every output it returned must keep its bytes through all later calls."""
    config = request.config
    isolated = bool(_option(config, "conformance_isolate", False))
    # a fresh instance, so the history holds every call it served (CONF-91); under
    # --conformance-isolate the session's (isolated) instance
    instance = executor if isolated else fresh_executors(config)()
    meta: dict[str, Any] = {"op": None, "dtype": None, "shape_class": f"state:{family}",
                            "rules": RULES}
    record(request, **meta)
    steps = build_sequence(family, zlib.crc32(family.encode()), calls_per_sequence(config))
    counter = under_test(instance)
    tally = counter.start_tally()
    history = History()
    label = f"state sequence [{family}]"
    failure = run_sequence(steps, counter, reference, label=label, history=history)
    judged = sum(1 for o in history.outcomes if o in ("agrees", "differs"))
    record(request, **meta, structures=len(tally.structures), calls=tally.calls,
           value_checks=judged, sequence_calls=len(steps))
    if failure is None:
        return
    # the failing call is the history's last step
    last = history.steps[-1]
    previous = history.steps[:-1]
    where = conformance_artifacts.write_case(last.graph, last.inputs)
    if failure.verdict is not None:
        conformance_artifacts.write_results(failure.verdict.expected, failure.verdict.actual,
                                            failure.message)
    budget = budget_from(config)
    if isolated:
        shrunk = Shrunk(list(range(len(previous))), len(previous), False, False,
                        skipped="not done under --conformance-isolate (replays would run "
                                "in this process)")
    else:
        most = budget_option(config, "calls"), budget_option(config, "structures")
        shrunk = shrink(previous, last, failure.kind, fresh_executors(config), reference,
                        label=label, seconds=budget.seconds if budget is not None else None,
                        calls=SHRINK_FACTOR * len(steps) if most[0] is None else most[0],
                        structures=(SHRINK_FACTOR * len(tally.structures)
                                    if most[1] is None else most[1]))  # CONF-115
    dropped = (f"; the oldest {history.dropped} calls were not kept (memory budget)"
               if history.dropped else "")
    verdict = Failure(failure.message, artifacts=where, repro=where / "repro.py",
                      notes=[f"call {history.numbers[-1]} of the sequence on one executor "
                             f"instance: {shrunk.summary()}{dropped} [CONF-91]"])
    if not shrunk.alone:
        kept = [previous[i] for i in shrunk.kept] + [last]
        numbers = [history.numbers[i] for i in shrunk.kept] + [history.numbers[-1]]
        write_history(conformance_artifacts, kept, numbers, shrunk.summary())
        calls = ", ".join(f"#{n}" for n in numbers)
        verdict.note(f"the repro replays calls {calls} on one fresh executor (history/ holds "
                     f"them) [CONF-92]")
    (where / "failure.txt").write_text(verdict.render() + "\n")
    verdict.fail(request)
