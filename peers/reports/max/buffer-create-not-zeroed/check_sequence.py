"""buffer_create after a graph that created and stored a buffer of the same shape: MAX 26.7's
interpreter hands out the freed memory unzeroed (the suite's reference: zeros, MUT-6). The suite's
repro.py alone does not reproduce it (fresh pages are zero); this sequence does, in a fresh
process. Run: ``MODULAR_DERIVED_PATH=.max-cache python
peers/reports/max/buffer-create-not-zeroed/check_sequence.py [--compiler]`` (``--compiler``:
``MaxCompilingExecutor``; output of both: ``check_sequence.out``)."""

import numpy as np
from interpreter.dtype import DType
from interpreter.graph import Graph, TensorType, ops
from interpreter.graph.core import TensorValue
from interpreter.types import DeviceRef
import sys

from peers.max_engine import MaxCompilingExecutor, MaxInterpreterExecutor

ex = MaxCompilingExecutor() if "--compiler" in sys.argv else MaxInterpreterExecutor()
print(f"executor: {type(ex).__name__}")
n = 4097
with Graph("dirty", input_types=[TensorType(DType.float32, (n, 1))]) as g1:
    b = ops.buffer_create(DType.float32, (n, 1), DeviceRef.CPU())
    (x_in,) = g1.inputs
    assert isinstance(x_in, TensorValue)
    ops.buffer_store(b, x_in)
    g1.output(ops.buffer_load(b))
x = np.full((n, 1), 7.0, np.float32); x[0] = np.nan
with Graph("create", input_types=[]) as g2:
    b2 = ops.buffer_create(DType.float32, (n, 1), DeviceRef.CPU())
    g2.output(ops.buffer_load(b2))
for i in range(4):
    ex.execute(g1, [x])
    (out,) = ex.execute(g2, [])
    nz = int(np.count_nonzero(np.nan_to_num(out, nan=1.0)))
    print(f"round {i}: buffer_create after a store of 7.0/NaN: {nz} non-zero of {n}; first {out[:2,0].tolist()}")
