"""debug_print: MAX MUST 39 (graphs with debug prints are accepted and print labelled values)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.passes import dead_code_elimination
from interpreter.testing import build, run


@pytest.mark.spec("debug_print.C1", "GRAPH-8")
def test_prints_label_and_values_and_survives_dce(capsys: pytest.CaptureFixture[str]) -> None:
    x = np.array([[1.5, -2.0], [0.0, np.nan]], np.float32)
    g = build(lambda x: (ops.print(x, label="t"), x + 1.0)[1], x)
    assert dead_code_elimination(g) == 0
    assert InterpreterExecutor().can_execute(g)
    InterpreterExecutor().execute(g, [x])
    assert capsys.readouterr().out == "[t] [[ 1.5 -2. ]\n [ 0.   nan]]\n"


@pytest.mark.spec("debug_print.C1")
@pytest.mark.parametrize(("array", "text"), [
    (np.array(True), "True"),
    (np.array([7, -8], np.int8), "[ 7 -8]"),
    (np.array([1.0, 0.5], ml_dtypes.bfloat16), "[1 0.5]"),
    (np.zeros((0, 2), np.float32), "[]"),
])
def test_default_label_and_dtypes(array: np.ndarray, text: str,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    run(lambda x: (ops.print(x), x)[1], array)
    assert capsys.readouterr().out == f"[debug_tensor] {text}\n"


@pytest.mark.spec("GRAPH-5")
def test_runs_once_per_execution_in_staging_order(capsys: pytest.CaptureFixture[str]) -> None:
    import interpreter.experimental.functional as F
    from interpreter.experimental.realization_context import EagerRealizationContext
    from interpreter.experimental.tensor import Tensor, realization_context

    a = Tensor.from_dlpack(np.array([1, 2], np.int64))
    with EagerRealizationContext() as ctx, realization_context(ctx):
        b = a * 3
        F.print(b, label="b")
        F.print(a, label="")
    assert capsys.readouterr().out == "[b] [3 6]\n[1 2]\n"
    assert b.real
