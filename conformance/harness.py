"""Running differential cases inside hypothesis tests: verdicts, refusals, artifacts.

A test builds a :class:`Harness`, calls :meth:`Harness.check` on each generated case inside
its ``@given`` body, runs the property with :meth:`Harness.run`, and finally calls
:meth:`Harness.finish`, which records the report metadata and turns "every example was
refused" into a *refused* verdict (CONF-5) and "no example could be generated" into *not
covered* (CONF-4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn

import pytest
from _pytest.outcomes import Failed
from hypothesis import reject
from hypothesis.errors import Unsatisfiable

from interpreter.errors import UnsupportedGraphError

from .artifacts import ArtifactDir
from .calls import ExecutorRaised, quiet, suite_error_message
from .diagnosis import annotate, explained_by
from .differential import ReferenceRefused, Verdict, check_case
from .expectations import declared_deviations
from .minimize import budget_from, in_final_example, minimize_stored
from .outcomes import not_covered, record, refused
from .strategies import Case

__all__ = ["ExecutorError", "Harness", "SuiteFailure"]


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
        self.executor = executor
        self.reference = reference
        self.artifacts = artifacts
        self.label = label
        self.examples = 0
        self.refusals = 0
        self.reference_refusals = 0
        self.locally_checked = 0
        self.refusal_reason = ""
        self.declared = declared_deviations(request, op, dtype)  # CONF-41
        self.deviations = 0
        self.deviated: list[str] = []  # the declared classes seen

    def check(self, case: Case) -> Verdict:
        """Judge one case; raises AssertionError (with the repro path) on a failure and
        rejects the example (``hypothesis.reject``) when either side refuses it.

        Only the executor's own exceptions (:class:`ExecutorRaised`) are blamed on it; any
        other exception of the suite's code (comparison, artifacts, reference, local checks)
        is a *suite error* (CONF-22)."""
        where = None
        try:
            where = self.artifacts.write_case(case.graph, case.inputs)
            verdict = check_case(case, self.executor, self.reference, label=self.label)
        except ReferenceRefused:
            self.reference_refusals += 1
            reject()
        except UnsupportedGraphError as e:
            self.refusals += 1
            self.refusal_reason = str(e).splitlines()[0] if str(e) else type(e).__name__
            reject()
        except ExecutorRaised as e:
            repro = f"repro: python {where / 'repro.py'}" if where else ""
            message = f"{self.label}: {e.describe()}\n{repro}"
            self._write_failure(message)
            raise ExecutorError(message) from None
        except Exception as e:
            self._suite_error(e, where)
        self.examples += 1
        if verdict.locally_checked:
            self.locally_checked += 1
        if verdict.ok:
            return verdict
        if self._deviation(case, verdict):
            return verdict
        try:
            final = in_final_example()
            # diagnosed on the case as generated: its values tell the classes apart best
            text, found = (annotate(case.graph, case.inputs, verdict.expected, verdict.actual)
                           if final else ("", []))
            small, small_verdict, extra = minimize_stored(  # CONF-19
                case, verdict, self.executor, self.reference, self.artifacts,
                label=self.label, budget=budget_from(getattr(self.request, "config", None)))
            if not self._explained(small, small_verdict):  # shrunk onto a declared deviation
                case, verdict = small, small_verdict
            else:
                extra = ""
            if final and not found:
                text, found = annotate(case.graph, case.inputs, verdict.expected,
                                       verdict.actual)
            if final:  # CONF-40
                verdict.message += "\n" + text if text else ""
                record(self.request, **self.meta, diagnosis=found,
                       deviations=list(self.deviated))
            self.artifacts.write_results(verdict.expected, verdict.actual, verdict.message)
            if verdict.divergence is not None and len(case.graph.nodes) > 1:
                sub = self.artifacts.write_case(verdict.divergence.graph, case.inputs,
                                                sub="divergence",
                                                note=f"first diverging node "
                                                     f"#{verdict.divergence.index}")
                (sub / "failure.txt").write_text(str(verdict.divergence) + "\n")
                extra += f"\nrepro of the first diverging node: python {sub / 'repro.py'}"
        except Exception as e:
            self._suite_error(e, where, f"\n(while writing the artifacts of this failure:\n"
                                        f"{verdict.message})")
        pytest.fail(f"{verdict.message}\nartifacts: {where}\n"
                    f"repro: python {where / 'repro.py'}{extra}", pytrace=False)

    def _explained(self, case: Case, verdict: Verdict) -> bool:
        return bool(self.declared) and explained_by(case.graph, case.inputs, verdict.actual,
                                                    self.declared)

    def _deviation(self, case: Case, verdict: Verdict) -> bool:
        """A failure the declared classes reproduce is a deviation: counted, and the test
        goes on (CONF-41)."""
        if not self._explained(case, verdict):
            return False
        self.deviations += 1
        alone = [c for c in self.declared if len(self.declared) == 1
                 or explained_by(case.graph, case.inputs, verdict.actual, [c])]
        self.deviated += [c for c in alone or self.declared if c not in self.deviated]
        return True

    def _write_failure(self, message: str) -> None:
        try:
            self.artifacts.write_results({}, {}, message)
        except Exception:
            pass  # the message itself still reaches the vendor

    def _suite_error(self, e: Exception, where: Any, extra: str = "") -> NoReturn:
        message = suite_error_message(e, self.label) + extra
        if where is not None:
            message += f"\nthe case: {where}"
        self._write_failure(message)
        raise SuiteFailure(message) from None

    def run(self, prop: Callable[[], None]) -> None:
        """Run a ``@given`` property; no generated example at all ends as not covered.

        The property's database key and derandomization seed are made specific to this
        test id (parametrized cells share one inner function)."""
        inner = getattr(getattr(prop, "hypothesis", None), "inner_test", None)
        if inner is not None:
            key = str(getattr(self.request.node, "nodeid", self.label)).encode()
            inner._hypothesis_internal_add_digest = key
        try:
            with quiet():  # the suite's numpy warnings stay inside (CONF-24)
                prop()
        except Unsatisfiable:
            if not self.examples and not self.refusals:
                not_covered(f"{self.label}: no example of this cell could be generated"
                            + (" (the reference refused every one)"
                               if self.reference_refusals else ""))

    def finish(self) -> None:
        """Record the counters; no executed example ends as refused or not covered."""
        dev: dict[str, Any] = ({"deviations": list(self.deviated), "outcome": "deviation",
                                "deviation_examples": self.deviations}
                               if self.deviations else {})
        record(self.request, **self.meta,
               examples=self.examples, refused_examples=self.refusals,
               locally_checked=self.locally_checked, **dev)
        if not self.examples and self.refusals:
            refused(f"{self.label}: {self.refusals} of {self.refusals} examples refused "
                    f"({self.refusal_reason})")
        if not self.examples:
            not_covered(f"{self.label}: no example ran")
