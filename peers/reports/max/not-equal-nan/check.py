"""not_equal on float32 special values, MAX 26.7 interpreter against IEEE 754 (x != NaN is
True for every x; a subnormal differs from 0). No suite code: numpy gives the IEEE answer.
Run: ``MODULAR_DERIVED_PATH=.max-cache python peers/reports/max/not-equal-nan/check.py``."""

import numpy as np

from interpreter.dtype import DType
from interpreter.graph import Graph, TensorType, ops
from peers.max_engine import MaxInterpreterExecutor

f = np.float32
vals = np.array([0.0, -0.0, 1.0, -1.0, np.finfo(f).max, -np.finfo(f).max, np.finfo(f).tiny,
                 2.0**-149, -(2.0**-149), 0.5, np.nan, np.inf, -np.inf], f)
a, b = np.repeat(vals, vals.size), np.tile(vals, vals.size)  # the sweep's cross product
with Graph("ne", input_types=[TensorType(DType.float32, a.shape)] * 2) as g:
    g.output(ops.not_equal(g.inputs[0], g.inputs[1]))
got = MaxInterpreterExecutor().execute(g, [a.copy(), b.copy()])[0]
ieee = a != b
bad = np.nonzero(got != ieee)[0]
nan = np.isnan(a[bad]) | np.isnan(b[bad])
print(f"{bad.size} of {a.size} elements differ from IEEE: {int(nan.sum())} with a NaN operand "
      f"(MAX: False, IEEE: True), {int((~nan).sum())} with a subnormal operand (DAZ)")
for i in bad:
    print(f"  not_equal({a[i]!r}, {b[i]!r}): IEEE {ieee[i]}, MAX {got[i]}")
