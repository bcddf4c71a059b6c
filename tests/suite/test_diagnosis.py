"""Diagnosis of divergences (CONF-40): each platform effect of ``tests/suite/broken_executors.py``
is named by its class, and only by it, on a small hand-built graph that shows it; declared
classes explain exactly the failures they reproduce (CONF-41)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import ml_dtypes
import numpy as np
import pytest
from _pytest.outcomes import Failed

from conformance import diagnosis, expectations
from conformance.artifacts import ArtifactDir
from conformance.diagnosis import CLASSES, annotate, diagnose, explained_by, format_findings
from conformance.differential import Verdict, check_case
from conformance.expectations import Deviation, declared_deviations
from conformance.harness import Harness
from conformance.strategies import Case
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import Graph, TensorValue
from interpreter.registry.core import as_results
from interpreter.types import TensorType
from tests.suite.broken_executors import (
    DoubleRoundingCast,
    Float16ChainInFloat32,
    FlushToZero,
    FlushToZeroSignBug,
    FusedMultiplyAdd,
    LhsOnTieMaxMin,
    NaNIgnoringArgmax,
    NaNIgnoringMaximum,
    NaNIgnoringScatterMax,
    NaNLastTopK,
    NaNSkippingMaxPool,
    OverflowingSigmoid,
    PatchedInterpreter,
    RhsOnTieMaxMin,
    RoundHalfAwayFromZero,
    SaturatingInt8Negate,
    SaturatingIntReductions,
    ScopedFlushToZeroSigmoidBug,
    TruncatingFloorDiv,
    WrongOutputDtype,
)

REF = InterpreterExecutor()
F16, F32, F64 = np.float16, np.float32, np.float64


def _graph(dtypes: list[DType], n: int, body: Callable[..., Any]) -> Graph:
    types = [TensorType(d, (n,)) for d in dtypes]
    with Graph("diag", input_types=types) as g:
        args = [v for v in g.inputs if isinstance(v, TensorValue)]
        out = body(*args)
        g.output(*(out if isinstance(out, tuple) else (out,)))
    return g


def _fail(g: Graph, inputs: list[np.ndarray], executor: Any) -> tuple[Case, Verdict]:
    case = Case(g, inputs)
    v = check_case(case, executor, REF)
    assert not v.ok, "the executor must fail this case"
    return case, v


def _classes(g: Graph, inputs: list[np.ndarray], executor: Any) -> list[str]:
    case, v = _fail(g, inputs, executor)
    return [f.cls for f in diagnose(case.graph, case.inputs, v.expected, v.actual)]


@pytest.mark.spec("CONF-40", "NUM-11")
def test_flushed_subnormals_are_ftz() -> None:
    g = _graph([DType.float32] * 2, 3, lambda x, y: ops.add(x, y))
    x = np.array([2.0**-130, 1 + 2.0**-20, -(2.0**-140)], F32)
    y = np.array([0.0, 0.0, 0.0], F32)
    assert _classes(g, [x, y], FlushToZero()) == ["ftz"]


def _native_floor_div(lhs: Any, rhs: Any) -> Any:
    """floor_div dividing in the operands' float dtype, the quotient flushed when
    subnormal (an FTZ CPU: MAX 26.7's float32 ``-1.0 // FLT_MAX`` gives -0.0)."""
    with np.errstate(all="ignore"):
        q = np.asarray(np.divide(lhs, rhs))
    tiny = q.dtype.type(2.0**-126)
    return np.floor(np.where((np.abs(q) < tiny) & (q != 0), q * q.dtype.type(0), q))


class FlushToZeroNativeDiv(FlushToZero):
    overrides: ClassVar[dict[str, Callable[..., Any]]] = {"floor_div": _native_floor_div}


@pytest.mark.spec("CONF-40", "CONF-144", "NUM-11")
def test_a_flushed_floor_div_quotient_is_ftz_not_only_rounding_mode(tmp_path: Path) -> None:
    """``-1.0 // FLT_MAX``: the quotient -2.9e-39 is subnormal; flushed, the floor gives
    -0.0, which truncation gives too. The ftz variant flushes the quotient (the op's
    ``ftz`` registry variant), so the diagnosis is ambiguous between the two, and a
    declared ftz excuses it (a MAX run had it diagnosed ``rounding-mode`` alone)."""
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.floor_div(x, y))
    inputs = [np.array([-1.0, 7.0], F32), np.array([np.finfo(F32).max, 2.0], F32)]
    case, v = _fail(g, inputs, FlushToZeroNativeDiv())
    assert v.expected["out0"].tolist() == [-1.0, 3.0]
    assert str(v.actual["out0"][0]) == "-0.0"
    found = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert sorted(f.cls for f in found) == ["ftz", "rounding-mode"]
    assert "ambiguous: ftz or rounding-mode" in annotate(case.graph, case.inputs,
                                                         v.expected, v.actual)[0]
    assert explained_by(case.graph, case.inputs, v.actual, ["ftz"])
    h = Harness(_request(tmp_path, ["ftz"]), FlushToZeroNativeDiv(), REF,
                ArtifactDir(tmp_path, "t", "x"), "floor_div", op="floor_div",
                dtype="float32", shape_class="general")
    assert not h.check(case).ok and h.deviated == ["ftz"]


