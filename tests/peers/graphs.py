"""Graphs the peer adapters' tests share."""

from __future__ import annotations

from interpreter.dtype import DType
from interpreter.graph import BufferType, Graph, TensorType, ops


def store_then_exp(dtype: DType = DType.float32) -> Graph:
    """A buffer store, then an ``exp``."""
    with Graph("g", input_types=[TensorType(dtype, (3,)), BufferType(dtype, (3,))]) as g:
        x, buf = g.inputs
        ops.buffer_store(buf, x)
        g.output(ops.exp(x))
    return g
