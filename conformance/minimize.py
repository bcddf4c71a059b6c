"""Minimising a failing case before it is stored (CONF-19).

Hypothesis shrinks the size of a random graph, but not its values (they come from a numpy
generator seeded by hypothesis), so one wrong element can leave a 30-node graph behind.
After the shrink, :func:`minimize` reduces the stored case while the executor still fails
on it (any failure, checked by :func:`~conformance.differential.check_case`):

1. **Graph.** Keep only what a failing output needs. First try the first diverging node
   (then the producer of each failing output) alone: every node upstream of it is *cut* —
   its results become graph inputs holding the reference's values. Otherwise keep the nodes
   upstream of the diverging node (or of one failing output; inputs they do not use are
   dropped), then cut or drop (stores) these nodes one at a time, nearest the end first.
2. **Values.** Replace input elements by 0, then single elements by 1, in halving chunks
   (delta debugging), so only the elements the failure needs keep their values.

Both steps stop when the budget (seconds and executor calls) is spent; what was found so
far is kept. The harness minimises only hypothesis' final (shrunk) example.

A case on which the executor *raises* is minimised the same way (:func:`minimize_raised`),
while the executor still raises the same exception type; its graph step first tries each
node alone (upstream cut), in graph order.
"""

from __future__ import annotations

import shutil
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from interpreter.graph.core import Graph, Value
from interpreter.graph.lowering import lower
from interpreter.types import BufferType

from .artifacts import ArtifactDir
from .calls import ExecutorRaised
from .compare import same_bits
from .differential import Verdict, _reference_env, check_case
from .pipeline import under_test
from .shrink_budget import ShrinkBudget
from .strategies import Case

__all__ = ["Budget", "Minimized", "budget_from", "in_final_example", "minimize",
           "minimize_raised", "minimize_raised_stored", "minimize_stored"]


@dataclass(frozen=True)
class Budget:
    """Bound of one minimisation: wall-clock seconds and calls into the executor."""

    seconds: float = 5.0
    calls: int = 400


@dataclass
class Minimized:
    """A smaller case that still fails, with its verdict and what it cost."""

    case: Case
    verdict: Verdict
    nodes_before: int
    calls: int
    seconds: float
    exhausted: bool  # stopped by the budget, not because nothing smaller failed
    steps: list[str] = field(default_factory=list)

    def summary(self) -> str:
        g = self.case.graph
        total = sum(int(np.asarray(a).size) for a in self.case.inputs)
        return (f"minimised from {self.nodes_before} to {len(g.nodes)} node(s); "
                f"{_plain(self.case.inputs)} of {total} input elements are 0 or 1 "
                f"({self.calls} executor calls, {self.seconds:.1f} s"
                f"{', budget spent' if self.exhausted else ''})")


def _plain(inputs: Sequence[np.ndarray]) -> int:
    return sum(int(_simple(a).sum()) for a in inputs)


def _simple(a: np.ndarray) -> np.ndarray:
    """True where an element is already 0 or 1 (+0.0 only: -0.0 may matter)."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return np.ones(a.shape, bool)
    zero, one = np.zeros_like(a), np.ones_like(a)
    return np.asarray(same_bits(zero, a) | same_bits(one, a))


def budget_from(config: Any) -> Budget | None:
    """The budget set by ``--conformance-minimize=SECONDS`` (None: 0 turns it off); the
    default budget without a pytest config."""
    seconds = None if config is None else config.getoption("conformance_minimize", None)
    if seconds is None:
        return Budget()
    return Budget(seconds=float(seconds)) if float(seconds) > 0 else None


def in_final_example() -> bool:
    """True outside hypothesis or in its final replay of the shrunk example."""
    from hypothesis import currently_in_test_context
    from hypothesis.control import current_build_context

    return not currently_in_test_context() or bool(current_build_context().is_final)


#: whether declared deviations explain a case's whole failure (CONF-142)
Excused = Callable[[Case, Verdict], bool]


class _Search:
    def __init__(self, executor: Any, reference: Any, budget: Budget,
                 raises: str | None = None, shrink: ShrinkBudget | None = None,
                 excused: Excused | None = None) -> None:
        self.raises = raises  # minimise "raises this exception type", not a mismatch
        self.excused = excused  # a candidate the declared deviations explain passes
        self.executor = under_test(executor)  # its tally counts the test's calls (CONF-32)
        if shrink is None:  # on its own: the budget's calls, any number of structures
            shrink = ShrinkBudget(budget.calls, budget.calls)
            shrink.start(self.executor.tally)
        self.shrink = shrink  # shared with the rest of the test's shrinking (CONF-114)
        self.calls_before = shrink.used_calls()
        self.reference = reference
        self.budget = budget
        self.start = time.monotonic()
        self.exhausted = False

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def calls(self) -> int:
        """Executor calls of this search."""
        return self.shrink.used_calls() - self.calls_before

    def spent(self) -> bool:
        """Time or calls spent (a spent structure budget still lets candidates of the
        structures already given run)."""
        if (self.elapsed() >= self.budget.seconds or self.calls() >= self.budget.calls
                or not self.shrink.allows()):
            self.exhausted = True
            self.shrink.stop("minimisation")
            return True
        return False

    def fails(self, graph: Graph, inputs: Sequence[np.ndarray]) -> bool:
        """Whether the executor still fails on this candidate: a mismatch, or raising the
        same exception type when minimising a raise (other exceptions: no). A candidate of
        a new structure beyond the budget's structures is not tried (CONF-114)."""
        if self.spent():
            return False
        if not self.shrink.allows(graph.structural_hash()):
            self.exhausted = True
            self.shrink.stop("minimisation")
            return False
        try:
            v = check_case(Case(graph, list(inputs)), self.executor, self.reference,
                           locate=False)
        except ExecutorRaised as e:
            return type(e.original).__name__ == self.raises
        except Exception:
            return False  # a refusal or another error is not the failure being minimised
        return self.raises is None and not v.ok and not (
            self.excused is not None and self.excused(Case(graph, list(inputs)), v))


