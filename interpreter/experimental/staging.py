"""Staging tensor-level calls into realization contexts (REAL-13, REAL-17, REAL-19).

``call(fn, args, kwargs)`` runs a graph-building function on tensors: tensor arguments become
graph values of the current context (or of an implicit one, realized on return when eager),
graph values returned become unrealized tensors of that context. This is the plain path;
``fastpaths`` gives the same results with less work for operators and repeated eager ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import RealizationError
from ..graph import ops
from ..graph.core import CURRENT_GRAPH, BufferValue, TensorValue, Value
from .context import CURRENT, RealizationState, realize_context
from .realization_context import distributed_error, implicit_context
from .tensor import Tensor

__all__ = ["buffer_in", "call", "call_implicit", "stage_in", "value_in"]


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


def call(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None = None
         ) -> Any:
    """Stage ``fn`` in the current context, or in an implicit one realized on return."""
    ctx = CURRENT.get(None)
    if ctx is not None:
        return stage_in(ctx, fn, args, kwargs)
    return call_implicit(fn, args, kwargs)[0]


def call_implicit(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None,
                  track: bool = False) -> tuple[Any, Any, list[Tensor]]:
    """Stage ``fn`` in an implicit context (REAL-17) and realize it when eager: its result,
    the context and (``track``) the tensors it still computed before realizing."""
    ctx = implicit_context()
    ctx.__enter__()
    token = CURRENT.set(ctx)
    try:
        out = stage_in(ctx, fn, args, kwargs)
        tracked = ctx.tracked() if track else []
    except BaseException as e:
        CURRENT.reset(token)
        ctx.__exit__(type(e), e, e.__traceback__)
        raise
    CURRENT.reset(token)
    ctx.__exit__(None, None, None)
    return out, ctx, tracked
