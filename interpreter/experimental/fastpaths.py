"""The front end's fast paths, in one module read top to bottom (CONTRIBUTING, "Speed").

The plain path (``staging.call``: a graph builder run on graph values of a context) is
always right; each path here gives the same result with less work, so removing one changes
only the speed (``python -m benchmarks.ratios``, rows (a) to (c)).

1. ``call_op``: a ``Tensor`` operator (``x + y``) in a context stages its registry op
   straight into the context's graph: operand values, one ``Graph.stage``, one unrealized
   tensor; outside any context it is ``call`` of the builder staging just that op.
2. The eager-op memo (REAL-49): an op called outside any context runs in an implicit eager
   context (REAL-17): a one-op graph staged, finalized and executed. Staging and
   finalizing depend only on the op, its call site and its arguments' *signature* (tensor
   types and which arguments are the same tensor; the values of Python scalars and other
   plain arguments), so the finalized graph is kept per signature and the next call with
   that signature hands the same graph to the default executor with the new tensors'
   arrays. Kept only when replaying is the same as staging again: no random numbers drawn,
   nothing mutated, no signal buffers, every graph input the seed or an argument, every
   tracked tensor a returned one.
3. ``call``: what the functions of ``functional`` call: ``staging.call``, with the memo in
   front of its implicit context for a ``memoizable`` graph builder.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from ..dtype import DType
from ..graph.core import CURRENT_GRAPH, Graph, Site, site_key, user_location
from ..graph.ops.staging import stage_op
from ..registry.core import OpDef
from ..selection import default_executor
from ..types import DeviceRef, TensorType
from .context import CURRENT
from .realization_context import (
    EagerRealizationContext,
    check_results,
    default_factory,
    seed,
)
from .staging import call_implicit, stage_in, value_in
from .tensor import Tensor

__all__ = ["MEMO_SIZE", "Signature", "call", "call_op", "clear", "memo_size", "memoizable",
           "remember", "replay", "signature"]


# -- 1. operators ------------------------------------------------------------------------------
def call_op(op: OpDef, build: Callable[..., Any], args: Sequence[Any],
            location: Site | None) -> Tensor:
    """Registry op ``op`` on ``args`` (tensors and Python scalars), staged by the user at
    ``location`` (the path of ``Tensor``'s operators). In a context: straight into its
    graph, without ``stage_in``'s layers; outside any: ``call(build, ...)``, with ``build``
    the graph builder staging just ``op`` (so the eager-op memo applies)."""
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


# -- 2. the eager-op memo (REAL-49) ------------------------------------------------------------
#: Signatures kept (the oldest is dropped first).
MEMO_SIZE = 512
_PACK_DOUBLE = struct.Struct("<d").pack
_PLAIN = (int, bool, str, type(None), DType, DeviceRef)


class _Memo:
    """A finalized graph; per graph input the distinct tensor argument feeding it (-1: the
    seed); per result its tensor type; the returned container (None: one tensor); the call
    site of its key (held: the key names its code object by id, ``site_key``)."""

    __slots__ = ("container", "graph", "inputs", "site", "types")

    def __init__(self, graph: Graph, inputs: tuple[int, ...], types: tuple[TensorType, ...],
                 container: type | None, site: Site | None) -> None:
        self.graph, self.inputs, self.types, self.container = graph, inputs, types, container
        self.site = site


_MEMO: dict[Hashable, _Memo] = {}
_PURE: set[Callable[..., Any]] = set()
_LOCK = threading.Lock()


def _plain_key(a: Any) -> Hashable | None:
    """A non-tensor argument as a key equal only for an identical argument, else None."""
    cls = a.__class__
    if cls is float:
        return (float, _PACK_DOUBLE(a))  # -0.0 and NaN payloads stay distinct
    if cls in _PLAIN:
        return (cls, a)
    if cls is tuple or cls is list:
        keys = tuple(_plain_key(x) for x in a)
        return None if None in keys else (cls, keys)
    if cls is slice:
        keys = (_plain_key(a.start), _plain_key(a.stop), _plain_key(a.step))
        return None if None in keys else (slice, keys)
    if a is Ellipsis:
        return (cls,)
    if isinstance(a, np.generic):
        return (cls, a.dtype, a.tobytes())
    return None  # arrays, tensors in containers, objects: staged every time


class Signature:
    """A memoizable call: its key, its call site, its distinct tensor arguments, the graph
    kept for the key (None: not yet)."""

    __slots__ = ("key", "memo", "site", "tensors")

    def __init__(self, key: Hashable, site: Site | None, tensors: list[Tensor],
                 memo: _Memo | None) -> None:
        self.key, self.site, self.tensors, self.memo = key, site, tensors, memo


def memoizable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare ``fn`` a graph builder whose staging depends only on its arguments."""
    _PURE.add(fn)
    return fn


def signature(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None,
              location: Site | None = None) -> Signature | None:
    """The memo signature of ``fn(*args, **kwargs)`` called outside any context from
    ``location`` (default: this call site); None when the call cannot be memoized: ``fn``
    not declared ``memoizable``, an implicit context that is not the default factory's
    eager one, an unrealized or distributed tensor argument, a tensor keyword, an argument
    without an exact key."""
    if (fn not in _PURE or default_factory() is not EagerRealizationContext
            or CURRENT_GRAPH.get() is not None):
        return None
    site = location or user_location()
    parts: list[Hashable] = [fn, site_key(site)]
    tensors: list[Tensor] = []
    for a in args:
        if a.__class__ is Tensor:
            if a.state is not None or a.is_distributed:
                return None
            for i, t in enumerate(tensors):
                if t is a:
                    parts.append(i)
                    break
            else:
                tensors.append(a)
                ty = a.global_type
                d = ty.device
                parts.append((ty.dtype, ty.shape, d.device_type, d.id))
        else:
            k = _plain_key(a)
            if k is None:
                return None
            parts.append(k)
    if kwargs:
        for name in sorted(kwargs):
            k = _plain_key(kwargs[name])
            if k is None:
                return None
            parts.append((name, k))
    key = tuple(parts)
    return Signature(key, site, tensors, _MEMO.get(key))


def replay(sig: Signature) -> Any:
    """Run the kept graph of ``sig`` on its tensors with the default executor (REAL-49):
    what staging the call again in an implicit eager context would do."""
    m = sig.memo
    assert m is not None
    ex = default_executor()
    seed_array = seed().storages[0]  # type: ignore[index]
    tensors = sig.tensors
    inputs = []
    for i in m.inputs:  # a loop: a comprehension's frame costs more here
        inputs.append(seed_array if i < 0 else tensors[i].storages[0])  # type: ignore[index]
    results = ex.execute(m.graph, inputs)
    check_results(ex, m.graph, results)
    if m.container is None:  # one tensor
        return Tensor.from_storage(results[1], m.types[0])
    return m.container([Tensor.from_storage(results[i + 1], t) for i, t in enumerate(m.types)])


def remember(sig: Signature, ctx: EagerRealizationContext, out: Any,
             tracked: list[Tensor]) -> None:
    """Keep the graph ``ctx`` just realized for ``sig`` when replaying it is the same as
    staging again: nothing random, mutated or signalled (``ctx.replayable()``), the tracked
    tensors exactly the returned ones, every graph input the seed or an argument."""
    if not ctx.replayable():
        return
    returned = [out] if out.__class__ is Tensor else out
    if not isinstance(returned, list | tuple) or len(returned) != len(tracked) or any(
            a is not b for a, b in zip(returned, tracked, strict=True)):
        return
    g, the_seed = ctx.graph, seed()
    inputs = []
    for v in g.inputs:
        src = ctx.sources.get(v)
        if src is the_seed:
            inputs.append(-1)
            continue
        pos = next((i for i, t in enumerate(sig.tensors) if t is src), None)
        if pos is None:
            return
        inputs.append(pos)
    m = _Memo(g, tuple(inputs), tuple(t.global_type for t in tracked),
              None if out.__class__ is Tensor else type(out), sig.site)
    with _LOCK:
        while len(_MEMO) >= MEMO_SIZE:
            del _MEMO[next(iter(_MEMO))]
        _MEMO[sig.key] = m


def clear() -> None:
    """Forget every kept graph."""
    with _LOCK:
        _MEMO.clear()


def memo_size() -> int:
    """The number of signatures kept."""
    return len(_MEMO)


# -- 3. calls ----------------------------------------------------------------------------------
def call(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None = None,
         location: Site | None = None) -> Any:
    """``staging.call(fn, args, kwargs)``; outside any context, for a ``memoizable`` graph
    builder, the graph kept by the memo when the call's signature was seen before, else the
    implicit context's, kept for next time. ``location``: the user's call site, when the
    caller knows it (else found on the stack)."""
    ctx = CURRENT.get(None)
    if ctx is not None:
        return stage_in(ctx, fn, args, kwargs)
    sig = signature(fn, args, kwargs, location)
    if sig is None:
        return call_implicit(fn, args, kwargs)[0]
    if sig.memo is not None:
        return replay(sig)
    out, ctx, tracked = call_implicit(fn, args, kwargs, track=True)
    remember(sig, ctx, out, tracked)
    return out
