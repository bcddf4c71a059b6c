"""Tensor-level functions (``F``, MAX ``max.experimental.functional``; spec/realization.md).

Every function here stages graph ops into the current realization context; outside any
context it builds an implicit one (a graph context inside ``with Graph(...)``, otherwise the
default factory's eager context) and, for an eager one, realizes it before returning.
``functional(fn)`` turns a graph-building function (or a user function body) into one such
call. Every op of ``interpreter.graph.ops`` is available here under its name.
"""

from __future__ import annotations

import asyncio
import builtins as _b
import contextlib
import functools
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any

import numpy as np

from . import realization_context as _rc
from . import tensor as _tensor_module
from .dtype import DType
from .errors import RealizationError
from .graph import ops
from .graph.core import _CURRENT as _GRAPH
from .graph.core import BufferValue, TensorValue, Value
from .graph.ops.indexing import result_shape, slice_triples
from .tensor import _CONTEXT, Tensor, _realize_ctx, realization_context
from .types import DeviceRef, TensorType

__all__ = ["functional", "lazy"]  # plus every op name (added at the bottom)

_DEFAULT_DTYPE = DType.float32
_CPU = DeviceRef.CPU()


# -- converting tensors to graph values -------------------------------------------------------
def _source(t: Tensor, ctx: Any) -> Value:
    """A realized single-device tensor as a source of ``ctx`` (REAL-3, REAL-4)."""
    sv = getattr(ctx, "_source_value", None)  # our contexts; else the public protocol
    if sv is None:
        return ctx.add_source(t).value
    v: Value = sv(t)
    return v


def _value_in(t: Tensor, ctx: Any) -> TensorValue:
    """``t`` as a tensor value of ``ctx``'s graph (REAL-13): a source if realized; an
    unrealized tensor of another graph realizes its context first; buffers are loaded."""
    st = t._state
    if st is not None and st.ctx is not ctx and st.ctx.graph is not ctx.graph:
        _realize_ctx(st.ctx)
        if t._state is not None:
            raise RealizationError("tensor from another context is still unrealized after "
                                   "realizing it [REAL-13]")
        st = None
    if st is None:
        if t._mapping is not None and t._mapping.mesh.num_devices > 1:
            raise RealizationError(f"ops on a distributed tensor ({t._mapping}) are not "
                                   "supported; use local_shards, transfer_to or a collective "
                                   "[REAL-22]")
        return _source(t, ctx)  # type: ignore[return-value]
    vals = st.values
    if len(vals) != 1:
        raise RealizationError(f"ops on a distributed tensor ({t._mapping}) are not "
                               "supported; use local_shards, transfer_to or a collective "
                               "[REAL-22]")
    v = vals[0]
    if v.__class__ is BufferValue:
        return ops.buffer_load(v)
    return v  # type: ignore[return-value]


def _buffer_in(t: Tensor, ctx: Any) -> BufferValue:
    """``t`` as a buffer value (for stores): a realized tensor becomes a mutable source and
    stays unrealized until its context realizes (REAL-25, REAL-26)."""
    st = t._state
    if st is not None and st.ctx is not ctx and st.ctx.graph is not ctx.graph:
        _realize_ctx(st.ctx)
        st = t._state
    if st is None:
        state = ctx.add_mutable_source(t)
        t._state = state
        return state.values[0]
    v = st.value
    if isinstance(v, BufferValue):
        return v
    if any(v is i for i in ctx.graph.inputs):  # `in` would stage an equal op
        raise RealizationError("cannot mutate a tensor argument that was staged as a tensor. "
                               "Stage it as a buffer instead. [REAL-27]")
    buf = ops.buffer_create(v.dtype, v.shape, v.device)
    ops.buffer_store(buf, v)  # type: ignore[arg-type]
    from .tensor import RealizationState

    t._state = RealizationState((buf,), st.ctx)
    return buf


def _conv(a: Any, ctx: Any) -> Any:
    cls = a.__class__
    if cls is Tensor:
        return _value_in(a, ctx)
    if (cls is list or cls is tuple) and any(x.__class__ is Tensor for x in a):
        return cls(_value_in(x, ctx) if x.__class__ is Tensor else x for x in a)
    return a


