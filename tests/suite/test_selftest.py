"""Self-test of the conformance suite (CONF-18): it must fail, for the right reason, on each
deliberately broken executor of ``tests/suite/broken_executors.py``.

Each case runs a small selection of the suite in-process (``pytest.main`` with the ``ci``
hypothesis profile: derandomized, few examples) on one broken executor and checks that the
run fails, that a failure message names the problem, and that the failure left a runnable
``repro.py`` that exits non-zero. Crash and hang containment and the ``-n 2`` report merge
run the suite in a subprocess.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.artifacts import load_case
from tests.suite.suite_runner import (
    BROKEN,
    ROOT,
    SELFTEST_PROFILE,
    assert_repro_fails,
    repros,
    run_suite,
)

# name, files, -k selection, words the failure message must contain
CATALOGUE: list[tuple[str, list[str], str | None, list[str]]] = [
    ("RoundHalfAwayFromZero", ["test_ops.py"], "round-float32 or round-float64", ["round"]),
    ("TruncatingFloorDiv", ["test_ops.py"], "floor_div-int32-general or floor_div-int8-broadcast",
     ["floor_div"]),
    ("NaNComparisonByNegation", ["test_ops.py"], "test_op and greater-float32",
     ["greater"]),
    ("DroppedMutation", ["test_protocol.py"], "mutation", ["mutation dropped", "EXEC-6"]),
    ("ReplayedMutation", ["test_protocol.py"], "mutation", ["mutation replayed", "EXEC-6"]),
    ("AliasingOutputs", ["test_protocol.py"], "aliasing", ["shares memory", "EXEC-5"]),
    ("WrongOutputDtype", ["test_protocol.py"], "aliasing or mutation_applied",
     ["dtype float64", "EXEC-4"]),
    ("RefusesAfterWrite", ["test_protocol.py"], "refusal", ["EXEC-3", "after modifying"]),
    ("IgnoredSeed", ["test_random.py"], "same_seed or bit_identical", ["seed"]),
    ("TupleAttrsToListsInPlace", ["test_ops.py"], "reshape-float32-general",
     ["execute changed the graph it was given", "EXEC-15"]),
    ("NondeterministicExecutor", ["test_determinism.py"],
     "test_op_deterministic and (exp or add or mul)", ["differs between two executions"]),
    # state between executions (CONF-90..92): the repro.py replays the shrunk history
    ("PooledOutputs", ["test_state.py"], "equal_shapes",
     ["changed during call #2", "EXEC-5", "replaying 1 of 1 previous calls"]),
    ("UnzeroedScratchPool", ["test_state.py"], "buffers",
     ["buffer_create, store one row", "the failure needs the earlier calls"]),
    ("ScratchReuseIgnoresViews", ["test_state.py"], "lifetimes", ["graph 'lifetime_"]),
    ("HalfBuiltPlanCache", ["test_state.py"], "failures_between",
     ["the failure needs the earlier calls: replaying 1 of 6 previous calls"]),
    # shape and constant reach (CONF-86, CONF-88): each passes the suite without those files
    ("BlockedTailElementwise", ["test_reach.py"], "[add- or [sub- or [mul-", ["reach]"]),
    ("TiledSumDropsTail", ["test_reach.py"], "reduce_sum", ["reduce_sum [", "reach]"]),
    ("ReciprocalDivision", ["test_constants.py"], "div-float32 or div-float64",
     ["div [", "constants]"]),
    # NUM-20, CONF-98: conversions at their boundaries (today's sampled cells pass both)
    ("UnsignedCastViaSigned", ["test_specials.py"], "float32-to-uint32 or float64-to-uint64",
     ["cast", "uint"]),
    ("EarlyOverflowCast", ["test_specials.py"], "float32-to-float16 or float64-to-float32",
     ["cast", "float"]),
    # issue 19, masks, shapes and resize
    ("ResizeLinearAlignsCorners", ["test_ops.py"], "test_op and resize_linear-float32",
     ["resize_linear"]),
    # issue 19: one wrong executor per new op family
    ("OffByOneReduceScatter", ["test_ops.py"], "test_op and reducescatter_sum-float32-general",
     ["reducescatter_sum"]),
    ("HalfPixelRoiAlign", ["test_ops.py"], "test_op and roi_align-float32-general",
     ["roi_align"]),
    # convolution and pooling (issue 19): padding on the wrong side, padding in the divisor
    ("Conv2dPaddingSwapped", ["test_ops.py"], "test_op and conv2d-float32", ["conv2d ["]),
    ("AvgPoolCountsPadding", ["test_ops.py"], "test_op and avg_pool2d-float32",
     ["avg_pool2d ["]),
    # issue 19, REDUCE-8: the variance divided by n - 1; epsilon outside the square root
    ("UnbiasedVarianceLayerNorm", ["test_ops.py"], "test_op and layer_norm-float32",
     ["layer_norm [", "REDUCE-6"]),
    ("EpsilonOutsideSqrtRmsNorm", ["test_ops.py"], "test_op and rms_norm-float32",
     ["rms_norm [", "REDUCE-6"]),
    # the indexing family (issue 19): duplicates and stability (INDEX-7, argsort.C3)
    ("ScatterAddDropsDuplicates", ["test_ops.py"],
     "test_op and (scatter_add-float32 or scatter_add-int32)", ["scatter_add"]),
    ("ArgsortDescendingByReversal", ["test_ops.py"],
     "test_op and (argsort-float32 or argsort-int8)", ["argsort"]),
]


def _assert_caught(tmp_path: Path, broken: str, files: list[str], k: str | None,
                   words: list[str]) -> None:
    """The selection fails on ``broken``, its messages name ``words``, every repro fails."""
    run = run_suite(tmp_path, broken, files, k)
    assert run.outcomes, f"nothing ran for {broken} (-k {k!r})"
    assert run.code == pytest.ExitCode.TESTS_FAILED and run.failed(), (
        f"the suite did not catch {broken}: exit {run.code}, outcomes {run.outcomes}")
    text = run.text()
    for w in words:
        assert w in text, f"no failure message of the {broken} run mentions {w!r}:\n{text}"
    assert_repro_fails(run)  # every failure leaves a repro.py that reproduces it


@pytest.mark.spec("CONF-18", "CONF-11")
@pytest.mark.parametrize(("broken", "files", "k", "words"), CATALOGUE,
                         ids=[c[0] for c in CATALOGUE])
def test_broken_executor_is_caught(tmp_path: Path, broken: str, files: list[str],
                                   k: str | None, words: list[str]) -> None:
    _assert_caught(tmp_path, broken, files, k, words)


@pytest.mark.spec("CONF-81", "CONF-18")
def test_rounding_ties_away_from_zero_fails_every_scalar_round_cell(tmp_path: Path) -> None:
    """``round`` draws exact ties (sample kind ``halfway``): with one element per input the
    scalar cells met no tie before, and half of them passed this executor."""
    run = run_suite(tmp_path, "RoundHalfAwayFromZero", ["test_ops.py"],
                    "test_op and round- and scalar", "--conformance-minimize=0")
    cells = sorted(k.split("[", 1)[1].rstrip("]") for k in run.failed())
    assert cells == [f"round-{d}-scalar" for d in ("bfloat16", "float16", "float32",
                                                   "float64")], run.outcomes
    assert all("round [" in text for text in run.failures().values())
    stored = [load_case(p.parent)[1][0] for p in repros(run)]
    assert len(stored) == 4 and all(abs(float(x)) % 1 == 0.5 for x in stored), stored


@pytest.mark.spec("CONF-5", "CONF-6", "CONF-7")
def test_expectations_and_refusals(tmp_path: Path) -> None:
    xfails = tmp_path / "xfails.toml"
    xfails.write_text(
        '[[xfail]]\ntest = "*test_mutation_applied_exactly_once"\nreason = "replays"\n\n'
        '[[xfail]]\ntest = "*test_outputs_fresh_when_aliasing_is_tempting"\n'
        'reason = "stale: passes"\n\n'
        '[[xfail]]\ntest = "*no_such_test*"\nreason = "matches nothing"\n')
    run = run_suite(tmp_path, "ReplayedMutation", ["test_protocol.py"],
                    "mutation_applied or aliasing", f"--conformance-xfails={xfails}",
                    f"--conformance-report={tmp_path / 'r.json'}")
    assert run.code == pytest.ExitCode.OK, run.outcomes
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["xfail"] == 1 and report["totals"]["pass"] == 1
    stale = {s["entry"]: s["why"] for s in report["stale_expectations"]}
    assert set(stale) == {1, 2}, stale
    assert "passes now" in stale[1] and "matches no test" in stale[2]
    # refusals: their own outcome, a failure under --conformance-strict
    soft = run_suite(tmp_path / "soft", "RefusesAfterWrite", ["test_protocol.py"],
                     "mutation_applied", f"--conformance-report={tmp_path / 's.json'}")
    assert soft.code == pytest.ExitCode.OK
    assert json.loads((tmp_path / "s.json").read_text())["totals"]["refused"] == 1
    strict = run_suite(tmp_path / "strict", "RefusesAfterWrite", ["test_protocol.py"],
                       "mutation_applied", "--conformance-strict")
    assert strict.code == pytest.ExitCode.TESTS_FAILED and "REFUSED" in strict.text()


def _subprocess_suite(tmp_path: Path, *args: str, timeout: int = 300
                      ) -> subprocess.CompletedProcess[str]:
    # the runner's ``selftest`` profile (``ci`` without shrinking), registered by -p
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-W", "ignore",
           "-p", "tests.suite.suite_runner", f"--hypothesis-profile={SELFTEST_PROFILE}",
           f"--conformance-artifacts={tmp_path / 'artifacts'}", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


@pytest.mark.spec("CONF-12", "CONF-14", "CONF-18")
def test_crash_is_contained(tmp_path: Path) -> None:
    """SIGSEGV in the executor: the test fails naming the signal and its repro; the run goes
    on (the aliasing test, whose graph has no ``mul``, still passes)."""
    p = _subprocess_suite(tmp_path, "conformance/test_protocol.py", "--conformance-isolate",
                          f"--executor={BROKEN}:CrashingExecutor", "-k",
                          "aliasing or dead_after_use or unused_store", "-rfE")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "SIGSEGV" in out and "1 passed" in out and "2 failed" in out, out
    crashed = sorted((tmp_path / "artifacts" / "isolate").glob("*/repro.py"))
    assert crashed, "no repro directory was written before the crashing call"
    r = subprocess.run([sys.executable, str(crashed[0])], cwd=ROOT, capture_output=True,
                       timeout=120)
    assert r.returncode == -signal.SIGSEGV, (  # dies of the same signal, not of an error
        f"the crash repro.py exited {r.returncode}: {r.stdout!r} {r.stderr!r}")


@pytest.mark.spec("CONF-13", "CONF-18")
def test_hang_is_stopped(tmp_path: Path) -> None:
    p = _subprocess_suite(tmp_path, "conformance/test_protocol.py", "--conformance-isolate",
                          "--conformance-timeout=3", f"--executor={BROKEN}:HangingExecutor",
                          "-k", "aliasing or unused_store", "-rfE")
    out = p.stdout + p.stderr
    assert p.returncode == 1, out
    assert "did not return within 3 s" in out and "1 passed" in out, out
    hung = [r for r in sorted((tmp_path / "artifacts" / "isolate").glob("*/repro.py"))
            if " = sub(" in (r.parent / "graph.txt").read_text()]
    assert hung, "no repro directory was written before the hanging call"
    with pytest.raises(subprocess.TimeoutExpired):  # the repro hangs the same way
        subprocess.run([sys.executable, str(hung[0])], cwd=ROOT, capture_output=True,
                       timeout=8)


@pytest.mark.spec("CONF-8", "CONF-10")
def test_xdist_report_equals_serial(tmp_path: Path) -> None:
    """``-n 2`` gives the same verdicts and one merged report as a serial run."""
    common = ["conformance/test_protocol.py", "conformance/test_determinism.py",
              "conformance/test_ops.py", "-k",
              "not random_graph and (not test_op or add or round)",
              f"--executor={BROKEN}:ReplayedMutation"]
    serial = _subprocess_suite(tmp_path / "s", *common,
                               f"--conformance-report={tmp_path / 'serial.json'}")
    par = _subprocess_suite(tmp_path / "p", *common, "-n", "2",
                            f"--conformance-report={tmp_path / 'xdist.json'}")
    assert serial.returncode == par.returncode == 1, serial.stdout[-2000:] + par.stdout[-2000:]
    a = json.loads((tmp_path / "serial.json").read_text())
    b = json.loads((tmp_path / "xdist.json").read_text())
    assert b["meta"]["workers"] == 2
    assert a["totals"]["fail"] > 0
    for key in ("tests", "totals", "matrix", "not_covered", "rules"):
        assert a[key] == b[key], f"report section {key!r} differs between serial and -n 2"
    assert (tmp_path / "xdist.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.spec("CONF-22")
def test_collection_error_is_reported_not_an_internal_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A test file that fails to import is a collection error of that file: the plugin's
    status hook must not crash on its ``CollectReport`` (which has no ``user_properties``)."""
    (tmp_path / "test_bad.py").write_text("import no_such_module_xyz\n")
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    code = pytest.main([str(tmp_path), "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "--executor=interpreter.executor:InterpreterExecutor"])
    out = capsys.readouterr().out
    assert code == pytest.ExitCode.INTERRUPTED, out[-3000:]
    assert "ERROR collecting" in out and "no_such_module_xyz" in out, out[-3000:]
    assert "INTERNALERROR" not in out and "AttributeError" not in out, out[-3000:]


# -- mutation reach, bytes and layout (CONF-94..96): each caught by the new checks only ----------
MUTREACH: list[tuple[str, list[str], str | None, list[str]]] = [
    ("PooledScratchBuffers", ["test_ops.py"], "buffer_create-float32",
     ["stale-buffer", "MUT-6"]),
    ("CanonicalNaNMoves", ["test_ops.py"], "permute-float32-general or reshape-bfloat16-general",
     ["[DT-6]", "nan-payload"]),
    ("StridedPermute", ["test_ops.py"], "permute-float32-general",
     ["not C-contiguous", "[DT-2]", "layout"]),
    ("LoadHoistedAboveSliceStore", ["test_graphs.py"], "buffer or mixed-0",
     ["store-order", "MUT-7"]),
    ("DeadStoreBeforeSliceStore", ["test_graphs.py"], "buffer or mixed-0",
     ["store-order", "MUT-7"]),
    ("LoadHoistedAboveSliceStore", ["test_frontend.py"], "realization_boundary_invariance",
     ["[CONF-97]", "store-order", "graph repro: python"]),
]


@pytest.mark.spec("CONF-94", "CONF-95", "CONF-96", "CONF-18", "CONF-11")
@pytest.mark.parametrize(("broken", "files", "k", "words"), MUTREACH,
                         ids=[f"{c[0]}-{c[1][0][5:-3]}" for c in MUTREACH])
def test_mutreach_broken_executor_is_caught(tmp_path: Path, broken: str, files: list[str],
                                            k: str | None, words: list[str]) -> None:
    """Scratch buffers kept across executions, NaN bytes lost in copies, Fortran-ordered
    results and buffer accesses out of order pass the suite without CONF-94..96 (checked on
    the branch before the change: ``test_ops.py`` and ``test_graphs.py`` passed each); they
    fail now, naming the rule and the diagnosis class, with a repro."""
    _assert_caught(tmp_path, broken, files, k, words)


@pytest.mark.spec("CONF-89", "CONF-18")
def test_plan_cache_keyed_without_zero_signs_is_caught_by_a_twin(tmp_path: Path) -> None:
    """``ScalarKeyedPlanCache`` passes every other family: only a twin run right after its
    graph on the same instance meets the stale plan. The failure says so, the standalone
    repro passes (a fresh executor) and the pair's repro fails."""
    run = run_suite(tmp_path, "ScalarKeyedPlanCache", ["test_constants.py"],
                    "[mul-float32 or [add-float64")
    assert sorted(run.failed()) == [
        "conformance/test_constants.py::test_constant_reach[add-float64]",
        "conformance/test_constants.py::test_constant_reach[mul-float32]"], run.outcomes
    for text in run.failures().values():
        assert "zero twin of the graph run just before it" in text and "CONF-89" in text
    assert run.artifacts is not None
    pairs = sorted(run.artifacts.rglob("twin/repro.py"))
    assert len(pairs) == 2
    for script in pairs:
        alone = script.parent.parent / "original" / "repro.py"
        p = subprocess.run([sys.executable, str(alone)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0 and p.stdout.startswith("OK"), p.stdout[-300:]
        p = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 1 and p.stdout.startswith("FAIL:"), p.stdout[-300:]

# -- CONF-100: the smoke subset catches a NaN-dropping max --------------------------------


@pytest.mark.spec("CONF-100", "CONF-98", "CONF-18")
def test_smoke_catches_nan_ignoring_maximum(tmp_path: Path) -> None:
    """``max`` returning the other operand of a NaN fails the smoke subset (its float32
    ``test_op`` cell or its special-value sweeps), with a repro."""
    run = run_suite(tmp_path, "NaNIgnoringMaximum", ["test_ops.py", "test_specials.py"],
                    "max- and not reduce_max", "--conformance-smoke")
    assert run.code == pytest.ExitCode.TESTS_FAILED, run.outcomes
    failed = run.failed()
    assert any("test_special_sweep[max-float32]" in n for n in failed), failed
    assert all("max" in text for text in run.failures().values())
    assert_repro_fails(run)


# issue 19, model graphs (CONF-111, CONF-112): a wrong kernel of each new op family is caught
# by a float32 model cell, which names the op in the (minimised) failure
def _model_cell(broken: str, model: str, op: str) -> tuple[str, list[str], str, list[str]]:
    return (broken, ["test_models.py"], f"test_model and {model}-float32",
            [f"model {model} [float32]", f"{op} [", "minimised from"])


MODELS: list[tuple[str, list[str], str | None, list[str]]] = [
    _model_cell("UnbiasedVarianceLayerNorm", "mlp", "layer_norm"),
    _model_cell("EpsilonOutsideSqrtRmsNorm", "decoder", "rms_norm"),
    _model_cell("Conv2dPaddingSwapped", "cnn", "conv2d"),
    _model_cell("AvgPoolCountsPadding", "cnn", "avg_pool2d"),
    _model_cell("ResizeLinearAlignsCorners", "cnn", "resize_linear"),
    _model_cell("GeluTanhAsErf", "mlp", "gelu"),
    ("GeluTanhAsErf", ["test_ops.py"], "test_op and gelu-float32", ["gelu ["]),
]


@pytest.mark.spec("CONF-111", "CONF-112", "CONF-18", "CONF-11")
@pytest.mark.parametrize(("broken", "files", "k", "words"), MODELS,
                         ids=[f"{c[0]}-{c[1][0][5:-3]}" for c in MODELS])
def test_model_cell_catches_broken_executor(tmp_path: Path, broken: str, files: list[str],
                                            k: str | None, words: list[str]) -> None:
    _assert_caught(tmp_path, broken, files, k, words)
