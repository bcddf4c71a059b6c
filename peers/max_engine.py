"""Modular MAX 26.7 as a peer executor: a lowered graph (spec/graph.md GRAPH-20..23) is
translated to a ``max.graph.Graph`` (``TensorType``/``BufferType`` inputs of the same
dtypes and shapes) and run by MAX's own executors:

- ``MaxInterpreterExecutor``: ``max.experimental.executor.InterpreterExecutor`` (MAX's MO
  interpreter, one small compiled kernel per (op, dtype), cached on disk under
  ``MODULAR_DERIVED_PATH``; warm it first: ``python -m peers.max_engine warm``), one
  translated ``max.graph.Graph`` per graph structure;
- ``MaxCompilingExecutor``: ``InferenceSession.load`` (MAX's graph compiler), one compiled
  model per graph structure.

Both cache per instance by the structural key (``PlanCache``, LRU): a repeated structure is
neither translated nor compiled again.

Arrays cross by DLPack (``Buffer.from_dlpack``): ``BufferType`` inputs are the caller's
own memory, so MAX's stores reach it (EXEC-6). Results are copied out (EXEC-5).

Refusals (``UnsupportedGraphError``, EXEC-2/3) are decided before anything runs, from the
op table ``OPS`` (data: registry op name -> MAX builder, dtypes it is mapped for, attribute
limits) and the dtype rules below; the reason is in the message. MAX's interpreter can also
refuse at dispatch (``UnsupportedOpVariant`` for an (op, dtype) outside a kernel family):
then the buffer inputs are restored byte for byte from a snapshot taken before the call, so
the refusal still leaves no side effect (EXEC-3); a graph without a storing node takes none.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.errors import ExecutorUnavailableError, UnsupportedGraphError
from interpreter.executor import PlanCache, validate_inputs
from interpreter.graph.core import Graph, Node, Value
from interpreter.graph.key import structural_key
from interpreter.graph.lowering import lowered
from interpreter.types import BufferType
from peers.max_aot import AotStore, store_from_env
from peers.table import data_dtypes, table_refusal

__all__ = ["CACHE_DIR", "FLOAT_16_8", "OPS", "MaxCompilingExecutor",
           "MaxInterpreterExecutor", "MaxOp", "max_available", "refusal"]

MAX_VERSION = "26.7.0"

#: Where ``warm`` puts MAX's kernel cache unless ``MODULAR_DERIVED_PATH`` is set.
CACHE_DIR = Path(os.environ.get("EAGER_MAX_CACHE",
                                Path.home() / ".cache" / "eager-conformance" / "max"))

F_ALL = frozenset({"float32", "float64", "float16", "bfloat16"})
F8 = frozenset({"float8_e4m3fn", "float8_e5m2"})
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
UNSIGNED = frozenset({"uint8", "uint16", "uint32", "uint64"})
INTS = SIGNED | UNSIGNED
NUMERIC = F_ALL | INTS
ANY = NUMERIC | F8 | {"bool"}
#: 16- and 8-bit floats: no CPU kernels in MAX's interpreter (refused by it, run compiled).
FLOAT_16_8 = frozenset({"float16", "bfloat16"}) | F8


@dataclass(frozen=True)
class MaxOp:
    """One row of the op table: how a registry op becomes MAX ops.

    ``build(ops, operands, attrs, node)`` returns the MAX values of the node's results.
    ``dtypes``: the data dtypes (of every operand and result) it is mapped for.
    ``check(node)``: a reason to refuse this node (an attribute MAX cannot express), or None.
    """

    build: Callable[..., Any]
    dtypes: frozenset[str] = ANY
    check: Callable[[Node], str | None] | None = None
    #: a reason MAX's interpreter (only) cannot run this node, or None
    interp_check: Callable[[Node], str | None] | None = None
    #: a reason MAX's compiler (only) cannot compile this node, or None
    compile_check: Callable[[Node], str | None] | None = None


def _unary(name: str) -> Callable[..., Any]:
    return lambda ops, xs, a, n: getattr(ops, name)(xs[0])


def _binary(name: str) -> Callable[..., Any]:
    return lambda ops, xs, a, n: getattr(ops, name)(xs[0], xs[1])


def _axis(name: str) -> Callable[..., Any]:
    return lambda ops, xs, a, n: getattr(ops, name)(xs[0], axis=a["axis"])


def _last_axis(name: str) -> Callable[..., Any]:
    """``softmax``/``logsoftmax`` with the axis made non-negative: MAX 26.7's compiled
    kernels fail to compile for a negative axis other than -1 (``axis=-2`` of a rank-2
    input: "function instantiation failed", an out-of-bounds ``IntTuple`` index in
    ``reductions.mojo``), while the same axis given as ``0`` compiles and is right
    (``peers/reports/max/softmax-negative-axis``)."""
    def build(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
        rank = len(n.operands[0].type.shape)
        return getattr(ops, name)(xs[0], axis=a["axis"] % rank if rank else a["axis"])
    return build


def _none_if_neg(v: int) -> int | None:
    return None if v < 0 else v


def _slice(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    return ops.slice_tensor(xs[0], [slice(*t) for t in a["slices"]])


def _pad(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    flat = [p for pair in a["paddings"] for p in pair]
    return ops.pad(xs[0], flat, mode=a["mode"], value=a["value"])


def _pool(name: str) -> Callable[..., Any]:
    def build(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
        kw: dict[str, Any] = {"stride": tuple(a["stride"]), "dilation": tuple(a["dilation"]),
                              "padding": tuple(p[0] for p in a["paddings"]),
                              "ceil_mode": a["ceil_mode"]}
        if "count_boundary" in a:
            kw["count_boundary"] = a["count_boundary"]
        return getattr(ops, name)(xs[0], tuple(a["kernel_size"]), **kw)
    return build


def _symmetric_pool(n: Node) -> str | None:
    if any(p[0] != p[1] for p in n.attrs["paddings"]):
        return "asymmetric pooling paddings (MAX's pool ops take one padding per axis)"
    return None


def _conv2d(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    (t, b), (lft, r) = a["paddings"]
    return ops.conv2d(xs[0], xs[1], stride=tuple(a["stride"]), dilation=tuple(a["dilation"]),
                      padding=(t, b, lft, r), groups=a["groups"])


def _band(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    return ops.band_part(xs[0], _none_if_neg(a["num_lower"]), _none_if_neg(a["num_upper"]),
                         exclude=a["exclude"])


def _buffer_create(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    from max.graph import BufferType as MBufferType
    from max.graph import DeviceRef as MDeviceRef
    return ops.buffer_create(MBufferType(_mdtype(a["dtype"]), a["shape"], MDeviceRef.CPU()))


def _constant(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    from max.graph import DeviceRef as MDeviceRef
    # one private C-ordered copy (np.ascontiguousarray would make a rank-0 value (1,))
    value = np.array(a["value"], order="C")
    dt = n.results[0].type.dtype
    if dt.name in FLOAT_16_8:  # ml_dtypes arrays have no DLPack: pass the bits, view back
        from max.driver import Buffer
        bits = value.view(f"u{value.dtype.itemsize}")
        return ops.constant(Buffer.from_dlpack(bits).view(_mdtype(dt)), _mdtype(dt),
                            MDeviceRef.CPU())
    return ops.constant(value, _mdtype(dt), MDeviceRef.CPU())


def _range(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    from max.graph import DeviceRef as MDeviceRef
    dt = _mdtype(a["dtype"])
    return ops.range(a["start"], a["stop"], a["step"], out_dim=n.results[0].type.shape[0],
                     dtype=dt, device=MDeviceRef.CPU())


def _gelu_check(n: Node) -> str | None:
    return None if n.attrs["approximate"] in ("none", "tanh", "quick") else "gelu mode"


def _store(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    ops.buffer_store(xs[0], xs[1])
    return []


def _store_slice(ops: Any, xs: list[Any], a: dict[str, Any], n: Node) -> Any:
    ops.buffer_store_slice(xs[0], xs[1], [slice(*t) for t in a["slices"]])
    return []


#: The op table: registry op name -> its MAX form. Ops absent here are refused.
OPS: dict[str, MaxOp] = {
    # elementwise, unary
    **{name: MaxOp(_unary(name), F_ALL) for name in (
        "ceil", "cos", "erf", "exp", "floor", "log", "log1p", "round", "rsqrt", "sigmoid",
        "silu", "sin", "sqrt", "tanh", "trunc", "atanh", "relu")},
    "is_nan": MaxOp(_unary("is_nan"), F_ALL | {"bool"}),
    "is_inf": MaxOp(_unary("is_inf"), F_ALL | {"bool"}),
    "abs": MaxOp(_unary("abs"), NUMERIC),
    "negate": MaxOp(_unary("negate"), F_ALL | SIGNED),
    "logical_not": MaxOp(_unary("logical_not"), frozenset({"bool"})),
    "gelu": MaxOp(lambda ops, xs, a, n: ops.gelu(xs[0], approximate=a["approximate"]), F_ALL,
                  _gelu_check),
    "cast": MaxOp(lambda ops, xs, a, n: ops.cast(xs[0], _mdtype(a["dtype"]))),
    # elementwise, binary (operands already broadcast and promoted by lowering)
    **{name: MaxOp(_binary(name), NUMERIC) for name in ("add", "sub", "mul", "pow")},
    "div": MaxOp(_binary("div"), F_ALL),
    # integer floor_div/mod: translate guards the divisor first (_guard_int_division)
    "floor_div": MaxOp(_binary("floor_div"), NUMERIC),
    "mod": MaxOp(_binary("mod"), NUMERIC),
    "max": MaxOp(_binary("max"), NUMERIC | {"bool"}),
    "min": MaxOp(_binary("min"), NUMERIC | {"bool"}),
    **{name: MaxOp(_binary(name), ANY) for name in ("equal", "not_equal")},
    **{name: MaxOp(_binary(name), NUMERIC | {"bool"}) for name in ("greater",
                                                                   "greater_equal")},
    **{name: MaxOp(_binary(name), frozenset({"bool"})) for name in (
        "logical_and", "logical_or", "logical_xor")},
    "select": MaxOp(lambda ops, xs, a, n: ops.where(xs[0], xs[1], xs[2])),
    # creation
    "constant": MaxOp(_constant),
    "range": MaxOp(_range, NUMERIC),
    # shape and data movement
    "broadcast_to": MaxOp(lambda ops, xs, a, n: ops.broadcast_to(xs[0], a["shape"])),
    "reshape": MaxOp(lambda ops, xs, a, n: ops.reshape(xs[0], a["shape"])),
    "permute": MaxOp(lambda ops, xs, a, n: ops.permute(xs[0], list(a["perm"]))),
    "squeeze": MaxOp(_axis("squeeze")),
    "unsqueeze": MaxOp(_axis("unsqueeze")),
    "concat": MaxOp(lambda ops, xs, a, n: ops.concat(xs, axis=a["axis"])),
    "split": MaxOp(lambda ops, xs, a, n: ops.split(xs[0], list(a["sizes"]), axis=a["axis"])),
    "tile": MaxOp(lambda ops, xs, a, n: ops.tile(xs[0], list(a["repeats"]))),
    "slice": MaxOp(_slice),
    "pad": MaxOp(_pad),
    "gather": MaxOp(lambda ops, xs, a, n: ops.gather(xs[0], xs[1], axis=a["axis"])),
    "gather_nd": MaxOp(lambda ops, xs, a, n: ops.gather_nd(xs[0], xs[1],
                                                           batch_dims=a["batch_dims"])),
    "scatter": MaxOp(lambda ops, xs, a, n: ops.scatter(xs[0], xs[1], xs[2], axis=a["axis"])),
    **{name: MaxOp(lambda ops, xs, a, n, _m=name: getattr(ops, _m)(xs[0], xs[1], xs[2],
                                                                  axis=a["axis"]), NUMERIC)
       for name in ("scatter_add", "scatter_max", "scatter_min", "scatter_mul")},
    "scatter_nd": MaxOp(lambda ops, xs, a, n: ops.scatter_nd(xs[0], xs[1], xs[2])),
    **{name: MaxOp(lambda ops, xs, a, n, _m=name: getattr(ops, _m)(xs[0], xs[1], xs[2]),
                   NUMERIC)
       for name in ("scatter_nd_add", "scatter_nd_max", "scatter_nd_min", "scatter_nd_mul")},
    # reductions
    "reduce_sum": MaxOp(lambda ops, xs, a, n: ops.sum(xs[0], axis=a["axis"]), NUMERIC),
    "reduce_mean": MaxOp(lambda ops, xs, a, n: ops.mean(xs[0], axis=a["axis"]), F_ALL),
    "reduce_prod": MaxOp(lambda ops, xs, a, n: ops.prod(xs[0], axis=a["axis"]), NUMERIC),
    "reduce_max": MaxOp(lambda ops, xs, a, n: ops.max(xs[0], axis=a["axis"]),
                        NUMERIC | {"bool"}),
    "reduce_min": MaxOp(lambda ops, xs, a, n: ops.min(xs[0], axis=a["axis"]),
                        NUMERIC | {"bool"}),
    # bool: MAX refuses it (interpreter: UnsupportedOpVariant at dispatch; compiler:
    # "constraint failed: ArgMin requires a numeric dtype")
    "argmax": MaxOp(_axis("argmax"), NUMERIC),
    "argmin": MaxOp(_axis("argmin"), NUMERIC),
    "cumsum": MaxOp(lambda ops, xs, a, n: ops.cumsum(xs[0], axis=a["axis"],
                                                     exclusive=a["exclusive"],
                                                     reverse=a["reverse"]), NUMERIC),
    "softmax": MaxOp(_last_axis("softmax"), F_ALL),
    "logsoftmax": MaxOp(_last_axis("logsoftmax"), F_ALL),
    "top_k": MaxOp(lambda ops, xs, a, n: list(ops.top_k(xs[0], a["k"], axis=a["axis"])),
                   NUMERIC),
    "bottom_k": MaxOp(lambda ops, xs, a, n: list(ops.bottom_k(xs[0], a["k"],
                                                              axis=a["axis"])), NUMERIC),
    "argsort": MaxOp(lambda ops, xs, a, n: ops.argsort(xs[0], ascending=a["ascending"]),
                     NUMERIC),
    # linalg, normalization, convolution, pooling
    "matmul": MaxOp(_binary("matmul"), NUMERIC),
    "band_part": MaxOp(_band),
    "layer_norm": MaxOp(lambda ops, xs, a, n: ops.layer_norm(xs[0], xs[1], xs[2],
                                                             epsilon=a["epsilon"]), F_ALL),
    "rms_norm": MaxOp(lambda ops, xs, a, n: ops.rms_norm(
        xs[0], xs[1], a["epsilon"], weight_offset=a["weight_offset"],
        multiply_before_cast=a["multiply_before_cast"]), F_ALL),
    "group_norm": MaxOp(lambda ops, xs, a, n: ops.group_norm(
        xs[0], xs[1], xs[2], a["num_groups"], a["epsilon"]), F_ALL, compile_check=lambda n: (
            "MAX 26.7's compiled group_norm kernel requires input rank 3 or 4 (compile "
            "error: 'constraint failed: group_norm requires input rank of 3 or 4')"
            if len(n.operands[0].type.shape) not in (3, 4) else None)),
    "conv2d": MaxOp(_conv2d, F_ALL | {"int32", "int64"}, interp_check=lambda n: (
        "MAX's interpreter conv supports groups == 1 only (NotImplementedError at run time)"
        if n.attrs["groups"] != 1 else None)),
    "max_pool2d": MaxOp(_pool("max_pool2d"), NUMERIC | {"bool"}, _symmetric_pool),
    "avg_pool2d": MaxOp(_pool("avg_pool2d"), F_ALL, _symmetric_pool),
    # buffers
    "buffer_load": MaxOp(lambda ops, xs, a, n: ops.buffer_load(xs[0])),
    "buffer_store": MaxOp(_store),
    "buffer_store_slice": MaxOp(_store_slice),
    "buffer_create": MaxOp(_buffer_create),
}

#: Registry ops deliberately not mapped, with the reason (the refusal message says it).
UNMAPPED: dict[str, str] = {
    "random_normal": "MAX's RNG (ops.random) is another generator than RNG-n's; values "
                     "cannot agree",
    "random_uniform": "MAX's RNG (ops.random) is another generator than RNG-n's",
    "debug_print": "prints; MAX's print op has another output format",
    "transfer": "CPU-only peer (MAX has one CPU device)",
    "allgather": "multi-device collective", "allreduce_sum": "multi-device collective",
    "reducescatter_sum": "multi-device collective",
    "distributed_broadcast": "multi-device collective",
    "distributed_scatter": "multi-device collective",
    "gather_sum": "no max.graph builder", "conv3d": "not mapped yet",
    "conv2d_transpose": "not mapped yet", "resize_linear": "not mapped yet",
    "resize_nearest": "not mapped yet", "resize_bicubic": "not mapped yet",
    "roi_align": "not mapped yet",
}


def max_available() -> str | None:
    """None when ``max`` imports, else why not."""
    try:
        import max.graph  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the environment
        return f"{type(e).__name__}: {e}"
    return None


def _mdtype(dt: DType) -> Any:
    from max.dtype import DType as MDType
    return MDType[dt.name]


def _dtypes_of(node: Node) -> set[str]:
    return {v.type.dtype.name for v in (*node.operands, *node.results)}


#: ``op@dtype,...``: (op, data dtype) pairs this run refuses, for cells that hang MAX (a call
#: that never returns stops a worker without ``--conformance-isolate``); run them apart
#: under ``--conformance-isolate``, whose timeout ends the hung call (``peers/README.md``).
REFUSE_ENV = "EAGER_MAX_REFUSE"


def _peer_checks(interpreter: bool) -> Callable[[Node, MaxOp], str | None]:
    """What MAX refuses beyond its table's rows: the (op, dtype) pairs listed in
    ``EAGER_MAX_REFUSE`` (read once per graph), 16- and 8-bit floats on its interpreter, 8-bit
    floats on its compiler, then the row's interpreter- or compiler-only check."""
    listed = {p.strip() for p in os.environ.get(REFUSE_ENV, "").split(",") if p.strip()}

    def more(node: Node, row: MaxOp) -> str | None:
        hit = sorted({f"{node.op.name}@{d}" for d in data_dtypes(node)} & listed)
        if hit:
            return f"{hit[0]} is listed in {REFUSE_ENV} (run apart)"
        if interpreter:
            low = sorted(_dtypes_of(node) & FLOAT_16_8)
            if low:
                return (f"MAX's interpreter has no CPU kernels for 16- and 8-bit floats "
                        f"({', '.join(low)})")
        f8 = sorted(_dtypes_of(node) & F8)
        if f8:  # MAX 26.7's compiler: "The f8e5m2 data type is not supported on device
            # 'cpu:0'" (a compile error, raised before any kernel runs)
            return f"MAX 26.7 supports no 8-bit float type on its CPU device ({', '.join(f8)})"
        check = row.interp_check if interpreter else row.compile_check
        return check(node) if check is not None else None
    return more


