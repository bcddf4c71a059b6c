"""Realization-context state: the current context, ``RealizationState``, the protocol.

The bottom layer of the front end (``interpreter.experimental``): it knows nothing of how
ops are staged. ``CURRENT`` is the context variable holding the current realization context
of this thread/task (REAL-2).
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import RealizationError
from ..graph.core import Graph, Value

if TYPE_CHECKING:
    from .mesh import DeviceMapping
    from .tensor import Tensor

__all__ = [
    "CURRENT",
    "RealizationContext",
    "RealizationState",
    "current_realization_context",
    "realization_context",
    "realize_context",
    "run_sync",
]


class RealizationState:
    """The graph values (one per shard) of an unrealized tensor and their context (REAL-20)."""

    __slots__ = ("ctx", "values")

    def __init__(self, values: tuple[Value, ...], ctx: RealizationContext) -> None:
        self.values = values
        self.ctx = ctx

    @property
    def num_values(self) -> int:
        return len(self.values)

    @property
    def value(self) -> Value:
        if len(self.values) != 1:
            raise RealizationError(f"Cannot access single value on a sharded RealizationState. "
                                   f"This state has {len(self.values)} shard values. [REAL-20]")
        return self.values[0]

    @value.setter
    def value(self, v: Value) -> None:
        if len(self.values) != 1:
            raise RealizationError("Cannot set single value on a sharded state. [REAL-20]")
        self.values = (v,)

    def __eq__(self, other: object) -> bool:
        # identity per value: TensorValue.__eq__ stages an op
        return (isinstance(other, RealizationState) and other.ctx is self.ctx
                and len(other.values) == len(self.values)
                and all(a is b for a, b in zip(self.values, other.values, strict=True)))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RealizationState({self.values!r}, ctx={type(self.ctx).__name__})"


@runtime_checkable
class RealizationContext(Protocol):
    """What a realization context provides (MAX ``RealizationContext``, REAL-1)."""

    graph: Graph

    async def realize_all(self) -> list[Tensor]: ...
    def add_source(self, tensor: Tensor) -> RealizationState: ...
    def add_mutable_source(self, tensor: Tensor) -> RealizationState: ...
    def create_unrealized(self, values: tuple[Value, ...], *,
                          mapping: DeviceMapping | None = None) -> Tensor: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: Any) -> Any: ...


#: The current realization context of this thread/task (REAL-2); unset: none.
CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("realization_context")
_MISSING: Any = object()


def current_realization_context(default: Any = _MISSING) -> Any:
    """The current realization context (REAL-2). Without one: ``LookupError``, or ``default``
    when given (``current_realization_context(None)``)."""
    if default is _MISSING:
        return CURRENT.get()
    return CURRENT.get(default)


class realization_context:
    """``with realization_context(ctx):`` makes ``ctx`` current in this thread/task (REAL-2)."""

    __slots__ = ("ctx", "token")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.token: contextvars.Token[Any] | None = None

    def __enter__(self) -> Any:
        self.token = CURRENT.set(self.ctx)
        return self.ctx

    def __exit__(self, *exc: object) -> None:
        assert self.token is not None
        CURRENT.reset(self.token)
        self.token = None


def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (our contexts' ``realize_all``) to completion."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RealizationError("realize_all suspended; run it with asyncio instead [REAL-9]")


def realize_context(ctx: Any) -> None:
    """Realize ``ctx`` synchronously: ``realize_sync()`` where it has one (our contexts),
    else its ``realize_all()`` coroutine."""
    sync = getattr(ctx, "realize_sync", None)
    if sync is not None:
        sync()
    else:
        run_sync(ctx.realize_all())
