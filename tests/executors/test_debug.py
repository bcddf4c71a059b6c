"""Debug mode of the reference interpreter."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import NumericalDebugError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.registry import EXACT, REGISTRY, OpDef, register
from interpreter.registry.rules import elementwise
from interpreter.testing import assert_same, build


@pytest.mark.spec("DEBUG-2")
def test_first_op_making_nan_from_finite_inputs_is_named_with_location() -> None:
    x = np.array([1.0, 2.0], np.float32)
    g = build(lambda x: ops.sqrt(ops.log(x - 1.0) - 5.0), x)  # log(0) = -inf first
    with pytest.raises(NumericalDebugError) as info:
        InterpreterExecutor(debug=True).execute(g, [x])
    msg = str(info.value)
    assert "log" in msg and "sqrt" not in msg.split("staged")[0]
    assert f"{__file__}:" in msg and "[DEBUG-2]" in msg
    assert "tensor<f32[2] cpu:0>" in msg


@pytest.mark.spec("DEBUG-2")
def test_nan_inputs_are_not_blamed() -> None:
    x = np.array([np.nan, 2.0], np.float32)
    g = build(lambda x: x * 2.0, x)
    (out,) = InterpreterExecutor(debug=True).execute(g, [x])
    assert np.isnan(out[0]) and out[1] == 4.0


@pytest.mark.spec("DEBUG-3")
def test_debug_mode_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.linspace(-2, 2, 7, dtype=np.float32)
    g = build(lambda x: (ops.tanh(x) * 3.0, x[::2] + 1.0), x)
    plain = InterpreterExecutor().execute(g, [x])
    monkeypatch.setenv("EAGER_INTERPRETER_DEBUG", "1")
    ex = InterpreterExecutor()
    assert ex.debug
    assert_same(ex.execute(g, [x]), plain)


@pytest.fixture
def wrong_dtype_op() -> Iterator[OpDef]:
    op = register(OpDef("test_wrong_dtype", summary="returns float64", category="test",
                        operands=("x",), attrs=(), infer=elementwise,
                        kernel=lambda x: x.astype(np.float64), dtypes=frozenset(DType),
                        tolerance=EXACT))
    yield op
    del REGISTRY["test_wrong_dtype"]


@pytest.mark.spec("DEBUG-1")
def test_result_type_is_checked(wrong_dtype_op: OpDef) -> None:
    from interpreter.graph.ops.staging import stage1

    g = build(lambda x: stage1("test_wrong_dtype", (x,)), np.zeros(2, np.float32))
    InterpreterExecutor().execute(g, [np.zeros(2, np.float32)])  # not checked without debug
    with pytest.raises(NumericalDebugError, match=r"test_wrong_dtype.*float64.*\[DEBUG-1\]"):
        InterpreterExecutor(debug=True).execute(g, [np.zeros(2, np.float32)])


@pytest.mark.spec("DEBUG-2")
def test_a_nan_constant_is_not_blamed() -> None:
    g = build(lambda x: x + ops.constant(np.array([np.nan, np.inf], np.float32)),
              np.zeros(2, np.float32))
    (out,) = InterpreterExecutor(debug=True).execute(g, [np.zeros(2, np.float32)])
    assert np.isnan(out[0]) and out[1] == np.inf
