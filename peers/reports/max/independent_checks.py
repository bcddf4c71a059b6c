"""Independent checks of the MAX divergences the conformance runs found (no suite code):
each prints the reference (numpy / float64 libm / IEEE reasoning) next to MAX 26.7's
interpreter. Run:
``MODULAR_DERIVED_PATH=.max-cache python peers/reports/max/independent_checks.py``.
Raw-MAX SIGFPE checks run in child processes (they kill the process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor as Ref
from interpreter.graph import BufferType, Graph, TensorType, ops
from peers.max_engine import MaxInterpreterExecutor

M = MaxInterpreterExecutor()


def both(build, *arrs):  # type: ignore[no-untyped-def]
    with Graph("v", input_types=[TensorType(DType[a.dtype.name], a.shape) for a in arrs]) as g:
        g.output(build(*g.inputs))
    return (Ref().execute(g, [a.copy() for a in arrs])[0],
            M.execute(g, [a.copy() for a in arrs])[0])


def show(what: str, pair) -> None:  # type: ignore[no-untyped-def]
    ref, got = pair
    print(f"{what}\n    reference {ref.tolist()}\n    MAX       {got.tolist()}")


f32 = np.float32
tiny = f32(2.0 ** -149)
show("FTZ/DAZ: [2**-149 + 0, 1.0 * 2**-149, relu(2**-149)] (IEEE: exact, 1.4e-45)",
     both(lambda a, b: ops.concat([a + b, a * (b + 1.0), ops.relu(a)], 0),
          np.array([tiny], f32), np.array([0.0], f32)))
print(f"    numpy in the same process after MAX ran: {np.array([tiny], f32) + f32(0)}")
x = np.array([np.nan, 1.0, -np.nan, 4.0], f32)
show("exp([nan, 1, -nan, 4]) (IEEE: exp(NaN) = NaN)", both(ops.exp, x))
show("tanh([nan, ...]) (IEEE: NaN)", both(ops.tanh, x))
show("cast([nan, 1, -nan, 4], bool) (numpy/C: NaN != 0 -> True)",
     both(lambda a: ops.cast(a, DType.bool), x))
show("max([0, 1, nan, -nan], [nan, nan, 0, 1]) (NUM-8, IEEE maximum: NaN)",
     both(ops.max, np.array([0, 1, np.nan, -np.nan], f32),
          np.array([np.nan, np.nan, 0, 1], f32)))
show("argmin([[nan], [1]], axis=0) (spec: NaN is the extreme, index 0)",
     both(lambda a: ops.argmin(a, axis=0), np.array([[np.nan], [1.0]], f32)))
x64 = np.array([4.0, 1.0, -4.1, 10.0])
ref, got = both(ops.exp, x64)
print(f"exp float64 {x64.tolist()}: np.exp (libm) {np.exp(x64).tolist()}\n    MAX {got.tolist()}"
      f"\n    ULP distance {(got.view(np.int64) - np.exp(x64).view(np.int64)).tolist()}")
show("logsoftmax([inf, inf, 1, 2]) (x - max = NaN for the infs, so log(sum) is NaN: all NaN)",
     both(lambda a: ops.logsoftmax(a, axis=-1), np.array([[np.inf, np.inf, 1, 2]], f32)))

# avg_pool2d, 1x1 window, count_boundary=False, padding one row above and below: a window
# holding one real element must average to that element
with Graph("p", input_types=[TensorType(DType.float32, (1, 2, 2, 1))]) as g:
    (a,) = g.inputs
    g.output(ops.avg_pool2d(a, (1, 1), stride=(1, 1), padding=(1, 0),  # type: ignore[arg-type]
                            ceil_mode=True, count_boundary=False))
inp = np.array([1.0, 2.0, 3.0, 4.0], f32).reshape(1, 2, 2, 1)
print("avg_pool2d 1x1 count_boundary=False pad H (1,1) of [[1,2],[3,4]] (rows 1-2 = input)")
print(f"    reference {Ref().execute(g, [inp])[0].ravel().tolist()}\n"
      f"    MAX       {M.execute(g, [inp])[0].ravel().tolist()}")

# buffer_load then store: the load must see the old contents (buffer_load is a copy, MUT-1)
with Graph("b", input_types=[BufferType(DType.int32, (3,))]) as g:
    (b,) = g.inputs
    old = ops.buffer_load(b)  # type: ignore[arg-type]
    ops.buffer_store(b, old + 1)  # type: ignore[arg-type]
    g.output(old)
print("buffer_load then buffer_store(b, load + 1) on [1, 2, 3] (MUT-1: load is a copy)")
for who, ex in (("reference", Ref()), ("MAX", M)):
    buf = np.array([1, 2, 3], np.int32)
    loaded = ex.execute(g, [buf])[0].tolist()
    print(f"    {who}: load {loaded}, buffer after {buf.tolist()}")

for args in (("floor_div", 7, 0), ("mod", 7, 0), ("floor_div", -2**31, -1),
             ("floor_div", -7, 2), ("mod", -7, 2)):
    code = textwrap.dedent(f"""
        import numpy as np
        from max.graph import Graph, TensorType, DeviceRef, ops
        from max.dtype import DType
        from max.driver import Buffer
        from max.experimental.executor import InterpreterExecutor
        t = TensorType(DType.int32, (2,), DeviceRef.CPU())
        with Graph("g", input_types=[t, t]) as g:
            a, b = g.inputs
            g.output(ops.{args[0]}(a.tensor, b.tensor))
        l = np.array([7, {args[1]}], np.int32); r = np.array([2, {args[2]}], np.int32)
        out = InterpreterExecutor().execute(g, [Buffer.from_dlpack(l), Buffer.from_dlpack(r)])
        print(np.from_dlpack(out[0]).tolist())
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    print(f"raw MAX int32 {args[0]}([7, {args[1]}], [2, {args[2]}]): exit {p.returncode} "
          f"{p.stdout.strip()}  (-8 = SIGFPE)")