@pytest.mark.spec("CONF-40", "NUM-12")
def test_contracted_float64_multiply_add_is_fma() -> None:
    g = _graph([DType.float64] * 3, 2, lambda a, b, c: ops.add(ops.mul(a, b), c))
    a = np.array([1 + 2.0**-30, 2.0], F64)
    b = np.array([1 - 2.0**-30, 3.0], F64)
    c = np.array([-1.0, 1.0], F64)
    assert _classes(g, [a, b, c], FusedMultiplyAdd()) == ["fma"]
    g2 = _graph([DType.float64] * 3, 2, lambda a, b, c: ops.sub(c, ops.mul(a, b)))
    assert _classes(g2, [a, b, -c], FusedMultiplyAdd()) == ["fma"]


@pytest.mark.spec("CONF-40", "NUM-12")
def test_float16_chain_kept_in_float32_is_excess_precision() -> None:
    g = _graph([DType.float16] * 3, 2, lambda x, y, z: ops.add(ops.add(x, y), z))
    x = np.array([1.0, 2.0], F16)
    y = np.array([2.0**-11, 0.0], F16)
    assert _classes(g, [x, y, y.copy()], Float16ChainInFloat32()) == ["excess-precision"]


@pytest.mark.spec("CONF-40", "NUM-4")
def test_float64_to_float16_through_float32_is_double_rounding() -> None:
    g = _graph([DType.float64], 2, lambda x: ops.cast(x, DType.float16))
    x = np.array([1 + 2.0**-11 + 2.0**-40, 3.0], F64)
    assert _classes(g, [x], DoubleRoundingCast()) == ["double-rounding"]


@pytest.mark.spec("CONF-40", "NUM-8")
def test_nan_ignoring_maximum_is_nan_dropped() -> None:
    g = _graph([DType.float32] * 2, 3, lambda x, y: ops.maximum(x, y))
    x = np.array([np.nan, 1.0, 2.0], F32)
    y = np.array([1.0, np.nan, -2.0], F32)
    assert _classes(g, [x, y], NaNIgnoringMaximum()) == ["nan-dropped"]


def _graph_of(types: list[TensorType], body: Callable[..., Any]) -> Graph:
    with Graph("diag", input_types=types) as g:
        out = body(*[v for v in g.inputs if isinstance(v, TensorValue)])
        g.output(*(out if isinstance(out, tuple) else (out,)))
    return g


@pytest.mark.spec("CONF-40", "NUM-8", "REDUCE-4")
@pytest.mark.parametrize("build", [ops.argmax, ops.argmin], ids=["argmax", "argmin"])
def test_nan_ignoring_argmax_is_nan_dropped(build: Callable[..., Any]) -> None:
    """The index of the extreme number where the reference gives the first NaN's (ONNX
    Runtime 1.32, MAX 26.7); a row of NaNs only gives 0 both ways."""
    g = _graph_of([TensorType(DType.float32, (3, 4))], lambda x: build(x, axis=1))
    x = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan] * 4, [4.0, 0.5, np.nan, 1.0]], F32)
    assert _classes(g, [x], NaNIgnoringArgmax()) == ["nan-dropped"]


@pytest.mark.spec("CONF-40", "NUM-8", "REDUCE-4")
def test_nan_skipping_max_pool_is_nan_dropped() -> None:
    """2x2 windows of ``[[1, NaN], [3, 2]]`` and ``[[5, 6], [7, 8]]``: 3 (reference NaN), 8."""
    g = _graph_of([TensorType(DType.float32, (1, 2, 4, 1))],
                  lambda x: ops.max_pool2d(x, (2, 2), stride=2))
    x = np.array([[1.0, np.nan, 5.0, 6.0], [3.0, 2.0, 7.0, 8.0]], F32).reshape(1, 2, 4, 1)
    assert _classes(g, [x], NaNSkippingMaxPool()) == ["nan-dropped"]


SCATTERS = [(ops.scatter_max, (3,)), (ops.scatter_min, (3,)), (ops.scatter_nd_max, (3, 1)),
            (ops.scatter_nd_min, (3, 1))]


@pytest.mark.spec("CONF-40", "NUM-8")
@pytest.mark.parametrize(("build", "index_shape"), SCATTERS,
                         ids=["scatter_max", "scatter_min", "scatter_nd_max", "scatter_nd_min"])
def test_nan_ignoring_scatter_max_min_is_nan_dropped(build: Callable[..., Any],
                                                     index_shape: tuple[int, ...]) -> None:
    """A NaN already in the data (element 0) and a NaN update (element 1) both lose to the
    numbers aimed at them; element 2 gets no update."""
    types = [TensorType(DType.float32, (4,)), TensorType(DType.float32, (3,)),
             TensorType(DType.int64, index_shape)]
    g = _graph_of(types, build)
    x = np.array([np.nan, 1.0, 5.0, 2.0], F32)
    updates = np.array([0.0, np.nan, 12.5], F32)
    indices = np.array([0, 1, 1], np.int64).reshape(index_shape)
    assert _classes(g, [x, updates, indices], NaNIgnoringScatterMax()) == ["nan-dropped"]


