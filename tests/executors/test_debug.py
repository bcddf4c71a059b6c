"""Debug mode of the reference interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import NumericalDebugError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.registry import EXACT, REGISTRY, OpDef, register
from interpreter.registry.rules import elementwise
from interpreter.testing import assert_same, build

ROOT = Path(__file__).resolve().parents[2]


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


_PROGRAM = """\
from interpreter.experimental import functional as F
x = F.constant([1.0, 2.0])
y = F.log(x - 1.0) - 5.0
print(y)
"""


@pytest.mark.spec("DEBUG-1", "DEBUG-2", "SEL-4")
@pytest.mark.parametrize("named", [None, "jit"])
def test_debug_env_with_the_default_executor_stops_at_the_first_nan(
        tmp_path: Path, named: str | None) -> None:
    """``EAGER_INTERPRETER_DEBUG=1`` alone: the default executor is the debug interpreter,
    which names the first op making a NaN/inf with the program's file:line; an executor
    named by ``MAX_EAGER_EXECUTOR`` is used as named (no debug check)."""
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "MAX_EAGER_EXECUTOR"}
    env |= {"EAGER_INTERPRETER_DEBUG": "1", "PYTHONPATH": str(ROOT)}
    if named:
        env["MAX_EAGER_EXECUTOR"] = named
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    if named:
        assert p.returncode == 0 and "-inf" in p.stdout, p.stdout + p.stderr
    else:
        assert p.returncode == 1 and "NumericalDebugError" in p.stderr, p.stderr
        assert f"{script}:3" in p.stderr and "log" in p.stderr, p.stderr


@pytest.mark.spec("DEBUG-1", "SEL-4")
def test_debug_env_selects_the_debug_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    from interpreter import selection

    monkeypatch.delenv("MAX_EAGER_EXECUTOR", raising=False)
    monkeypatch.setenv("EAGER_INTERPRETER_DEBUG", "1")
    e = selection._initial_default()
    assert type(e) is InterpreterExecutor and e.debug and e.max_ops is None
