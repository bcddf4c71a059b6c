"""Unit tests of the conformance suite's core: strategies, comparison, artifacts, bisection,
executor resolution and verdict helpers (conformance/*.py)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance import outcomes
from conformance.artifacts import ArtifactDir, load_arrays, replay, save_arrays
from conformance.compare import compare_arrays, compare_op, ulp_distance
from conformance.differential import check_case, cone, first_divergence
from conformance.executors import ExecutorSpecError, relevant_env, resolve
from conformance.strategies import (
    RngArgSource,
    build_random_graph,
    case_from_call,
    feasible_cells,
    shape_class_of,
    single_op_calls,
)
from interpreter.dtype import DType
from interpreter.evaluate import fresh_outputs
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import BufferValue, Graph, TensorValue
from interpreter.registry import REGISTRY, get_op, ulp
from interpreter.registry.core import EXACT, OpCall, as_results
from interpreter.types import BufferType, TensorType

ROOT = Path(__file__).resolve().parents[2]
F32 = np.float32


# -- executors used below (importable: tests.suite.test_conformance_core:Name) ------------
class _Patched:
    """The reference loop with some kernels replaced (op name -> kernel)."""

    patches: ClassVar[dict[str, Any]] = {}

    def execute(self, graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        env = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                kernel = self.patches.get(node.op.name, node.op.kernel)
                out = kernel(*[env[v] for v in node.operands], **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        return fresh_outputs([env[v] for v in graph.outputs or ()], inputs)


def _exp_one_ulp_low(x: np.ndarray) -> np.ndarray:
    e = np.exp(x)
    return np.nextafter(e, np.asarray(-np.inf, e.dtype)).astype(x.dtype)


class ExpOneUlpLow(_Patched):
    """Legitimately inaccurate: exp 1 ULP low (within its ulp(2) tolerance)."""

    patches: ClassVar[dict[str, Any]] = {"exp": _exp_one_ulp_low}


class FloorIsCeil(_Patched):
    """Wrong: floor computes ceil."""

    patches: ClassVar[dict[str, Any]] = {"floor": np.ceil}


def make_reference() -> InterpreterExecutor:
    return InterpreterExecutor()


READY = InterpreterExecutor()


def broken_factory() -> InterpreterExecutor:
    raise RuntimeError("no device")


def _f32(*xs: float) -> np.ndarray:
    return np.array(xs, F32)


# -- compare ------------------------------------------------------------------------------
@pytest.mark.spec("TOL-1")
def test_exact_distinguishes_signed_zero_and_matches_nan() -> None:
    e = _f32(0.0, float("nan"), 1.0)
    assert compare_arrays(e, _f32(0.0, float("nan"), 1.0)) is None
    nan_payload = np.array([0x7FC00001], np.uint32).view(F32)
    assert compare_arrays(_f32(float("nan")), nan_payload) is None
    m = compare_arrays(e, _f32(-0.0, float("nan"), 1.0))
    assert m is not None and "[0]: 0.0 -> -0.0" in m.message


@pytest.mark.spec("TOL-1")
@pytest.mark.parametrize(("dtype", "next_up"), [
    (np.float16, 1.0 + 2.0**-10), (ml_dtypes.bfloat16, 1.0 + 2.0**-7),
    (np.float32, 1.0 + 2.0**-23), (np.float64, 1.0 + 2.0**-52),
    (ml_dtypes.float8_e5m2, 1.25),
])
def test_ulp_distance_per_dtype(dtype: Any, next_up: float) -> None:
    one = np.array([1.0, -0.0, 1.0], dtype)
    other = np.array([next_up, 0.0, float("nan")], dtype)
    assert list(ulp_distance(one, other)) == [1.0, 0.0, float("inf")]


@pytest.mark.spec("TOL-1")
def test_ulp_budget_accepts_within_and_rejects_beyond() -> None:
    x = F32(1.0)
    two_up = np.array([np.nextafter(np.nextafter(x, F32(2)), F32(2))])
    three_up = np.array([np.nextafter(two_up[0], F32(2))])
    assert compare_arrays(_f32(1.0), two_up, ulp(2)) is None
    m = compare_arrays(_f32(1.0), three_up, ulp(2))
    assert m is not None and "3 ulp" in m.message and "2-3: 1" in m.message


@pytest.mark.spec("TOL-1")
def test_reduction_budget_scales_with_terms_and_magnitude() -> None:
    x = np.array([[1e8, 1.0, -1e8]], F32)
    # bound = 2 ulps * 3 terms * eps(f32) * (1e8 + 1 + 1e8) ~= 143
    op = get_op("reduce_sum")
    assert str(op.tolerance) == "reduction(2)"
    assert compare_op(op, [x], {"axis": 1}, [np.array([[0.0]], F32)],
                      [np.array([[1.0]], F32)]) is None
    m = compare_op(op, [x], {"axis": 1}, [np.array([[0.0]], F32)], [np.array([[1000.0]], F32)])
    assert m is not None and "reduce_sum" in m.message


@pytest.mark.spec("TOL-2")
def test_unspecified_elements_are_masked() -> None:
    lhs, rhs = np.array([7, 7], np.int32), np.array([0, 2], np.int32)
    op = get_op("floor_div")
    assert compare_op(op, [lhs, rhs], {}, [np.array([0, 3], np.int32)],
                      [np.array([-99, 3], np.int32)]) is None
    m = compare_op(op, [lhs, rhs], {}, [np.array([0, 3], np.int32)], [np.array([0, 4], np.int32)])
    assert m is not None and "1 of 1 compared" in m.message


def test_dtype_and_shape_are_checked_first() -> None:
    m = compare_arrays(_f32(1.0), np.array([1.0]))
    assert m is not None and m.kind == "dtype" and "float64 != expected float32" in m.message
    m = compare_arrays(_f32(1.0), _f32(1.0, 2.0))
    assert m is not None and m.kind == "shape"


def test_failure_message_names_worst_elements_and_histogram() -> None:
    e = np.zeros((2, 3), F32)
    g = e.copy()
    g[1, 2] = 1.0
    g[0, 1] = float("nan")
    m = compare_op(get_op("add"), [e, e], {}, [e], [g])
    assert m is not None
    text = m.message
    assert "add[float32]" in text and "shape [2, 3]" in text and "2 of 6" in text
    assert "[0, 1]: 0.0 -> nan  (NaN mismatch)" in text
    assert "[1, 2]: 0.0 -> 1.0" in text and "ULP histogram" in text


@pytest.mark.spec("TOL-1")
def test_discontinuity_accepts_results_of_perturbed_operands() -> None:
    x = np.array([np.nextafter(F32(1.0), F32(0.0)), F32(2.5)])  # 0.99999994, 2.5
    op = get_op("floor")
    expected, got = _f32(0.0, 2.0), _f32(1.0, 2.0)
    assert compare_op(op, [x], {}, [expected], [got]) is not None
    assert compare_op(op, [x], {}, [expected], [got], perturb_ulps=2) is None
    assert compare_op(op, [x], {}, [expected], [_f32(0.0, 3.0)], perturb_ulps=2) is not None


# -- strategies -----------------------------------------------------------------------------
SAMPLED = sorted(n for n, op in REGISTRY.items() if op.sample is not None)


@pytest.mark.parametrize("name", SAMPLED)
@settings(max_examples=5, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_single_op_calls_stage_and_run_for_every_op(name: str, data: Any) -> None:
    case = data.draw(single_op_calls(REGISTRY[name]))
    assert any(n.op.name == name for n in case.graph.nodes)
    outs = InterpreterExecutor().execute(case.graph, case.input_copies())
    assert len(outs) == len(case.graph.outputs or ())


def test_pinned_dtype_and_shape_class_cells() -> None:
    cells = feasible_cells(get_op("add"))
    for cls in ("scalar", "empty", "broadcast", "general"):
        assert (DType.float32, cls) in cells
    assert (DType.float32, "scalar") not in feasible_cells(get_op("reduce_sum"))  # rank >= 1
    src = RngArgSource(0, DType.int16, "empty")
    call = get_op("add").sample(src)  # type: ignore[misc]
    assert DType.from_numpy(call.operands[0].dtype) in (DType.int16, DType.int8, DType.uint8,
                                                         DType.bool)
    assert 0 in call.operands[0].shape + call.operands[1].shape


def test_shape_class_of() -> None:
    add = get_op("add")
    z = np.zeros
    assert shape_class_of(add, OpCall([z(()), z(())])) == "scalar"
    assert shape_class_of(add, OpCall([z((2, 0)), z((2, 0))])) == "empty"
    assert shape_class_of(add, OpCall([z((2, 3)), z((3,))])) == "broadcast"
    assert shape_class_of(add, OpCall([z((2, 1)), z((2, 1))])) == "broadcast"
    assert shape_class_of(add, OpCall([z((2, 3)), z((2, 3))])) == "general"
    assert shape_class_of(add, OpCall([z((2, 3)), z((2, 3))]), [(4,)]) == "general"


def test_random_graphs_are_deterministic_prefixes() -> None:
    a, b = build_random_graph(7, 12), build_random_graph(7, 12)
    assert a.graph.to_text() == b.graph.to_text()
    assert all(np.array_equal(x, y, equal_nan=True) or x.dtype.kind == "V"
               for x, y in zip(a.inputs, b.inputs, strict=True))
    short, long_ = build_random_graph(7, 5), build_random_graph(7, 6)
    names = [n.op.name for n in short.graph.nodes]
    assert [n.op.name for n in long_.graph.nodes][:len(names)] == names


def test_random_graphs_cover_buffers_random_ops_reductions_and_dtypes() -> None:
    seen_ops: set[str] = set()
    dtypes: set[DType] = set()
    buffer_inputs = reused = 0
    for seed in range(60):
        c = build_random_graph(seed, 30)
        seen_ops.update(n.op.name for n in c.graph.nodes)
        dtypes.update(v.type.dtype for n in c.graph.nodes for v in n.results)
        buffer_inputs += any(isinstance(v.type, BufferType) for v in c.graph.inputs)
        uses = [v for n in c.graph.nodes for v in n.operands]
        reused += len(uses) - len(set(uses))
        InterpreterExecutor().execute(c.graph, c.input_copies())
    for op in ("buffer_store", "buffer_store_slice", "buffer_load", "random_uniform",
               "reduce_sum", "matmul", "reshape", "broadcast_to", "cast"):
        assert op in seen_ops
    assert len(dtypes) >= 10 and buffer_inputs >= 10 and reused > 100


# -- differential + bisection -------------------------------------------------------------
def _floor_exp_graph() -> tuple[Graph, list[np.ndarray]]:
    with Graph("fe", input_types=[TensorType(DType.float32, (3,))]) as g:
        x = g.inputs[0]
        assert isinstance(x, TensorValue)
        e = ops.exp(x)
        g.output(ops.floor(e) + 1.0)
    return g, [_f32(0.0, 1.0, -1.0)]


@pytest.mark.spec("TOL-1")
def test_legit_inaccuracy_amplified_by_floor_is_accepted_after_local_checks() -> None:
    from conformance.strategies import Case

    g, inputs = _floor_exp_graph()
    v = check_case(Case(g, inputs), ExpOneUlpLow(), InterpreterExecutor())
    assert v.ok and v.locally_checked  # floor(0.99999994) = 0 differs from 1, but follows
    assert v.actual["out0"][0] == 1.0 and v.expected["out0"][0] == 2.0


def test_bisection_names_the_first_diverging_node() -> None:
    from conformance.strategies import Case

    g, _ = _floor_exp_graph()
    v = check_case(Case(g, [_f32(0.5, 1.0, -1.0)]), FloorIsCeil(), InterpreterExecutor())
    assert not v.ok and v.divergence is not None
    assert g.nodes[v.divergence.index].op.name == "floor"
    assert "first diverging node" in v.message and "floor(" in v.message
    div = first_divergence(g, [_f32(0.5, 1.0, -1.0)], FloorIsCeil(), g.outputs or [])
    assert div is not None and div.index == v.divergence.index
    assert [n.op.name for n in div.graph.nodes][-1] == "floor"


def test_buffer_contents_are_compared_and_cone_follows_stores() -> None:
    from conformance.strategies import Case

    with Graph("b", input_types=[BufferType(DType.float32, (2,)),
                                 TensorType(DType.float32, (2,))]) as g:
        buf, x = g.inputs
        assert isinstance(buf, BufferValue) and isinstance(x, TensorValue)
        ops.buffer_store(buf, ops.floor(x))
        g.output()
    assert [g.nodes[i].op.name for i in cone(g, [buf])] == ["floor", "buffer_store"]
    case = Case(g, [_f32(0.0, 0.0), _f32(0.5, 1.5)])
    v = check_case(case, FloorIsCeil(), InterpreterExecutor())
    assert not v.ok and "buffer input 0" in v.message
    assert list(case.inputs[0]) == [0.0, 0.0]  # the case's own inputs are never handed out


# -- artifacts ------------------------------------------------------------------------------
def test_save_and_load_arrays_keep_ml_dtypes_bit_exact(tmp_path: Path) -> None:
    arrays = {"a": np.array([1.5, -0.0, np.nan], ml_dtypes.bfloat16),
              "b": np.array([448.0], ml_dtypes.float8_e4m3fn),
              "c": np.array([[1, 2]], np.int8), "d": np.array(True)}
    save_arrays(tmp_path / "x.npz", arrays)
    back = load_arrays(tmp_path / "x.npz")
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and back[k].shape == a.shape
        assert back[k].tobytes() == a.tobytes()


@pytest.mark.spec("CONF-11")
def test_repro_dir_replays_the_mismatch(tmp_path: Path) -> None:
    g, inputs = _floor_exp_graph()
    inputs = [_f32(0.5, 1.0, -1.0)]
    art = ArtifactDir(tmp_path, "conformance/test_x.py::test_y[a-b]",
                      "tests.suite.test_conformance_core:FloorIsCeil", ROOT)
    d = art.write_case(g, inputs)
    assert {p.name for p in d.iterdir()} == {"graph.txt", "inputs.npz", "repro.py"}
    out: list[str] = []

    class Sink:
        def write(self, s: str) -> None:
            out.append(s)

    assert replay(d, "tests.suite.test_conformance_core:FloorIsCeil", out=Sink()) == 1
    assert "floor" in "".join(out)
    assert replay(d, "interpreter.executor:InterpreterExecutor", out=Sink()) == 0
    proc = subprocess.run([sys.executable, str(d / "repro.py")], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1 and "FAIL" in proc.stdout


# -- executor resolution and verdicts --------------------------------------------------------
@pytest.mark.spec("CONF-1")
@pytest.mark.parametrize("spec", ["interpreter.executor:InterpreterExecutor",
                                  "tests.suite.test_conformance_core:make_reference",
                                  "tests.suite.test_conformance_core:READY"])
def test_resolve_class_factory_and_object(spec: str) -> None:
    r = resolve(spec)
    assert isinstance(r.executor, InterpreterExecutor) and r.spec == spec


@pytest.mark.spec("CONF-1")
@pytest.mark.parametrize(("spec", "words"), [
    ("nonexistent_mod:X", "cannot import module 'nonexistent_mod'"),
    ("interpreter.executor:Nope", "has no attribute 'Nope'"),
    ("interpreter.executor:InterpreterExecutor.nope", "has no attribute 'nope'"),
    ("tests.suite.test_conformance_core:broken_factory",
     "calling tests.suite.test_conformance_core.broken_factory() with no arguments "
     "failed: RuntimeError: no device"),
    ("tests.suite.test_conformance_core:ROOT", "is not an Executor"),
    ("no_colon", "expected 'module:Class'"),
])
def test_resolve_errors_are_one_line(spec: str, words: str) -> None:
    with pytest.raises(ExecutorSpecError) as info:
        resolve(spec)
    first, *rest = str(info.value).splitlines()
    # the vendor's own code raised (the factory): its traceback follows (CONF-129)
    assert words in first and bool(rest) == ("broken_factory" in spec)


def test_relevant_env_selects_prefixes() -> None:
    env = {"CI": "1", "MAX_X": "a", "EAGER_Y": "b", "HYPOTHESIS_Z": "c", "HOME": "/root"}
    assert relevant_env(env) == {"CI": "1", "EAGER_Y": "b", "HYPOTHESIS_Z": "c", "MAX_X": "a"}


@pytest.mark.spec("CONF-5")
def test_refused_skips_unless_strict() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"^REFUSED: no"):
        outcomes.refused("no")
    outcomes.push_strict(True)
    try:
        with pytest.raises(pytest.fail.Exception, match="REFUSED: no"):
            outcomes.refused("no")
    finally:
        outcomes.pop_strict()


@pytest.mark.spec("CONF-1")
def test_bad_executor_stops_the_run_with_one_line() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "conformance/",
                           "--executor=nonexistent:X", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    assert proc.returncode == 4
    assert lines == ["ERROR: --executor=nonexistent:X: cannot import module 'nonexistent': "
                     "ModuleNotFoundError: No module named 'nonexistent'"]


def test_case_from_call_marks_buffers() -> None:
    call = OpCall([np.zeros(2, F32), np.ones(2, F32)], buffers=frozenset({0}))
    case = case_from_call(get_op("buffer_store"), call)
    assert isinstance(case.graph.inputs[0].type, BufferType)
    assert case.graph.outputs == [] and EXACT.kind == "exact"


def _loops_applying_kernels(path: Path) -> list[str]:
    """``file:line`` of each ``for`` loop over nodes, steps or a node order whose body calls
    a kernel (``x.kernel(...)``, ``x.apply(...)``, ``kernel(...)``, ``fn(...)``)."""
    import ast

    found = []
    for loop in ast.walk(ast.parse(path.read_text())):
        if not isinstance(loop, ast.For):
            continue
        over = ast.unparse(loop.iter)
        if not any(w in over for w in ("nodes", "steps", "order")):
            continue
        for call in (n for stmt in loop.body for n in ast.walk(stmt)
                     if isinstance(n, ast.Call)):
            f = call.func
            if (isinstance(f, ast.Attribute) and f.attr in ("kernel", "apply")) or (
                    isinstance(f, ast.Name) and f.id in ("kernel", "fn")):
                found.append(f"{path.relative_to(ROOT)}:{loop.lineno}")
                break
    return found


@pytest.mark.spec("EXEC-9")
def test_one_node_loop_applies_kernels() -> None:
    """Under ``interpreter/`` and ``conformance/`` the only loop running nodes' kernels is
    ``evaluate``'s: diagnosis variants, store reorderings and mutants pass ``kernel=`` or a
    reordered graph to it."""
    loops = [loc for pkg in ("interpreter", "conformance")
             for path in sorted((ROOT / pkg).rglob("*.py"))
             for loc in _loops_applying_kernels(path)]
    assert [loc.split(":")[0] for loc in loops] == ["interpreter/evaluate.py"], loops