def refusal(graph: Graph, *, interpreter: bool) -> str | None:
    """Why the MAX peer refuses the lowered ``graph`` (EXEC-2), or None. Changes nothing."""
    return table_refusal(graph, "MAX", OPS, UNMAPPED, more=_peer_checks(interpreter))


def _guard_int_division(ops: Any, node: Node, xs: list[Any]) -> list[Any]:
    """Integer ``floor_div``/``mod``: MAX's CPU kernels divide with the hardware ``idiv``,
    which raises SIGFPE (killing the process) for a zero divisor and for MIN // -1. Both
    are unspecified elements here (NUM-3, TOL-2: never compared), so the divisor of those
    elements is replaced by 1 before MAX divides; every other element is MAX's own result.
    """
    dt = node.operands[0].type.dtype
    if dt.name not in INTS:
        return xs
    from max.graph import DeviceRef as MDeviceRef
    mdt = _mdtype(dt)
    lhs, rhs = xs
    zero = ops.constant(0, mdt, MDeviceRef.CPU())
    one = ops.broadcast_to(ops.constant(1, mdt, MDeviceRef.CPU()), rhs.shape)
    bad = ops.equal(rhs, ops.broadcast_to(zero, rhs.shape))
    if dt.name in SIGNED:
        info = np.iinfo(dt.to_numpy())
        lo = ops.broadcast_to(ops.constant(int(info.min), mdt, MDeviceRef.CPU()), lhs.shape)
        m1 = ops.broadcast_to(ops.constant(-1, mdt, MDeviceRef.CPU()), rhs.shape)
        bad = ops.logical_or(bad, ops.logical_and(ops.equal(lhs, lo), ops.equal(rhs, m1)))
    return [lhs, ops.where(bad, one, rhs)]


