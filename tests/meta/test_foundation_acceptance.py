"""The foundation's acceptance points, end to end through the public names."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import EagerConformanceError
from interpreter.executor import Executor, InterpreterExecutor, UnsupportedGraphError
from interpreter.graph import BufferType, DeviceRef, Graph, TensorType, ops
from interpreter.registry import REGISTRY


@pytest.mark.spec("GRAPH-3", "BCAST-1", "PROMO-1", "MUT-2", "EXEC-6")
def test_graph_matches_numpy_with_broadcasting_promotion_and_store() -> None:
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    b = np.array([0.5, 1.5, -2.0], np.float32)
    buf = np.zeros(3, np.float32)
    with Graph("g", input_types=[TensorType(DType.int16, (2, 3), DeviceRef.CPU()),
                                 TensorType(DType.float32, (3,)),
                                 BufferType(DType.float32, (3,))]) as g:
        x, y, out_buf = g.inputs
        z = x * y + 1.0
        ops.buffer_store(out_buf, ops.sqrt(ops.abs(y)))
        g.output(z)
    assert isinstance(InterpreterExecutor(), Executor)
    (z,) = InterpreterExecutor().execute(g, [a, b, buf])
    np.testing.assert_array_equal(z, a.astype(np.float32) * b + np.float32(1.0))
    assert z.dtype == np.float32
    np.testing.assert_array_equal(buf, np.sqrt(np.abs(b)))  # caller's array, in place


@pytest.mark.spec("EXEC-2", "EXEC-3")
def test_max_ops_2_refuses_a_5_op_graph_inputs_untouched() -> None:
    with Graph("g", input_types=[TensorType(DType.float32, (4,)),
                                 BufferType(DType.float32, (4,))]) as g:
        x, b = g.inputs
        y = ops.exp(ops.negate(x))
        ops.buffer_store(b, y)
        g.output(ops.sqrt(y), ops.tanh(x))
    assert len(g.nodes) == 5
    x, buf = np.linspace(0, 1, 4, dtype=np.float32), np.ones(4, np.float32)
    saved = (x.tobytes(), buf.tobytes())
    with pytest.raises(UnsupportedGraphError):
        InterpreterExecutor(max_ops=2).execute(g, [x, buf])
    assert (x.tobytes(), buf.tobytes()) == saved


@pytest.mark.spec("SPEC-2")
def test_at_least_60_registered_primitive_ops() -> None:
    assert len(REGISTRY) >= 60, sorted(REGISTRY)


def _f32(*shape: int) -> TensorType:
    return TensorType(DType.float32, shape)


@pytest.mark.spec("BCAST-1", "PROMO-2", "AXIS-1", "EXEC-7", "TEXT-1")
@pytest.mark.parametrize("case", ["add", "matmul", "axis", "promotion", "inputs", "parse"])
def test_bad_input_raises_a_clear_project_error(case: str) -> None:
    def staged(types: list[TensorType], fn):  # type: ignore[no-untyped-def]
        with Graph("bad", types) as g:
            fn(*g.inputs)

    with pytest.raises(EagerConformanceError) as info:
        if case == "add":
            staged([_f32(2, 3), _f32(4)], ops.add)
        elif case == "matmul":
            staged([_f32(2, 3), _f32(4, 5)], ops.matmul)
        elif case == "axis":
            staged([_f32(2, 3)], lambda x: ops.sum(x, axis=5))
        elif case == "promotion":
            staged([TensorType(DType.uint8, (2,)), TensorType(DType.int8, (2,))], ops.add)
        elif case == "inputs":
            with Graph("g", [_f32(2)] * 3) as g:
                g.output(g.inputs[0])
            InterpreterExecutor().execute(g, [np.zeros(2, np.float32)])
        else:
            Graph.parse("graph @g(%0: tensor<f32[2] cpu:0>) {\n  %1 = add(%0 %0)\n}")
    msg = str(info.value)
    expected = {
        "add": ["add", "tensor<f32[2,3] cpu:0>", "tensor<f32[4] cpu:0>", "BCAST-1"],
        "matmul": ["matmul", "tensor<f32[2,3] cpu:0>", "tensor<f32[4,5] cpu:0>"],
        "axis": ["5", "rank 2"],
        "promotion": ["add", "ui8", "si8", "PROMO-2"],
        "inputs": ["expected 3 inputs, got 1"],
        "parse": ["line 2"],
    }[case]
    for part in expected:
        assert part in msg, (part, msg)