# -- graph surgery --------------------------------------------------------------------------
@dataclass
class _Sub:
    graph: Graph
    inputs: list[np.ndarray]
    targets: list[Value]  # the failing values, as values of ``graph``


def _cuttable(graph: Graph, i: int) -> bool:
    node = graph.nodes[i]
    return not node.op.side_effect and bool(node.results) and all(
        not isinstance(r.type, BufferType) for r in node.results)


def _extract(graph: Graph, inputs: Sequence[np.ndarray], env: dict[Value, Any],
             targets: Sequence[Value], cut: set[int] | frozenset[int] = frozenset(),
             drop: set[int] | frozenset[int] = frozenset()) -> _Sub | None:
    """The part of ``graph`` that ``targets`` need, with the nodes in ``cut`` replaced by
    inputs holding their reference results (``env``) and the stores in ``drop`` removed.
    Inputs no kept node uses are dropped. None when a cut value has an unexpected type."""
    needed: set[Value] = set(targets)
    keep: list[int] = []
    lifted: list[Value] = []
    for i in range(len(graph.nodes) - 1, -1, -1):
        node = graph.nodes[i]
        if i in drop:
            continue
        writes = node.op.side_effect and any(v in needed for v in node.operands)
        if not (writes or any(r in needed for r in node.results)):
            continue
        if i in cut:
            lifted[:0] = [r for r in node.results if r in needed]
            continue
        keep.append(i)
        needed.update(node.operands)
    keep.reverse()
    sources: list[tuple[Value, np.ndarray]] = [
        (v, a) for v, a in zip(graph.inputs, inputs, strict=True) if v in needed]
    for v in lifted:
        a = np.asarray(env[v])
        if a.dtype != v.type.dtype.to_numpy() or a.shape != v.type.shape:
            return None
        sources.append((v, a))
    g = Graph(graph.name, input_types=[v.type for v, _ in sources])
    new: dict[Value, Value] = dict(zip([v for v, _ in sources], g.inputs, strict=True))
    for i in keep:
        node = graph.nodes[i]
        results = g.stage(node.op, [new[v] for v in node.operands], node.attrs)
        new.update(zip(node.results, results, strict=True))
    g.output(*[new[v] for v in targets if not isinstance(v.type, BufferType)])
    return _Sub(lower(g), [np.array(a, copy=True) for _, a in sources],
                [new[v] for v in targets])


def _upstream(graph: Graph, targets: Sequence[Value]) -> set[int]:
    """Indices of the nodes upstream of ``targets`` that can be cut (not their producers)."""
    from .differential import cone

    producers = {i for i, n in enumerate(graph.nodes)
                 if any(r in set(targets) for r in n.results)}
    return {i for i in cone(graph, targets) if i not in producers and _cuttable(graph, i)}


