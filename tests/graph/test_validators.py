"""The shared attribute checks (interpreter/validators.py) used by builders and type rules."""

from __future__ import annotations

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.errors import GraphShapeError
from interpreter.graph import Graph, TensorType, ops
from interpreter.registry import get_op
from interpreter.validators import (
    axis_problem,
    int_tuple_problem,
    is_int,
    slice_objects,
    sliced_shape,
    slices_problem,
)


def test_is_int_and_int_tuples() -> None:
    assert is_int(3) and not is_int(True) and not is_int(np.int64(3))
    assert is_int(np.int64(3), numpy_ints=True) and not is_int(np.bool_(True), numpy_ints=True)
    assert int_tuple_problem("shape", (2, 0)) is None
    assert int_tuple_problem("shape", (2, -1)) == ("attribute shape must be a tuple of ints "
                                                   ">= 0, got (2, -1)")
    assert int_tuple_problem("repeats", (1, 2), length=3) == (
        "attribute repeats must be a tuple of 3 ints >= 0, got (1, 2)")


@pytest.mark.spec("AXIS-1")
def test_axis_check_is_the_same_in_the_builder_and_the_type_rule() -> None:
    assert axis_problem(-2, 2) is None and axis_problem(2, 2) is not None
    assert axis_problem(np.int32(1), 2) is not None  # type rules take Python ints only
    assert axis_problem(np.int32(1), 2, numpy_ints=True) is None
    with Graph("g", [TensorType(DType.float32, (2, 3))]) as g:
        with pytest.raises(GraphShapeError, match=r"expected an int in \[-2, 2\) \[AXIS-1\]"):
            ops.squeeze(g.inputs[0], 2)  # type: ignore[arg-type]
        with pytest.raises(GraphShapeError, match=r"expected an int in \[-2, 2\) \[AXIS-1\]"):
            op = get_op("reduce_sum")
            op.infer(op, [g.inputs[0].type], {"axis": 2})


@pytest.mark.spec("SLICE-1")
def test_slice_triples() -> None:
    assert slices_problem(((0, None, 2), (None, -1, -1)), 2) is None
    assert slices_problem(((0, 1, 0),), 1) == ("bad slice triple (0, 1, 0); expected "
                                               "(int|None, int|None, nonzero int)")
    assert slices_problem(((0, 1, 1),), 2) is not None
    slices = ((1, None, 2), (None, None, -1))
    assert sliced_shape((5, 3), slices) == (2, 3)
    a = np.arange(15).reshape(5, 3)
    assert a[slice_objects(slices)].shape == (2, 3)