@pytest.mark.spec("CONF-40", "NUM-8", "REDUCE-4")
def test_nan_last_top_k_is_nan_dropped() -> None:
    g = _graph_of([TensorType(DType.float32, (2, 4))], lambda x: ops.top_k(x, 3, axis=1))
    x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 0.5, 2.0, 1.0]], F32)
    assert _classes(g, [x], NaNLastTopK()) == ["nan-dropped"]


@pytest.mark.spec("CONF-40", "NUM-8")
@pytest.mark.parametrize("executor", [RhsOnTieMaxMin, LhsOnTieMaxMin], ids=["rhs", "lhs"])
@pytest.mark.parametrize("build", [ops.maximum, ops.minimum], ids=["max", "min"])
def test_signed_zero_ties_of_max_min_are_not_nan_dropped(executor: type[PatchedInterpreter],
                                                         build: Callable[..., Any]) -> None:
    """A zero tie won by operand position (ONNX Runtime 1.32: ``Max(+0, -0) = -0``) with NaN
    propagated is no NaN effect: the ``nan-dropped`` variant differs from the reference only
    where an operand is NaN. The old one, ``np.fmax``/``np.fmin``, returns one operand of a
    zero tie by position too (the second in numpy's SIMD loops, the first in its scalar
    ones; 16 elements fill whole vectors): it named one of these two ``nan-dropped``."""
    g = _graph([DType.float32] * 2, 16, build)
    x = np.array([0.0, -0.0, *range(14)], F32)
    y = np.array([-0.0, 0.0, *range(14, 0, -1)], F32)
    assert _classes(g, [x, y], executor()) == []


@pytest.mark.spec("CONF-40", "NUM-2")
@pytest.mark.parametrize("build", [ops.sum, ops.prod, ops.cumsum], ids=["sum", "prod", "cumsum"])
def test_saturating_int32_reductions_are_int_saturation(build: Callable[..., Any]) -> None:
    """ONNX Runtime 1.32's int32 ReduceSum/ReduceProd: ``[0, 0, 5, 2**31 - 2]`` sums to
    2**31 - 1, where it wraps to -2**31 + 3."""
    g = _graph_of([TensorType(DType.int32, (2, 4))], lambda x: build(x, axis=1))
    x = np.array([[0, 0, 5, 2**31 - 2], [-(2**20), 3, 2**20, 1]], np.int32)
    assert _classes(g, [x], SaturatingIntReductions()) == ["int-saturation"]


@pytest.mark.spec("CONF-40", "NUM-2")
def test_saturating_int32_gather_sum_is_int_saturation() -> None:
    types = [TensorType(DType.int32, (3, 2)), TensorType(DType.int64, (2, 2))]
    g = _graph_of(types, ops.gather_sum)
    x = np.array([[2**31 - 2, 1], [5, -7], [-(2**31), 3]], np.int32)
    indices = np.array([[0, 1], [2, 2]], np.int64)
    assert _classes(g, [x, indices], SaturatingIntReductions()) == ["int-saturation"]


@pytest.mark.spec("CONF-40", "NUM-2")
def test_saturating_int8_negate_is_int_saturation() -> None:
    g = _graph([DType.int8], 3, lambda x: ops.negate(x))
    assert _classes(g, [np.array([-128, 5, 0], np.int8)], SaturatingInt8Negate()) == [
        "int-saturation"]


@pytest.mark.spec("CONF-40", "NUM-3", "NUM-9")
def test_half_away_round_and_truncating_division_are_rounding_mode() -> None:
    g = _graph([DType.float32], 3, lambda x: ops.round(x))
    assert _classes(g, [np.array([2.5, -0.5, 1.25], F32)], RoundHalfAwayFromZero()) == [
        "rounding-mode"]
    g2 = _graph([DType.int32] * 2, 2, lambda a, b: ops.floor_div(a, b))
    ints = [np.array([-7, 8], np.int32), np.array([2, 3], np.int32)]
    assert _classes(g2, ints, TruncatingFloorDiv()) == ["rounding-mode"]


class _PlusZero(PatchedInterpreter):
    overrides: ClassVar[dict[str, Any]] = {"mul": lambda a, b: np.multiply(a, b) + 0.0}


class _DivInHalf(PatchedInterpreter):
    overrides: ClassVar[dict[str, Any]] = {
        "div": lambda a, b: (a.astype(F16) / b.astype(F16)).astype(a.dtype)}


class _SloppyExp(PatchedInterpreter):
    overrides: ClassVar[dict[str, Any]] = {
        "exp": lambda x: (np.exp(x.astype(F64)) * (1 + 2.0**-12)).astype(x.dtype)}


@pytest.mark.spec("CONF-40", "NUM-9")
def test_lost_zero_sign_and_float16_arithmetic() -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.mul(x, y))
    xy = [np.array([-1.0, 3.0], F32), np.array([0.0, 2.0], F32)]
    assert _classes(g, xy, _PlusZero()) == ["signed-zero"]
    g2 = _graph([DType.float32] * 2, 2, lambda x, y: ops.div(x, y))
    xy = [np.array([1.0, 2.0], F32), np.array([3.0, 7.0], F32)]
    assert _classes(g2, xy, _DivInHalf()) == ["reduced-precision"]