def _reduce_graph(s: _Search, case: Case, verdict: Verdict, steps: list[str]) -> _Sub:
    graph, inputs = case.graph, list(case.inputs)
    env, _ = _reference_env(graph, inputs)
    every = [*(graph.outputs or []), *[v for v in graph.inputs if isinstance(v.type, BufferType)]]
    failing = list(verdict.failing) or every
    if s.excused is not None:  # the value that failed first may be the deviation's (CONF-142)
        failing += [v for v in every if not any(v is f for f in failing)]
    attempts: list[list[Value]] = []
    div = verdict.divergence
    if div is not None:
        node = graph.nodes[div.index]
        own = [*node.results] or [v for v in node.operands
                                  if any(v is i for i in graph.inputs)]
        if own:
            attempts.append(own)
    attempts += [[v] for v in failing]
    current = _Sub(graph, inputs, failing)
    for targets in attempts:  # a failing value's producer alone, upstream cut
        sub = _extract(graph, inputs, env, targets, cut=_upstream(graph, targets))
        if sub is not None and _smaller(sub, graph) and s.fails(sub.graph, sub.inputs):
            steps.append(f"isolated {', '.join(n.op.name for n in sub.graph.nodes)}")
            return sub
    for targets in attempts:  # the cone of the diverging node or of one failing value
        sub = _extract(graph, inputs, env, targets)
        if sub is not None and _smaller(sub, graph) and s.fails(sub.graph, sub.inputs):
            steps.append(f"kept the {len(sub.graph.nodes)} node(s) a failing value needs")
            current = sub
            break
    return _cut_nodes(s, current, steps)


def _smaller(sub: _Sub, graph: Graph) -> bool:
    return (len(sub.graph.nodes), len(sub.graph.inputs)) < (len(graph.nodes),
                                                            len(graph.inputs))


def _cut_nodes(s: _Search, cur: _Sub, steps: list[str]) -> _Sub:
    """Cut (or, for stores, drop) one node at a time, nearest the targets first."""
    progress = True
    while progress and not s.spent():
        progress = False
        g = cur.graph
        env, _ = _reference_env(g, cur.inputs)
        producers = {i for i, n in enumerate(g.nodes)
                     if any(r in set(cur.targets) for r in n.results)}
        for i in range(len(g.nodes) - 1, -1, -1):
            if i in producers or s.spent():
                continue
            if _cuttable(g, i):
                sub = _extract(g, cur.inputs, env, cur.targets, cut={i})
            elif g.nodes[i].op.side_effect:
                sub = _extract(g, cur.inputs, env, cur.targets, drop={i})
            else:
                continue
            if sub is not None and len(sub.graph.nodes) < len(g.nodes) and s.fails(
                    sub.graph, sub.inputs):
                steps.append(f"cut node #{i} {g.nodes[i].op.name}")
                cur = sub
                progress = True
                break
    return cur


# -- values -----------------------------------------------------------------------------------
def _simplify_values(s: _Search, graph: Graph, inputs: list[np.ndarray], steps: list[str]
                     ) -> list[np.ndarray]:
    """Elements replaced by 0 (chunks, halving) or 1 (single elements) while it fails."""
    inputs = [np.array(a, copy=True) for a in inputs]
    for k, a in enumerate(inputs):
        todo = [int(i) for i in np.flatnonzero(~_simple(a).reshape(-1))]
        chunks = [todo] if todo else []
        replaced = 0
        while chunks and not s.spent():
            chunk = chunks.pop()
            for value in ((0,) if len(chunk) > 1 else (0, 1)):
                trial = inputs[k].reshape(-1).copy()
                trial[chunk] = np.asarray(value).astype(a.dtype)
                candidate = [*inputs[:k], trial.reshape(a.shape), *inputs[k + 1:]]
                if s.fails(graph, candidate):
                    inputs = candidate
                    replaced += len(chunk)
                    break
            else:
                if len(chunk) > 1:
                    half = len(chunk) // 2
                    chunks += [chunk[half:], chunk[:half]]  # the first half is tried first
        if replaced:
            steps.append(f"input {k}: {replaced} of {a.size} element(s) set to 0/1")
    return inputs


def minimize(case: Case, verdict: Verdict, executor: Any, reference: Any, *,
             budget: Budget = Budget(), label: str = "",
             shrink: ShrinkBudget | None = None,
             excused: Excused | None = None) -> Minimized | None:
    """A smaller case on which ``executor`` still fails, or None when nothing smaller
    fails (or the smaller case no longer fails when judged in full). ``shrink``: the
    test's shrink budget, which this search spends from (CONF-114); ``excused``: whether
    the declared deviations explain a candidate's whole failure, which is then no failure
    (CONF-142)."""
    s = _Search(executor, reference, budget, shrink=shrink, excused=excused)
    steps: list[str] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        sub = _reduce_graph(s, case, verdict, steps)
        values = _simplify_values(s, sub.graph, sub.inputs, steps)
    if not steps:
        return None
    small = Case(sub.graph, values, op=case.op, dtype=case.dtype,
                 shape_class=case.shape_class, seed=case.seed)
    try:
        final = check_case(small, s.executor, reference, label=label, budget=s.shrink)
    except Exception:
        return None
    if final.ok or (excused is not None and excused(small, final)):
        return None
    return Minimized(small, final, len(case.graph.nodes), s.calls(), s.elapsed(),
                     s.exhausted, steps)


