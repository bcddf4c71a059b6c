"""Self-test of ``python -m conformance.mutants`` (CONF-105..108): known mutants are built,
killed by the suite or shown equivalent, and the score is computed from the statuses."""

from __future__ import annotations

import numpy as np
import pytest

from conformance.mutant_equivalence import check_equivalence
from conformance.mutant_kernels import op_mutants
from conformance.mutants import MutantResult, run_mutants, score, wilson
from conformance.mutation_ops import compile_mutant, function_mutations
from interpreter.registry import REGISTRY


def _toy(x: np.ndarray, n: int) -> np.ndarray:
    out = np.where(np.isnan(x), 0.0, x)
    for _ in range(n):
        out = out[1:] + 2
    return out


@pytest.mark.spec("CONF-105")
def test_operators_and_compiled_mutants() -> None:
    ms = function_mutations(_toy)  # type: ignore[arg-type]
    ops = {m.operator for m in ms}
    assert {"arithmetic swap", "constant +1", "constant -1", "slice off-by-one",
            "loop bound off-by-one", "reversed iteration order",
            "dropped special-value handling", "dropped np.where branch"} <= ops
    assert len({m.source for m in ms}) == len(ms)  # deduplicated
    x = np.array([np.nan, 1.0, 2.0, 3.0])
    swap = next(m for m in ms if m.operator == "arithmetic swap")  # + 2 -> - 2
    assert list(compile_mutant(_toy, swap)(x, 1)) == [-1.0, 0.0, 1.0]  # type: ignore[arg-type]
    dropped = next(m for m in ms if m.operator == "dropped special-value handling")
    got = compile_mutant(_toy, dropped)(x, 0)  # type: ignore[arg-type]
    assert np.isnan(got[0]) and list(got[1:]) == [1.0, 2.0, 3.0]


@pytest.mark.spec("CONF-105", "CONF-106", "CONF-107")
def test_ufunc_mutants_of_negate_are_killed() -> None:
    results = run_mutants(["negate"], equiv_calls=100)
    assert [r.after for r in results] == ["np.positive", "np.invert"]
    assert {r.status for r in results} == {"killed"}, [(r.id, r.status) for r in results]
    assert all(r.killer.startswith("conformance/test_ops.py::test_op[negate-")
               for r in results)
    assert score(results)["score"] == 1.0


@pytest.mark.spec("CONF-106")
def test_equivalent_and_surviving_mutants_told_apart() -> None:
    # max of 16-bit floats is exact without widening to float32 first
    same = next(m for m in op_mutants("reduce_max")
                if m.operator == "dropped cast" and m.function == "widen")
    eq = check_equivalence(REGISTRY["reduce_max"], same, calls=100)
    assert eq.equivalent and "bit-identical" in eq.reason, eq
    wrong = next(m for m in op_mutants("add") if m.after == "np.subtract")
    eq = check_equivalence(REGISTRY["add"], wrong, calls=20)
    assert not eq.equivalent and eq.witness and "differ" in eq.witness


@pytest.mark.spec("CONF-107", "CONF-108")
def test_score_and_interval() -> None:
    def r(status: str) -> MutantResult:
        return MutantResult("x#0", "x", "f", "kernel", "f", "op", 1, "a", "b", "", status)

    s = score([r("killed")] * 19 + [r("survived"), r("equivalent")])
    assert (s["killed"], s["survived"], s["equivalent"], s["score"]) == (19, 1, 1, 0.95)
    lo, hi = wilson(19, 20)
    assert 0.7638 < lo < 0.7639 and 0.9911 < hi < 0.9912  # by hand: 0.76386 .. 0.99112


def _no_result(job: object, mutant: object) -> MutantResult:
    raise AssertionError("no mutant to run")


@pytest.mark.spec("CONF-108", "CONF-35")
def test_executor_mutants_run_over_the_smoke_subset_only() -> None:
    """The mutant loop reads the items collection left (the suite's smoke selection runs
    in another ``trylast`` hook, maybe after the loop's own)."""
    from conformance.mutants import Job, _Loop, _pytest

    seen: list[int] = []
    job = Job("executors", [], lambda item: "::test_op[" in item.nodeid,
              lambda m: seen.append(0))
    loop = _Loop([job], _no_result, False)
    _pytest(["conformance/test_ops.py"], "conformance.mutants:FreshCompiling",
            ["--conformance-smoke", "-k", "add- or negate-"], loop)
    cells = [it.nodeid for it in loop.items]
    # smoke keeps a few cells of each op (float32, an integer, per dtype kind), not the
    # 60-odd cells of add and negate
    assert 2 <= len(cells) <= 12, cells
    assert not job.baseline, job.baseline