@pytest.mark.spec("CONF-40", "NUM-7")
def test_transcendental_beyond_budget_gives_the_ulp_error() -> None:
    g = _graph([DType.float32], 2, lambda x: ops.exp(x))
    case, v = _fail(g, [np.array([0.0, -0.0], F32)], _SloppyExp())  # 1 + 2**-12
    (f,) = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert f.cls == "transcendental" and f.rule == "NUM-7"
    assert "exp [float32] is off by up to 2048 ULP (budget 2 ULP" in f.detail


@pytest.mark.spec("CONF-40", "NUM-7")
def test_transcendental_nan_where_defined_is_named() -> None:
    g = _graph([DType.float64], 2, lambda x: ops.sigmoid(x))
    case, v = _fail(g, [np.array([800.0, 0.0], F64)], OverflowingSigmoid())
    (f,) = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert (f.cls, f.detail) == ("transcendental", "sigmoid [float64] differs in NaN-ness "
                                 "from the reference in 1 elements (NaN where the function "
                                 "is defined, or a number where it is NaN)")


@pytest.mark.spec("CONF-40")
def test_an_unexplained_failure_says_so() -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    xy = [np.array([-1.0, 2.0], F32), np.array([-2.0, 1.0], F32)]
    case, v = _fail(g, xy, FlushToZeroSignBug())
    found = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert found == []
    assert format_findings(found).startswith("diagnosis: unexplained: no known platform "
                                             "effect reproduces these results (checked: ftz,")


@pytest.mark.spec("CONF-41")
def test_declared_ftz_explains_flushing_but_not_a_sign_bug() -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    ex = FlushToZeroSignBug()
    flush = [np.array([2.0**-130, 1.0], F32), np.array([0.0, 1.0], F32)]
    case, v = _fail(g, flush, ex)
    assert explained_by(case.graph, case.inputs, v.actual, ["ftz"])
    assert not explained_by(case.graph, case.inputs, v.actual, ["fma"])
    both = [np.array([2.0**-130, -1.0], F32), np.array([0.0, -1.0], F32)]
    case, v = _fail(g, both, ex)
    assert not explained_by(case.graph, case.inputs, v.actual, ["ftz"])
    assert "transcendental" in CLASSES and "ftz" in CLASSES


@pytest.mark.spec("CONF-40", "NUM-4")
def test_bfloat16_double_rounding_matches_ml_dtypes() -> None:
    """The double-rounding variant of a float64 -> bfloat16 cast (through float32) differs
    from the reference's single rounding, and is diagnosed as such.  The expected values are
    spelled out, not taken from ml_dtypes' float64 cast, whose rounding changed in 0.7."""
    g = _graph([DType.float64], 1, lambda x: ops.cast(x, DType.bfloat16))
    x = np.array([1 + 2.0**-8 + 2.0**-30], F64)
    case, v = _fail(g, [x], DoubleRoundingCast())
    assert v.actual["out0"][0] == x.astype(F32).astype(ml_dtypes.bfloat16)[0] == 1.0
    assert v.expected["out0"][0] == 1 + 2.0**-7  # one rounding: just above the tie, rounds up
    assert [f.cls for f in diagnose(case.graph, case.inputs, v.expected, v.actual)] == [
        "double-rounding"]


def _request(tmp: Path, classes: list[str]) -> Any:
    node = SimpleNamespace(user_properties=[], nodeid="test_op[add-float32-general]",
                           config=SimpleNamespace(stash={
                               expectations._DEVIATIONS: [Deviation(classes)]}))
    return SimpleNamespace(node=node)


@pytest.mark.spec("CONF-41", "CONF-42")
def test_a_declared_deviation_is_counted_and_the_cell_goes_on_to_fail_on_a_bug(
        tmp_path: Path) -> None:
    """FTZ declared: the flushing example is a deviation (no failure, counted), and the next
    example of the same cell, a sign bug, still fails, unexplained."""
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    req = _request(tmp_path, ["ftz"])
    h = Harness(req, FlushToZeroSignBug(), REF, ArtifactDir(tmp_path, "t", "x"), "add",
                op="add", dtype="float32", shape_class="general")
    flush = [np.array([2.0**-130, 1.0], F32), np.array([0.0, 1.0], F32)]
    assert not h.check(Case(g, flush)).ok
    assert (h.deviations, h.deviated) == (1, ["ftz"])
    with pytest.raises(Failed) as info:
        h.check(Case(g, [np.array([-1.0, 1.0], F32), np.array([-2.0, 1.0], F32)]))
    assert "diagnosis: unexplained" in str(info.value)
    (meta,) = [v for k, v in req.node.user_properties if k == "conformance"]
    assert meta["deviations"] == ["ftz"] and meta["diagnosis"] == []


@pytest.mark.spec("CONF-41", "CONF-42")
def test_a_cell_with_only_declared_deviations_reports_deviation(tmp_path: Path) -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    req = _request(tmp_path, ["nan-dropped", "ftz"])
    h = Harness(req, FlushToZero(), REF, ArtifactDir(tmp_path, "t", "x"), "add",
                op="add", dtype="float32", shape_class="general")
    h.check(Case(g, [np.array([2.0**-130, 1.0], F32), np.array([0.0, 1.0], F32)]))
    h.check(Case(g, [np.array([3.0, 1.0], F32), np.array([0.0, 1.0], F32)]))  # passes
    h.finish()
    (meta,) = [v for k, v in req.node.user_properties if k == "conformance"]
    assert meta["outcome"] == "deviation" and meta["deviations"] == ["ftz"]
    assert meta["deviation_examples"] == 1 and meta["examples"] == 2


