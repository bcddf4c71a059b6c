"""Running differential cases inside hypothesis tests: verdicts, refusals, artifacts.

A test builds a :class:`Harness`, calls :meth:`Harness.check` on each generated case inside
its ``@given`` body, runs the property with :meth:`Harness.run`, and finally calls
:meth:`Harness.finish`, which records the report metadata and turns "every example was
refused" into a *refused* verdict (CONF-5) and "no example could be generated" into *not
covered* (CONF-4).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np
from _pytest.outcomes import Failed, Skipped
from hypothesis import reject, settings
from hypothesis.errors import Unsatisfiable, UnsatisfiedAssumption
from hypothesis.internal.reflection import function_digest

from interpreter.errors import UnsupportedGraphError
from interpreter.registry import REGISTRY

from .artifacts import ArtifactDir
from .batching import BATCH_CASES, batches, merge_cases, merged_input_sets
from .calls import ExecutorRaised, quiet, suite_error_message
from .diagnosis import Excuse, annotate, excuse, explained_by
from .differential import ReferenceRefused, Verdict, check_case
from .expectations import declared_scoped
from .history import History, explain_with_history, fresh_executors
from .minimize import budget_from, in_final_example, minimize_raised_stored, minimize_stored
from .outcomes import not_covered, record, refused
from .pipeline import under_test
from .sequences import Step
from .shrink_budget import SHRINK_FACTOR, ShrinkBudget, budget_option
from .strategies import INPUT_SETS, Case
from .value_classes import ValueReach
from .verdicts import Failure, render_findings, rules_in
from .verdicts import Finding as VFinding

__all__ = ["REFUSAL_STOP", "ExecutorError", "Harness", "SuiteFailure", "graphs_per_cell"]

#: A cell whose first ``REFUSAL_STOP`` examples are all refused ends *refused* (CONF-34).
REFUSAL_STOP = 5
#: Graphs per cell under ``--conformance-smoke`` (CONF-35).
SMOKE_GRAPHS = 2


def graphs_per_cell(config: Any, examples: int | None = None) -> int:
    """Generated graphs per cell: the profile's ``max_examples`` (or ``examples``) divided
    by ``INPUT_SETS``, since every graph runs on that many input sets (CONF-30); under
    ``--conformance-smoke`` at most ``SMOKE_GRAPHS`` (CONF-35)."""
    from hypothesis import settings

    if examples is None:
        examples = settings.default.max_examples if settings.default is not None else 10
    n = max(1, math.ceil(examples / INPUT_SETS))
    if config is not None and _option(config, "conformance_smoke", False):
        n = min(n, SMOKE_GRAPHS)
    return n


def _option(config: Any, name: str, default: Any) -> Any:
    try:
        return config.getoption(name)
    except (ValueError, AttributeError):
        return default


def _example(case: Case, key: str) -> tuple[str, ...]:
    """An example's identity: its structure and every input set it carries (two examples
    may share their first input set and differ in the others)."""
    return (key, _digest(case.inputs), *(_digest(x) for x in case.extra_inputs))


def _digest(inputs: Sequence[Any]) -> str:
    """The identity of an input set (its bytes, dtypes and shapes)."""
    h = hashlib.sha1()
    for a in inputs:
        arr = np.ascontiguousarray(a)
        h.update(f"{arr.dtype}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


_SOURCE_DIGESTS: dict[Any, bytes] = {}


def property_key(inner: Callable[..., Any], test_id: bytes) -> bytes:
    """The example-database key of one cell's property (CONF-145): hypothesis' digest of the
    inner function's source (taken once per code object: it reads and tokenizes the source,
    ~2 ms, which hypothesis would otherwise do for the key on every run of the property) with
    the test id. The same on every host that runs the same suite."""
    code = getattr(inner, "__code__", inner)
    src = _SOURCE_DIGESTS.get(code)
    if src is None:  # without the per-test part hypothesis would add to it
        vars_ = getattr(inner, "__dict__", {})
        saved = vars_.pop("_hypothesis_internal_add_digest", None)
        try:
            src = _SOURCE_DIGESTS[code] = function_digest(inner)
        finally:
            if saved is not None:
                vars_["_hypothesis_internal_add_digest"] = saved
    return hashlib.sha384(src + b"\0" + test_id).digest()


class _CellRefused(Skipped):
    """Raised through hypothesis (a skip is re-raised at once) to stop a refused cell."""


class ExecutorError(Failed):
    """The executor raised something other than ``UnsupportedGraphError``; the message holds
    the executor's traceback (shown without the suite's frames)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, pytrace=False)


