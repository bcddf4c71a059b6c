"""Call histories of one executor instance: run, record, shrink, store, replay (CONF-90..92).

:func:`run_sequence` runs :class:`~conformance.sequences.Step` s in order on one executor,
judges every ``value`` step against the reference exactly like a single differential case
(:func:`~conformance.differential.check_case`) and keeps the outputs it returned: after
every later call they must still hold the same bytes (an array returned to the caller is
the caller's, EXEC-5). :class:`History` records each call (graph, inputs, outcome) within
a memory budget. When a call fails, :func:`shrink` replays on *fresh* executors: the
failing call alone, then the whole history, then the shortest suffix of the history that
still fails, then drops calls one at a time. :func:`write_history` stores the kept calls
under ``history/`` with a ``repro.py`` that replays them (:func:`replay_history`).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.errors import UnsupportedGraphError
from interpreter.graph.core import Graph

from .artifacts import ArtifactDir, load_arrays, repro_script, save_arrays
from .calls import ExecutorRaised
from .differential import ReferenceRefused, Verdict, check_case
from .pipeline import call_executor
from .sequences import Step
from .shrink_budget import ShrinkBudget
from .strategies import Case

__all__ = ["HISTORY_BYTES", "Failure", "History", "Shrunk", "explain_with_history",
           "fresh_executors", "load_history", "replay_history", "run_sequence", "shrink",
           "write_history"]

#: Bytes of inputs a :class:`History` keeps (oldest calls dropped beyond).
HISTORY_BYTES = 32 << 20
#: Bytes of returned outputs :func:`run_sequence` keeps to re-check after later calls.
HELD_BYTES = 8 << 20

@dataclass
class Failure:
    """The first failing call of a sequence: its position and what went wrong."""

    index: int
    kind: str  # "values", "raised" or "stale"
    message: str
    verdict: Verdict | None = None


@dataclass
class _Held:
    call: int
    name: str
    graph: str
    array: Any
    copy: np.ndarray


class History:
    """The calls made on one executor instance (steps and outcomes), oldest dropped beyond
    ``budget`` bytes of inputs."""

    def __init__(self, budget: int = HISTORY_BYTES) -> None:
        self.budget = budget
        self.steps: list[Step] = []
        self.numbers: list[int] = []  # 1-based call numbers of the kept steps
        self.outcomes: list[str] = []
        self.dropped = 0
        self.bytes = 0

    def record(self, step: Step, outcome: str) -> None:
        self.steps.append(step)
        self.numbers.append(self.dropped + len(self.steps))
        self.outcomes.append(outcome)
        self.bytes += sum(np.asarray(a).nbytes for a in step.inputs)
        while self.bytes > self.budget and len(self.steps) > 1:
            old = self.steps.pop(0)
            self.numbers.pop(0)
            self.outcomes.pop(0)
            self.bytes -= sum(np.asarray(a).nbytes for a in old.inputs)
            self.dropped += 1


def _preview(a: np.ndarray) -> str:
    flat = a.reshape(-1)
    text = np.array2string(flat[:6], separator=", ")
    return text[:-1] + ", ...]" if flat.size > 6 else text


def _stale(held: list[_Held], index: int, step: Step, label: str) -> Failure | None:
    for h in held:
        now = np.asarray(h.array)
        if now.shape == h.copy.shape and now.tobytes() == h.copy.tobytes():
            continue
        return Failure(index, "stale", (
            f"{label}: {h.name} of call #{h.call + 1} (graph {h.graph!r}) changed during "
            f"call #{index + 1} ({step.describe()}): it was {_preview(h.copy)}, it is now "
            f"{_preview(now)}; an array execute returned belongs to the caller and no later "
            f"execution may write it (outputs are fresh buffers) [EXEC-5]"))
    return None


def _unjudged(step: Step, index: int, executor: Any, label: str
              ) -> tuple[str, Failure | None]:
    """Run a ``bad`` or ``probe`` step: any outcome goes, except a changed graph, a broken
    device protocol, or a refusal after a side effect."""
    copies = [np.array(a, copy=True) for a in step.inputs]
    what = f"{label}: call #{index + 1} ({step.describe()})"
    try:
        call_executor(executor, step.graph, copies)
    except UnsupportedGraphError as e:
        for i, (a, b) in enumerate(zip(step.inputs, copies, strict=False)):
            if a.shape == b.shape and a.tobytes() != b.tobytes():
                return "refused", Failure(index, "raised", (
                    f"{what}: refused the graph ({e}) after modifying input {i}; a refusal "
                    "must come before any side effect [EXEC-3]"))
        return "refused", None
    except ExecutorRaised as e:
        if e.found_around_the_call:
            return "raised", Failure(index, "raised", f"{what}: {e.describe()}")
        return f"raised {type(e.original).__name__}", None
    return "returned", None


def run_sequence(steps: Sequence[Step], executor: Any, reference: Any, *, label: str,
                 history: History | None = None) -> Failure | None:
    """Run ``steps`` in order on ``executor``; the first failing call, or None.

    ``value`` steps are judged by ``check_case`` (a step the reference refuses is not
    judged); their outputs are re-checked after every later call (``HELD_BYTES``)."""
    held: list[_Held] = []
    held_bytes = 0
    for i, step in enumerate(steps):
        failure: Failure | None = None
        if step.kind != "value":
            outcome, failure = _unjudged(step, i, executor, label)
        else:
            outcome = "agrees"
            try:
                verdict = check_case(Case(step.graph, list(step.inputs)), executor, reference,
                                     label=f"{label}: call #{i + 1} ({step.describe()})")
            except ReferenceRefused:
                outcome = "reference refused"
            except UnsupportedGraphError:
                outcome = "refused"
            except ExecutorRaised as e:
                outcome = "raised"
                failure = Failure(i, "raised", f"{label}: call #{i + 1} ({step.describe()}): "
                                               f"{e.describe()}")
            else:
                if not verdict.ok:
                    outcome = "differs"
                    failure = Failure(i, "values", verdict.message, verdict)
                else:
                    for name, a in verdict.actual.items():
                        if name.startswith("out") and held_bytes + a.nbytes <= HELD_BYTES:
                            held.append(_Held(i, f"output {name[3:]}", step.graph.name, a,
                                              np.array(a, copy=True)))
                            held_bytes += a.nbytes
        if history is not None:
            history.record(step, outcome)
        if failure is None:
            failure = _stale(held, i, step, label)
        if failure is not None:
            return failure
    return None


@dataclass
class Shrunk:
    """What the fresh-executor replays found for a failure (CONF-91)."""

    kept: list[int]  # indices into the previous calls that the kept sequence replays
    previous: int  # previous calls recorded
    alone: bool  # the failing call alone fails on a fresh executor
    reproduced: bool  # some replay on a fresh executor fails the same way
    replays: int = 0
    seconds: float = 0.0
    calls: int = 0  # executor calls of the replays (CONF-114)
    structures: int = 0  # structures given to the fresh executors, one compile each
    exhausted: bool = False
    skipped: str = ""  # why no replay ran
    failure: Failure | None = field(default=None, repr=False)

    def summary(self) -> str:
        cost = (f" ({self.replays} replay{'s' if self.replays != 1 else ''} on fresh "
                f"executors, {self.calls} calls, {self.seconds:.1f} s"
                f"{', budget spent: not fully shrunk' if self.exhausted else ''})")
        if self.skipped:
            return f"the history was not replayed on a fresh executor: {self.skipped}"
        if self.alone:
            return "the failing call alone fails on a fresh executor too" + cost
        if not self.reproduced:
            return (f"the failure did not reproduce on a fresh executor, even replaying all "
                    f"{self.previous} previous calls: it depends on state from outside this "
                    f"test, on timing or on chance; history/ holds the whole sequence"
                    + cost)
        return (f"the failure needs the earlier calls: replaying {len(self.kept)} of "
                f"{self.previous} previous calls reproduces it on a fresh executor" + cost)


Factory = Callable[[], Any]


def fresh_executors(config: Any) -> Factory:
    """A factory of fresh instances of the run's ``--executor`` (as the session's one:
    ``resolve``, in the suite's call pipeline; CONF-92)."""
    from .executors import resolve

    spec = config.getoption("executor") if config is not None else None

    def build() -> Any:
        return resolve(spec).under_test()
    return build