@pytest.mark.spec("CONF-41", "CONF-141")
@pytest.mark.parametrize(("text", "error"), [
    ('deviations = ["flush"]', "unknown deviation classes ['flush']"),
    ('deviations = []', "non-empty list"),
    ('[[deviation]]\nop = "add"', "exactly one of 'class', 'classes'"),
    ('[[deviation]]\nclass = "ftz"\nscope = "add"', "exactly one of 'class', 'classes'"),
    ('[[deviation]]\nclass = "ftz"\nops = "add"', "'ops' must be a non-empty list of op names "
                                                "[CONF-141]"),
    ('[[deviation]]\nclass = "ftz"\ndtypes = ["float33"]', "unknown dtypes ['float33']"),
    ('[[deviation]]\nclass = "ftz"\nops = ["addd"]', "unknown ops ['addd']"),
])
def test_bad_deviation_declarations_are_usage_errors(tmp_path: Path, text: str,
                                                     error: str) -> None:
    f = tmp_path / "x.toml"
    f.write_text(text + "\n")
    expectations.load(f)  # the [[xfail]] side accepts the file
    with pytest.raises(pytest.UsageError, match=re.escape(error)):
        expectations.load_deviations(f)


@pytest.mark.spec("CONF-41")
def test_deviation_selectors() -> None:
    f = SimpleNamespace
    d = Deviation(["fma"], test="*graph*", op="add", dtype="float64")
    assert d.matches("conformance/test_graphs.py::test_graph[x]", "add", "float64")
    assert not d.matches("conformance/test_graphs.py::test_graph[x]", "add", "float32")
    assert not d.matches("conformance/test_ops.py::test_op[add]", "add", "float64")
    req = f(node=f(nodeid="n", config=f(stash={expectations._DEVIATIONS: [
        Deviation(["ftz"]), Deviation(["fma", "ftz"], op="mul")]})))
    assert declared_deviations(req, "mul", "float64") == ["ftz", "fma"]
    assert declared_deviations(req, "add", "float64") == ["ftz"]


@pytest.mark.spec("CONF-40")
def test_a_dtype_failure_gets_no_diagnosis_and_a_raising_diagnosis_hides_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    g = _graph([DType.float32], 2, lambda x: ops.exp(x))
    x = [np.array([0.0, 1.0], F32)]
    case, v = _fail(g, x, WrongOutputDtype())
    assert annotate(case.graph, case.inputs, v.expected, v.actual) == ("", [])
    case, v = _fail(g, x, _SloppyExp())

    def boom(*args: Any) -> Any:
        raise ZeroDivisionError("in the diagnosis")

    monkeypatch.setattr(diagnosis, "diagnose", boom)
    assert annotate(case.graph, case.inputs, v.expected, v.actual) == (
        "diagnosis: not available (the suite's diagnosis raised ZeroDivisionError: in the "
        "diagnosis)", [])


# -- the op facts the diagnosis reads are registry fields (OpDef.variants, OpDef.traits) -------
@pytest.mark.spec("CONF-40")
def test_the_diagnosis_names_no_op() -> None:
    """No registry op name is a string constant of ``conformance/diagnosis.py``: what a class
    does to an op is in the op's registry entry."""
    import ast

    from interpreter.registry import REGISTRY

    tree = ast.parse(Path(diagnosis.__file__).read_text())
    named = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
             and isinstance(n.value, str)} & set(REGISTRY)
    assert not named, f"diagnosis.py names ops {sorted(named)}"
    used = {k for op in REGISTRY.values() for k in op.variants}
    assert used and used <= set(CLASSES)