def _wrap(out: Any, ctx: Any) -> Any:
    if isinstance(out, Value):
        return ctx.create_unrealized((out,))
    if isinstance(out, list | tuple):
        return type(out)(_wrap(o, ctx) for o in out)
    return out


def _stage(ctx: Any, fn: Callable[..., Any], args: Sequence[Any],
           kwargs: dict[str, Any] | None) -> Any:
    g = ctx.graph
    if _GRAPH.get() is not g:  # e.g. current without being entered, or a fresh graph
        token = _GRAPH.set(g)
        try:
            return _stage(ctx, fn, args, kwargs)
        finally:
            _GRAPH.reset(token)
    vals = [_value_in(a, ctx) if a.__class__ is Tensor else _conv(a, ctx) for a in args]
    if kwargs:
        kwargs = {k: _conv(v, ctx) for k, v in kwargs.items()}
    out = fn(*vals, **kwargs) if kwargs else fn(*vals)
    if isinstance(out, Value):
        return ctx.create_unrealized((out,))
    return _wrap(out, ctx)


def _call(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None = None
          ) -> Any:
    """Stage ``fn`` in the current context, or in an implicit one realized on return."""
    ctx = _CONTEXT.get(None)
    if ctx is not None:
        return _stage(ctx, fn, args, kwargs)
    ctx = _rc.implicit_context()
    ctx.__enter__()
    token = _CONTEXT.set(ctx)
    try:
        out = _stage(ctx, fn, args, kwargs)
    except BaseException as e:
        _CONTEXT.reset(token)
        ctx.__exit__(type(e), e, e.__traceback__)
        raise
    _CONTEXT.reset(token)
    ctx.__exit__(None, None, None)
    return out


def functional(graph_op: Callable[..., Any], rule: Any = None) -> Callable[..., Any]:
    """Wrap a graph-building function: tensors in, tensors out, one context (REAL-19).

    Tensor arguments (also inside a top-level list/tuple or keyword) become graph values;
    graph values returned become unrealized tensors of the context. As a decorator on a user
    function the whole body is one graph, realized at the function boundary when no context
    is current."""

    @functools.wraps(graph_op)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _call(graph_op, args, kwargs)

    wrapper.graph_op = graph_op  # type: ignore[attr-defined]
    wrapper.rule = rule  # type: ignore[attr-defined]
    return wrapper


@contextlib.contextmanager
def lazy() -> Iterator[Any]:
    """``with F.lazy():`` stage into a new lazy context (nothing realizes on exit, REAL-11)."""
    ctx: Any = _rc.LazyRealizationContext()
    with ctx, realization_context(ctx):
        ctx.subgraph_cache = {}
        yield ctx


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine to completion from synchronous code (our contexts never suspend)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RealizationError("realize_all suspended; run it with asyncio instead [REAL-9]")


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
    t: Tensor = _call(_constant, (value, dtype, device), {})
    return t


def _full(shape: Sequence[int], value: Any, dtype: DType, device: DeviceRef) -> TensorValue:
    c = ops.constant(value, dtype, device)
    shape = tuple(int(d) for d in shape)
    return c if shape == () else ops.broadcast_to(c, shape)


def full(shape: Sequence[int], value: Any, dtype: DType | None = None,
         device: DeviceRef | None = None) -> Tensor:
    t: Tensor = _call(_full, (shape, value, dtype or _DEFAULT_DTYPE, device or _CPU), {})
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
    t: Tensor = _call(_arange, (start, stop, step, dtype or _DEFAULT_DTYPE, device or _CPU),
                      {})
    return t


