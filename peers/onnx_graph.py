"""A lowered graph (spec/graph.md GRAPH-20..23) as an ONNX model, for the ONNX Runtime peer
(``peers/onnxruntime.py``).

The op table ``OPS`` maps registry op names to builders of ONNX nodes and lists the data
dtypes each mapping is made for: those the ONNX operator types *and* ONNX Runtime 1.32's
CPU execution provider has a kernel for (probed with ``python -m peers.onnx_probe``).
``UNMAPPED`` gives the reason for every other registry op. Nothing here approximates: an op
is mapped to one ONNX operator of the same meaning, or to a composition that is exact
(integer ``floor_div``, ``not_equal``, layout transposes around NCHW operators,
``band_part``'s mask); what ONNX cannot express is refused (``refusal``).

Buffers: ONNX has no mutation. Each buffer (a ``BufferType`` input or a ``buffer_create``)
is a chain of SSA values in node order (GRAPH-5): a store makes a new value, a load reads
the current one, so a load after a store sees it and a load before does not. The final
value of every stored buffer input is an extra graph output, which the executor writes
back into the caller's array after the run (EXEC-6).

Guards (changing only elements the spec leaves unspecified, TOL-2): integer ``floor_div``
and ``mod`` replace a zero divisor (and ``MIN // -1``'s, whose result ``MIN // 1`` is the
wrapped value NUM-2 requires) by 1 first: ORT raises "Integer division by zero" for a zero
divisor and dies of SIGFPE on ``MIN // -1``. Gather and scatter indices are clamped into
their axis (ORT raises for an out-of-bounds index, an error in ONNX; the spec leaves what it
reads or writes unspecified).

This module imports ``onnx`` only when a graph is translated: the table and ``refusal``
work without it (CI runs the engine-free tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interpreter.arrays import fill_value
from interpreter.dtype import DType
from interpreter.graph.core import Graph, Node, Value
from interpreter.types import BufferType

from .table import table_refusal

__all__ = ["ONNX_TYPES", "OPS", "OPSET", "UNMAPPED", "OnnxGraph", "OnnxOp", "refusal",
           "translate"]

#: The newest ai.onnx opset ONNX Runtime 1.32 supports ("Current official support for
#: domain ai.onnx is till opset 28"; opset 29 is refused at session creation).
OPSET = 28

#: ONNX ``TensorProto`` element types, by registry dtype name (onnx.TensorProto values).
ONNX_TYPES: dict[str, int] = {
    "float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
    "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13, "bfloat16": 16,
    "float8_e4m3fn": 17, "float8_e5m2": 19,
}

F3 = frozenset({"float32", "float64", "float16"})
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTS = SIGNED | UNSIGNED
F8 = frozenset({"float8_e4m3fn", "float8_e5m2"})
ALL = frozenset(ONNX_TYPES)
#: all but float8 (ORT's data movement kernels other than Reshape/Transpose/Identity/Cast
#: have no float8 types)
MOVE = ALL - F8


@dataclass(frozen=True)
class OnnxOp:
    """One row of the op table: how a registry op becomes ONNX nodes.

    ``build(g, xs, attrs, node)`` adds the nodes to ``g`` (operand names ``xs``) and returns
    the names of the node's results. ``dtypes``: the data dtypes (OPDT-3) it is mapped for.
    ``onnx``: the ONNX operators used (documentation). ``check(node)``: a reason to refuse
    this node (an attribute or shape ONNX cannot express with the same meaning), or None.
    """

    build: Callable[..., list[str]]
    dtypes: frozenset[str]
    onnx: str
    check: Callable[[Node], str | None] | None = None


class OnnxGraph:
    """The ONNX graph being built: nodes, initializers, fresh names, and ``env``, the ONNX
    name of each value (of a buffer: its current contents)."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.env: dict[Value, str] = {}
        self._count = 0

    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1,
             **attrs: Any) -> list[str]:
        from onnx import AttributeProto, helper
        outs = [self.fresh(op_type) for _ in range(outputs)]
        empty = {k for k, v in attrs.items() if isinstance(v, list) and not v}
        node = helper.make_node(op_type, list(inputs), outs,
                                **{k: v for k, v in attrs.items() if k not in empty})
        for k in sorted(empty):  # an empty list has no inferable type: ints here
            node.attribute.append(helper.make_attribute(k, [], attr_type=AttributeProto.INTS))
        self.nodes.append(node)
        return outs

    def one(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        return self.node(op_type, inputs, **attrs)[0]

    def const(self, value: Any, dtype: DType) -> str:
        """An initializer holding ``value``'s exact bytes as ``dtype``."""
        from onnx import helper
        a = np.array(value, dtype.to_numpy(), order="C")  # not ascontiguousarray: rank 0
        name = self.fresh("const")
        self.inits.append(helper.make_tensor(name, ONNX_TYPES[dtype.name], list(a.shape),
                                             a.tobytes(), raw=True))
        return name

    def ints(self, values: Sequence[int]) -> str:
        return self.const(np.array(list(values), np.int64).reshape(len(values)), DType.int64)

    def scalar(self, value: Any, dtype: DType) -> str:
        return self.const(np.array(value, dtype.to_numpy()), dtype)


# ---- builders ------------------------------------------------------------------------

Build = Callable[[OnnxGraph, list[str], dict[str, Any], Node], list[str]]


def _dtype(node: Node, i: int = 0) -> DType:
    return node.operands[i].type.dtype


def _op(onnx_op: str, **fixed: Any) -> Build:
    return lambda g, xs, a, n: [g.one(onnx_op, xs, **fixed)]


def _axis_op(onnx_op: str, **fixed: Any) -> Build:
    return lambda g, xs, a, n: [g.one(onnx_op, xs, axis=a["axis"], **fixed)]


def _reduce(onnx_op: str) -> Build:
    return lambda g, xs, a, n: [g.one(onnx_op, [xs[0], g.ints([a["axis"]])], keepdims=1)]


def _not_equal(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    return [g.one("Not", [g.one("Equal", xs)])]


def _bool_or(onnx_op: str, bool_op: str) -> Build:
    """``Max``/``Min``; on bool ``Or``/``And`` (NUM-8: max is OR, min is AND)."""
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        return [g.one(bool_op if _dtype(n) is DType.bool else onnx_op, xs)]
    return build


def _guard_divisor(g: OnnxGraph, n: Node, lhs: str, rhs: str, min_by_minus_one: bool) -> str:
    """The divisor with 1 where ORT would fail: zero (ORT raises "Integer division by
    zero"), and for ``floor_div`` ``MIN // -1`` (SIGFPE). Those results are unspecified
    (NUM-3) or, for ``MIN // -1``, ``MIN // 1 == MIN``, the wrapped value (NUM-2).
    ``rhs + bad * (1 - rhs)``: ORT's ``Where`` has no int16/uint16/uint64 kernel. An empty
    divisor needs no guard (and gets none: fewer adapter nodes on degenerate shapes)."""
    dt = _dtype(n)
    if 0 in n.operands[1].type.shape:  # nothing is divided: no guard
        return rhs
    bad = g.one("Equal", [rhs, g.scalar(0, dt)])
    if min_by_minus_one and dt.name in SIGNED:
        lo = g.one("Equal", [lhs, g.scalar(np.iinfo(dt.to_numpy()).min, dt)])
        m1 = g.one("Equal", [rhs, g.scalar(-1, dt)])
        bad = g.one("Or", [bad, g.one("And", [lo, m1])])
    step = g.one("Sub", [g.scalar(1, dt), rhs])
    return g.one("Add", [rhs, g.one("Mul", [g.one("Cast", [bad], to=ONNX_TYPES[dt.name]), step])])


def _floor_div(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """Integers: ONNX ``Div`` truncates; the floor quotient is ``q - 1`` where the remainder
    ``r = a - q * b`` is nonzero with the sign opposite to ``b`` (exact, wrapping)."""
    dt = _dtype(n)
    lhs = xs[0]
    rhs = _guard_divisor(g, n, lhs, xs[1], min_by_minus_one=True)
    q = g.one("Div", [lhs, rhs])
    if dt.name in UNSIGNED:
        return [q]
    zero = g.scalar(0, dt)
    r = g.one("Sub", [lhs, g.one("Mul", [q, rhs])])
    opposite = g.one("Xor", [g.one("Less", [r, zero]), g.one("Less", [rhs, zero])])
    adjust = g.one("And", [g.one("Not", [g.one("Equal", [r, zero])]), opposite])
    return [g.one("Sub", [q, g.one("Cast", [adjust], to=ONNX_TYPES[dt.name])])]


def _mod(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """ONNX ``Mod`` with ``fmod=0`` (opset 28: Python's ``%`` for integers and floats,
    with the float special cases of NUM-3); integer zero divisors guarded."""
    rhs = xs[1]
    if _dtype(n).name in INTS:
        rhs = _guard_divisor(g, n, xs[0], rhs, min_by_minus_one=False)
    return [g.one("Mod", [xs[0], rhs], fmod=0)]


def _cast(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    target: DType = a["dtype"]
    extra = {"saturate": 0} if target.name in F8 else {}  # overflow to inf/NaN (NUM-4)
    return [g.one("Cast", xs, to=ONNX_TYPES[target.name], **extra)]


def _constant(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    return [g.const(a["value"], n.results[0].type.dtype)]


def _range(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    dt: DType = a["dtype"]
    return [g.one("Range", [g.scalar(a[k], dt) for k in ("start", "stop", "step")])]


def _float_range(n: Node) -> str | None:
    if n.attrs["dtype"].name != "float64" and n.attrs["dtype"].is_float():
        return ("ONNX Range computes start + i * delta in the result dtype; RANGE computes "
                "in float64 and rounds once")
    return None


def _slice_args(slices: Sequence[tuple[Any, Any, int]], shape: Sequence[int]
                ) -> tuple[list[int], list[int], list[int]]:
    """ONNX ``Slice`` starts, ends and steps selecting exactly Python's
    ``range(*slice(*t).indices(n))`` per axis (empty: ``0:0:1``; a negative step running
    past index 0 ends at INT64_MIN, ONNX's "to the beginning")."""
    starts, ends, steps = [], [], []
    for (start, stop, step), size in zip(slices, shape, strict=True):
        lo, hi, st = slice(start, stop, step).indices(size)
        count = len(range(lo, hi, st))
        if count == 0:
            lo, end, st = 0, 0, 1
        else:
            end = lo + count * st
            end = end if end >= 0 else int(np.iinfo(np.int64).min)
        starts.append(lo)
        ends.append(end)
        steps.append(st)
    return starts, ends, steps


def _slice(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    shape = n.operands[0].type.shape
    if not shape:
        return [g.one("Identity", xs)]
    starts, ends, steps = _slice_args(a["slices"], shape)
    axes = list(range(len(shape)))
    return [g.one("Slice", [xs[0], g.ints(starts), g.ints(ends), g.ints(axes),
                            g.ints(steps)])]


def _pad(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    dt = _dtype(n)
    pads = [p[0] for p in a["paddings"]] + [p[1] for p in a["paddings"]]
    value = g.const(fill_value(a["value"], dt.to_numpy()), dt)
    return [g.one("Pad", [xs[0], g.ints(pads), value], mode=a["mode"])]


def _rank0(what: str) -> Callable[[Node], str | None]:
    def check(n: Node) -> str | None:
        return what if not n.operands[0].type.shape else None
    return check


def _pad_check(n: Node) -> str | None:
    """ORT's Pad rejects a rank-0 input ("Input tensor has no dimensions"); ONNX's
    ``reflect`` mirrors once: ORT rejects a padding longer than the axis less one ("Pad
    reflect: ... exceeds maximum allowed"); the spec reflects as often as needed."""
    if not n.operands[0].type.shape:
        return "a rank-0 input: ORT's Pad rejects it (\"Input tensor has no dimensions\")"
    if n.attrs["mode"] != "reflect":
        return None
    for size, (before, after) in zip(n.operands[0].type.shape, n.attrs["paddings"],
                                     strict=True):
        if max(before, after) > size - 1:
            return (f"reflect padding {(before, after)} of an axis of length {size}: ONNX "
                    "Pad mirrors once (at most length - 1 per side)")
    return None


def _split(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    return g.node("Split", [xs[0], g.ints(a["sizes"])], outputs=len(a["sizes"]),
                  axis=a["axis"])


def _int64(g: OnnxGraph, name: str, node: Node, i: int) -> str:
    """Operand ``i`` (indices) as int64 (ONNX GatherND/ScatterND take int64 only)."""
    return name if _dtype(node, i) is DType.int64 else g.one("Cast", [name], to=7)


def _clip_index(g: OnnxGraph, n: Node, i: int, idx: str, size: int) -> str:
    """Guard: the indices (operand ``i``) clamped into ``[-size, size)``. ORT raises for an
    index out of bounds (ONNX: "It is an error if any of the index values are out of
    bounds"); the spec leaves what such an index reads or writes unspecified (gather.C3,
    scatter.C5, ...); an index in range is unchanged. Empty indices get no guard."""
    if 0 in n.operands[i].type.shape:
        return idx
    dtype = _dtype(n, i)
    return g.one("Clip", [idx, g.scalar(-size, dtype), g.scalar(size - 1, dtype)])


def _clip_vectors(g: OnnxGraph, n: Node, i: int, idx: str, sizes: Sequence[int]) -> str:
    """Guard: each component ``j`` of the int64 index vectors (operand ``i``) clamped into
    ``[-sizes[j], sizes[j])`` (ORT: "invalid indice found"; the spec: unspecified)."""
    if 0 in n.operands[i].type.shape:
        return idx
    hi = g.const(np.array([s - 1 for s in sizes], np.int64), DType.int64)
    lo = g.const(np.array([-s for s in sizes], np.int64), DType.int64)
    return g.one("Max", [g.one("Min", [idx, hi]), lo])


def _axis_size(n: Node, axis: int) -> int:
    shape = n.operands[0].type.shape
    return shape[axis % len(shape)]


def _index_check(operand: int, axis: int | None = None) -> Callable[[Node], str | None]:
    """Refuse indices into an empty axis (every one is out of bounds: ORT raises, and no
    clamp exists)."""
    def check(n: Node) -> str | None:
        size = _axis_size(n, n.attrs["axis"] if axis is None else axis)
        if size == 0 and 0 not in n.operands[operand].type.shape:
            return ("indices into an empty axis: every index is out of bounds, an error in "
                    "ONNX (no clamp can guard it)")
        return None
    return check


def _gather(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    idx = _clip_index(g, n, 1, xs[1], _axis_size(n, a["axis"]))
    return [g.one("Gather", [xs[0], idx], axis=a["axis"])]


def _gather_nd(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    b, k = a["batch_dims"], n.operands[1].type.shape[-1]
    idx = _clip_vectors(g, n, 1, _int64(g, xs[1], n, 1), n.operands[0].type.shape[b:b + k])
    return [g.one("GatherND", [xs[0], idx], batch_dims=b)]


def _gather_sum(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    idx = _clip_index(g, n, 1, xs[1], _axis_size(n, 0))
    rows = g.one("Gather", [xs[0], idx], axis=0)  # (B, J, D)
    return [g.one("ReduceSum", [rows, g.ints([1])], keepdims=1)]


def _scatter(reduction: str) -> Build:
    """Registry operands ``(x, updates, indices)``; ONNX ``(data, indices, updates)``."""
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        idx = _clip_index(g, n, 2, xs[2], _axis_size(n, a["axis"]))
        return [g.one("ScatterElements", [xs[0], idx, xs[1]], axis=a["axis"],
                      reduction=reduction)]
    return build


def _scatter_nd(reduction: str) -> Build:
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        k = n.operands[2].type.shape[-1]
        idx = _clip_vectors(g, n, 2, _int64(g, xs[2], n, 2), n.operands[0].type.shape[:k])
        return [g.one("ScatterND", [xs[0], idx, xs[1]], reduction=reduction)]
    return build


def _top_k(largest: int) -> Build:
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        return g.node("TopK", [xs[0], g.ints([a["k"]])], outputs=2, axis=a["axis"],
                      largest=largest, sorted=1)
    return build


def _argsort(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """``TopK`` of all ``n`` elements: ONNX orders ties by lower index (stable)."""
    size = n.operands[0].type.shape[0]
    _, idx = g.node("TopK", [xs[0], g.ints([size])], outputs=2, axis=0,
                    largest=0 if a["ascending"] else 1, sorted=1)
    return [idx]


def _arg(onnx_op: str) -> Build:
    return lambda g, xs, a, n: [g.one(onnx_op, xs, axis=a["axis"], keepdims=1,
                                      select_last_index=0)]


def _cumsum(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    axis = g.scalar(a["axis"], DType.int64)
    return [g.one("CumSum", [xs[0], axis], exclusive=int(a["exclusive"]),
                  reverse=int(a["reverse"]))]


def _band_part(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """``Trilu`` keeps ``j - i >= k`` (upper) or ``j - i <= k`` (lower): the band is
    ``Trilu(Trilu(x, upper, -num_lower), lower, num_upper)``; ``exclude`` zeroes the band
    through the same ``Trilu``s on a bool mask of ones."""
    lower, upper = a["num_lower"], a["num_upper"]

    def band(v: str) -> str:
        if lower >= 0:
            v = g.one("Trilu", [v, g.scalar(-lower, DType.int64)], upper=1)
        if upper >= 0:
            v = g.one("Trilu", [v, g.scalar(upper, DType.int64)], upper=0)
        return v

    if not a["exclude"]:
        return [band(xs[0])]
    shape = n.operands[0].type.shape
    mask = band(g.const(np.ones(shape, np.bool_), DType.bool))
    return [g.one("Where", [mask, g.scalar(0, _dtype(n)), xs[0]])]


def _stash(n: Node) -> int:
    """ONNX normalizations compute stage one in ``stash_type`` (default 1, float32): float64
    data must ask for float64 (11), or it is computed in float32."""
    return 11 if _dtype(n) is DType.float64 else 1


def _layer_norm(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    return [g.one("LayerNormalization", xs, axis=-1, epsilon=float(np.float32(a["epsilon"])),
                  stash_type=_stash(n))]


def _rms_norm(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """``RMSNormalization(x, weight + weight_offset)``: the offset's float32 value, added in
    float32/float64 (exact: one rounding, as the spec's ``weight + weight_offset``)."""
    weight = xs[1]
    offset = float(np.float32(a["weight_offset"]))
    if offset != 0.0:
        weight = g.one("Add", [weight, g.scalar(offset, _dtype(n))])
    return [g.one("RMSNormalization", [xs[0], weight], axis=-1,
                  epsilon=float(np.float32(a["epsilon"])), stash_type=_stash(n))]


def _norm_check(n: Node) -> str | None:
    if n.operands[0].type.shape[-1] == 0:
        return ("an empty normalized axis: ORT's LayerNormalization and RMSNormalization "
                "reject it (\"Size of X.shape[axis:] must be at least 1, got 0\")")
    return None


def _rms_check(n: Node) -> str | None:
    why = _norm_check(n)
    if why is not None:
        return why
    if n.attrs["weight_offset"] != 0.0 and _dtype(n).name == "float16":
        return ("weight_offset on float16: ONNX RMSNormalization has no offset and adding "
                "it in float16 first rounds the float32 offset twice")
    return None


def _group_norm(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    return [g.one("GroupNormalization", xs, num_groups=a["num_groups"],
                  epsilon=float(np.float32(a["epsilon"])), stash_type=_stash(n))]


def _to_channels_first(rank: int) -> list[int]:
    return [0, rank - 1, *range(1, rank - 1)]


def _to_channels_last(rank: int) -> list[int]:
    return [0, *range(2, rank), 1]


def _conv(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """NHWC / NDHWC input and RSCF / QRSCF filter transposed to ONNX's NCHW and FCHW."""
    rank = len(n.operands[0].type.shape)
    x = g.one("Transpose", [xs[0]], perm=_to_channels_first(rank))
    w = g.one("Transpose", [xs[1]], perm=[rank - 1, rank - 2, *range(rank - 2)])
    pads = [p[0] for p in a["paddings"]] + [p[1] for p in a["paddings"]]
    y = g.one("Conv", [x, w], strides=list(a["stride"]), dilations=list(a["dilation"]),
              pads=pads, group=a["groups"])
    return [g.one("Transpose", [y], perm=_to_channels_last(rank))]


def _conv_transpose(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """Filter ``[KH, KW, F, C]`` -> ONNX ``(C_in, C_out, KH, KW)``; paddings crop."""
    x = g.one("Transpose", [xs[0]], perm=[0, 3, 1, 2])
    w = g.one("Transpose", [xs[1]], perm=[3, 2, 0, 1])
    pads = [p[0] for p in a["paddings"]] + [p[1] for p in a["paddings"]]
    y = g.one("ConvTranspose", [x, w], strides=list(a["stride"]),
              dilations=list(a["dilation"]), pads=pads,
              output_padding=list(a["output_paddings"]))
    return [g.one("Transpose", [y], perm=[0, 2, 3, 1])]


def _pool(onnx_op: str) -> Build:
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        x = g.one("Transpose", [xs[0]], perm=[0, 3, 1, 2])
        pads = [p[0] for p in a["paddings"]] + [p[1] for p in a["paddings"]]
        extra = ({"count_include_pad": int(a["count_boundary"])}
                 if "count_boundary" in a else {})
        y = g.one(onnx_op, [x], kernel_shape=list(a["kernel_size"]), strides=list(a["stride"]),
                  dilations=list(a["dilation"]), pads=pads, ceil_mode=int(a["ceil_mode"]),
                  **extra)
        return [g.one("Transpose", [y], perm=[0, 2, 3, 1])]
    return build


def _pool_check(n: Node) -> str | None:
    """ORT's pooling kernels reject a padding as large as the kernel ("Pad should be
    smaller than kernel", pool_attributes.h); ONNX drops a ``ceil_mode`` window that would
    start in the right padding ("Sliding windows that would start in the right padded
    region are ignored"), the spec keeps it."""
    size = n.operands[0].type.shape[1:3]
    for ax, length in enumerate(size):
        k, s, d = n.attrs["kernel_size"][ax], n.attrs["stride"][ax], n.attrs["dilation"][ax]
        before, after = n.attrs["paddings"][ax]
        if max(before, after) >= k:
            return (f"padding {(before, after)} not smaller than the kernel ({k}): ONNX "
                    "Runtime's pooling rejects it (\"Pad should be smaller than kernel\")")
        if not n.attrs["ceil_mode"]:
            continue
        span = length + before + after - d * (k - 1) - 1
        windows = -(-span // s) + 1
        if (windows - 1) * s >= length + before:
            return ("ceil_mode window starting in the right padding: ONNX pooling drops it "
                    "(\"Sliding windows that would start in the right padded region are "
                    "ignored\"), the spec keeps it")
    return None


#: coordinate_transform_mode -> ONNX Resize coordinate_transformation_mode
COORDINATES = {"half_pixel": "half_pixel", "align_corners": "align_corners",
               "asymmetric": "asymmetric", "half_pixel_1D": "pytorch_half_pixel"}
#: round_mode -> ONNX Resize nearest_mode
ROUNDING = {"HalfDown": "round_prefer_floor", "HalfUp": "round_prefer_ceil",
            "Floor": "floor", "Ceil": "ceil"}


def _resize(mode: str) -> Build:
    def build(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
        kw: dict[str, Any] = {"mode": mode}
        if mode == "cubic":
            kw.update(coordinate_transformation_mode="half_pixel", cubic_coeff_a=-0.75,
                      exclude_outside=0)
        else:
            kw["coordinate_transformation_mode"] = COORDINATES[a["coordinate_transform_mode"]]
        if mode == "nearest":
            kw["nearest_mode"] = ROUNDING[a["round_mode"]]
        return [g.one("Resize", [xs[0], "", "", g.ints(a["shape"])], **kw)]
    return build


def _resize_check(n: Node) -> str | None:
    if not n.attrs["shape"]:
        return ("a rank-0 input: ONNX Resize reads an empty `sizes` as absent (\"Either "
                "`sizes` or `scales` must be provided\")")
    if 0 in n.operands[0].type.shape or 0 in n.attrs["shape"]:
        return ("an empty axis: ONNX Resize's scale (output / input length) is 0 or 0 / 0 "
                "(ORT: \"Scale value should be greater than 0\")")
    return None


def _linear_check(n: Node) -> str | None:
    """ORT's linear Resize runs on 2-D and 3-D inputs, 4-D ones resizing axes 2-3 or 1-2
    only, and 5-D ones resizing axes 2-4 only (upsamplebase.h ScalesValidation)."""
    why = _resize_check(n)
    if why is not None:
        return why
    shape, out = n.operands[0].type.shape, n.attrs["shape"]
    resized = {k for k, (a, b) in enumerate(zip(shape, out, strict=True)) if a != b}
    rank = len(shape)
    if (rank in (2, 3) or (rank == 4 and (resized <= {2, 3} or resized <= {1, 2}))
            or (rank == 5 and resized <= {2, 3, 4})):
        return None
    return (f"linear resize of axes {sorted(resized)} of a rank-{rank} input: ORT's linear "
            "Resize supports 2-D and 3-D inputs, 4-D ones resizing axes 2-3 or 1-2, 5-D ones "
            "axes 2-4 (\"'Linear' mode only supports ...\")")


def _store(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    g.env[n.operands[0]] = xs[1]  # the buffer's contents are now the source's value
    return []


def _store_slice(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    """``ScatterND`` of the source at the region's element indices (computed here from the
    static shape, numpy's slice semantics); an empty region changes nothing."""
    shape = n.operands[0].type.shape
    if not shape:  # a rank-0 buffer: the region is its one element
        g.env[n.operands[0]] = xs[1]
        return []
    grid = np.moveaxis(np.indices(shape, dtype=np.int64), 0, -1)
    idx = grid[tuple(slice(*t) for t in n.attrs["slices"])]
    if idx.size == 0:
        return []
    g.env[n.operands[0]] = g.one("ScatterND", [xs[0], g.const(idx, DType.int64), xs[1]])
    return []


def _buffer_create(g: OnnxGraph, xs: list[str], a: dict[str, Any], n: Node) -> list[str]:
    dt: DType = a["dtype"]
    return [g.const(np.zeros(a["shape"], dt.to_numpy()), dt)]


F_GELU = frozenset({"float32", "float16"})


def _gelu_check(n: Node) -> str | None:
    mode = n.attrs["approximate"]
    if mode == "quick":
        return "approximate='quick' (x * sigmoid(1.702 x)): no ONNX Gelu mode"
    if mode == "none" and _dtype(n).name == "float64":
        return "Gelu(approximate='none') on float64: no ONNX Runtime 1.32 CPU kernel"
    return None


_SCATTER_ND_CHECK = _rank0("a rank-0 x: ORT's ScatterND rejects it (\"input tensor and "
                           "indices tensor must have rank larger than 0\")")

#: The op table: registry op name -> its ONNX form. Ops absent here are refused.
OPS: dict[str, OnnxOp] = {
    # elementwise, unary
    **{name: OnnxOp(_op(onnx_op), F3, onnx_op) for name, onnx_op in (
        ("ceil", "Ceil"), ("floor", "Floor"), ("round", "Round"), ("exp", "Exp"),
        ("log", "Log"), ("sin", "Sin"), ("cos", "Cos"), ("tanh", "Tanh"), ("sqrt", "Sqrt"),
        ("sigmoid", "Sigmoid"), ("relu", "Relu"))},
    "atanh": OnnxOp(_op("Atanh"), frozenset({"float32", "float16"}), "Atanh"),
    "erf": OnnxOp(_op("Erf"), frozenset({"float32", "float16"}), "Erf"),
    "gelu": OnnxOp(lambda g, xs, a, n: [g.one("Gelu", xs, approximate=a["approximate"])],
                   F3, "Gelu", _gelu_check),
    "abs": OnnxOp(_op("Abs"), F3 | INTS, "Abs"),
    "negate": OnnxOp(_op("Neg"), F3 | SIGNED, "Neg"),
    "is_nan": OnnxOp(_op("IsNaN"), F3 | {"bfloat16"}, "IsNaN"),
    "is_inf": OnnxOp(_op("IsInf"), F3 | {"bfloat16"}, "IsInf"),
    "logical_not": OnnxOp(_op("Not"), frozenset({"bool"}), "Not"),
    "cast": OnnxOp(_cast, ALL, "Cast (saturate=0 to float8)"),
    # elementwise, binary (operands already broadcast and promoted by lowering)
    **{name: OnnxOp(_op(onnx_op), F3 | INTS, onnx_op) for name, onnx_op in (
        ("add", "Add"), ("sub", "Sub"), ("mul", "Mul"))},
    "div": OnnxOp(_op("Div"), F3, "Div"),
    "floor_div": OnnxOp(_floor_div, INTS, "Div, Mul, Sub, Less, Xor (floor of the "
                        "truncated quotient); divisor guard"),
    "mod": OnnxOp(_mod, F3 | INTS, "Mod(fmod=0); integer divisor guard"),
    "pow": OnnxOp(_op("Pow"), F3 | {"int32", "int64"}, "Pow"),
    "max": OnnxOp(_bool_or("Max", "Or"),
                  F3 | {"int8", "int32", "int64", "uint8", "uint32", "uint64", "bool"},
                  "Max (bool: Or)"),
    "min": OnnxOp(_bool_or("Min", "And"),
                  F3 | {"int8", "int32", "int64", "uint8", "uint32", "uint64", "bool"},
                  "Min (bool: And)"),
    "equal": OnnxOp(_op("Equal"), F3 | INTS | {"bool"}, "Equal"),
    "not_equal": OnnxOp(_not_equal, F3 | INTS | {"bool"}, "Not(Equal)"),
    "greater": OnnxOp(_op("Greater"), F3 | INTS, "Greater"),
    "greater_equal": OnnxOp(_op("GreaterOrEqual"), F3 | INTS, "GreaterOrEqual"),
    **{name: OnnxOp(_op(onnx_op), frozenset({"bool"}), onnx_op) for name, onnx_op in (
        ("logical_and", "And"), ("logical_or", "Or"), ("logical_xor", "Xor"))},
    "select": OnnxOp(_op("Where"), F3 | {"int8", "int32", "int64", "uint8", "uint32"},
                     "Where"),
    # creation
    "constant": OnnxOp(_constant, ALL, "initializer (exact bytes)"),
    "range": OnnxOp(_range, F3 | {"int16", "int32", "int64"}, "Range", _float_range),
    # shape and data movement
    "broadcast_to": OnnxOp(lambda g, xs, a, n: [g.one("Expand", [xs[0], g.ints(a["shape"])])],
                           MOVE - {"bfloat16"}, "Expand"),
    "reshape": OnnxOp(lambda g, xs, a, n: [g.one("Reshape", [xs[0], g.ints(a["shape"])],
                                                 allowzero=1)], ALL, "Reshape(allowzero=1)"),
    "permute": OnnxOp(lambda g, xs, a, n: [g.one("Transpose", xs, perm=list(a["perm"]))],
                      ALL, "Transpose"),
    "squeeze": OnnxOp(lambda g, xs, a, n: [g.one("Squeeze", [xs[0], g.ints([a["axis"]])])],
                      MOVE, "Squeeze"),
    "unsqueeze": OnnxOp(lambda g, xs, a, n: [g.one("Unsqueeze",
                                                   [xs[0], g.ints([a["axis"]])])],
                        MOVE, "Unsqueeze"),
    "concat": OnnxOp(_axis_op("Concat"), MOVE, "Concat"),
    "split": OnnxOp(_split, MOVE, "Split"),
    "tile": OnnxOp(lambda g, xs, a, n: [g.one("Tile", [xs[0], g.ints(a["repeats"])])],
                   MOVE - {"bfloat16"}, "Tile"),
    "slice": OnnxOp(_slice, MOVE, "Slice"),
    "pad": OnnxOp(_pad, MOVE - {"int16", "uint16"}, "Pad", _pad_check),
    "gather": OnnxOp(_gather, MOVE, "Gather; index guard", _index_check(1)),
    "transfer": OnnxOp(_op("Identity"), ALL, "Identity (cpu:0 to cpu:0 only)"),
    # indexing
    "gather_nd": OnnxOp(_gather_nd, MOVE, "GatherND; index guard"),
    "gather_sum": OnnxOp(_gather_sum, F3 | {"int32", "int64"}, "Gather, ReduceSum; index guard",
                         _index_check(1, axis=0)),
    "scatter": OnnxOp(_scatter("none"), MOVE, "ScatterElements; index guard", _index_check(2)),
    **{f"scatter_{r}": OnnxOp(_scatter(r), F3 - {"float16"} | INTS,
                              f"ScatterElements(reduction={r}); index guard", _index_check(2))
       for r in ("add", "mul", "max", "min")},
    "scatter_nd": OnnxOp(_scatter_nd("none"), MOVE, "ScatterND; index guard", _SCATTER_ND_CHECK),
    **{f"scatter_nd_{r}": OnnxOp(_scatter_nd(r), F3 - {"float16"} | INTS,
                                 f"ScatterND(reduction={r}); index guard", _SCATTER_ND_CHECK)
       for r in ("add", "mul", "max", "min")},
    "argsort": OnnxOp(_argsort, F3 | {"int8", "int16", "int32", "int64", "uint8"},
                      "TopK(k=n).indices"),
    # reductions
    "top_k": OnnxOp(_top_k(1), F3 | {"int8", "int16", "int32", "int64", "uint8"},
                    "TopK(largest=1)"),
    "bottom_k": OnnxOp(_top_k(0), F3 | {"int8", "int16", "int32", "int64", "uint8"},
                       "TopK(largest=0)"),
    "argmax": OnnxOp(_arg("ArgMax"), F3 | {"int8", "int32", "int64", "uint8"}, "ArgMax"),
    "argmin": OnnxOp(_arg("ArgMin"), F3 | {"int8", "int32", "int64", "uint8"}, "ArgMin"),
    "reduce_sum": OnnxOp(_reduce("ReduceSum"), F3 | {"int32", "int64"}, "ReduceSum"),
    "reduce_mean": OnnxOp(_reduce("ReduceMean"), F3, "ReduceMean"),
    "reduce_prod": OnnxOp(_reduce("ReduceProd"), F3 | {"int32", "int64"}, "ReduceProd"),
    "reduce_max": OnnxOp(_reduce("ReduceMax"),
                         F3 | {"int8", "int32", "int64", "uint8", "bool"}, "ReduceMax"),
    "reduce_min": OnnxOp(_reduce("ReduceMin"),
                         F3 | {"int8", "int32", "int64", "uint8", "bool"}, "ReduceMin"),
    "cumsum": OnnxOp(_cumsum, F3 | {"int32", "int64"}, "CumSum"),
    "softmax": OnnxOp(_axis_op("Softmax"), F3, "Softmax"),
    "logsoftmax": OnnxOp(_axis_op("LogSoftmax"), F3, "LogSoftmax"),
    # linalg, normalization, convolution, pooling, resize
    "matmul": OnnxOp(_op("MatMul"), F3 | {"int32", "int64", "uint32", "uint64"}, "MatMul"),
    "band_part": OnnxOp(_band_part, F3 | {"int32", "int64"},
                        "Trilu (exclude: Where on a Trilu mask)"),
    "layer_norm": OnnxOp(_layer_norm, F3 | {"bfloat16"}, "LayerNormalization", _norm_check),
    "rms_norm": OnnxOp(_rms_norm, F3, "RMSNormalization", _rms_check),
    "group_norm": OnnxOp(_group_norm, F3, "GroupNormalization"),
    "conv2d": OnnxOp(_conv, frozenset({"float32", "float16"}), "Transpose, Conv, Transpose"),
    "conv3d": OnnxOp(_conv, frozenset({"float32", "float16"}), "Transpose, Conv, Transpose"),
    "conv2d_transpose": OnnxOp(_conv_transpose, frozenset({"float32", "float16"}),
                               "Transpose, ConvTranspose, Transpose"),
    "max_pool2d": OnnxOp(_pool("MaxPool"), F3 | {"int8", "uint8"}, "MaxPool", _pool_check),
    "avg_pool2d": OnnxOp(_pool("AveragePool"), frozenset({"float32", "float16"}),
                         "AveragePool", _pool_check),
    "resize_nearest": OnnxOp(_resize("nearest"),
                             frozenset({"float32", "float16", "int8", "int32", "uint8"}),
                             "Resize(nearest)", _resize_check),
    "resize_linear": OnnxOp(_resize("linear"), frozenset({"float32", "float16"}),
                            "Resize(linear)", _linear_check),
    "resize_bicubic": OnnxOp(_resize("cubic"), frozenset({"float32", "float16"}),
                             "Resize(cubic, a=-0.75)", _resize_check),
    # buffers
    "buffer_load": OnnxOp(lambda g, xs, a, n: [xs[0]], ALL, "(the buffer's current value)"),
    "buffer_store": OnnxOp(_store, ALL, "(a new value of the buffer)"),
    "buffer_store_slice": OnnxOp(_store_slice, MOVE, "ScatterND"),
    "buffer_create": OnnxOp(_buffer_create, ALL, "initializer of zeros"),
}

#: Registry ops deliberately not mapped, with the reason (the refusal message says it).
UNMAPPED: dict[str, str] = {
    "trunc": "no ONNX operator; a composite selects with Where, whose X branch turns -0.0 "
             "into +0.0 in ORT 1.32 (the select-signed-zero divergence)",
    "log1p": "no ONNX operator; Log(1 + x) loses the accuracy near 0 that defines log1p",
    "rsqrt": "no ONNX operator; Reciprocal(Sqrt(x)) rounds twice",
    "silu": "ONNX Swish (opset 24) has no ONNX Runtime 1.32 CPU kernel; x * Sigmoid(x) "
            "rounds twice",
    "roi_align": "ONNX RoiAlign-22 (the opset-28 form) has no ONNX Runtime 1.32 CPU kernel",
    "random_normal": "ONNX's RandomNormal is another generator than RNG-n's Philox",
    "random_uniform": "ONNX's RandomUniform is another generator than RNG-n's Philox",
    "debug_print": "no ONNX operator prints",
    "allgather": "multi-device collective", "allreduce_sum": "multi-device collective",
    "reducescatter_sum": "multi-device collective",
    "distributed_broadcast": "multi-device collective",
    "distributed_scatter": "multi-device collective",
}


def refusal(graph: Graph) -> str | None:
    """Why the ONNX Runtime peer refuses the lowered ``graph`` (EXEC-2), or None."""
    return table_refusal(graph, "ONNX Runtime", OPS, UNMAPPED, note=lambda row: row.onnx)


@dataclass(frozen=True)
class Translation:
    """The model's bytes, and which graph outputs hold the final contents of which buffer
    inputs (``(input position, output name)``, after the graph's own outputs)."""

    model: bytes
    outputs: list[str]
    writebacks: list[tuple[int, str]]


def _value_info(name: str, v: Value) -> Any:
    from onnx import helper
    return helper.make_tensor_value_info(name, ONNX_TYPES[v.type.dtype.name],
                                         list(v.type.shape))


def translate(graph: Graph) -> Translation:
    """The ONNX model of the lowered ``graph`` (``refusal`` already checked)."""
    from onnx import helper
    g = OnnxGraph()
    inputs = []
    for i, v in enumerate(graph.inputs):
        g.env[v] = f"in{i}"
        inputs.append(_value_info(f"in{i}", v))
    for node in graph.nodes:
        xs = [g.env[v] for v in node.operands]
        outs = OPS[node.op.name].build(g, xs, dict(node.attrs), node)
        for r, name in zip(node.results, outs, strict=True):
            g.env[r] = name
    outputs, infos = [], []
    for v in graph.outputs or ():
        outputs.append(g.one("Identity", [g.env[v]]))
        infos.append(_value_info(outputs[-1], v))
    writebacks = []
    for i, v in enumerate(graph.inputs):
        if isinstance(v.type, BufferType) and g.env[v] != f"in{i}":
            writebacks.append((i, g.one("Identity", [g.env[v]])))
            infos.append(_value_info(writebacks[-1][1], v))
    onnx_graph = helper.make_graph(g.nodes, graph.name or "g", inputs, infos,
                                   initializer=g.inits)
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="eager-conformance")
    return Translation(model.SerializeToString(), outputs, writebacks)