def shrink(previous: Sequence[Step], last: Step, kind: str, fresh: Factory, reference: Any,
           *, label: str, seconds: float | None, calls: int | None = None,
           structures: int | None = None) -> Shrunk:
    """Replay on fresh executors (``fresh()`` builds one): ``last`` alone, then every
    previous call, then the shortest suffix that still fails, then without each call in
    turn; a replay *fails* when its last call is its first failure, of the same ``kind``.
    ``seconds`` (None: no shrinking), ``calls`` and ``structures`` (executor calls and
    structures of all replays; None: unbounded) bound the shrinking after the two first
    replays (CONF-114)."""
    start = time.perf_counter()
    out = Shrunk(list(range(len(previous))), len(previous), False, False)

    def fails(kept: list[int]) -> bool:
        out.replays += 1
        seq = [previous[i] for i in kept] + [last]
        ex = fresh()
        try:
            f = run_sequence(seq, ex, reference, label=label)
        finally:
            tally = getattr(ex, "tally", None)
            out.calls += tally.calls if tally is not None else len(seq)
            out.structures += len(tally.structures) if tally is not None else len(seq)
        ok = f is not None and f.index == len(seq) - 1 and f.kind == kind
        if ok:
            out.failure = f
        return ok

    def spent() -> bool:
        out.exhausted = out.exhausted or seconds is None \
            or time.perf_counter() - start > seconds
        return out.exhausted

    def fits(kept: Sequence[int]) -> bool:
        """Whether a replay of ``kept`` and ``last`` fits in ``calls``/``structures``: one
        call per step, and a divergence search (two per node) of the last (CONF-114)."""
        cost = len(kept) + 1 + 2 * len(last.graph.nodes)
        if (calls is not None and out.calls + cost > calls) or (
                structures is not None and out.structures + cost > structures):
            out.exhausted = True
        return not out.exhausted

    try:
        if not fits([]):
            return out
        if fails([]):
            out.alone = out.reproduced = True
            out.kept = []
            return out
        n = len(previous)
        # the whole history; an earlier call of it may fail first (e.g. when the history
        # holds an earlier attempt at the failing case), so suffixes are tried either way
        hi: int | None = n if n and fits(out.kept) and fails(out.kept) else None
        lo, k = 0, 1
        while k < n and not spent() and fits(range(k)):  # the shortest failing suffix:
            if fails(list(range(n - k, n))):  # doubling, then bisection
                hi = k
                break
            lo, k = k, 2 * k
        if hi is None:
            return out
        out.reproduced = True
        while hi - lo > 1 and not spent() and fits(range((lo + hi) // 2)):
            mid = (lo + hi) // 2
            if fails(list(range(n - mid, n))):
                hi = mid
            else:
                lo = mid
        out.kept = list(range(n - hi, n))
        i = 0  # then without each call in turn (out.failure: the last replay that failed)
        while i < len(out.kept) and len(out.kept) > 1 and not spent() \
                and fits(out.kept[1:]):
            cand = out.kept[:i] + out.kept[i + 1:]
            if fails(cand):
                out.kept = cand
            else:
                i += 1
        return out
    finally:
        out.seconds = time.perf_counter() - start


def explain_with_history(history: History, kind: str, fresh: Factory, reference: Any,
                         art: ArtifactDir, *, label: str, seconds: float | None,
                         budget: ShrinkBudget | None = None) -> str:
    """For a failure of another family (``Harness``, CONF-91): the failing call is the
    history's last step. Replayed alone on a fresh executor; when that agrees, the history
    is shrunk within what is left of ``budget`` (its calls and structures are added to it)
    and stored (``history/``, with its own ``repro.py``). Returns the lines to add to the
    failure message ("" when the call alone fails too)."""
    if not history.steps:
        return ""
    last, previous = history.steps[-1], history.steps[:-1]
    if budget is not None and not budget.allows(calls=1 + 2 * len(last.graph.nodes)):
        budget.stop("history replays")
        return ""
    alone = fresh()
    try:
        if run_sequence([last], alone, reference, label=label) is not None:
            return ""  # the stored repro reproduces it: nothing to add
    finally:
        if budget is not None:
            tally = getattr(alone, "tally", None)
            budget.add(tally.calls if tally is not None else 1,
                       len(tally.structures) if tally is not None else 1)
    if not previous:
        return ("\nthe failing call alone agrees on a fresh executor, and it was this test's "
                "first call: the failure depends on state from earlier tests, on timing or on "
                "chance [CONF-91]")
    out = shrink(previous, last, kind, fresh, reference, label=label, seconds=seconds,
                 calls=None if budget is None else budget.calls_left(),
                 structures=None if budget is None else max(
                     0, budget.structures - budget.used_structures()))
    if budget is not None:
        budget.add(out.calls, out.structures)
        if out.exhausted:
            budget.stop("history replays")
    kept = [previous[i] for i in out.kept] + [last]
    numbers = [history.numbers[i] for i in out.kept] + [history.numbers[-1]]
    d = write_history(art, kept, numbers, out.summary(), own_repro=True)
    return (f"\nthe failing call alone agrees on a fresh executor (the repro above may "
            f"say so); call {history.numbers[-1]} of this test on its executor instance: "
            f"{out.summary()} [CONF-91]\nrepro with the history: python {d / 'repro.py'}")


# -- storage and replay ----------------------------------------------------------------------
def write_history(art: ArtifactDir, steps: Sequence[Step], numbers: Sequence[int],
                  summary: str, *, own_repro: bool = False) -> Path:
    """``<test dir>/history/NNN/{graph.txt,inputs.npz}`` for ``steps`` (the last is the
    failing call), ``history/history.json`` and ``<test dir>/repro.py`` replaying them
    (``own_repro``: ``history/repro.py``, the test's own ``repro.py`` left as it is)."""
    d = art.path / "history"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    calls = []
    for n, (number, step) in enumerate(zip(numbers, steps, strict=True)):
        sd = d / f"{n:03d}"
        sd.mkdir()
        (sd / "graph.txt").write_text(step.graph.to_text())
        save_arrays(sd / "inputs.npz", {f"in{i}": a for i, a in enumerate(step.inputs)})
        calls.append({"dir": sd.name, "kind": step.kind, "call": number, "note": step.note})
    (d / "history.json").write_text(json.dumps(
        {"test": art.test_id, "executor": art.spec, "summary": summary, "calls": calls},
        indent=1) + "\n")
    home = d if own_repro else art.path
    try:
        rel = home.relative_to(Path.cwd())
    except ValueError:
        rel = home
    doc = (f"Replay of a conformance failure that needs earlier calls: {art.test_id}\n\n"
           f"Runs the {len(steps)} calls stored in history/ (beside or above this file) in "
           "order on ONE fresh\nexecutor, each judged against the reference; the last one "
           "is the call that failed.\n"
           f"    python {rel}/repro.py [--executor=module:Class]\n"
           "Exits 1 while a call fails, 0 once every call agrees; 2 when the executor cannot "
           "be\nbuilt, 3 on an error of the suite itself (please report those).")
    where = "here" + ("" if own_repro else ' / "history"')
    (home / "repro.py").write_text(repro_script(doc, "conformance.history:replay_history",
                                                f"{where}, spec", art.spec, art.workdir))
    return d


def load_history(directory: Path | str) -> list[Step]:
    """The steps stored by :func:`write_history`."""
    d = Path(directory)
    meta = json.loads((d / "history.json").read_text())
    steps = []
    for c in meta["calls"]:
        graph = Graph.parse((d / c["dir"] / "graph.txt").read_text())
        arrays = load_arrays(d / c["dir"] / "inputs.npz")
        steps.append(Step(c["kind"], graph, [arrays[f"in{i}"] for i in range(len(arrays))],
                          f"call #{c['call']}" + (f": {c['note']}" if c["note"] else "")))
    return steps


def replay_history(directory: Path | str, executor_spec: str, out: Any = None) -> int:
    """Replay a stored history on one fresh executor; 1 while a call fails, 0 once all
    agree, 2 when the executor cannot be built, 3 on a suite error (CONF-92)."""
    from interpreter.executor import InterpreterExecutor

    from .calls import quiet, suite_error_message
    from .executors import ExecutorSpecError, resolve

    stream = out or sys.stdout
    try:
        steps = load_history(directory)
    except Exception as e:
        print(suite_error_message(e, f"loading the stored history {directory}"), file=stream)
        return 3
    try:
        executor = resolve(executor_spec).under_test()
    except ExecutorSpecError as e:
        print(f"ERROR: {e}", file=stream)
        return 2
    try:
        with quiet():
            failure = run_sequence(steps, executor, InterpreterExecutor(),
                                   label=f"replay of {directory}")
    except Exception as e:
        print(suite_error_message(e, f"the replay of {directory}"), file=stream)
        return 3
    if failure is not None:
        print(f"FAIL: call {failure.index + 1} of {len(steps)} on one fresh executor:\n"
              f"{failure.message}", file=stream)
        return 1
    print(f"OK: {executor_spec} agrees with the reference on all {len(steps)} calls of "
          f"{directory}", file=stream)
    return 0
