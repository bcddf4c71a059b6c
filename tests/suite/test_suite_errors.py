"""The suite never blames an executor for its own exception (CONF-22), stores repro cases
exactly (CONF-23) and keeps its own numpy warnings to itself (CONF-24).

Faults are injected into each stage of the suite (comparison, failure description, local
checks and bisection, artifact writing, replay, isolation, report); the outcome must be a
*suite error*, never an executor failure. Vendor-style executors
(``tests/suite/vendor_executors.py``) check the messages a vendor reads.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import conformance.compare as compare_mod
import conformance.differential as differential
from conformance.artifacts import ArtifactDir, load_arrays, load_case, replay, save_arrays
from conformance.calls import SUITE_ERROR, ExecutorRaised, SuiteError, quiet
from conformance.harness import ExecutorError, Harness, SuiteFailure
from conformance.isolate import IsolatedExecutor
from conformance.pipeline import call_executor
from conformance.strategies import Case
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import Graph
from interpreter.testing import build

from .suite_runner import SuiteRun, run_suite
from .vendor_executors import CrashesInNestedFunction, OneUlpExp, ScalarBfloat16Off

ROOT = Path(__file__).resolve().parents[2]
VENDOR = "tests.suite.vendor_executors"


# -- running the suite in-process -------------------------------------------------------------
def suite(tmp_path: Path, executor: str, files: list[str], k: str, *extra: str,
          quiet_warnings: bool = True) -> SuiteRun:
    """Run ``conformance/<files> -k <k>`` in-process on ``executor`` (a module:attr spec)."""
    return run_suite(tmp_path, executor, files, k, *extra, quiet_warnings=quiet_warnings)


def repro(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


# -- a harness outside pytest's collection (fault injection per stage) ------------------------
def harness(tmp_path: Path, executor: Any) -> Harness:
    node = SimpleNamespace(user_properties=[], nodeid="tests::fault")
    art = ArtifactDir(tmp_path / "art", "tests::fault", f"{VENDOR}:OneUlpExp", ROOT)
    return Harness(SimpleNamespace(node=node), executor, InterpreterExecutor(), art, "fault")


def exp_floor_case() -> Case:
    """floor(exp(log(k))): exp(x) lies within an ULP of an integer, so a legal 1-ULP
    difference of exp changes the floor and the suite checks nodes locally (bisection)."""
    x = np.log(np.arange(2, 66)).astype(np.float32)
    graph = build(lambda x: ops.floor(ops.exp(x)), x, name="exp_floor")
    return Case(graph, [x])


def scalar_exp_case(x: float = 27.39) -> Case:
    v = np.array(x, np.float32)
    return Case(build(ops.exp, v, name="scalar_exp"), [v])


STAGES = {
    "compare": (differential, "compare_arrays"),
    "describe": (compare_mod, "_describe"),
    "local check": (differential, "_local_check"),
    "bisection": (differential, "first_divergence"),
    "reference": (differential, "_reference_env"),
}


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise IndexError("injected fault in the suite")


@pytest.mark.spec("CONF-22")
@pytest.mark.parametrize("stage", sorted(STAGES))
def test_fault_in_a_stage_is_a_suite_error(tmp_path: Path, stage: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    module, name = STAGES[stage]
    case = exp_floor_case()
    executor = OneUlpExp()
    # without the fault this case reaches every stage and passes (1 ULP of exp is legal)
    if stage != "describe":
        verdict = differential.check_case(case, executor, InterpreterExecutor())
        assert verdict.ok and verdict.locally_checked, verdict.message
    else:  # a real mismatch reaches the description: add 1 to every exp result
        executor = ScalarBfloat16Off()
        case = Case(build(lambda x: x + x, np.array(1.5, ml_dtypes.bfloat16), name="s"),
                    [np.array(1.5, ml_dtypes.bfloat16)])
    monkeypatch.setattr(module, name, _boom)
    h = harness(tmp_path, executor)
    with pytest.raises(SuiteFailure) as info:
        h.check(case)
    text = str(info.value)
    assert text.startswith(SUITE_ERROR) and "not in your executor" in text, text
    assert "please report" in text and "injected fault in the suite" in text
    assert "_boom" in text  # the suite's own traceback
    assert "the executor raised" not in text


@pytest.mark.spec("CONF-22")
def test_fault_in_artifact_writing_is_a_suite_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    h = harness(tmp_path, ScalarBfloat16Off())
    monkeypatch.setattr(ArtifactDir, "write_case", _boom)
    h.check(scalar_exp_case())  # a passing case writes no file (CONF-11: on a failure)
    v = np.array(1.5, ml_dtypes.bfloat16)
    with pytest.raises(SuiteFailure) as info:  # a failure's case cannot be written
        h.check(Case(build(lambda x: x + x, v, name="s"), [v]))
    assert str(info.value).startswith(SUITE_ERROR)
    monkeypatch.undo()
    monkeypatch.setattr(ArtifactDir, "write_results", _boom)
    with pytest.raises(SuiteFailure) as info:  # a real failure whose artifacts fail
        h.check(Case(build(lambda x: x + x, v, name="s"), [v]))
    text = str(info.value)
    assert text.startswith(SUITE_ERROR) and "1 of 1 compared elements differ" in text, text


@pytest.mark.spec("CONF-22")
def test_suite_error_outcome_in_the_report(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """In a real run: the test fails with SUITE ERROR, and the report counts and lists it
    apart from executor failures (JSON and HTML); an xfail entry does not hide it."""
    monkeypatch.setattr(differential, "compare_arrays", _boom)
    report = tmp_path / "r.json"
    xfails = tmp_path / "xfails.toml"
    xfails.write_text('[[xfail]]\nop = "abs"\nreason = "a known executor bug"\n')
    run = suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_ops.py"],
                "abs-float32-scalar", f"--conformance-report={report}",
                f"--conformance-xfails={xfails}")
    assert run.code == pytest.ExitCode.TESTS_FAILED, run.outcomes
    (text,) = run.failures().values()
    assert text.startswith(SUITE_ERROR) and "please report" in text, text
    assert "injected fault in the suite" in text and "the executor raised" not in text
    data = json.loads(report.read_text())
    assert data["totals"]["suite_error"] == 1 and data["totals"]["fail"] == 0
    assert data["suite_errors"] == list(run.outcomes)
    assert "suite errors" in report.with_suffix(".html").read_text()


@pytest.mark.spec("CONF-22")
def test_fault_in_the_report_is_a_suite_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import conformance.report as report_mod

    monkeypatch.setattr(report_mod, "build_report", _boom)
    run = suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_ops.py"],
                "abs-float32-scalar", f"--conformance-report={tmp_path / 'r.json'}")
    out = capsys.readouterr().out
    assert run.code == pytest.ExitCode.INTERNAL_ERROR
    assert SUITE_ERROR in out and "writing the conformance report" in out, out[-2000:]
    assert "please report" in out


@pytest.mark.spec("CONF-22")
def test_fault_in_isolation_is_a_suite_error(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker cannot parse the graph text (the suite's serialization): a suite error,
    not the executor's; the executor's own exception keeps its worker traceback."""
    iso = IsolatedExecutor(f"{VENDOR}:CrashesInNestedFunction", 60, tmp_path)
    try:
        case = scalar_exp_case()
        with pytest.raises(ExecutorRaised) as info:
            call_executor(iso, case.graph, case.inputs)
        assert "lookup_exp_table" in info.value.traceback  # the worker's executor frames
        monkeypatch.setattr(Graph, "to_text", lambda self: "this is not a graph\n")
        with pytest.raises(SuiteError, match="could not rebuild graph"):
            call_executor(iso, case.graph, case.inputs)
    finally:
        iso.close()