# -- buffers -----------------------------------------------------------------------------------
def _store(dst: Tensor, src: Any, indices: Any, whole: bool) -> None:
    ctx = _CONTEXT.get(None)
    if ctx is None:
        ctx = _rc.implicit_context()
        with ctx, realization_context(ctx):
            _store(dst, src, indices, whole)
        return
    g = ctx.graph
    token = _GRAPH.set(g) if _GRAPH.get() is not g else None
    try:
        value = _value_in(src, ctx) if isinstance(src, Tensor) else src
        buf = _buffer_in(dst, ctx)
        if whole:
            ops.buffer_store(buf, value)
        else:
            if isinstance(value, Value):
                _, keep = slice_triples("buffer_store_slice", buf.shape, indices)
                want = result_shape(buf.shape, indices, keep)
                if value.shape not in (keep, want) and (
                        value.type.num_elements != _prod(keep)):
                    value = ops.broadcast_to(value, want)  # type: ignore[arg-type]
            ops.buffer_store_slice(buf, value, indices)
    finally:
        if token is not None:
            _GRAPH.reset(token)


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


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
    out: Tensor = _call(_load, (t,), {})
    return out


# -- reductions at the tensor level -------------------------------------------------------------
def _reducer(name: str) -> Callable[..., Tensor]:
    def reduce(x: Any, axis: int | None = -1) -> Tensor:
        def body(v: TensorValue) -> TensorValue:
            if axis is None:
                v = ops.reshape(v, (-1,))
                r: TensorValue = getattr(ops, name)(v, axis=0)
                return r
            out: TensorValue = getattr(ops, name)(v, axis=axis)
            return out

        t: Tensor = _call(body, (x,), {})
        return t

    reduce.__name__ = name
    reduce.__doc__ = (f"``{name}`` over ``axis`` keeping it as size 1; ``axis=None`` reduces "
                      "the flattened tensor to shape [1] (REAL-28).")
    return reduce


sum = _reducer("sum")
mean = _reducer("mean")
prod = _reducer("prod")
argmax = _reducer("argmax")
argmin = _reducer("argmin")
_max_reduce = _reducer("max")
_min_reduce = _reducer("min")


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
    from .mesh import DeviceMapping, DeviceMesh, distribute

    if isinstance(target, DeviceRef):
        if x.is_distributed:
            from .mesh import gather_to

            return gather_to(x, target)
        t: Tensor = _call(ops.transfer_to, (x, target), {})
        return t
    if isinstance(target, DeviceMesh | DeviceMapping):
        return distribute(x, target)
    raise TypeError(f"transfer_to: expected a DeviceRef, DeviceMesh or DeviceMapping, got "
                    f"{type(target).__name__}")


def allreduce_sum(x: Tensor, mesh_axis: int = 0) -> Tensor:
    """Sum the shards of a ``Partial``/``Unknown`` tensor along a mesh axis (REAL-42)."""
    from .mesh import collective

    return collective("allreduce_sum", x, mesh_axis, 0)


def allgather(x: Tensor, axis: int = 0, mesh_axis: int = 0) -> Tensor:
    """Concatenate the shards of ``x`` along ``axis`` on every device of ``mesh_axis``."""
    from .mesh import collective

    return collective("allgather", x, mesh_axis, axis)


# -- every graph op, tensor level ------------------------------------------------------------
def __getattr__(name: str) -> Any:
    op = getattr(ops, name, None)
    if op is None or name.startswith("_"):
        raise AttributeError(f"module 'interpreter.functional' has no attribute {name!r}")
    wrapped = functional(op)
    globals()[name] = wrapped
    return wrapped


for _name in ops.__all__:
    if _name not in globals():
        globals()[_name] = functional(getattr(ops, _name))
    __all__.append(_name)
__all__ += [
    "allgather",
    "allreduce_sum",
    "arange",
    "argmax",
    "argmin",
    "buffer_load",
    "buffer_store",
    "buffer_store_slice",
    "constant",
    "full",
    "full_like",
    "max",
    "mean",
    "min",
    "ones",
    "ones_like",
    "prod",
    "sum",
    "transfer_to",
    "zeros",
    "zeros_like",
]
__all__ = sorted(set(__all__))
maximum: Callable[..., Tensor] = globals()["maximum"]
minimum: Callable[..., Tensor] = globals()["minimum"]
_ = (_b, TensorType)

# Tensor's operator dunders call the staging entry point directly (see interpreter/tensor.py).
_tensor_module._op = _call
