"""MAX 26.7's compiler rejects softmax/logsoftmax over a negative axis other than -1.

Raw MAX, no suite code: ``ops.softmax(x, axis=-2)`` of a rank-2 float32 input fails in
``InferenceSession.load`` ("function instantiation failed": an out-of-bounds IntTuple index
while elaborating ``reductions.mojo``), while the same axis spelled ``0`` compiles and
agrees with numpy. The graph builder accepts both. Exit 1 while the negative axis fails.
Run: ``MODULAR_DERIVED_PATH=.max-cache/derived python peers/reports/max/softmax-negative-axis/repro.py``
"""

import sys

import numpy as np
from max import driver
from max.dtype import DType
from max.engine import InferenceSession
from max.graph import DeviceRef, Graph, TensorType, ops

session = InferenceSession(devices=[driver.CPU()])
x = np.arange(25, dtype=np.float32).reshape(5, 5) / 10
e = np.exp(x - x.max(0))
want = {"softmax": e / e.sum(0), "logsoftmax": np.log(e / e.sum(0))}
failed = False
for op in ("softmax", "logsoftmax"):
    for axis in (0, -2):
        with Graph("g", input_types=[TensorType(DType.float32, (5, 5), DeviceRef.CPU())]) as g:
            g.output(getattr(ops, op)(g.inputs[0].tensor, axis=axis))
        try:
            model = session.load(g)
        except Exception as exc:
            cause = str(exc.__cause__ or exc).splitlines()
            print(f"{op}(axis={axis}): compile error: "
                  f"{next((ln for ln in cause if 'error' in ln), cause[0])}")
            failed = failed or axis < 0
            continue
        got = np.from_dlpack(model(driver.Buffer.from_dlpack(x))[0])
        print(f"{op}(axis={axis}): compiles; max |MAX - numpy| = "
              f"{float(np.abs(got - want[op]).max()):.3g}")
sys.exit(1 if failed else 0)