@pytest.mark.spec("CONF-40", "NUM-2", "NUM-3", "NUM-4", "NUM-8", "NUM-12", "REDUCE-4")
def test_registry_variants_compute_what_a_rule_breaking_backend_does() -> None:
    """Each variant on values where it differs from the op's kernel; expected values by
    hand."""
    from interpreter.registry import REGISTRY

    def variant(op: str, cls: str) -> Callable[..., Any]:
        return REGISTRY[op].variants[cls]

    i8 = np.array([100, -100, 5], np.int8)
    assert variant("add", "int-saturation")(i8, i8).tolist() == [127, -128, 10]
    assert variant("negate", "int-saturation")(np.array([-128], np.int8)).tolist() == [127]
    assert variant("abs", "int-saturation")(np.array([-128, -3], np.int8)).tolist() == [127, 3]
    nan = np.array([np.nan, 1.0], F32)
    assert variant("max", "nan-dropped")(nan, np.array([2.0, np.nan], F32)).tolist() == [2, 1]
    assert variant("reduce_max", "nan-dropped")(np.array([np.nan, 1, 2], F32), axis=0
                                                ).tolist() == [2.0]
    assert variant("reduce_sum", "nan-dropped")(np.array([[np.nan, 1], [2, 3]], F32), axis=1
                                                ).tolist() == [[1.0], [5.0]]
    rows = np.array([[1, np.nan, 3, 2], [np.nan, -np.inf, np.nan, 0], [np.nan] * 4], F32)
    assert variant("argmax", "nan-dropped")(rows, axis=1).ravel().tolist() == [2, 3, 0]
    assert variant("argmin", "nan-dropped")(rows, axis=1).ravel().tolist() == [0, 1, 0]
    assert variant("reduce_min", "nan-dropped")(rows, axis=1).ravel().tolist()[:2] == [1, -np.inf]
    assert np.isnan(variant("reduce_min", "nan-dropped")(rows, axis=1)[2, 0])
    pool = variant("max_pool2d", "nan-dropped")(
        rows.reshape(1, 3, 4, 1), kernel_size=(1, 2), stride=(1, 2), dilation=(1, 1),
        paddings=((0, 0), (0, 0)), ceil_mode=False).ravel()
    assert pool[:4].tolist() == [1, 3, -np.inf, 0] and np.isnan(pool[4:]).all()
    data, upd = np.array([np.nan, 1, 5, np.nan], F32), np.array([0, np.nan, 12.5, np.nan], F32)
    idx = np.array([0, 1, 1, 3])
    got = variant("scatter_max", "nan-dropped")(data, upd, idx, axis=0)
    assert got[:3].tolist() == [0, 12.5, 5] and np.isnan(got[3])
    got = variant("scatter_nd_min", "nan-dropped")(data, upd, idx[:, None])
    assert got[:3].tolist() == [0, 1, 5] and np.isnan(got[3])
    values, where = variant("top_k", "nan-dropped")(np.array([np.nan, 1, -np.inf, 1], F32),
                                                    k=4, axis=0)
    assert values[:3].tolist() == [1, 1, -np.inf] and where.tolist() == [1, 3, 2, 0]
    i32 = np.array([[0, 0, 5, 2**31 - 2], [-(2**31), -1, 2, -2]], np.int32)
    assert variant("reduce_sum", "int-saturation")(i32, axis=1).ravel().tolist() == [
        2**31 - 1, -(2**31)]  # wrapped: -2**31 + 3 and 2**31 - 1
    assert variant("reduce_prod", "int-saturation")(i32[1:], axis=1).tolist() == [[-(2**31)]]
    i8 = np.array([100, 100, -100, -100], np.int8)
    assert variant("cumsum", "int-saturation")(i8, axis=0, exclusive=True, reverse=True
                                               ).tolist() == [-100, -128, -100, 0]
    assert variant("gather_sum", "int-saturation")(i8.reshape(2, 2), np.array([[0, 0]])
                                                   ).tolist() == [[[127, 127]]]
    assert variant("round", "rounding-mode")(np.array([2.5, -0.5], F32)).tolist() == [3, -1]
    seven, two = np.array([-7, 7], np.int32), np.array([2, -2], np.int32)
    assert variant("floor_div", "rounding-mode")(seven, two).tolist() == [-3, -3]
    assert variant("mod", "rounding-mode")(seven, two).tolist() == [-1, 1]
    x = np.array([1 + 2.0**-11 + 2.0**-40], F64)  # just above a float16 tie
    assert variant("cast", "double-rounding")(x, dtype=DType.float16).tolist() == [1.0]
    assert REGISTRY["cast"].kernel(x, dtype=DType.float16).tolist() == [1 + 2.0**-10]
    a = np.array([1 + 2.0**-12], F32)  # a * a = 1 + 2**-11 + 2**-24: not a float32
    c = np.array([1 + 2.0**-11], F32)
    fused = variant("add", "fma")(a, a, -c, product_first=True)
    assert fused.dtype == F32 and fused.tolist() == [2.0**-24]
    assert (a * a - c).tolist() == [0.0]  # rounded twice
    assert variant("sub", "fma")(a, a, c, product_first=True).tolist() == [2.0**-24]
    assert variant("sub", "fma")(a, a, c, product_first=False).tolist() == [-(2.0**-24)]
    assert "product" in REGISTRY["mul"].traits and "conversion" in REGISTRY["cast"].traits


@pytest.mark.spec("CONF-40", "NUM-8", "REDUCE-4")
def test_nan_dropped_variants_are_the_kernels_without_nan() -> None:
    """Each ``nan-dropped`` variant of max/min, their reductions, arg and pooling forms, the
    max/min scatters and top_k gives the kernel's bits on sampled calls without NaN (NaNs
    and a third of the elements made zeros of both signs: ties): it differs from the
    reference only where NaN is."""
    from conformance.compare import same_bits
    from interpreter.registry import REGISTRY
    from interpreter.testing.sampling import RandomArgSource

    names = ["max", "min", "reduce_max", "reduce_min", "argmax", "argmin", "max_pool2d",
             "scatter_max", "scatter_min", "scatter_nd_max", "scatter_nd_min", "top_k"]
    for name in names:
        op, src, checked = REGISTRY[name], RandomArgSource(seed=len(name)), 0
        assert op.sample is not None
        while checked < 200:
            call = op.sample(src)
            ops_ = [_nan_as_zeros(a, src.rng) if _floats(a) else a for a in call.operands]
            floats = [a for a in ops_ if _floats(a)]
            if not any(a.size for a in floats) or len({a.dtype for a in floats}) > 1:
                continue  # no float data, or operands of the high level (before PROMO-1)
            want = op.apply(*ops_, **call.attrs)
            got = as_results(op.variants["nan-dropped"](*ops_, **call.attrs))
            for w, g in zip(want, got, strict=True):
                assert g.dtype == w.dtype and same_bits(w, np.asarray(g)).all(), (name, ops_)
            checked += 1


