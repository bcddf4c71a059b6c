"""Graphs shared by the compiling executor's tests and benchmarks."""

from __future__ import annotations

import numpy as np

from interpreter.dtype import DType
from interpreter.graph import Graph, TensorType, ops


def chain16(n: int, dtype: DType = DType.float32) -> Graph:
    """16 elementwise ops on two length-``n`` inputs: adds, muls, max/min, compares +
    select, a cast and one exp (issue 10's benchmark chain)."""
    with Graph("chain16", [TensorType(dtype, (n,)), TensorType(dtype, (n,))]) as g:
        x, y = g.inputs
        a = ops.add(x, y)                      # 1
        b = ops.mul(a, x)                      # 2
        c = ops.maximum(b, y)                  # 3
        d = ops.minimum(c, a)                  # 4
        e = ops.sub(d, x)                      # 5
        f = ops.mul(e, e)                      # 6
        h = ops.greater(f, a)                  # 7
        i = ops.where(h, f, e)                 # 8
        j = ops.add(i, y)                      # 9
        k = ops.cast(j, DType.float64)         # 10
        m = ops.cast(ops.mul(k, k), dtype)     # 11, 12
        p = ops.exp(ops.minimum(m, y))         # 13, 14
        q = ops.greater_equal(p, x)            # 15
        g.output(ops.where(q, p, j))           # 16
    return g


def chain_n(n_ops: int, size: int = 16) -> Graph:
    """``n_ops`` elementwise ops alternating add, mul, max and sub on float32[size]."""
    fns = (ops.add, ops.mul, ops.maximum, ops.sub)
    with Graph("chain", [TensorType(DType.float32, (size,))] * 2) as g:
        x, y = g.inputs
        v = x
        for i in range(n_ops):
            v = fns[i % 4](v, y)
        g.output(v)
    return g


def mlp(batch: int = 64, width: int = 512, layers: int = 3, approximate: str = "none"
        ) -> Graph:
    """``layers`` x (matmul + bias + gelu), float32 (``approximate``: gelu's form)."""
    t = TensorType(DType.float32, (batch, width))
    w = TensorType(DType.float32, (width, width))
    b = TensorType(DType.float32, (width,))
    with Graph("mlp", [t] + [w, b] * layers) as g:
        v = g.inputs[0]
        for i in range(layers):
            v = ops.gelu(ops.add(ops.matmul(v, g.inputs[1 + 2 * i]), g.inputs[2 + 2 * i]),
                         approximate)
        g.output(v)
    return g


def mlp_inputs(batch: int = 64, width: int = 512, layers: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    out = [rng.standard_normal((batch, width), dtype=np.float32)]
    for _ in range(layers):
        out += [rng.standard_normal((width, width), dtype=np.float32) / np.float32(width**0.5),
                rng.standard_normal(width, dtype=np.float32)]
    return out
