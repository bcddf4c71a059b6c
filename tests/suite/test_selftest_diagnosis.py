"""The suite names the platform effect it finds (CONF-40) and lets a declared one pass as a
*deviation* without hiding a real bug in the same cell (CONF-41, CONF-42): in-process runs of
``conformance/test_ops.py`` slices (``ci`` profile) on executors of
``tests/suite/broken_executors.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.suite.suite_runner import SuiteRun, run_suite


def _run_with(tmp_path: Path, executor: str, k: str, *extra: str) -> SuiteRun:
    """A ``test_ops.py`` slice without minimisation (``run.meta``: the report metadata)."""
    return run_suite(tmp_path, executor, ["test_ops.py"], k, "--conformance-minimize=0", *extra)


# executor, -k selection, class, rule
CAUGHT = [
    ("FlushToZero", "[add-float32", "ftz", "NUM-11"),
    ("NaNIgnoringMaximum", "[max-float32-general", "nan-dropped",
     "NUM-8"),
    ("SaturatingInt8Negate", "negate-int8", "int-saturation", "NUM-2"),
    ("NaNIgnoringArgmax", "[argmax-float32-general", "nan-dropped", "NUM-8"),
    ("NaNIgnoringScatterMax", "[scatter_max-float32-general", "nan-dropped", "NUM-8"),
    ("SaturatingIntReductions", "[reduce_sum-int32-general", "int-saturation", "NUM-2"),
]


@pytest.mark.spec("CONF-40", "CONF-18")
@pytest.mark.parametrize(("broken", "k", "cls", "rule"), CAUGHT, ids=[c[0] for c in CAUGHT])
def test_platform_effect_is_caught_and_diagnosed(tmp_path: Path, broken: str, k: str,
                                                 cls: str, rule: str) -> None:
    run = _run_with(tmp_path, broken, k)
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), run.outcomes
    for nodeid in run.failed():
        assert f"diagnosis:\n  {cls}: " in run.messages[nodeid], run.messages[nodeid]
        assert f"[{rule}]" in run.messages[nodeid]
        found = run.meta[nodeid]["diagnosis"]
        assert [d["class"] for d in found] == [cls], found
        assert found[0]["rule"] == rule and found[0]["detail"]


@pytest.mark.spec("CONF-41", "CONF-42")
def test_declared_ftz_is_a_deviation_and_a_sign_bug_in_the_same_cell_still_fails(
        tmp_path: Path) -> None:
    xfails = tmp_path / "expect.toml"
    xfails.write_text('deviations = ["ftz"]\n')
    opt = f"--conformance-xfails={xfails}"
    clean = _run_with(tmp_path / "a", "FlushToZero", "[add-float32", opt)
    assert clean.code == pytest.ExitCode.OK, clean.outcomes
    deviated = [n for n, m in clean.meta.items() if m.get("outcome") == "deviation"]
    assert deviated, clean.meta
    for n in deviated:
        assert clean.meta[n]["deviations"] == ["ftz"] and clean.meta[n]["deviation_examples"] > 0

    bug = _run_with(tmp_path / "b", "FlushToZeroSignBug", "[add-float32", opt)
    assert bug.code == pytest.ExitCode.TESTS_FAILED
    assert set(deviated) <= set(bug.failed()), (deviated, bug.outcomes)
    for n in bug.failed():
        assert "diagnosis: unexplained" in bug.messages[n]


SCOPED_FTZ = '''[[deviation]]
class = "ftz"
dtypes = ["float32", "float64"]
reason = "FTZ/DAZ in float32/float64 only"
'''


@pytest.mark.spec("CONF-140", "CONF-141", "CONF-142", "CONF-42")
def test_scoped_ftz_cells_are_deviations_and_an_independent_bug_fails_with_its_repro(
        tmp_path: Path) -> None:
    """Issue 20, Deliver 7: an executor with FTZ in float32/float64 only and a float32
    ``sigmoid`` overflow. With ``ftz`` declared for float32/float64: the float32 ``add``
    cells read *deviation*, float16 ``add`` passes (nothing is flushed there), and the
    ``sigmoid`` cells fail with their own diagnosis and a ``repro.py`` that replays the
    overflow in a fresh process."""
    import subprocess
    import sys

    from tests.suite.suite_runner import ROOT

    xfails = tmp_path / "expect.toml"
    xfails.write_text(SCOPED_FTZ)
    run = run_suite(tmp_path / "run", "ScopedFlushToZeroSigmoidBug", ["test_ops.py"],
                    "test_op and (add-float32 or add-float16 or sigmoid-float32) "
                    "and not scatter", f"--conformance-xfails={xfails}")
    assert run.code == pytest.ExitCode.TESTS_FAILED, run.outcomes
    outcome = {n: run.meta[n].get("outcome", run.outcomes[n]) for n in run.outcomes}
    add32 = [n for n in outcome if "[add-float32-" in n and "empty" not in n]
    assert len(add32) == 3 and all(outcome[n] == "deviation" for n in add32), outcome
    for n in add32:
        assert run.meta[n]["deviations"] == ["ftz"] and run.meta[n]["deviation_examples"] > 0
    add16 = [n for n in outcome if "[add-float16-" in n]
    assert add16 and all(outcome[n] == "passed" for n in add16), outcome
    sig = sorted(n for n in run.failed())
    assert sig == [f"conformance/test_ops.py::test_op[sigmoid-float32-{s}]"
                   for s in ("broadcast", "general", "scalar")], run.outcomes
    for n in sig:
        message = run.messages[n]
        assert [d["class"] for d in run.meta[n]["diagnosis"]] == ["transcendental"]
        assert "sigmoid [float32] differs in NaN-ness" in message
        block = message.split("diagnosis:")[1].split("\nartifacts:")[0]
        assert "ftz" not in block and "ambiguous" not in block, block
        repro = run.meta[n]["failure"]["repro"]
        p = subprocess.run([sys.executable, repro], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 1, (p.stdout, p.stderr)
        assert "FAIL: replay" in p.stdout and "(sigmoid [float32])" in p.stdout
        assert "-> nan  (NaN mismatch)" in p.stdout, p.stdout