def _floats(a: np.ndarray) -> bool:
    return a.dtype.kind in "fV"  # ml_dtypes' floats are "V"


def _nan_as_zeros(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``a`` with its NaNs, and a third of its other elements, made zeros of random signs."""
    zero = np.isnan(a) | (rng.random(a.shape) < 1 / 3)
    signs = np.where(rng.random(a.shape) < 0.5, -0.0, 0.0)
    return np.where(zero, signs, a).astype(a.dtype)


# -- element-level deviations (CONF-140..144) ------------------------------------------------
def _scoped_request(classes: list[str], **scope: list[str]) -> Any:
    node = SimpleNamespace(user_properties=[], nodeid="test_graph[x]",
                           config=SimpleNamespace(stash={
                               expectations._DEVIATIONS: [Deviation(classes, **scope)]}))
    return SimpleNamespace(node=node)


def _mixed() -> tuple[Graph, list[np.ndarray]]:
    """float32 ``add`` with a subnormal sum (flushed by FTZ) and float32 ``sigmoid`` of 100
    (NaN from the independent overflow bug), one output each."""
    types = [TensorType(DType.float32, (2,))] * 3
    with Graph("mixed", input_types=types) as g:
        x, y, z = (v for v in g.inputs if isinstance(v, TensorValue))
        g.output(ops.add(x, y), ops.sigmoid(z))
    return g, [np.array([2.0**-130, 1.0], F32), np.array([0.0, 1.0], F32),
               np.array([100.0, 0.0], F32)]


@pytest.mark.spec("CONF-140")
def test_an_example_with_an_explained_and_an_unexplained_divergence_fails_with_the_unexplained(
        tmp_path: Path) -> None:
    g, inputs = _mixed()
    req = _scoped_request(["ftz"], dtypes=["float32", "float64"])
    h = Harness(req, ScopedFlushToZeroSigmoidBug(), REF, ArtifactDir(tmp_path, "t", "x"),
                "mixed")
    with pytest.raises(Failed) as info:
        h.check(Case(g, inputs))
    text = str(info.value)
    assert h.deviations == 0
    # minimised onto the sigmoid alone (CONF-142): its repro replays the overflow
    assert "minimised from 2 to 1 node(s)" in text
    assert "output 0 (sigmoid [float32])" in text and "[0]: 1.0 -> nan" in text
    assert "in the case as generated, the declared ftz excused 1 other differing element " \
           "[CONF-140]" in text
    assert (tmp_path / "t" / "graph.txt").read_text().count(" = ") >= 1
    assert "sigmoid" in (tmp_path / "t" / "graph.txt").read_text()
    assert "add" not in (tmp_path / "t" / "graph.txt").read_text()
    (meta,) = [v for k, v in req.node.user_properties if k == "conformance"]
    assert [d["class"] for d in meta["diagnosis"]] == ["transcendental"]
    # the same example with the sigmoid bug's element made harmless is a deviation (a
    # fresh harness: examples judged while shrinking are not counted)
    h = Harness(req, ScopedFlushToZeroSigmoidBug(), REF, ArtifactDir(tmp_path, "t2", "x"),
                "mixed")
    fine = [inputs[0], inputs[1], np.array([0.0, 0.0], F32)]
    assert not h.check(Case(g, fine)).ok and h.deviations == 1 and h.deviated == ["ftz"]


@pytest.mark.spec("CONF-140", "CONF-142")
def test_minimisation_shrinks_towards_the_unexplained_divergence(tmp_path: Path) -> None:
    from conformance.minimize import minimize

    g, inputs = _mixed()
    h = Harness(_scoped_request(["ftz"], dtypes=["float32"]), ScopedFlushToZeroSigmoidBug(),
                REF, ArtifactDir(tmp_path, "t", "x"), "mixed")
    case = Case(g, inputs)
    v = check_case(case, ScopedFlushToZeroSigmoidBug(), REF)
    assert not v.ok and not h._explained(case, v)
    small = minimize(case, v, ScopedFlushToZeroSigmoidBug(), REF, excused=h._explained)
    assert small is not None
    assert [n.op.name for n in small.case.graph.nodes] == ["sigmoid"]
    assert not h._explained(small.case, small.verdict)
    # a candidate the deviation explains in full is no failure: only the add is left
    # when the sigmoid bug has nothing to act on, and nothing smaller fails
    fine = Case(g, [inputs[0], inputs[1], np.array([0.0, 0.0], F32)])
    v2 = check_case(fine, ScopedFlushToZeroSigmoidBug(), REF)
    assert minimize(fine, v2, ScopedFlushToZeroSigmoidBug(), REF, excused=h._explained) is None


@pytest.mark.spec("CONF-141")
def test_a_scoped_deviation_flushes_only_its_dtypes(tmp_path: Path) -> None:
    g16 = _graph([DType.float16] * 2, 2, lambda x, y: ops.add(x, y))
    sub16 = [np.array([2.0**-20, 1.0], F16), np.array([0.0, 1.0], F16)]
    scoped = diagnosis.Scoped("ftz", frozenset({"float32", "float64"}))
    got = diagnosis.variant_outputs(g16, sub16, [scoped])
    assert got is not None and got[0]["out0"][0] == F16(2.0**-20)  # float16 kept
    got = diagnosis.variant_outputs(g16, sub16, ["ftz"])
    assert got is not None and got[0]["out0"][0] == 0
    # FlushToZero flushes float16 too: not excused by ftz scoped to float32/float64
    h = Harness(_scoped_request(["ftz"], dtypes=["float32", "float64"]), FlushToZero(), REF,
                ArtifactDir(tmp_path, "t", "a"), "add16")
    with pytest.raises(Failed):
        h.check(Case(g16, sub16))
    h = Harness(_scoped_request(["ftz"]), FlushToZero(), REF,
                ArtifactDir(tmp_path, "t", "b"), "add16")
    assert not h.check(Case(g16, sub16)).ok and h.deviations == 1
    # scoped by op: ftz declared for mul only does not excuse an add
    h = Harness(_scoped_request(["ftz"], ops=["mul"]), FlushToZero(), REF,
                ArtifactDir(tmp_path, "t", "c"), "add16")
    with pytest.raises(Failed):
        h.check(Case(g16, sub16))
    assert Deviation(["ftz"], dtypes=["float32"]).scoped() == [scoped.__class__(
        "ftz", frozenset({"float32"}), None)]


@pytest.mark.spec("CONF-143")
def test_the_sign_of_a_flushed_zero_is_not_judged() -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    inputs = [np.array([2.0**-130, 0.0], F32), np.array([0.0, 0.0], F32)]
    expected = {"out0": np.array([2.0**-130, 0.0], F32)}
    flushed = diagnosis.excuse(g, inputs, expected, {"out0": np.array([-0.0, 0.0], F32)},
                               ["ftz"])
    assert flushed is not None and (flushed.excused, flushed.unexplained) == (1, [])
    # a zero that was zero in the reference keeps its sign rule (TOL-4): not excused
    wrong = diagnosis.excuse(g, inputs, expected, {"out0": np.array([0.0, -0.0], F32)},
                             ["ftz"])
    assert wrong is not None and wrong.excused == 1 and len(wrong.unexplained) == 1
    assert "1 of 2 compared elements differ" in wrong.unexplained[0]


@pytest.mark.spec("CONF-144")
def test_two_variants_explaining_every_element_are_ambiguous(
        monkeypatch: pytest.MonkeyPatch) -> None:
    g = _graph([DType.float32] * 2, 2, lambda x, y: ops.add(x, y))
    inputs = [np.array([-(2.0**-130), 1.0], F32), np.array([0.0, 1.0], F32)]
    case, v = _fail(g, inputs, FlushToZero())
    found = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert [f.cls for f in found] == ["ftz", "reduced-precision"]  # both bit-exact here
    text = format_findings(found)
    assert text.splitlines()[0] == "diagnosis: ambiguous: ftz or reduced-precision"
    # one variant bit-exact, the other only within tolerance: the exact one alone
    monkeypatch.setattr(diagnosis, "_exact", lambda g, i, a, cls: cls == "ftz")
    found = diagnose(case.graph, case.inputs, v.expected, v.actual)
    assert [f.cls for f in found] == ["ftz"]
    assert format_findings(found).splitlines()[0] == "diagnosis:"


@pytest.mark.spec("CONF-140")
def test_an_unproven_downstream_difference_keeps_the_example_judged_as_a_whole() -> None:
    """A value downstream of a toleranced op (``exp``) that the verdict did not prove
    failing is not judged element by element: it may follow from the executor's own
    operands, so it neither fails alone nor lets the example pass as a deviation."""
    types = [TensorType(DType.float32, (2,))] * 3
    with Graph("soft", input_types=types) as g:
        x, y, z = (v for v in g.inputs if isinstance(v, TensorValue))
        g.output(ops.add(x, y), ops.mul(ops.exp(z), z))
    inputs = [np.array([2.0**-130, 1.0], F32), np.array([0.0, 1.0], F32),
              np.array([1.0, 2.0], F32)]
    env = diagnosis._reference_operands(g, inputs)
    assert len(env) == 3
    ref = REF.execute(g, inputs)
    expected = {"out0": ref[0], "out1": ref[1]}
    off = np.nextafter(ref[1], np.float32(np.inf)) + np.float32(1e-3)  # beyond exact mul
    actual = {"out0": np.array([0.0, 2.0], F32), "out1": off.astype(F32)}
    add_out = g.outputs[0]
    found = diagnosis.excuse(g, inputs, expected, actual, ["ftz"], proven=[add_out])
    assert found is not None and found.excused == 1
    assert found.unexplained == [] and len(found.unproven) == 1
    assert "output 1 (mul [float32])" in found.unproven[0]
    proven = diagnosis.excuse(g, inputs, expected, actual, ["ftz"],
                              proven=[add_out, g.outputs[1]])
    assert proven is not None and len(proven.unexplained) == 1 and proven.unproven == []