def translate(graph: Graph, name: str | None = None, module: Any = None) -> Any:
    """The ``max.graph.Graph`` of the lowered ``graph`` (refusal already checked), named
    ``name`` (default: the graph's), built into the ``max.graph.Module`` ``module`` if given
    (several graphs compiled together, ``peers.max_aot``)."""
    from max.graph import BufferType as MBufferType
    from max.graph import DeviceRef as MDeviceRef
    from max.graph import Graph as MGraph
    from max.graph import TensorType as MTensorType
    from max.graph import ops

    types = [(MBufferType if isinstance(v.type, BufferType) else MTensorType)(
        _mdtype(v.type.dtype), v.type.shape, MDeviceRef.CPU()) for v in graph.inputs]
    env: dict[Value, Any] = {}
    extra = {} if module is None else {"module": module}
    with MGraph(name or graph.name or "g", input_types=types, **extra) as mg:
        for v, mv in zip(graph.inputs, mg.inputs, strict=True):
            env[v] = mv if isinstance(v.type, BufferType) else mv.tensor
        for pos, node in enumerate(graph.nodes):
            row = OPS[node.op.name]
            xs = [env[v] for v in node.operands]
            if node.op.name in ("floor_div", "mod"):
                xs = _guard_int_division(ops, node, xs)
            try:
                out = row.build(ops, xs, dict(node.attrs), node)
            except Exception as e:  # MAX's builder rejects the node: refuse, nothing ran
                raise UnsupportedGraphError(
                    f"node {pos}: MAX's builder for {node.op.name} raised "
                    f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
            outs = out if isinstance(out, list | tuple) else [out]
            if len(outs) != len(node.results):
                raise UnsupportedGraphError(f"node {pos}: MAX's {node.op.name} has "
                                            f"{len(outs)} results, expected "
                                            f"{len(node.results)}")
            for r, mv in zip(node.results, outs, strict=True):
                if isinstance(r.type, BufferType):
                    env[r] = mv
                    continue
                if mv.dtype != _mdtype(r.type.dtype):
                    raise UnsupportedGraphError(
                        f"node {pos}: MAX's {node.op.name} gives {mv.dtype}, expected "
                        f"{r.type.dtype.name}")
                shape = tuple(int(d) for d in mv.shape)
                if shape != tuple(r.type.shape):
                    if int(np.prod(shape)) != int(np.prod(r.type.shape)):
                        raise UnsupportedGraphError(
                            f"node {pos}: MAX's {node.op.name} gives shape {shape}, "
                            f"expected {tuple(r.type.shape)}")
                    mv = ops.reshape(mv, r.type.shape)
                env[r] = mv
        mg.output(*[env[v] for v in graph.outputs or ()])
    return mg


def _to_max(a: np.ndarray, dt: DType) -> Any:
    """A MAX ``Buffer`` on ``a``'s memory (zero-copy: stores reach it). ml_dtypes arrays
    (16- and 8-bit floats) and bool go as their bits, flat, then viewed with the shape
    (``Buffer.view`` needs rank >= 1 to view, hence the flat detour)."""
    from max.driver import Buffer
    if dt.name in FLOAT_16_8 or dt.name == "bool":
        flat = a.reshape(-1).view(f"u{a.dtype.itemsize}")
        return Buffer.from_dlpack(flat).view(_mdtype(dt), tuple(a.shape))
    return Buffer.from_dlpack(a)


def _from_max(b: Any, dt: DType, shape: tuple[int, ...]) -> np.ndarray:
    """A fresh numpy copy of the MAX buffer ``b`` (EXEC-5)."""
    if dt.name in FLOAT_16_8 or dt.name == "bool":
        from max.dtype import DType as MDType
        width = {1: MDType.uint8, 2: MDType.uint16}[np.dtype(dt.to_numpy()).itemsize]
        raw = np.from_dlpack(b.view(width, (int(np.prod(shape)),)))
        return np.array(raw, copy=True).view(dt.to_numpy()).reshape(shape)
    return np.array(np.from_dlpack(b), copy=True)


def _mlir_context() -> Any:
    """MAX's default MLIR context, entered on this thread (``mlir.Context.current`` is
    thread-local: a call from a thread other than the importing one has none; EXEC-8)."""
    from max._mlir_context import ensure_default_mlir_context
    return ensure_default_mlir_context()


def mutates(graph: Graph) -> bool:
    """Whether any node of ``graph`` has a side effect (a store into a buffer input)."""
    for node in graph.nodes:
        if node.op.side_effect:
            return True
    return False


def _snapshot(graph: Graph, arrays: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(buffer input, copy of it)`` for each ``BufferType`` input: what a dispatch-time
    refusal restores (EXEC-3)."""
    return [(a, a.copy()) for v, a in zip(graph.inputs, arrays, strict=True)
            if isinstance(v.type, BufferType)]


@dataclass(frozen=True)
class _Prepared:
    """One cached structure: the MAX form ``_run`` takes and whether the graph stores."""

    built: Any
    mutates: bool


#: One lock for every instance: MAX's graph builder (one MLIR context per process) is not
#: safe to drive from several threads at once (EXEC-8: calls are serialized here).
_MAX_LOCK = threading.RLock()


class _MaxExecutor:
    interpreter = True
    name = "MaxExecutor"

    def __init__(self, cache_size: int = 256) -> None:
        why = max_available()
        if why is not None:
            raise ExecutorUnavailableError(f"{self.name} needs max=={MAX_VERSION} "
                                           f"(pip install -e '.[peer-max]'): {why}")
        import max
        self.__version__ = getattr(max, "__version__", MAX_VERSION)
        self._cache: PlanCache[Hashable, _Prepared] = PlanCache(cache_size)
        self.cache_size = cache_size

    def __repr__(self) -> str:
        return f"{self.name}()"

    def refusal(self, graph: Graph) -> str | None:
        return refusal(lowered(graph), interpreter=self.interpreter)

    def _prepare(self, graph: Graph) -> tuple[Graph, _Prepared]:
        """The lowered copy of ``graph`` and its cached MAX form (built on a miss)."""
        low = lowered(graph)  # a lowered copy; the graph given is not changed (EXEC-15)
        why = refusal(low, interpreter=self.interpreter)
        if why is not None:
            raise UnsupportedGraphError(f"{self.name}: graph {graph.name!r} refused: {why} "
                                        "[EXEC-2]")
        return low, self._cache.get_or_build(structural_key(low),
                                             lambda: self._prepared(graph, low))

    def _prepared(self, graph: Graph, low: Graph) -> _Prepared:
        try:
            with _MAX_LOCK, _mlir_context():  # MAX's graph builder: one thread at a time
                return _Prepared(self._build(low), mutates(low))
        except UnsupportedGraphError as e:
            raise UnsupportedGraphError(f"{self.name}: graph {graph.name!r} refused: {e} "
                                        "[EXEC-2]") from e

    @property
    def compiles(self) -> int:
        """Structures built (cache misses), for tests."""
        return self._cache.builds

    def _build(self, low: Graph) -> Any:
        """What ``_run`` runs for every graph of ``low``'s structure (built once)."""
        raise NotImplementedError

    def _run(self, prepared: Any, low: Graph, bufs: list[Any]) -> Sequence[Any]:
        raise NotImplementedError

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        low, prepared = self._prepare(graph)
        validate_inputs(self.name, low, inputs)  # EXEC-17, before anything runs
        arrays = []
        for v, a in zip(low.inputs, inputs, strict=True):
            if isinstance(v.type, BufferType):
                if not a.flags.c_contiguous:
                    raise UnsupportedGraphError(f"{self.name}: buffer input is not "
                                                "C-contiguous (DLPack needs its memory)")
                arrays.append(a)
            else:  # a private contiguous copy: MAX never sees the caller's read-only input
                arrays.append(np.array(a, copy=True, order="C"))
        # only a graph that stores can leave a side effect to undo (EXEC-3)
        snapshot = _snapshot(low, arrays) if prepared.mutates else []
        bufs = [_to_max(a, v.type.dtype) for v, a in zip(low.inputs, arrays, strict=True)]
        from max.experimental.executor import UnsupportedGraphError as MaxRefusal
        try:
            with _MAX_LOCK, _mlir_context():
                results = self._run(prepared.built, low, bufs)
        except MaxRefusal as e:  # a dispatch-time refusal: undo any store first (EXEC-3)
            for a, before in snapshot:
                a[...] = before
            raise UnsupportedGraphError(f"{self.name}: graph {graph.name!r} refused by MAX "
                                        f"at dispatch: {e} [EXEC-2]") from e
        outs = [_from_max(b, v.type.dtype, tuple(v.type.shape))
                for b, v in zip(results, low.outputs or (), strict=True)]
        return outs


class MaxInterpreterExecutor(_MaxExecutor):
    """Runs graphs through MAX 26.7's ``InterpreterExecutor`` (its MO interpreter)."""

    interpreter = True
    name = "MaxInterpreterExecutor"

    def _build(self, low: Graph) -> Any:
        return translate(low)

    def _run(self, prepared: Any, low: Graph, bufs: list[Any]) -> Sequence[Any]:
        """Run the cached ``max.graph.Graph``: MAX's ``InterpreterExecutor`` lowers its module
        to MO in place on the first call (RMO legalization), a no-op on later calls."""
        from max.experimental.executor import InterpreterExecutor
        return InterpreterExecutor().execute(prepared, bufs)


def _compile_error(e: BaseException) -> str:
    """MAX's compile error in one line: the cause's ``error:`` line (the exception itself
    only says "Failed to compile the model"), with the kernel's ``constraint failed`` note
    when there is one, else its first line."""
    for x in (e.__cause__, e):
        lines = [ln.strip() for ln in (str(x) if x is not None else "").splitlines()]
        errors = [ln for ln in lines if ln.startswith("error:")]
        if errors:
            notes = [ln.split("note: ", 1)[1] for ln in lines if "note: constraint" in ln]
            return f"{type(x).__name__}: {'; '.join(errors[:1] + notes[:1])[:300]}"
    first = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {first[:300]}"


class MaxCompilingExecutor(_MaxExecutor):
    """Compiles graphs with MAX 26.7's ``InferenceSession`` (one model per structure).

    ``aot``: a store of models compiled ahead of time (``peers.max_aot``; default: the one
    env ``EAGER_MAX_AOT`` names, if any): a structure found there is loaded, not compiled.
    """

    interpreter = False
    name = "MaxCompilingExecutor"

    def __init__(self, cache_size: int = 256, aot: AotStore | None = None) -> None:
        super().__init__(cache_size)
        self.aot = aot if aot is not None else store_from_env()

    def __repr__(self) -> str:
        return f"{self.name}(aot={str(self.aot.root) if self.aot else None!r})"

    def _build(self, low: Graph) -> Any:
        if self.aot is not None:
            model = self.aot.model(low.structural_hash())
            if model is not None:
                return model
        from max.experimental.support import _session
        mg = translate(low)
        try:
            return _session().load(mg)
        except Exception as e:  # a compile error: nothing ran yet
            raise UnsupportedGraphError(f"MAX's compiler rejected the graph: "
                                        f"{_compile_error(e)}") from e

    def _run(self, prepared: Any, low: Graph, bufs: list[Any]) -> Sequence[Any]:
        return prepared(*bufs)


def warm(cache: Path | None = None) -> int:
    """Warm MAX's interpreter kernel cache (``max warm-interpreter-cache``) into ``cache``
    (``MODULAR_DERIVED_PATH`` if set, else ``CACHE_DIR``)."""
    import shutil
    import subprocess
    import time
    path = Path(os.environ.get("MODULAR_DERIVED_PATH") or cache or CACHE_DIR)
    path.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MODULAR_DERIVED_PATH=str(path))
    exe = shutil.which("max") or str(Path(sys.executable).with_name("max"))
    t0 = time.monotonic()
    rc = subprocess.call([exe, "warm-interpreter-cache"], env=env)
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    print(f"warm: rc={rc}, {time.monotonic() - t0:.0f} s, cache {path} "
          f"{size / 2**20:.0f} MiB; export MODULAR_DERIVED_PATH={path}")
    return rc


if __name__ == "__main__":  # python -m peers.max_engine warm [DIR]
    if len(sys.argv) >= 2 and sys.argv[1] == "warm":
        raise SystemExit(warm(Path(sys.argv[2]) if len(sys.argv) > 2 else None))
    print("usage: python -m peers.max_engine warm [CACHE_DIR]", file=sys.stderr)
    raise SystemExit(2)