class SuiteFailure(Failed):
    """The suite's own code raised (CONF-22): the message starts with ``SUITE ERROR:`` and
    holds the full traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message, pytrace=False)


class Harness:
    """Judges cases for one test and keeps its counters."""

    def __init__(self, request: Any, executor: Any, reference: Any, artifacts: ArtifactDir,
                 label: str, *, op: str | None = None, dtype: str | None = None,
                 shape_class: str | None = None, rules: Iterable[str] = ()) -> None:
        self.request = request
        self.meta: dict[str, Any] = {"op": op, "dtype": dtype, "shape_class": shape_class,
                                     "rules": list(rules)}
        record(request, **self.meta)  # recorded up front: failures are reported too
        self.executor = under_test(executor)  # the one call pipeline
        self.tally = self.executor.start_tally()  # its calls in this test (CONF-32)
        self.reference = reference
        self.artifacts = artifacts
        self.label = label
        self.examples = 0
        self.refusals = 0
        self.reference_refusals = 0
        self.locally_checked = 0
        self.refusal_reason = ""
        self.value_checks = 0
        self.graphs: set[str] = set()  # structures of the generated cases
        self.enumerated: set[str] = set()  # structures run on the whole special set
        config = getattr(request, "config", None)
        self.max_graphs: int | None = _option(config, "conformance_max_graphs_per_cell", None)
        batch = _option(config, "conformance_batch", None)
        self.batch_cases: int = BATCH_CASES if batch is None else batch  # CONF-136
        self.stopped_refused = False
        self.declared = declared_scoped(request, op, dtype)  # CONF-41, CONF-141
        self.deviations = 0
        self.deviated: list[str] = []  # the declared classes seen
        self.history = History()  # the calls of this test on its instance (CONF-91)
        self.reach = ValueReach()  # CONF-102
        self.shrink = self._shrink_budget(graphs_per_cell(config))  # CONF-114
        #: failing example -> the input set that failed and its failure
        self.failing_set: dict[tuple[str, ...], tuple[int, Failed]] = {}
        #: batched cells (CONF-136): the cases being collected, the examples a passing
        #: batch proved, batches run, why batching stopped, the batch input set that failed
        self._collecting: list[Case] | None = None
        self.proven: set[tuple[str, ...]] = set()
        #: examples judged passing, and examples rejected, outside a batch: a replay gets
        #: the same outcome without a call (CONF-114)
        self.passed: set[tuple[str, ...]] = set()
        self.rejected: set[tuple[str, ...]] = set()
        self.batched = 0
        self.batch_stop = ""
        self.batch_failure: Case | None = None

    def _shrink_budget(self, graphs: int) -> ShrinkBudget:
        """``--conformance-shrink-calls``/``-structures``, or by default ``SHRINK_FACTOR`` x
        the calls (graphs x ``INPUT_SETS``) and structures of a passing test (CONF-115)."""
        config = getattr(self.request, "config", None)
        calls, structures = budget_option(config, "calls"), budget_option(config, "structures")
        return ShrinkBudget(
            SHRINK_FACTOR * graphs * INPUT_SETS if calls is None else calls,
            SHRINK_FACTOR * graphs if structures is None else structures)

    def _within_budget(self, case: Case, key: str) -> None:
        """In hypothesis' shrink phase (after the first failure, before the final replay):
        a judgment that may not fit in the shrink budget (one call, and two per node for
        a divergence search) is not made, the example rejected (CONF-114); structures
        already given to the executor still run while calls are left."""
        cost = 1 + 2 * len(case.graph.nodes)
        if self.shrink.started and not self.shrink.allows(key, cost) \
                and not in_final_example():
            self.shrink.stop("hypothesis' shrink")
            reject()

    def check(self, case: Case) -> Verdict:
        """Judge ``case`` on its inputs and then on each of its ``extra_inputs`` (CONF-30)
        and, for the cell's first structure, its ``special_inputs`` (CONF-99); the verdict
        of the first input set is returned. A graph structure beyond
        ``--conformance-max-graphs-per-cell`` is rejected unrun (CONF-33); so is, while
        shrinking, a call beyond the shrink budget, and hypothesis' final replay judges the
        input set that failed first before the others (CONF-114)."""
        key = case.graph.structural_hash()
        if self.max_graphs is not None and key not in self.graphs \
                and len(self.graphs) >= self.max_graphs:
            reject()
        example = _example(case, key)
        if self._collecting is not None:  # a batched cell's first pass: collect (CONF-136)
            self.graphs.add(key)
            self._collecting.append(case)
            return Verdict(True)
        if example in self.proven or example in self.passed:
            return Verdict(True)  # judged passing before, or in a batch (CONF-136)
        if example in self.rejected:
            reject()  # a replay keeps the outcome hypothesis saw first (CONF-114)
        try:
            verdict = self._judge(case, key, example)
        except UnsatisfiedAssumption:
            self.rejected.add(example)
            raise
        self.passed.add(example)
        return verdict

    def _judge(self, case: Case, key: str, example: tuple[str, ...]) -> Verdict:
        """``check`` of an example not judged before (or seen failing)."""
        known = self.failing_set.get(example)
        again = None if known is None else known[0]
        if known is not None and not in_final_example():
            raise known[1]  # hypothesis replays a failing example: its failure, no call
        if again is None:
            self._within_budget(case, key)
        self.graphs.add(key)
        if again is not None:  # hypothesis' final replay: the input set that failed first,
            # whatever the budget (CONF-114)
            target = next(itertools.islice(self._input_sets(case, key), again, None), None)
            if target is not None:
                self.check_one(target)
        verdict = Verdict(True)
        for i, one in enumerate(self._input_sets(case, key)):
            if i or again is not None:
                self._within_budget(case, key)
            try:
                judged = self.check_one(one)
            except Failed as e:
                self.failing_set[example] = (i, e)
                raise
            if not i:
                verdict = judged
                self.examples += 1
        return verdict

    def _input_sets(self, case: Case, key: str) -> Iterator[Case]:
        """``case``, then its ``extra_inputs`` (CONF-30), then for the cell's first structure
        its ``special_inputs`` (CONF-99), each as a case of its own."""
        yield case
        for inputs in case.extra_inputs:
            yield dataclasses.replace(case, inputs=inputs, extra_inputs=[])
        if case.special_inputs is not None and (not self.enumerated or key in self.enumerated):
            self.enumerated.add(key)  # the cell's first structure, and it again (CONF-99)
            for inputs in case.special_inputs():
                yield dataclasses.replace(case, inputs=inputs, extra_inputs=[],
                                          special_inputs=None)

    def check_one(self, case: Case) -> Verdict:
        """Judge one case on its own inputs; raises AssertionError (with the repro path) on a
        failure and rejects the example (``hypothesis.reject``) when either side refuses it.

        Only the executor's own exceptions (:class:`ExecutorRaised`) are blamed on it; any
        other exception of the suite's code (comparison, artifacts, reference, local checks)
        is a *suite error* (CONF-22)."""
        where = None
        final = in_final_example()
        try:
            where = self.artifacts.stage_case(case.graph, case.inputs)  # written if needed
            self.history.record(Step("value", case.graph, case.inputs), "")
            # the first diverging node is looked for in the example reported only (CONF-114)
            verdict = check_case(case, self.executor, self.reference, label=self.label,
                                 locate=final, budget=self.shrink)
            self._account(case)
        except ReferenceRefused:
            self.reference_refusals += 1
            reject()
        except UnsupportedGraphError as e:
            self.refusals += 1
            self.refusal_reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            if not self.examples and self.refusals >= REFUSAL_STOP:  # CONF-34
                self.stopped_refused = True
                raise _CellRefused("refused") from None
            reject()
        except ExecutorRaised as e:
            failure = Failure(f"{self.label}: {e.describe()}",
                              repro=where / "repro.py" if where else None)
            self.shrink.start(self.tally)  # from here on: shrinking (CONF-114)
            try:  # CONF-19: while the executor still raises this exception type
                self.artifacts.flush()
                failure.note(minimize_raised_stored(
                    case, e, self.executor, self.reference, self.artifacts,
                    budget=budget_from(getattr(self.request, "config", None)),
                    shrink=self.shrink))
                failure.note(self._with_history("raised"))
                failure.note(self._shrink_note(final))
            except Exception as err:
                self._suite_error(err, where, f"\n(while minimising: {e.describe()})")
            self._write_failure(failure.render())
            failure.fail(self.request, ExecutorError)
        except Exception as e:
            self._suite_error(e, where)
        self.value_checks += 1
        if verdict.locally_checked:
            self.locally_checked += 1
        if verdict.ok:
            return verdict
        if self._deviation(case, verdict):
            return verdict
        assert where is not None  # staged before the executor ran
        try:
            self.artifacts.flush()
        except Exception as e:
            self._suite_error(e, where)
        verdict, judged = self._unexplained(case, verdict)  # CONF-140
        excused = verdict.title.split(" where no declared deviation explains them ")[1:]
        failure = Failure(verdict.title, verdict.findings, artifacts=where,
                          repro=where / "repro.py")
        self.shrink.start(self.tally)  # from here on: shrinking (CONF-114)
        try:
            # diagnosed on the case as generated: its values tell the classes apart best;
            # on the elements no declared deviation excuses (CONF-140)
            text, found = (annotate(case.graph, case.inputs, verdict.expected, judged)
                           if final else ("", []))
            small, small_verdict, extra = minimize_stored(  # CONF-19, CONF-142
                case, verdict, self.executor, self.reference, self.artifacts,
                label=self.label, budget=budget_from(getattr(self.request, "config", None)),
                shrink=self.shrink, excused=self._explained if self.declared else None)
            if small is not case and not self._explained(small, small_verdict):
                case, (verdict, judged) = small, self._unexplained(small, small_verdict)
                failure.title, failure.findings = verdict.title, verdict.findings
                failure.note(extra)
                if excused:  # what the deviation excused in the case as generated
                    failure.note(f"in the case as generated, {excused[0][1:].split(')')[0]}"
                                 f" [CONF-140]")
            if final and not found:
                text, found = annotate(case.graph, case.inputs, verdict.expected, judged)
            if final:  # CONF-40
                failure.diagnosis, failure.diagnosed = text, found
                record(self.request, **self.meta, diagnosis=found,
                       deviations=list(self.deviated))
            if verdict.divergence is not None and len(case.graph.nodes) > 1:
                sub = self.artifacts.write_case(verdict.divergence.graph, case.inputs,
                                                sub="divergence",
                                                note=f"first diverging node "
                                                     f"#{verdict.divergence.index}")
                (sub / "failure.txt").write_text(str(verdict.divergence) + "\n")
                failure.note(f"repro of the first diverging node: python {sub / 'repro.py'}")
            failure.note(self._with_history("values"))
            failure.note(self._shrink_note(final))
            if (where / "graph.device.txt").exists():  # a device executor (CONF-76)
                failure.note(f"the executor was handed the graph on its device: "
                             f"{where / 'graph.device.txt'}")
            self.artifacts.write_results(verdict.expected, verdict.actual, failure.render())
        except Exception as e:
            self._suite_error(e, where, f"\n(while writing the artifacts of this failure:\n"
                                        f"{failure.render()})")
        failure.fail(self.request)

    def _with_history(self, kind: str) -> str:
        """In the final example, outside ``--conformance-isolate`` and with minimisation on:
        when the failing call agrees alone on a fresh executor, the shrunk history of this
        test's calls that reproduces it (CONF-91, CONF-92)."""
        config = getattr(self.request, "config", None)
        budget = budget_from(config)
        if (config is None or budget is None or not in_final_example()
                or _option(config, "conformance_isolate", False)):
            return ""
        return explain_with_history(self.history, kind, fresh_executors(config),
                                    self.reference, self.artifacts, label=self.label,
                                    seconds=budget.seconds, budget=self.shrink)

    def _shrink_note(self, final: bool) -> str:
        """In the final example: what shrinking cost, and whether its budget stopped it
        (CONF-116); recorded in the report too."""
        if not final:
            return ""
        record(self.request, **self.meta, **self.shrink.record())
        return self.shrink.summary()

    def _account(self, case: Case) -> None:
        """Value reach of a judged one-op case (CONF-102): its inputs are the operands of
        registry op ``case.op``. Multi-op graphs (random graphs, hazards) are not counted."""
        op = REGISTRY.get(case.op) if case.op else None
        if op is None or case.call is None or len(case.inputs) != len(case.call.operands):
            return
        dtype = case.dtype.value if case.dtype is not None else self.meta.get("dtype")
        self.reach.add(op, str(dtype or "-"), case.inputs, case.operand_kinds)

    def _excuse(self, case: Case, verdict: Verdict) -> Excuse | None:
        """The elements of a failing example the declared classes excuse (CONF-140)."""
        if not self.declared:
            return None
        return excuse(case.graph, case.inputs, verdict.expected, verdict.actual,
                      self.declared, verdict.failing)

    def _explained(self, case: Case, verdict: Verdict) -> bool:
        """Whether the declared classes explain every differing element (CONF-140)."""
        found = self._excuse(case, verdict)
        return found is not None and not found.unexplained and not found.unproven

    def _unexplained(self, case: Case, verdict: Verdict
                     ) -> tuple[Verdict, dict[str, np.ndarray]]:
        """The failure of the elements no declared class excuses (CONF-140) and the values
        to diagnose (the executor's, the excused elements set to the reference's)."""
        found = self._excuse(case, verdict)
        if found is None or found.unproven:  # judged as a whole (CONF-140)
            return verdict, verdict.actual
        names = ", ".join(dict.fromkeys(str(c) for c in self.declared))
        title = (f"{verdict.title} where no declared deviation explains them (the declared "
                 f"{names} excused {found.excused} other differing element"
                 f"{'s' if found.excused != 1 else ''}) [CONF-140]")
        findings = [VFinding(m, rules_in(m) or ("TOL-1",)) for m in found.unexplained]
        return dataclasses.replace(verdict, title=title, findings=findings,
                                   message=render_findings(title, findings)), found.residual

    def _deviation(self, case: Case, verdict: Verdict) -> bool:
        """A failure whose every differing element the declared classes explain is a
        deviation: counted (outside shrinking), and the test goes on (CONF-41, CONF-140)."""
        if not self._explained(case, verdict):
            return False
        if not self.shrink.started:
            self.deviations += 1
        names = list(dict.fromkeys(c.cls for c in self.declared))
        alone = [n for n in names if len(names) == 1 or explained_by(
            case.graph, case.inputs, verdict.actual, [c for c in self.declared if c.cls == n])]
        self.deviated += [c for c in alone or names if c not in self.deviated]
        return True

    def _write_failure(self, message: str) -> None:
        try:
            self.artifacts.write_results({}, {}, message)
        except Exception:
            pass  # the message itself still reaches the vendor

    def _suite_error(self, e: Exception, where: Any, extra: str = "") -> NoReturn:
        failure = Failure(suite_error_message(e, self.label), suite_error=True)
        failure.note(extra)
        if where is not None:
            failure.note(f"the case: {where}")
        self._write_failure(failure.render())
        failure.fail(self.request, SuiteFailure)

    def run(self, prop: Callable[[], None], *, batch: bool = False) -> None:
        """Run a ``@given`` property; no generated example at all ends as not covered.

        The property's database key and derandomization seed are made specific to this
        test id (parametrized cells share one inner function). With ``batch`` (cells whose
        cases are independent graphs, CONF-136) the examples are first generated without a
        call and judged in merged graphs; examples a passing batch proved are not judged
        again when the property then runs as usual (only after a batch that did not pass)."""
        inner = getattr(getattr(prop, "hypothesis", None), "inner_test", None)
        own = getattr(prop, "_hypothesis_internal_use_settings", None)
        if own is not None:  # the test's own number of graphs (CONF-115)
            self.shrink = self._shrink_budget(own.max_examples)
        self.db_key: bytes | None = None
        if inner is not None:
            key = str(getattr(self.request.node, "nodeid", self.label)).encode()
            self.db_key = property_key(inner, key)
            inner._hypothesis_internal_add_digest = key
            prop._hypothesis_internal_database_key = self.db_key  # type: ignore[attr-defined]
        try:
            with quiet():  # the suite's numpy warnings stay inside (CONF-24)
                if batch and self._batched(prop, inner, own):
                    return  # every example was judged in a batch that passed
                prop()
                if self.batch_failure is not None:  # a batch failed, its cases alone did
                    self._judge_failed_batch(self.batch_failure)  # not (CONF-136)
        except _CellRefused:
            pass  # finish() ends the cell refused
        except Unsatisfiable:
            if not self.examples and not self.refusals:
                not_covered(f"{self.label}: no example of this cell could be generated"
                            + (" (the reference refused every one)"
                               if self.reference_refusals else ""))
        finally:
            record(self.request, **self.meta, **self.counts(),  # failures too (CONF-32)
                   value_reach=self.reach.to_json())

    def _batched(self, prop: Callable[[], None], inner: Any, own: Any) -> bool:
        """CONF-136: generate the property's examples without a call (the example database
        off: a replay that does not fail would drop a stored example), then judge them in
        merged graphs of ``batching.batches``. True when every batch passed; at the first
        batch that does not pass (or anything unusual) False, with ``batch_stop`` saying why
        and the examples proven so far in ``proven``."""
        if self.batch_cases <= 1:
            self.batch_stop = "batching off (--conformance-batch=1)"
            return False
        if inner is None or own is None:
            self.batch_stop = "not a hypothesis property"
            return False
        if own.database is not None and self.db_key is not None and any(
                True for _ in own.database.fetch(self.db_key)):
            self.batch_stop = "the example database holds examples of this test"
            return False
        if not own.derandomize and getattr(prop, "_hypothesis_internal_use_seed",
                                           None) is None:
            # both passes draw the same examples
            prop._hypothesis_internal_use_seed = random.getrandbits(128)  # type: ignore[attr-defined]
        cases: list[Case] = []
        self._collecting = cases
        prop._hypothesis_internal_use_settings = settings(own, database=None)  # type: ignore[attr-defined]
        try:
            prop()
        except Exception as e:  # e.g. no example could be generated: the usual run says so
            self.batch_stop = f"generation: {type(e).__name__}"
            return False
        finally:
            self._collecting = None
            prop._hypothesis_internal_use_settings = own  # type: ignore[attr-defined]
        if not cases:
            self.batch_stop = "no example"
            return False
        for group in batches(cases, self.batch_cases):
            if not self._judge_batch([cases[i] for i in group]):
                return False
        return True

    def _judge_failed_batch(self, batch: Case) -> None:
        """Judge the merged graph of a batch whose cases each passed alone, as a case of its
        own (a failure is the executor's on a valid graph: its parts interfere)."""
        label = self.label
        self.label = (f"{label}: {len(batch.graph.outputs or ())} outputs of independent "
                      "cases in one graph, each case passing alone [CONF-136]")
        try:
            self.check_one(batch)
        finally:
            self.label = label

    def _judge_batch(self, cases: list[Case]) -> bool:
        """Run the merged graph of ``cases`` on each of its input sets; True (and each case's
        examples, value checks and value reach counted) when every set passes outright."""
        keys = [c.graph.structural_hash() for c in cases]
        sets = [list(self._input_sets(c, k)) for c, k in zip(cases, keys, strict=True)]
        try:
            graph = merge_cases(cases, name=f"batch_{cases[0].graph.name}")
        except Exception as e:  # the cases stay judged one by one
            self.batch_stop = f"merge: {type(e).__name__}: {e}"
            return False
        for inputs in merged_input_sets(sets):
            one = Case(graph, inputs, op=cases[0].op, dtype=cases[0].dtype)
            try:
                self.artifacts.stage_case(graph, inputs)
                self.history.record(Step("value", graph, inputs), "")
                verdict = check_case(one, self.executor, self.reference, label=self.label,
                                     locate=False, search=False)
            except UnsupportedGraphError as e:  # one of CONF-34's refusals
                self.refusals += 1
                self.refusal_reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                self.batch_stop = f"batch {self.batched}: refused"
                return False
            except ExecutorRaised as e:  # a valid graph: judged after its cases
                self.batch_stop = f"batch {self.batched}: raised {e.describe()[:200]}"
                self.batch_failure = one
                return False
            except Exception as e:  # e.g. the reference refuses: judged one by one
                self.batch_stop = f"batch {self.batched}: {type(e).__name__}"
                return False
            if not verdict.ok:
                self.batch_stop = f"batch {self.batched}: values differ"
                self.batch_failure = one
                return False
        self.batched += 1
        for case, key, judged in zip(cases, keys, sets, strict=True):
            self.proven.add(_example(case, key))
            self.examples += 1
            self.value_checks += len(judged)
            for each in judged:
                self._account(each)
        return True

    def counts(self) -> dict[str, Any]:
        """``structures`` (distinct graph structures given to the executor, minimisation
        and local checks included), ``calls`` (executor calls) and ``value_checks``
        (graph x input set pairs judged) so far (CONF-32)."""
        shrink = self.shrink.record() if self.shrink.started else {}
        batch = ({"batches": self.batched, "batch_stop": self.batch_stop}
                 if self.batched or self.batch_stop else {})
        return {"structures": len(self.tally.structures), "calls": self.tally.calls,
                "value_checks": self.value_checks, **shrink, **batch}

    def finish(self) -> None:
        """Record the counters; no executed example ends as refused or not covered."""
        dev: dict[str, Any] = ({"deviations": list(self.deviated), "outcome": "deviation",
                                "deviation_examples": self.deviations}
                               if self.deviations else {})
        record(self.request, **self.meta,
               examples=self.examples, refused_examples=self.refusals,
               locally_checked=self.locally_checked, **self.counts(), **dev,
               value_reach=self.reach.to_json())
        if not self.examples and self.refusals:
            stop = (f"; stopped after {REFUSAL_STOP} consecutive refusals"
                    if self.stopped_refused else "")
            refused(f"{self.label}: {self.refusals} of {self.refusals} examples refused "
                    f"({self.refusal_reason}){stop}")
        if not self.examples:
            not_covered(f"{self.label}: no example ran")
