"""Independent checks of the ONNX Runtime 1.32 divergences the conformance run found: no
suite code and no adapter code. Each check builds a small ONNX model with ``onnx.helper``,
runs it in a plain ``onnxruntime.InferenceSession`` (CPU, default optimizations) and prints
ORT's answer next to an independent one (numpy, float64 or mpmath arithmetic, IEEE 754
reasoning, or the ONNX operator document). Run from the repository root:
``python peers/reports/onnxruntime/independent_checks.py`` (output: ``independent_checks.out``).
Checks that kill the process (SIGFPE) run in a child process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import ml_dtypes
import mpmath
import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper

print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, ml_dtypes "
      f"{ml_dtypes.__version__}, opset 28, CPUExecutionProvider\n")

TYPES = {np.dtype(np.float32): TP.FLOAT, np.dtype(np.float64): TP.DOUBLE,
         np.dtype(np.float16): TP.FLOAT16, np.dtype(np.int32): TP.INT32,
         np.dtype(np.int64): TP.INT64, np.dtype(np.uint32): TP.UINT32,
         np.dtype(np.uint64): TP.UINT64, np.dtype(np.bool_): TP.BOOL,
         np.dtype(np.uint8): TP.UINT8}
F8 = {"e4m3fn": (TP.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn),
      "e5m2": (TP.FLOAT8E5M2, ml_dtypes.float8_e5m2)}


def run(nodes: list[Any], feeds: dict[str, np.ndarray], outs: list[tuple[str, int]],
        inits: list[Any] = (), opt: Any = None) -> list[Any]:  # type: ignore[assignment]
    """Run ``nodes`` on ``feeds`` (graph inputs, their types from the arrays)."""
    ins = [helper.make_tensor_value_info(k, TYPES[v.dtype], list(v.shape))
           for k, v in feeds.items()]
    outputs = [helper.make_tensor_value_info(n, t, None) for n, t in outs]
    g = helper.make_graph(nodes, "check", ins, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
    so = ort.SessionOptions()
    so.log_severity_level = 4
    if opt is not None:
        so.graph_optimization_level = opt
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def op(name: str, *arrays: np.ndarray, out: int | None = None, **attrs: Any) -> Any:
    """One node ``name`` on ``arrays``; its one result."""
    feeds = {f"x{i}": a for i, a in enumerate(arrays)}
    node = helper.make_node(name, list(feeds), ["y"], **attrs)
    return run([node], feeds, [("y", out if out is not None else TYPES[arrays[0].dtype])])[0]


def i64(name: str, values: list[int]) -> Any:
    return helper.make_tensor(name, TP.INT64, [len(values)], values)


def show(title: str, independent: Any, got: Any) -> None:
    print(title)
    print(textwrap.indent(f"independent: {independent}\nORT:         {got}", "    "))


def bits(a: np.ndarray) -> list[str]:
    return [hex(int(v)) for v in np.asarray(a).reshape(-1).view(f"u{a.dtype.itemsize}")]


f32, f64, f16 = np.float32, np.float64, np.float16
nan, inf = np.nan, np.inf

# ---- select: Where's X branch loses the sign of zero (and float16 NaN payloads) -------
c = np.array([True, True, False, True])
for dt in (f32, f64, f16):
    x = np.array([-0.0, 1.0, 5.0, -0.0], dt)
    y = np.array([7.0, 7.0, -0.0, 7.0], dt)
    got = op("Where", c, x, y, out=TYPES[np.dtype(dt)])
    show(f"Where(c, x, y) {dt.__name__}: a selection copies bits (np.where); signbit of "
         f"[x0, x1, y2, x3]", np.signbit(np.where(c, x, y)).tolist(), np.signbit(got).tolist())
x = np.array([1.0, 2.0], f16)
x.view(np.uint16)[0] = 0x7E01  # a quiet NaN with a payload
got = op("Where", np.array([True, True]), x, np.zeros(2, f16), out=TP.FLOAT16)
show("Where float16, a NaN with payload 0x7e01 selected: bits", bits(x), bits(got))
got = run([helper.make_node("Tile", ["x", "r"], ["y"])], {"x": x}, [("y", TP.FLOAT16)],
          [i64("r", [2])])[0]
show("Tile float16 of [NaN(0x7e01), 2] (a copy): bits", bits(np.tile(x, 2)), bits(got))

# ---- max / min: NaN and signed zeros (IEEE 754-2019 maximum / minimum, NUM-8) --------
a = np.array([nan, 1.0, -0.0, 0.0], f32)
b = np.array([1.0, nan, 0.0, -0.0], f32)
show("Max([nan, 1, -0, 0], [1, nan, 0, -0]) (IEEE 754-2019 maximum: NaN propagates, "
     "-0 < +0)", [nan, nan, 0.0, 0.0], op("Max", a, b).tolist())
show("Min(same) (IEEE 754-2019 minimum)", [nan, nan, -0.0, -0.0], op("Min", a, b).tolist())

# ---- reductions, argmax, pooling, scatter with NaN ------------------------------------
row = np.array([[1.0, nan, 3.0, 2.0]], f32)
show("ReduceMax([[1, nan, 3, 2]], axis 1) (np.max: NaN)", np.max(row, 1).tolist(),
     run([helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=1)], {"x": row},
         [("y", TP.FLOAT)], [i64("a", [1])])[0].ravel().tolist())
show("ReduceMin(same) (np.min: NaN)", np.min(row, 1).tolist(),
     run([helper.make_node("ReduceMin", ["x", "a"], ["y"], keepdims=1)], {"x": row},
         [("y", TP.FLOAT)], [i64("a", [1])])[0].ravel().tolist())
show("ArgMax(same, axis 1) (np.argmax: the first NaN, 1)", int(np.argmax(row, 1)[0]),
     op("ArgMax", row, out=TP.INT64, axis=1).ravel().tolist())
show("ArgMin(same, axis 1) (np.argmin: the first NaN, 1)", int(np.argmin(row, 1)[0]),
     op("ArgMin", row, out=TP.INT64, axis=1).ravel().tolist())
img = np.array([[[[1.0, nan], [3.0, 2.0]]]], f32)
show("MaxPool 2x2 over [[1, nan], [3, 2]] (max of a set holding NaN: NaN)", [nan],
     op("MaxPool", img, kernel_shape=[2, 2]).ravel().tolist())
for red in ("max", "min"):
    for data, upd in (([1.0, 5.0], [nan, nan]), ([nan, nan], [0.0, 12.5])):
        got = run([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"],
                                    reduction=red)],
                  {"x": np.array(data, f32), "u": np.array(upd, f32)}, [("y", TP.FLOAT)],
                  [i64("i", [0, 1])])[0]
        show(f"ScatterElements(reduction={red}): data {data}, updates {upd} (IEEE "
             f"{red}imum and the spec: NaN either way)", [nan, nan], got.tolist())
    got = run([helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=red)],
              {"x": np.array([nan, nan], f32), "u": np.array([0.0, 12.5], f32)},
              [("y", TP.FLOAT)], [helper.make_tensor("i", TP.INT64, [2, 1], [0, 1])])[0]
    show(f"ScatterND(reduction={red}): data [nan, nan], updates [0, 12.5]", [nan, nan],
         got.tolist())

# ---- relu(NaN): ONNX Relu is max(0, x) ----------------------------------------------
show("Relu([nan, -0.0]) (spec: +0 for both, as MAX; ONNX: y = max(0, x), NaN not said)",
     [0.0, 0.0], op("Relu", np.array([nan, -0.0], f32)).tolist())

# ---- integer reductions and pow ---------------------------------------------------------
def reduce(name: str, x: np.ndarray) -> list[int]:
    return run([helper.make_node(name, ["x", "a"], ["y"], keepdims=1)], {"x": x},
               [("y", TYPES[x.dtype])], [i64("a", [1])])[0].ravel().tolist()


for ints in ([0, 0, 5, 2147483646], [-5, -2147483647]):
    x32 = np.array([ints], np.int32)
    show(f"ReduceSum int32 {ints} (NUM-2 wraps: np.sum in int32)",
         int(x32.sum(dtype=np.int32)), reduce("ReduceSum", x32))
x64 = np.array([[0, 0, 0, 9223372036854775806]], np.int64)
show("ReduceSum int64 [0, 0, 0, 2**63 - 2] (exact, no overflow: 9223372036854775806)",
     int(x64.sum()), reduce("ReduceSum", x64))
x64 = np.array([[9223372036854775806, 1, 1, 1]], np.int64)
show("ReduceProd int64 [[2**63 - 2, 1, 1, 1]] (exact 9223372036854775806)",
     int(np.prod(x64)), run([helper.make_node("ReduceProd", ["x", "a"], ["y"], keepdims=1)],
                            {"x": x64}, [("y", TP.INT64)], [i64("a", [1])])[0].ravel().tolist())
print(f"    float64(2**63 - 2) = {float(2**63 - 2)!r}: the value ORT returns is what a "
      "double accumulator gives")
base, expo = np.array([2147483646, 3], np.int32), np.array([2147483646, 40], np.int32)
show("Pow int32 ([2147483646, 3] ** [2147483646, 40]) (Python, mod 2**32: NUM-2 wraps)",
     [int(np.int64(pow(int(b_), int(e_), 2**32)).astype(np.uint32).astype(np.int32))
      for b_, e_ in zip(base, expo, strict=True)], op("Pow", base, expo).tolist())

# ---- transcendental accuracy (mpmath, 60 digits, rounded once) -------------------------
mpmath.mp.dps = 60


def exact(fn: Any, x: float, dt: Any) -> Any:
    return dt(float(fn(mpmath.mpf(float(x)))))


def ulps(a: Any, b: Any) -> int:
    a, b = np.asarray(a), np.asarray(b)
    ia, ib = int(a.view(f"i{a.itemsize}")), int(b.view(f"i{b.itemsize}"))
    return abs(ia - ib)


sig = (lambda t: 1 / (1 + mpmath.exp(-t)))  # noqa: E731
for v in (-20.0, -30.0, -87.0):
    got = op("Sigmoid", np.array([v], f32))[0]
    want = exact(sig, v, f32)
    show(f"Sigmoid float32 ({v}) (mpmath, rounded once; budget 4 ULP)", want,
         f"{got} ({ulps(want, got)} ULP)")
tiny = f32(np.finfo(f32).tiny)
got = op("Tanh", np.array([tiny], f32))[0]
show("Tanh float32 (FLT_MIN) (tanh(x) = x to 2**-200 here; budget 2 ULP)", tiny,
     f"{got} ({ulps(tiny, got)} ULP)")
for v in (0.4, 1.2):
    got = op("Sigmoid", np.array([v], f64))[0]
    want = exact(sig, v, f64)
    show(f"Sigmoid float64 ({v})", want, f"{got} ({ulps(want, got)} ULP)")
gelu = (lambda t: t * mpmath.erfc(-t / mpmath.sqrt(2)) / 2)  # noqa: E731
for v in (-5.5, -3.0):
    got = op("Gelu", np.array([v], f32))[0]
    want = exact(gelu, v, f32)
    show(f"Gelu float32 ({v}) (budget 4 ULP)", want, f"{got} ({ulps(want, got)} ULP)")
gelu_tanh = (lambda t: t / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi)  # noqa: E731
                                                 * (t + mpmath.mpf("0.044715") * t**3))))
got = op("Gelu", np.array([1.0], f64), approximate="tanh")[0]
want = exact(gelu_tanh, 1.0, f64)
show("Gelu float64 tanh form (1.0) (mpmath, budget 4 ULP)", want,
     f"{got} ({ulps(want, got)} ULP: about float32's precision)")
for name, fn, v, vt in (("Cos", mpmath.cos, -7.849744237048313, f64),
                        ("Sin", mpmath.sin, 12.453132556085606, f64),
                        ("Log", mpmath.log, 1.2814258, f32)):
    want = exact(fn, float(vt(v)), vt)
    one, eight = op(name, np.array([v], vt))[0], op(name, np.full(8, v, vt))[0]
    show(f"{name} {vt.__name__} ({vt(v)!r}) (mpmath, rounded once; budget 2 ULP), in a "
         "tensor of 1 and of 8 elements", want,
         f"{one} ({ulps(want, one)} ULP) / {eight} ({ulps(want, eight)} ULP)")
show("Gelu float32 (-inf) (spec: the limit -0.0; the ONNX formula 0.5x(1 + erf(x/sqrt2)) "
     "is -inf * 0 = NaN)", -0.0, op("Gelu", np.array([-inf], f32)).tolist())

# ---- casts ---------------------------------------------------------------------------
def cast_bits(x: np.ndarray, tp: int, width: Any = np.uint8, **attrs: Any) -> np.ndarray:
    """``Cast(x, to=tp)``: ORT writes the result's bits into a bound unsigned array (numpy
    has no bfloat16/float8 type ORT can hand back)."""
    node = helper.make_node("Cast", ["x"], ["y"], to=tp, **attrs)
    ins = [helper.make_tensor_value_info("x", TYPES[x.dtype], list(x.shape))]
    g = helper.make_graph([node], "c", ins, [helper.make_tensor_value_info("y", tp, list(x.shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    out = np.zeros(x.shape, width)
    b = s.io_binding()
    b.bind_cpu_input("x", x)
    b.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_numpy_with_onnx_type(out, tp))
    s.run_with_iobinding(b)
    return out


for name, (tp, np8) in F8.items():
    xs = np.array([464.0, 1e6, -1e6] if name == "e4m3fn" else [61440.0, 1e6, -1e6], f32)
    got = cast_bits(xs, tp, saturate=0).view(np8)
    table = "NaN" if name == "e4m3fn" else "+-inf"
    print(f"Cast float32 {xs.tolist()} -> float8{name}, saturate=0 (ONNX Cast table: [x] > "
          f"FLT_MAX or < -FLT_MAX -> {table}; 464 rounds to 480 > 448 in e4m3fn, 61440 to "
          f"65536 > 57344 in e5m2)\n    ORT: {got.astype(np.float32).tolist()}")
neg0 = np.array([0x80, 0x00], np.uint8)  # float8 -0.0, +0.0
for name, (tp, _np8) in F8.items():
    feeds = {"x": neg0}
    node = helper.make_node("Cast", ["x"], ["y"], to=TP.BOOL)
    ins = [helper.make_tensor_value_info("x", tp, [2])]
    g = helper.make_graph([node], "c", ins, [helper.make_tensor_value_info("y", TP.BOOL, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    v = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(neg0, tp)
    got = s.run_with_ort_values(["y"], {"x": v})[0].numpy()
    show(f"Cast float8{name} [-0.0, +0.0] -> bool (ONNX Cast: +/-0.0 to False)",
         [False, False], got.tolist())
x = np.array([1.0 + 2.0**-11 + 2.0**-40, 1.0 + 2.0**-8 + 2.0**-40], f64)
show("Cast float64 [1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40] -> float16 and bfloat16 "
     "(numpy / ml_dtypes: one rounding, up; through float32 the 2**-40 is lost and the tie "
     "goes to even, 1.0)",
     [float(x[0].astype(f16)), float(x[1].astype(ml_dtypes.bfloat16))],
     [float(op("Cast", x, out=TP.FLOAT16, to=TP.FLOAT16)[0]),
      float(cast_bits(x, TP.BFLOAT16, np.uint16).view(ml_dtypes.bfloat16)[1])])

# ---- float16 arithmetic: excess precision between nodes (NUM-12) -----------------------
xh, yh = np.array([1.0], f16), np.array([2.0**-11], f16)
got = run([helper.make_node("Add", ["x", "y"], ["t"]), helper.make_node("Add", ["t", "y"], ["z"])],
          {"x": xh, "y": yh}, [("z", TP.FLOAT16)])[0]
show("float16 (1 + 2**-11) + 2**-11, two Add nodes (numpy float16, each rounded: 1.0)",
     float(((xh + yh) + yh)[0]), float(got[0]))

# ---- softmax family, range, reduce_mean, pooling divisors ------------------------------
r = np.array([[1.0, inf, 2.0, 3.0]], f64)
with np.errstate(all="ignore"):
    d = r - r.max(1, keepdims=True)
    ref = d - np.log(np.exp(d).sum(1, keepdims=True))
show("LogSoftmax float64 [[1, inf, 2, 3]] (IEEE: inf - inf = NaN in the sum -> all NaN)",
     ref.tolist(), op("LogSoftmax", r, axis=1).tolist())
show("LogSoftmax float32 (same row)", ref.tolist(),
     op("LogSoftmax", r.astype(f32), axis=1).tolist())
got = run([helper.make_node("Range", ["s", "l", "d"], ["y"])], {}, [("y", TP.DOUBLE)],
          [helper.make_tensor("s", TP.DOUBLE, [], [0.0]),
           helper.make_tensor("l", TP.DOUBLE, [], [5.0]),
           helper.make_tensor("d", TP.DOUBLE, [], [0.1])])[0]
want = 0.0 + np.arange(50) * 0.1
acc = np.cumsum(np.r_[0.0, np.full(49, 0.1)])
show("Range float64 (0, 5, 0.1), element 35 (ONNX pseudocode: start + i * delta = "
     f"{want[35]!r}; repeated addition gives {acc[35]!r})", want[35], got[35])
show("ReduceMean float64 of an empty axis (0 / 0; ONNX: \"Reduction over an empty set of "
     "values yields undefined\")", nan,
     run([helper.make_node("ReduceMean", ["x", "a"], ["y"], keepdims=1)],
         {"x": np.zeros((1, 0), f64)}, [("y", TP.DOUBLE)], [i64("a", [1])])[0].tolist())
one = np.full((1, 1, 5, 3), 1.0, f32)
got = op("AveragePool", one, kernel_shape=[2, 3], strides=[1, 2], pads=[0, 0, 0, 1],
         ceil_mode=1, count_include_pad=1)
show("AveragePool of ones 1x1x5x3, kernel 2x3, stride (1, 2), right pad 1, ceil_mode, "
     "count_include_pad: the last window of a row holds 2 ones, 2 padding zeros and 2 "
     "positions past the padding (spec: divisor 6, the window size, so 2/6; PyTorch's rule "
     "leaves the positions past the padding out: 2/4)",
     [1.0, 2 / 6] * 4, got.ravel().tolist())
got = op("AveragePool", np.ones((1, 1, 1, 1), f32), kernel_shape=[2, 2], dilations=[1, 2],
         pads=[1, 1, 0, 1], count_include_pad=0)
show("AveragePool count_include_pad=0, a window with no input element (0 / 0)", [nan],
     got.ravel().tolist())

# ---- resize, normalization, matmul: shapes and taps ------------------------------------
x = np.array([[[-inf, 3.4028235e38, inf], [-inf, 20.0, 1.0]],
              [[0.0, 1.4e-45, 0.5], [0.5, 12.5, -0.0]]], f32)
got = run([helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear",
                            coordinate_transformation_mode="half_pixel")],
          {"x": x}, [("y", TP.FLOAT)], [i64("s", [1, 1, 3])])[0]
show("Resize linear half_pixel (2, 2, 3) -> (1, 1, 3): element 1 averages x[:, :, 1] "
     "(axis 2 keeps its length, so its infinite neighbours have weight 0)",
     float(np.mean(x[:, :, 1].astype(f64))), got.ravel().tolist())
try:
    op("GroupNormalization", np.zeros((2, 3, 0), f32), np.ones(3, f32), np.zeros(3, f32),
       num_groups=1)
    print("GroupNormalization on a (2, 3, 0) input: ran")
except Exception as e:
    print(f"GroupNormalization on a (2, 3, 0) input (the result is empty):\n    ORT raised "
          f"{str(e).splitlines()[0][-170:]}")
for it in (np.uint32, np.uint64, np.int32):
    try:
        got = op("MatMul", np.zeros((2, 4, 0), it), np.zeros((2, 0, 2), it))
        print(f"MatMul {it.__name__} with K = 0: {got.shape}, all zero: {not got.any()}")
    except Exception as e:
        print(f"MatMul {it.__name__} with K = 0 (the result is zeros):\n    ORT raised "
              f"{str(e).splitlines()[0][-150:]}")
neg = helper.make_node("Neg", ["x"], ["n"])
exp = helper.make_node("Expand", ["n", "s"], ["e"])
ident = helper.make_node("Identity", ["e"], ["y"])
LEVELS = ort.GraphOptimizationLevel
for opt in (LEVELS.ORT_DISABLE_ALL, LEVELS.ORT_ENABLE_BASIC):
    got = run([neg, exp, ident], {"x": np.ones((1, 3), f32)}, [("y", TP.FLOAT)],
              [i64("s", [0, 3])], opt=opt)[0]
    print(f"Neg, Expand to (0, 3), Identity, {opt.name}: result shape {got.shape} "
          "(Expand broadcasts (1, 3) to (0, 3))")

# ---- bicubic: the exact value of the suite's resize_bicubic case (suspected reference) --
w = np.array([-0.09375, 0.59375, 0.59375, -0.09375])  # Keys a=-0.75 taps at t = 0.5
idx = np.array([0, 0, 1, 1])  # f = 0, taps -1..2 clamped into [0, 1]
tile = np.array([[-3.4028235e38, 31.486603], [-3.4028235e38, 1.4e-45]], f64)
exact_val = sum(w[i] * w[j] * tile[idx[i], idx[j]] for i in range(4) for j in range(4))
terms = sum(abs(w[i] * w[j] * tile[idx[i], idx[j]]) for i in range(4) for j in range(4))
got = run(
    [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="cubic", cubic_coeff_a=-0.75,
                      coordinate_transformation_mode="half_pixel")],
    {"x": tile.astype(f32).reshape(1, 1, 2, 2)}, [("y", TP.FLOAT)], [i64("s", [1, 1, 1, 1])])[0]
with np.errstate(over="ignore"):
    first_pass = f32(0.59375) * f32(-3.4028235e38) * f32(2)
print(f"Bicubic 2x2 -> 1x1 of [[-FLT_MAX, 31.49], [-FLT_MAX, 1.4e-45]] in float64: "
      f"{exact_val!r} (sum of |terms| {terms:.4g} < FLT_MAX {float(np.finfo(f32).max):.4g}); "
      f"a float32 first pass overflows: 0.59375 * -FLT_MAX * 2 = "
      f"{first_pass}\n    ORT: {got.ravel().tolist()}")

# ---- integer division: what the adapter guards -----------------------------------------
child = """
import numpy as np, onnxruntime as ort
from onnx import TensorProto as TP, helper
ins = [helper.make_tensor_value_info(n, TP.INT32, [1]) for n in "ab"]
g = helper.make_graph([helper.make_node("{op}", ["a", "b"], ["y"])], "d", ins,
                      [helper.make_tensor_value_info("y", TP.INT32, None)])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
so = ort.SessionOptions(); so.log_severity_level = 4
s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
try:
    print(s.run(None, {{"a": np.array([{a}], np.int32), "b": np.array([{b}], np.int32)}}))
except Exception as e:
    print("raised:", str(e).splitlines()[0][-60:])
"""
for name, a_, b_ in (("Div", 7, 0), ("Mod", 7, 0), ("Div", -2**31, -1), ("Mod", -2**31, -1)):
    p = subprocess.run([sys.executable, "-c", child.format(op=name, a=a_, b=b_)],
                       capture_output=True, text=True)
    print(f"int32 {name}({a_}, {b_}) in a child process: exit {p.returncode} "
          f"{p.stdout.strip()}")
