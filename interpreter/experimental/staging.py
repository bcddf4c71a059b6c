"""Staging tensor-level calls into realization contexts (REAL-13, REAL-17, REAL-19).

``call(fn, args, kwargs)`` runs a graph-building function on tensors: tensor arguments become
graph values of the current context (or of an implicit one, realized on return when eager),
graph values returned become unrealized tensors of that context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RealizationError
from ..graph import ops
from ..graph.core import CURRENT_GRAPH, BufferValue, Site, TensorValue, Value
from ..graph.ops.staging import stage_op
from ..registry.core import OpDef
from . import eager_memo
from .context import CURRENT, RealizationState, realize_context
from .realization_context import distributed_error, implicit_context
from .tensor import Tensor

__all__ = ["buffer_in", "call", "call_op", "stage_in", "value_in"]


def _source(t: Tensor, ctx: Any) -> Value:
    """A realized tensor as a source of ``ctx`` (REAL-3, REAL-4); our contexts refuse a
    distributed one (``distributed_error``)."""
    sv = getattr(ctx, "source_value", None)
    if sv is None:  # a context with just the public protocol
        if t.is_distributed:
            raise distributed_error(t)
        v: Value = ctx.add_source(t).value
        return v
    source: Value = sv(t)
    return source


def value_in(t: Tensor, ctx: Any) -> TensorValue:
    """``t`` as a tensor value of ``ctx``'s graph (REAL-13): a source if realized; an
    unrealized tensor of another graph realizes its context first; buffers are loaded."""
    st = t.state
    if st is not None and st.ctx is not ctx and st.ctx.graph is not ctx.graph:
        realize_context(st.ctx)
        if t.state is not None:
            raise RealizationError("tensor from another context is still unrealized after "
                                   "realizing it [REAL-13]")
        st = None
    if st is None:
        return _source(t, ctx)  # type: ignore[return-value]
    vals = st.values
    if len(vals) != 1:
        raise distributed_error(t)
    v = vals[0]
    if v.__class__ is BufferValue:
        return ops.buffer_load(v)
    return v  # type: ignore[return-value]


def buffer_in(t: Tensor, ctx: Any) -> BufferValue:
    """``t`` as a buffer value (for stores): a realized tensor becomes a mutable source and
    stays unrealized until its context realizes (REAL-25, REAL-26)."""
    st = t.state
    if st is not None and st.ctx is not ctx and st.ctx.graph is not ctx.graph:
        realize_context(st.ctx)
        st = t.state
    if st is None:
        state = ctx.add_mutable_source(t)
        t.stage(state)
        return state.values[0]
    v = st.value
    if isinstance(v, BufferValue):
        return v
    if any(v is i for i in ctx.graph.inputs):  # `in` would stage an equal op
        raise RealizationError("cannot mutate a tensor argument that was staged as a tensor. "
                               "Stage it as a buffer instead. [REAL-27]")
    buf = ops.buffer_create(v.dtype, v.shape, v.device)
    ops.buffer_store(buf, v)  # type: ignore[arg-type]
    t.stage(RealizationState((buf,), st.ctx))
    return buf


def _conv(a: Any, ctx: Any) -> Any:
    cls = a.__class__
    if cls is Tensor:
        return value_in(a, ctx)
    if (cls is list or cls is tuple) and any(x.__class__ is Tensor for x in a):
        return cls(value_in(x, ctx) if x.__class__ is Tensor else x for x in a)
    return a


def _wrap(out: Any, ctx: Any) -> Any:
    if isinstance(out, Value):
        return ctx.create_unrealized((out,))
    if isinstance(out, list | tuple):
        return type(out)(_wrap(o, ctx) for o in out)
    return out


def stage_in(ctx: Any, fn: Callable[..., Any], args: Sequence[Any],
             kwargs: dict[str, Any] | None) -> Any:
    """Run ``fn`` on ``args`` as graph values of ``ctx`` (its graph made current)."""
    g = ctx.graph
    if CURRENT_GRAPH.get() is not g:  # e.g. current without being entered, or a fresh graph
        token = CURRENT_GRAPH.set(g)
        try:
            return stage_in(ctx, fn, args, kwargs)
        finally:
            CURRENT_GRAPH.reset(token)
    vals = [value_in(a, ctx) if a.__class__ is Tensor else _conv(a, ctx) for a in args]
    if kwargs:
        kwargs = {k: _conv(v, ctx) for k, v in kwargs.items()}
    out = fn(*vals, **kwargs) if kwargs else fn(*vals)
    if isinstance(out, Value):
        return ctx.create_unrealized((out,))
    return _wrap(out, ctx)


def call_op(op: OpDef, build: Callable[..., Any], args: Sequence[Any],
            location: Site | None) -> Tensor:
    """Registry op ``op`` on ``args`` (tensors and Python scalars), staged by the user at
    ``location`` (the path of ``Tensor``'s operators). In a context: straight into its
    graph, without ``stage_in``'s layers; outside any: ``call(build, ...)``, with ``build``
    the graph builder staging just ``op`` (so the eager-op memo applies, REAL-49)."""
    ctx = CURRENT.get(None)
    if ctx is None:
        return call(build, args, None, location)
    vals: list[Any] = []
    scalars = False
    for a in args:  # a loop, not a comprehension: no function frame on the hottest path
        if a.__class__ is Tensor:
            vals.append(value_in(a, ctx))
        else:
            vals.append(a)
            scalars = True
    if scalars:  # Python scalars become weak constants (PROMO-4)
        (v,) = stage_op(op, vals, None, location)
    else:
        (v,) = ctx.graph.stage(op, vals, None, location)
    return ctx.create_unrealized((v,))


def call(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None = None,
         location: Site | None = None) -> Any:
    """Stage ``fn`` in the current context, or in an implicit one realized on return: for
    a ``memoizable`` graph builder, the graph kept by the eager-op memo when the call's
    signature was seen before (REAL-49). ``location``: the user's call site, when the
    caller knows it (else found on the stack)."""
    ctx = CURRENT.get(None)
    if ctx is not None:
        return stage_in(ctx, fn, args, kwargs)
    sig = eager_memo.signature(fn, args, kwargs, location)
    if sig is not None and sig.memo is not None:
        return eager_memo.replay(sig)
    ctx = implicit_context()
    ctx.__enter__()
    token = CURRENT.set(ctx)
    try:
        out = stage_in(ctx, fn, args, kwargs)
        tracked = ctx.tracked() if sig is not None else []
    except BaseException as e:
        CURRENT.reset(token)
        ctx.__exit__(type(e), e, e.__traceback__)
        raise
    CURRENT.reset(token)
    ctx.__exit__(None, None, None)
    if sig is not None:
        eager_memo.remember(sig, ctx, out, tracked)
    return out