@pytest.mark.spec("CONF-22")
def test_reference_failure_in_replay_is_a_suite_error(tmp_path: Path) -> None:
    """The original bug: a stored input of the wrong shape made the reference raise and
    repro.py blamed the executor. Now it says suite error (exit 3)."""
    art = ArtifactDir(tmp_path, "t::x", f"{VENDOR}:OneUlpExp", ROOT)
    case = scalar_exp_case()
    d = art.write_case(case.graph, case.inputs)
    save_arrays(d / "inputs.npz", {"in0": np.zeros([1], np.float32)})  # corrupt: rank 1
    sink = io.StringIO()
    assert replay(d, f"{VENDOR}:OneUlpExp", out=sink) == 3
    text = sink.getvalue()
    assert text.startswith(SUITE_ERROR) and "reference interpreter raised" in text, text
    assert "FAIL" not in text


@pytest.mark.spec("CONF-22")
def test_fault_in_replay_is_a_suite_error(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    art = ArtifactDir(tmp_path, "t::x", f"{VENDOR}:OneUlpExp", ROOT)
    case = scalar_exp_case()
    d = art.write_case(case.graph, case.inputs)
    monkeypatch.setattr(differential, "compare_arrays", _boom)
    sink = io.StringIO()
    assert replay(d, f"{VENDOR}:OneUlpExp", out=sink) == 3
    assert sink.getvalue().startswith(SUITE_ERROR) and "please report" in sink.getvalue()


# -- rank-0 values through every stage ---------------------------------------------------------
@pytest.mark.spec("CONF-22", "TOL-1")
def test_rank0_one_ulp_difference_passes(tmp_path: Path) -> None:
    case = scalar_exp_case(27.39)
    got = OneUlpExp().execute(case.graph, case.input_copies())[0]
    want = InterpreterExecutor().execute(case.graph, case.input_copies())[0]
    assert got.shape == () and got.tobytes() != want.tobytes()  # it does differ, by 1 ULP
    assert differential.check_case(case, OneUlpExp(), InterpreterExecutor()).ok
    run = suite(tmp_path, f"{VENDOR}:OneUlpOnScalars", ["test_ops.py"], "exp-float32-scalar")
    assert run.code == pytest.ExitCode.OK and list(run.outcomes.values()) == ["passed"], (
        run.messages)


@pytest.mark.spec("CONF-22")
def test_rank0_mismatch_is_described(tmp_path: Path) -> None:
    """A real rank-0 mismatch is reported with its value, not an IndexError."""
    v = np.array(1.5, ml_dtypes.bfloat16)
    case = Case(build(lambda x: x + x, v, name="s"), [v])
    with pytest.raises(pytest.fail.Exception) as info:
        harness(tmp_path, ScalarBfloat16Off()).check(case)
    text = str(info.value)
    # the stored case is minimised (CONF-19): the value may have become 0 -> 1
    assert re.search(r"\[\]: \S+ -> \S+  \(\d+ ulp\)", text) and SUITE_ERROR not in text, text


@pytest.mark.spec("CONF-22")
def test_executor_crash_shows_its_own_frames(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError) as info:
        harness(tmp_path, CrashesInNestedFunction()).check(scalar_exp_case())
    text = str(info.value)
    assert "the executor raised IndexError: list index out of range" in text, text
    assert "lookup_exp_table" in text and "vendor_executors.py" in text
    assert SUITE_ERROR not in text
    run = suite(tmp_path, f"{VENDOR}:CrashesInNestedFunction", ["test_ops.py"],
                "exp-float32-scalar")
    (msg,) = run.failures().values()
    assert "the executor raised IndexError" in msg and "lookup_exp_table" in msg, msg
    assert SUITE_ERROR not in msg
    script = min(run.artifacts.rglob("repro.py"), key=lambda p: len(p.parts))
    p = repro(script)
    assert p.returncode == 1 and p.stdout.startswith("FAIL:"), p.stdout + p.stderr
    assert "lookup_exp_table" in p.stdout and "IndexError" in p.stdout


AUDIT_OPS = ("add", "exp", "sqrt", "reduce_sum", "reduce_max", "softmax", "cumsum", "matmul",
             "cast", "split", "concat", "argmax", "select", "equal")
AUDIT_DTYPES = ("bool", "int8", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float32")


def _audit_cells() -> list[Any]:
    from conformance.strategies import feasible_cells
    from interpreter.registry import REGISTRY

    cells = []
    for name in AUDIT_OPS:
        for dtype, cls in sorted(feasible_cells(REGISTRY[name]), key=lambda c: (c[0].value, c[1])):
            if dtype.value in AUDIT_DTYPES and cls in ("scalar", "empty", "broadcast"):
                cells.append(pytest.param(name, dtype, cls, id=f"{name}-{dtype.value}-{cls}"))
    return cells


@pytest.mark.spec("CONF-22", "CONF-23")
@pytest.mark.parametrize(("op_name", "dtype", "shape_class"), _audit_cells())
def test_every_stage_takes_every_value_kind(tmp_path: Path, op_name: str, dtype: DType,
                                            shape_class: str) -> None:
    """Rank 0, empty, size 1, bool, bfloat16, float8 and multi-output values through the
    comparison, its description, local checks, artifacts and replay, against an executor
    that is wrong everywhere: a verdict, never an exception of the suite."""
    from hypothesis import HealthCheck, given
    from hypothesis import settings as hsettings

    from conformance.strategies import single_op_calls
    from interpreter.registry import REGISTRY

    from .vendor_executors import LastBitFlipped

    count = iter(range(10**6))

    @hsettings(max_examples=2, derandomize=True, database=None, deadline=None,
               suppress_health_check=list(HealthCheck))
    @given(case=single_op_calls(REGISTRY[op_name], dtype, shape_class))
    def prop(case: Case) -> None:
        with quiet():  # the suite's boundary, as in the harness and replay (CONF-24)
            verdict = differential.check_case(case, LastBitFlipped(), InterpreterExecutor())
        art = ArtifactDir(tmp_path / str(next(count)), "t::audit", f"{VENDOR}:LastBitFlipped",
                          ROOT)
        d = art.write_case(case.graph, case.inputs)
        art.write_results(verdict.expected, verdict.actual, verdict.message)
        _, inputs = load_case(d)
        for a, b in zip(case.inputs, inputs, strict=True):
            assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
        for name, stored in (("expected", verdict.expected), ("actual", verdict.actual)):
            back = load_arrays(d / f"{name}.npz")
            assert {k: (v.dtype, v.shape) for k, v in back.items()} == {
                k: (v.dtype, v.shape) for k, v in stored.items()}
        sink = io.StringIO()
        code = replay(d, f"{VENDOR}:LastBitFlipped", out=sink)
        assert code in (0, 1), sink.getvalue()
        if not verdict.ok:
            assert "differ" in verdict.message or "diverging" in verdict.message, verdict.message
            assert code == 1 and sink.getvalue().startswith("FAIL:"), sink.getvalue()

    prop()


# -- exact storage of every dtype and rank (CONF-23) --------------------------------------------
def _sample(d: DType, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    dt = d.to_numpy()
    if d is DType.bool:
        return (np.arange(n) % 2 == 1).reshape(shape)
    base = np.arange(1, n + 1, dtype=np.float64).reshape(shape) * (-1) ** np.arange(n
                                                                                  ).reshape(shape)
    return (np.abs(base) if dt.kind == "u" else base).astype(dt)


SHAPES = [(), (0,), (3,), (2, 0), (2, 3), (2, 1, 3), (0, 2, 2)]


@pytest.mark.spec("CONF-23")
@pytest.mark.parametrize("dtype", list(DType), ids=[d.value for d in DType])
def test_arrays_round_trip_exactly(tmp_path: Path, dtype: DType) -> None:
    arrays = {f"a{i}": _sample(dtype, s) for i, s in enumerate(SHAPES)}
    if dtype.value.startswith("float") or dtype is DType.bfloat16:
        arrays["nan0"] = np.array(np.nan, dtype.to_numpy())  # rank 0, special value
        arrays["negzero"] = np.array([-0.0], dtype.to_numpy())
    save_arrays(tmp_path / "x.npz", arrays)
    back = load_arrays(tmp_path / "x.npz")
    assert set(back) == set(arrays)
    for k, a in arrays.items():
        b = back[k]
        assert (b.dtype, b.shape) == (a.dtype, a.shape), (k, b.dtype, b.shape, a.shape)
        assert b.tobytes() == a.tobytes(), k


@pytest.mark.spec("CONF-23", "CONF-11")
def test_rank0_bfloat16_repro_replays(tmp_path: Path) -> None:
    run = suite(tmp_path, f"{VENDOR}:ScalarBfloat16Off", ["test_ops.py"], "[add-bfloat16-scalar")
    assert run.code == pytest.ExitCode.TESTS_FAILED, run.outcomes
    (msg,) = run.failures().values()
    assert "add" in msg and "shape []" in msg and SUITE_ERROR not in msg, msg
    script = min(run.artifacts.rglob("repro.py"), key=lambda p: len(p.parts))  # not divergence/
    graph, inputs = load_case(script.parent)
    assert [a.shape for a in inputs] == [v.type.shape for v in graph.inputs] == [(), ()]
    p = repro(script)
    assert p.returncode == 1 and p.stdout.startswith("FAIL:"), p.stdout + p.stderr
    ok = repro(script, "--executor=interpreter.executor:InterpreterExecutor")
    assert ok.returncode == 0 and ok.stdout.startswith("OK:"), ok.stdout + ok.stderr


# -- quiet output (CONF-24) -----------------------------------------------------------------------
@pytest.mark.spec("CONF-24")
def test_suite_numpy_warnings_stay_inside(tmp_path: Path) -> None:
    """Legal reduction differences on special values make the suite compute tolerance bounds
    and unspecified masks (sums of |x| that overflow): no RuntimeWarning of the suite's
    code reaches the summary, while the executor's own warning still does."""
    run = suite(tmp_path, f"{VENDOR}:NoisyOneUlpReductions", ["test_ops.py"],
                "reduce_sum-float64 or cumsum-float64 or reduce_sum-float32 or cumsum-float32",
                quiet_warnings=False)
    assert run.code == pytest.ExitCode.OK and len(run.outcomes) >= 8, run.failed()
    runtime = [w for w in run.warnings if w[0] == "RuntimeWarning"]
    assert any(w[1].endswith("vendor_executors.py") for w in runtime), runtime
    assert all(w[1].endswith("vendor_executors.py") for w in runtime), runtime


@pytest.mark.spec("EXEC-6", "TOL-1")
def test_dead_input_graph_judges_its_value_under_exps_tolerance(tmp_path: Path) -> None:
    """The read-only-input test's value check is exp's ``ulp(2)`` (TOL-1), not a relative
    ``1e-12``: 1 ULP passes, 3 ULPs fail with a value message naming exp and TOL-1 (they
    passed the old ``rtol``), never an EXEC-6 message."""
    legal = suite(tmp_path / "one", f"{VENDOR}:OneUlpExp", ["test_protocol.py"],
                  "dead_after_use")
    assert legal.code == 0, legal.text()
    off = suite(tmp_path / "three", f"{VENDOR}:ThreeUlpExp", ["test_protocol.py"],
                "dead_after_use")
    (message,) = off.failures().values()
    assert "dead-after-use graph: output 0 (exp [float64])" in message, message
    assert "[TOL-1]" in message and "EXEC-6" not in message, message


@pytest.mark.spec("CONF-11")
def test_a_staged_case_is_written_only_when_needed_with_the_inputs_before_the_call(
        tmp_path: Path) -> None:
    art = ArtifactDir(tmp_path / "art", "t::x", "m:C", str(tmp_path))
    x = np.arange(3, dtype=np.float32)
    g = build(lambda a: a + a, x, name="s")
    art.stage_case(g, [x])
    x[:] = -1  # an executor writing into its input after the case was staged
    assert not art.path.exists()  # nothing written for an example that passes
    art.flush()
    graph, inputs = load_case(art.path)
    assert graph.to_text() == g.to_text() and inputs[0].tolist() == [0.0, 1.0, 2.0]
    art.stage_case(g, [x])
    art.discard()  # a passing test: the staged case is dropped, the directory removed
    art.flush()
    assert not art.path.exists()
