"""Tensor-level functions (``F``, MAX ``max.experimental.functional``; spec/realization.md).

Every function here stages graph ops into the current realization context; outside any
context it builds an implicit one (a graph context inside ``with Graph(...)``, otherwise the
default factory's eager context) and, for an eager one, realizes it before returning.
``functional(fn)`` turns a graph-building function (or a user function body) into one such
call. Every op of ``interpreter.graph.ops`` is listed here under its name. This module also
installs ``Tensor``'s operators, ops and factories (``install_tensor_methods``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..errors import RealizationError
from ..graph import ops
from ..graph.core import CURRENT_GRAPH, TensorValue, Value, location_of
from ..graph.ops.indexing import result_shape, slice_triples
from ..graph.ops.staging import stage_op
from ..registry.core import OpDef, get_op
from ..types import DeviceRef
from .context import CURRENT, realization_context
from .distributed import collective, distribute, gather_to, mesh_broadcast, mesh_scatter
from .fastpaths import call, call_op, memoizable
from .mesh import DeviceMapping, DeviceMesh
from .realization_context import LazyRealizationContext, implicit_context
from .staging import buffer_in, value_in
from .tensor import Tensor

_DEFAULT_DTYPE = DType.float32
_CPU = DeviceRef.CPU()


def functional(graph_op: Callable[..., Any], rule: Any = None) -> Callable[..., Any]:
    """Wrap a graph-building function: tensors in, tensors out, one context (REAL-19).

    Tensor arguments (also inside a top-level list/tuple or keyword) become graph values;
    graph values returned become unrealized tensors of the context. As a decorator on a user
    function the whole body is one graph, realized at the function boundary when no context
    is current."""

    @functools.wraps(graph_op)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call(graph_op, args, kwargs)

    wrapper.graph_op = graph_op  # type: ignore[attr-defined]
    wrapper.rule = rule  # type: ignore[attr-defined]
    return wrapper


@contextlib.contextmanager
def lazy() -> Iterator[Any]:
    """``with F.lazy():`` stage into a new lazy context (nothing realizes on exit, REAL-11)."""
    ctx: Any = LazyRealizationContext()
    with ctx, realization_context(ctx):
        ctx.subgraph_cache = {}
        yield ctx


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro``: on this thread without a running loop, else on a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: list[Any] = []

    def work() -> None:
        try:
            box.append((True, asyncio.run(coro)))
        except BaseException as e:  # re-raised on the caller's thread
            box.append((False, e))

    th = threading.Thread(target=work)
    th.start()
    th.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


# -- creation ------------------------------------------------------------------------------------
def _constant(value: Any, dtype: DType | None, device: DeviceRef | None) -> TensorValue:
    if dtype is None and not isinstance(value, np.ndarray | np.generic):
        dtype = _DEFAULT_DTYPE
    return ops.constant(value, dtype, device or _CPU)


def constant(value: Any, dtype: DType | None = None, device: DeviceRef | None = None
             ) -> Tensor:
    """A tensor holding ``value``: numpy data keeps its dtype; Python data defaults to
    float32 (MAX's default dtype on the CPU, REAL-21)."""
    if isinstance(value, Tensor):
        return value if dtype is None or value.dtype is dtype else value.cast(dtype)
    t: Tensor = call(_constant, (value, dtype, device), {})
    return t


def _full(shape: Sequence[int], value: Any, dtype: DType, device: DeviceRef) -> TensorValue:
    c = ops.constant(value, dtype, device)
    shape = tuple(int(d) for d in shape)
    return c if shape == () else ops.broadcast_to(c, shape)


def full(shape: Sequence[int], value: Any, dtype: DType | None = None,
         device: DeviceRef | None = None) -> Tensor:
    t: Tensor = call(_full, (shape, value, dtype or _DEFAULT_DTYPE, device or _CPU), {})
    return t


def zeros(shape: Sequence[int], dtype: DType | None = None, device: DeviceRef | None = None
          ) -> Tensor:
    return full(shape, 0, dtype, device)


def ones(shape: Sequence[int], dtype: DType | None = None, device: DeviceRef | None = None
         ) -> Tensor:
    return full(shape, 1, dtype, device)


def full_like(t: Tensor, value: Any) -> Tensor:
    """Same shape, dtype and device as ``t`` (REAL-21)."""
    if t.is_distributed:
        raise RealizationError("full_like of a distributed tensor is not supported [REAL-22]")
    return full(t.shape, value, t.dtype, t.device)


def zeros_like(t: Tensor) -> Tensor:
    return full_like(t, 0)


def ones_like(t: Tensor) -> Tensor:
    return full_like(t, 1)


def _arange(start: Any, stop: Any, step: Any, dtype: DType, device: DeviceRef) -> TensorValue:
    return ops.range(start, stop, step, dtype, device)


def arange(start: float, stop: float | None = None, step: float = 1,
           dtype: DType | None = None, device: DeviceRef | None = None) -> Tensor:
    """``start, start + step, ...`` below ``stop``; default dtype float32 (REAL-21)."""
    if stop is None:
        start, stop = 0, start
    t: Tensor = call(_arange, (start, stop, step, dtype or _DEFAULT_DTYPE, device or _CPU),
                      {})
    return t


# -- buffers -----------------------------------------------------------------------------------
def _store(dst: Tensor, src: Any, indices: Any, whole: bool) -> None:
    ctx = CURRENT.get(None)
    if ctx is None:
        ctx = implicit_context()
        with ctx, realization_context(ctx):
            _store(dst, src, indices, whole)
        return
    g = ctx.graph
    token = CURRENT_GRAPH.set(g) if CURRENT_GRAPH.get() is not g else None
    try:
        value = value_in(src, ctx) if isinstance(src, Tensor) else src
        buf = buffer_in(dst, ctx)
        if whole:
            ops.buffer_store(buf, value)
        else:
            if isinstance(value, Value):
                _, keep = slice_triples(buffer_store_slice.__name__, buf.shape, indices)
                want = result_shape(buf.shape, indices, keep)
                if value.shape not in (keep, want) and (
                        value.type.num_elements != math.prod(keep)):
                    value = ops.broadcast_to(value, want)  # type: ignore[arg-type]
            ops.buffer_store_slice(buf, value, indices)
    finally:
        if token is not None:
            CURRENT_GRAPH.reset(token)


def buffer_store(destination: Tensor, source: Tensor) -> None:
    """Overwrite ``destination`` in place with ``source`` (REAL-25)."""
    _store(destination, source, None, True)


def buffer_store_slice(destination: Tensor, source: Tensor, indices: Any) -> None:
    """Overwrite ``destination[indices]`` in place (numpy basic indexing; ``source`` is
    broadcast to the selected region, REAL-25)."""
    _store(destination, source, indices, False)


def _load(b: Any) -> Any:
    return b


def buffer_load(t: Tensor) -> Tensor:
    """A copy of ``t``'s current contents."""
    out: Tensor = call(_load, (t,), {})
    return out


# -- reductions at the tensor level -------------------------------------------------------------
def _reducer(op: Callable[..., TensorValue]) -> Callable[..., Tensor]:
    name = op.__name__

    def reduce(x: Any, axis: int | None = -1) -> Tensor:
        def body(v: TensorValue) -> TensorValue:
            if axis is None:
                return op(ops.reshape(v, (-1,)), axis=0)
            return op(v, axis=axis)

        t: Tensor = call(body, (x,), {})
        return t

    reduce.__name__ = name
    reduce.__doc__ = (f"``{name}`` over ``axis`` keeping it as size 1; ``axis=None`` reduces "
                      "the flattened tensor to shape [1] (REAL-28).")
    return reduce


sum = _reducer(ops.sum)
mean = _reducer(ops.mean)
prod = _reducer(ops.prod)
argmax = _reducer(ops.argmax)
argmin = _reducer(ops.argmin)
_max_reduce = _reducer(ops.max)
_min_reduce = _reducer(ops.min)


def max(x: Any, y: Any = None, axis: int | None = -1) -> Tensor:
    """Elementwise maximum of two tensors, or a reduction of one over ``axis``."""
    if y is not None:
        return maximum(x, y)
    return _max_reduce(x, axis)


def min(x: Any, y: Any = None, axis: int | None = -1) -> Tensor:
    """Elementwise minimum of two tensors, or a reduction of one over ``axis``."""
    if y is not None:
        return minimum(x, y)
    return _min_reduce(x, axis)


# -- devices -------------------------------------------------------------------------------------
def transfer_to(x: Tensor, target: Any) -> Tensor:
    """Move ``x`` to a device, or distribute it over a mesh/mapping (REAL-41)."""
    if isinstance(target, DeviceRef):
        if x.is_distributed:
            return gather_to(x, target)
        t: Tensor = call(ops.transfer_to, (x, target), {})
        return t
    if isinstance(target, DeviceMesh | DeviceMapping):
        return distribute(x, target)
    raise TypeError(f"transfer_to: expected a DeviceRef, DeviceMesh or DeviceMapping, got "
                    f"{type(target).__name__}")


def allreduce_sum(x: Tensor, mesh_axis: int = 0) -> Tensor:
    """Sum the shards of a ``Partial``/``Unknown`` tensor along a mesh axis (REAL-42)."""
    return collective(ops.allreduce_sum, x, mesh_axis, 0)


def allgather(x: Tensor, axis: int = 0, mesh_axis: int = 0) -> Tensor:
    """Concatenate the shards of ``x`` along ``axis`` on every device of ``mesh_axis``."""
    return collective(ops.allgather, x, mesh_axis, axis)


# -- every graph op, tensor level (its graph builder lifted by ``functional``) -------------
abs: Callable[..., Tensor] = functional(ops.abs)
add: Callable[..., Tensor] = functional(ops.add)
avg_pool2d: Callable[..., Tensor] = functional(ops.avg_pool2d)
broadcast_to: Callable[..., Tensor] = functional(ops.broadcast_to)
buffer_create: Callable[..., Any] = functional(ops.buffer_create)
cast: Callable[..., Tensor] = functional(ops.cast)
ceil: Callable[..., Tensor] = functional(ops.ceil)
concat: Callable[..., Tensor] = functional(ops.concat)
conv2d: Callable[..., Tensor] = functional(ops.conv2d)
conv2d_transpose: Callable[..., Tensor] = functional(ops.conv2d_transpose)
conv3d: Callable[..., Tensor] = functional(ops.conv3d)
cos: Callable[..., Tensor] = functional(ops.cos)
cumsum: Callable[..., Tensor] = functional(ops.cumsum)
div: Callable[..., Tensor] = functional(ops.div)
equal: Callable[..., Tensor] = functional(ops.equal)
erf: Callable[..., Tensor] = functional(ops.erf)
exp: Callable[..., Tensor] = functional(ops.exp)
flatten: Callable[..., Tensor] = functional(ops.flatten)
floor: Callable[..., Tensor] = functional(ops.floor)
floor_div: Callable[..., Tensor] = functional(ops.floor_div)
gather: Callable[..., Tensor] = functional(ops.gather)
gather_index: Callable[..., Tensor] = functional(ops.gather_index)
gaussian: Callable[..., Any] = functional(ops.gaussian)
gelu: Callable[..., Tensor] = functional(ops.gelu)
getitem: Callable[..., Tensor] = functional(ops.getitem)
greater: Callable[..., Tensor] = functional(ops.greater)
greater_equal: Callable[..., Tensor] = functional(ops.greater_equal)
is_inf: Callable[..., Tensor] = functional(ops.is_inf)
is_nan: Callable[..., Tensor] = functional(ops.is_nan)
less: Callable[..., Tensor] = functional(ops.less)
less_equal: Callable[..., Tensor] = functional(ops.less_equal)
log: Callable[..., Tensor] = functional(ops.log)
log1p: Callable[..., Tensor] = functional(ops.log1p)
logical_and: Callable[..., Tensor] = functional(ops.logical_and)
logical_not: Callable[..., Tensor] = functional(ops.logical_not)
logical_or: Callable[..., Tensor] = functional(ops.logical_or)
logical_xor: Callable[..., Tensor] = functional(ops.logical_xor)
logsoftmax: Callable[..., Tensor] = functional(ops.logsoftmax)
matmul: Callable[..., Tensor] = functional(ops.matmul)
max_pool2d: Callable[..., Tensor] = functional(ops.max_pool2d)
maximum: Callable[..., Tensor] = functional(ops.maximum)
minimum: Callable[..., Tensor] = functional(ops.minimum)
mod: Callable[..., Tensor] = functional(ops.mod)
mul: Callable[..., Tensor] = functional(ops.mul)
negate: Callable[..., Tensor] = functional(ops.negate)
normal: Callable[..., Tensor] = functional(ops.normal)
not_equal: Callable[..., Tensor] = functional(ops.not_equal)
pad: Callable[..., Tensor] = functional(ops.pad)
permute: Callable[..., Tensor] = functional(ops.permute)
pow: Callable[..., Tensor] = functional(ops.pow)
print: Callable[..., Any] = functional(ops.print)
range: Callable[..., Tensor] = functional(ops.range)
reshape: Callable[..., Tensor] = functional(ops.reshape)
round: Callable[..., Tensor] = functional(ops.round)
rsqrt: Callable[..., Tensor] = functional(ops.rsqrt)
scatter: Callable[..., Tensor] = functional(ops.scatter)
sigmoid: Callable[..., Tensor] = functional(ops.sigmoid)
silu: Callable[..., Tensor] = functional(ops.silu)
sin: Callable[..., Tensor] = functional(ops.sin)
slice_tensor: Callable[..., Tensor] = functional(ops.slice_tensor)
softmax: Callable[..., Tensor] = functional(ops.softmax)
split: Callable[..., Any] = functional(ops.split)
sqrt: Callable[..., Tensor] = functional(ops.sqrt)
squeeze: Callable[..., Tensor] = functional(ops.squeeze)
sub: Callable[..., Tensor] = functional(ops.sub)
tanh: Callable[..., Tensor] = functional(ops.tanh)
tile: Callable[..., Tensor] = functional(ops.tile)
top_k: Callable[..., Any] = functional(ops.top_k)
transpose: Callable[..., Tensor] = functional(ops.transpose)
trunc: Callable[..., Tensor] = functional(ops.trunc)
uniform: Callable[..., Tensor] = functional(ops.uniform)
unsqueeze: Callable[..., Tensor] = functional(ops.unsqueeze)
where: Callable[..., Tensor] = functional(ops.where)
# masks, shapes and resize (issue 19)
band_part: Callable[..., Tensor] = functional(ops.band_part)
InterpolationMode = ops.InterpolationMode
resize: Callable[..., Tensor] = functional(ops.resize)
resize_bicubic: Callable[..., Tensor] = functional(ops.resize_bicubic)
resize_linear: Callable[..., Tensor] = functional(ops.resize_linear)
resize_nearest: Callable[..., Tensor] = functional(ops.resize_nearest)

# -- indexing (issue 19): gathers and scatters by index vectors, scatter reductions, sorts --
argsort: Callable[..., Tensor] = functional(ops.argsort)
bottom_k: Callable[..., Any] = functional(ops.bottom_k)
gather_nd: Callable[..., Tensor] = functional(ops.gather_nd)
gather_sum: Callable[..., Tensor] = functional(ops.gather_sum)
scatter_add: Callable[..., Tensor] = functional(ops.scatter_add)
scatter_max: Callable[..., Tensor] = functional(ops.scatter_max)
scatter_min: Callable[..., Tensor] = functional(ops.scatter_min)
scatter_mul: Callable[..., Tensor] = functional(ops.scatter_mul)
scatter_nd: Callable[..., Tensor] = functional(ops.scatter_nd)
scatter_nd_add: Callable[..., Tensor] = functional(ops.scatter_nd_add)
scatter_nd_max: Callable[..., Tensor] = functional(ops.scatter_nd_max)
scatter_nd_min: Callable[..., Tensor] = functional(ops.scatter_nd_min)
scatter_nd_mul: Callable[..., Tensor] = functional(ops.scatter_nd_mul)

__all__ = [
    "abs",
    "add",
    "allgather",
    "allreduce_sum",
    "arange",
    "argmax",
    "argmin",
    "avg_pool2d",
    "argsort",
    "bottom_k",
    "broadcast_to",
    "buffer_create",
    "buffer_load",
    "buffer_store",
    "buffer_store_slice",
    "cast",
    "ceil",
    "concat",
    "constant",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "cos",
    "cumsum",
    "div",
    "equal",
    "erf",
    "exp",
    "flatten",
    "floor",
    "floor_div",
    "full",
    "full_like",
    "functional",
    "gather",
    "gather_index",
    "gather_nd",
    "gather_sum",
    "gaussian",
    "gelu",
    "getitem",
    "greater",
    "greater_equal",
    "install_tensor_methods",
    "is_inf",
    "is_nan",
    "lazy",
    "less",
    "less_equal",
    "log",
    "log1p",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsoftmax",
    "matmul",
    "max",
    "max_pool2d",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "mul",
    "negate",
    "normal",
    "not_equal",
    "ones",
    "ones_like",
    "pad",
    "permute",
    "pow",
    "print",
    "prod",
    "range",
    "reshape",
    "round",
    "rsqrt",
    "run",
    "scatter",
    "scatter_add",
    "scatter_max",
    "scatter_min",
    "scatter_mul",
    "scatter_nd",
    "scatter_nd_add",
    "scatter_nd_max",
    "scatter_nd_min",
    "scatter_nd_mul",
    "sigmoid",
    "silu",
    "sin",
    "slice_tensor",
    "softmax",
    "split",
    "sqrt",
    "squeeze",
    "sub",
    "sum",
    "tanh",
    "tile",
    "top_k",
    "transfer_to",
    "transpose",
    "trunc",
    "uniform",
    "unsqueeze",
    "where",
    "zeros",
    "zeros_like",
]
__all__ += ["InterpolationMode", "band_part", "resize", "resize_bicubic", "resize_linear",
            "resize_nearest"]



# -- collectives on meshes (spec/devices.md DEV-7..9, REAL-42) and roi_align -----------------
def reduce_scatter(t: Tensor, scatter_axis: int = 0, mesh_axis: int | str = 0) -> Tensor:
    """Sum the shards of a ``Partial``/``Unknown`` tensor along a mesh axis and leave each
    device one chunk of the sum along ``scatter_axis``: ``Sharded(scatter_axis)`` there
    (larger chunks first, REAL-42; MAX ``F.reduce_scatter``)."""
    return collective(ops.reducescatter_sum, t, mesh_axis, scatter_axis)


def distributed_broadcast(t: Tensor, mesh: DeviceMesh) -> Tensor:
    """Copy a single-device tensor to every device of ``mesh`` with one collective:
    ``Replicated`` on every mesh axis (REAL-42; MAX ``F.distributed_broadcast``)."""
    return mesh_broadcast(t, mesh)


def distributed_scatter(input_chunks: Sequence[Tensor], mesh: DeviceMesh) -> Tensor:
    """Chunk ``j`` to the ``j``-th group of consecutive devices of ``mesh`` (DEV-9, REAL-42;
    MAX has only the graph op ``ops.distributed_scatter``, whose name this mirrors)."""
    return mesh_scatter(input_chunks, mesh)


reducescatter_sum: Callable[..., Any] = functional(ops.reducescatter_sum)
roi_align: Callable[..., Tensor] = functional(ops.roi_align)
__all__ += ["distributed_broadcast", "distributed_scatter", "reduce_scatter",
            "reducescatter_sum", "roi_align"]

# -- issue 19: normalizations and activations (MAX ``F.layer_norm``, ``F.relu``, ...) ----
atanh: Callable[..., Tensor] = functional(ops.atanh)
group_norm: Callable[..., Tensor] = functional(ops.group_norm)
layer_norm: Callable[..., Tensor] = functional(ops.layer_norm)
relu: Callable[..., Tensor] = functional(ops.relu)
rms_norm: Callable[..., Tensor] = functional(ops.rms_norm)
__all__ += ["atanh", "group_norm", "layer_norm", "relu", "rms_norm"]


# -- Tensor's operators, ops and factories (declared in tensor.py), installed in one place --
def _op_builder(op: OpDef) -> Callable[..., TensorValue]:
    """The graph builder staging just ``op`` on its operands (an eager operator's, REAL-49)."""
    def build(*operands: Any) -> TensorValue:
        (v,) = stage_op(op, operands)
        return v  # type: ignore[return-value]

    build.__name__ = build.__qualname__ = op.name
    return memoizable(build)


def _staged_op(builder: Callable[..., Any]) -> OpDef:
    """The registry op a one-op ``ops`` builder stages, found by the builder's name (a
    builder staging one op on its operands bears that op's name, e.g. ``ops.add``)."""
    return get_op(builder.__name__)


def _operator(builder: Callable[..., Any], reflected: bool = False
              ) -> Callable[[Tensor, Any], Tensor]:
    """``self <op> o``, staging ``builder``'s registry op directly (``o <op> self`` when
    ``reflected``)."""
    op = _staged_op(builder)
    build = _op_builder(op)

    if reflected:
        def method(self: Tensor, o: Any) -> Tensor:
            return call_op(op, build, (o, self), location_of(sys._getframe(1)))
    else:
        def method(self: Tensor, o: Any) -> Tensor:
            return call_op(op, build, (self, o), location_of(sys._getframe(1)))

    return method


def _unary_operator(builder: Callable[..., Any]) -> Callable[[Tensor], Tensor]:
    op = _staged_op(builder)
    build = _op_builder(op)

    def method(self: Tensor) -> Tensor:
        return call_op(op, build, (self,), location_of(sys._getframe(1)))

    return method


def _forward(builder: Callable[..., Any]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, o: Any) -> Tensor:
        return call(builder, (self, o))

    return method


def _reflected(builder: Callable[..., Any]) -> Callable[[Tensor, Any], Tensor]:
    def method(self: Tensor, o: Any) -> Tensor:
        return call(builder, (o, self))

    return method


def _setitem(self: Tensor, index: Any, value: Any) -> None:
    """In-place store of ``value`` into ``self[index]`` (``buffer_store_slice``, REAL-25)."""
    if not isinstance(value, Tensor):
        raise RealizationError("__setitem__ requires a Tensor value; use Buffer indexing "
                               "for scalar writes. [REAL-25]")
    buffer_store_slice(self, value, index)


def _transpose_last(self: Tensor) -> Tensor:
    return transpose(self, -1, -2)


def install_tensor_methods() -> None:
    """Attach ``Tensor``'s operators (each stages one registry op, as the ``ops`` builder of
    the same name does; IEEE comparisons, REAL-24), its op methods and its factories. Called
    once, when this module loads."""
    binary = {"__add__": ops.add, "__sub__": ops.sub, "__mul__": ops.mul,
              "__truediv__": ops.div, "__floordiv__": ops.floor_div, "__mod__": ops.mod,
              "__pow__": ops.pow, "__and__": ops.logical_and, "__or__": ops.logical_or,
              "__xor__": ops.logical_xor}
    for name, builder in binary.items():  # also reflected: __radd__, ...
        setattr(Tensor, name, _operator(builder))
        setattr(Tensor, f"__r{name[2:]}", _operator(builder, reflected=True))
    compare = {"__eq__": ops.equal, "__ne__": ops.not_equal, "__gt__": ops.greater,
               "__ge__": ops.greater_equal}
    for name, builder in compare.items():
        setattr(Tensor, name, _operator(builder))
    # `<` and `<=` are `greater(o, self)`: their builders take self's source first (LOWER-3)
    Tensor.__lt__ = _forward(ops.less)  # type: ignore[method-assign]
    Tensor.__le__ = _forward(ops.less_equal)  # type: ignore[method-assign]
    unary = {"__neg__": ops.negate, "__abs__": ops.abs, "__invert__": ops.logical_not}
    for name, unary_builder in unary.items():
        setattr(Tensor, name, _unary_operator(unary_builder))
    Tensor.__matmul__ = _forward(ops.matmul)  # type: ignore[method-assign]
    Tensor.__rmatmul__ = _reflected(ops.matmul)  # type: ignore[method-assign]
    methods: dict[str, Callable[..., Any]] = {
        "__getitem__": getitem, "__setitem__": _setitem, "_cast": cast,
        "_transfer_to": transfer_to, "_maximum": maximum, "_minimum": minimum}
    for name, fn in methods.items():
        setattr(Tensor, name, fn)
    for fn in (transpose, permute, reshape, broadcast_to, sum, mean, prod, _max_reduce,
               _min_reduce, argmax, argmin):  # methods named as their functions (MAX)
        setattr(Tensor, fn.__name__, fn)
    Tensor.T = property(_transpose_last)  # type: ignore[method-assign,assignment]
    factories: dict[str, Callable[..., Tensor]] = {
        "from_data": constant, "full": full, "zeros": zeros, "ones": ones,
        "full_like": full_like, "zeros_like": zeros_like, "ones_like": ones_like,
        "arange": arange}
    for name, fn in factories.items():
        setattr(Tensor, name, staticmethod(fn))


install_tensor_methods()

# Graph builders depend only on their arguments: an eager call outside any context may
# replay the graph its signature staged before (REAL-49).
for _builder in (_constant, _full, _arange, *(getattr(ops, name) for name in ops.__all__)):
    memoizable(_builder)
