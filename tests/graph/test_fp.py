"""Floating-point exceptions off around compiled runs, and the caller's state restored (NUM-5)."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.fp import ignore_fp_errors, restore_fp_errors
from interpreter.graph import Graph, TensorType, ops
from reference_executors.compiling import CompilingExecutor


@pytest.mark.spec("NUM-5")
def test_ignores_then_restores_the_callers_state() -> None:
    with np.errstate(all="raise"):
        token = ignore_fp_errors()
        try:
            assert set(np.geterr().values()) == {"ignore"}
            assert np.isinf(np.float32(3e38) * np.float32(10))  # no FloatingPointError
        finally:
            restore_fp_errors(token)
        assert set(np.geterr().values()) == {"raise"}
        with pytest.raises(FloatingPointError):
            np.float32(1) / np.float32(0)


@pytest.mark.spec("NUM-5", "COMP-20")
def test_a_compiled_plan_never_raises_or_warns_and_restores_on_error(
        recwarn: pytest.WarningsRecorder) -> None:
    with Graph("fp", [TensorType(DType.float32, (3,))]) as g:
        (x,) = g.inputs
        g.output(ops.div(ops.log(x), x))
    plan = CompilingExecutor().compile(g)
    x = np.array([0.0, -1.0, 3e38], np.float32)
    with np.errstate(all="raise"):
        (out,) = plan.run([x])
        assert out[0] == -np.inf and np.isnan(out[1]) and len(recwarn) == 0
        assert np.geterr()["divide"] == "raise"
        with pytest.raises(ValueError):
            plan.run_validated([np.zeros(4, np.float32)])  # a kernel error: state restored
        assert np.geterr()["divide"] == "raise"