def _own_targets(graph: Graph, node: Any) -> list[Value]:
    """A node's results, or for a store the buffer inputs it writes."""
    return [*node.results] or [v for v in node.operands if any(v is i for i in graph.inputs)]


def _isolate_raising(s: _Search, case: Case, steps: list[str]) -> _Sub | None:
    """The first node (graph order) that raises alone, its upstream cut."""
    graph, inputs = case.graph, list(case.inputs)
    if len(graph.nodes) < 2:
        return None
    env, _ = _reference_env(graph, inputs)
    for node in graph.nodes:
        targets = _own_targets(graph, node)
        if not targets or s.spent():
            continue
        sub = _extract(graph, inputs, env, targets, cut=_upstream(graph, targets))
        if sub is not None and _smaller(sub, graph) and s.fails(sub.graph, sub.inputs):
            steps.append(f"isolated {', '.join(n.op.name for n in sub.graph.nodes)}")
            return sub
    return None


def minimize_raised(case: Case, error: ExecutorRaised, executor: Any, reference: Any, *,
                    budget: Budget = Budget(), shrink: ShrinkBudget | None = None
                    ) -> Minimized | None:
    """A smaller case on which ``executor`` still raises ``error``'s exception type (CONF-19),
    or None when nothing smaller raises it."""
    s = _Search(executor, reference, budget, raises=type(error.original).__name__,
                shrink=shrink)
    steps: list[str] = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        sub = _isolate_raising(s, case, steps) or _reduce_graph(
            s, case, Verdict(False), steps)
        values = _simplify_values(s, sub.graph, sub.inputs, steps)
    if not steps:
        return None
    small = Case(sub.graph, values, op=case.op, dtype=case.dtype,
                 shape_class=case.shape_class, seed=case.seed)
    try:  # judged again in full, even when the budget is spent
        check_case(small, s.executor, reference, budget=s.shrink)
    except ExecutorRaised as e:
        if type(e.original).__name__ == s.raises:
            return Minimized(small, Verdict(False, message=e.describe()),
                             len(case.graph.nodes), s.calls(), s.elapsed(),
                             s.exhausted, steps)
    except Exception:
        pass
    return None


def minimize_stored(case: Case, verdict: Verdict, executor: Any, reference: Any,
                    artifacts: ArtifactDir, *, label: str, budget: Budget | None,
                    shrink: ShrinkBudget | None = None,
                    excused: Excused | None = None) -> tuple[Case, Verdict, str]:
    """In hypothesis' final example: minimise, store the case as generated under
    ``original/`` and the minimised one in the test's directory. Returns the case and
    verdict to report and a note for the failure message (unchanged when not minimised)."""
    if budget is None or budget.seconds <= 0 or budget.calls <= 0 or not in_final_example():
        return case, verdict, ""
    small = minimize(case, verdict, executor, reference, budget=budget, label=label,
                     shrink=shrink, excused=excused)
    if small is None:
        return case, verdict, ""
    orig = artifacts.write_case(case.graph, case.inputs, sub="original",
                                note="the case as generated, before minimisation")
    artifacts.write_results(verdict.expected, verdict.actual, verdict.message, sub="original")
    artifacts.write_case(small.case.graph, small.case.inputs)
    shutil.rmtree(artifacts.path / "divergence", ignore_errors=True)  # of a larger example
    return small.case, small.verdict, (f"\n{small.summary()}; the case as generated: "
                                       f"python {orig / 'repro.py'}")


def minimize_raised_stored(case: Case, error: ExecutorRaised, executor: Any, reference: Any,
                           artifacts: ArtifactDir, *, budget: Budget | None,
                           shrink: ShrinkBudget | None = None) -> str:
    """:func:`minimize_stored` for a case on which the executor raised: the minimised case
    in the test's directory, the case as generated under ``original/``. Returns the note
    for the failure message ("" when not minimised)."""
    if budget is None or budget.seconds <= 0 or budget.calls <= 0 or not in_final_example():
        return ""
    small = minimize_raised(case, error, executor, reference, budget=budget, shrink=shrink)
    if small is None:
        return ""
    orig = artifacts.write_case(case.graph, case.inputs, sub="original",
                                note="the case as generated, before minimisation")
    artifacts.write_results({}, {}, error.describe(), sub="original")
    artifacts.write_case(small.case.graph, small.case.inputs)
    return f"\n{small.summary()}; the case as generated: python {orig / 'repro.py'}"
