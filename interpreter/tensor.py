"""Eager/lazy tensors (MAX ``max.experimental.tensor``; spec/realization.md, REAL-n).

A ``Tensor`` is *realized* (backed by one numpy array per shard, ``real`` is True) or
*unrealized* (backed by a ``RealizationState``: graph values plus the realization context
whose graph computes them). Ops on tensors go through ``interpreter.functional`` (``F``),
which stages them into the current realization context (or an implicit one).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from .dtype import DType
from .errors import RealizationError
from .graph.core import BufferValue, Graph, TensorValue, Value
from .types import BufferType, DeviceRef, TensorType

if TYPE_CHECKING:
    from .mesh import DeviceMapping, DeviceMesh

__all__ = [
    "RealizationContext",
    "RealizationState",
    "Tensor",
    "current_realization_context",
    "realization_context",
]

_CPU = DeviceRef.CPU()


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


_CONTEXT: contextvars.ContextVar[Any] = contextvars.ContextVar("realization_context")
_MISSING: Any = object()


def current_realization_context(default: Any = _MISSING) -> Any:
    """The current realization context (REAL-2). Without one: ``LookupError``, or ``default``
    when given (``current_realization_context(None)``)."""
    if default is _MISSING:
        return _CONTEXT.get()
    return _CONTEXT.get(default)


class realization_context:
    """``with realization_context(ctx):`` makes ``ctx`` current in this thread/task (REAL-2)."""

    __slots__ = ("ctx", "token")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.token: contextvars.Token[Any] | None = None

    def __enter__(self) -> Any:
        self.token = _CONTEXT.set(self.ctx)
        return self.ctx

    def __exit__(self, *exc: object) -> None:
        assert self.token is not None
        _CONTEXT.reset(self.token)
        self.token = None


def _realize_ctx(ctx: Any) -> None:
    """Realize ``ctx`` synchronously (our contexts have ``_realize_sync``)."""
    run = getattr(ctx, "_realize_sync", None)
    if run is not None:
        run()
    else:
        from .functional import _run

        _run(ctx.realize_all())


class Tensor:
    """A tensor: realized (numpy storage) or unrealized (graph values in a context)."""

    __slots__ = ("__weakref__", "_mapping", "_state", "_storages", "_type")

    _storages: tuple[np.ndarray, ...] | None
    _state: RealizationState | None
    _type: TensorType
    _mapping: DeviceMapping | None

    def __new__(cls, data: Any = None, *, dtype: DType | None = None,
                device: DeviceRef | None = None, storage: np.ndarray | None = None,
                state: RealizationState | None = None) -> Tensor:
        if data is not None:
            if storage is not None or state is not None:
                raise RealizationError("Cannot supply both 'data' and internal "
                                       "'storage'/'state'. [REAL-21]")
            from . import functional as F

            return F.constant(data, dtype=dtype, device=device)
        if dtype is not None or device is not None:
            raise RealizationError("'dtype' and 'device' are only valid when 'data' is "
                                   "provided. [REAL-21]")
        if (storage is None) == (state is None):
            raise RealizationError("Must supply exactly one of 'storage' and 'state'. "
                                   "[REAL-21]")
        if storage is not None:
            return Tensor._real(storage)
        assert state is not None
        return Tensor._unreal(state, None)

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        pass  # everything happens in __new__

    # -- internal constructors (the hot path) ---------------------------------------------
    @staticmethod
    def _real(array: np.ndarray, type: TensorType | None = None,
              device: DeviceRef = _CPU) -> Tensor:
        if not isinstance(array, np.ndarray):
            raise RealizationError(f"Tensor storage must be a numpy.ndarray, got "
                                   f"{type(array).__name__} [REAL-21]")
        t = object.__new__(Tensor)
        t._storages = (array,)
        t._state = None
        t._type = type or TensorType(DType.from_numpy(array.dtype), array.shape, device)
        t._mapping = None
        return t

    @staticmethod
    def _unreal(state: RealizationState, mapping: DeviceMapping | None,
                type: TensorType | None = None) -> Tensor:
        t = object.__new__(Tensor)
        t._storages = None
        t._state = state
        if type is None:
            vt = state.values[0].type
            type = vt if vt.__class__ is TensorType else vt.as_tensor()
        t._type = type
        t._mapping = mapping
        return t

    @staticmethod
    def from_dlpack(array: Any) -> Tensor:
        """Wrap a DLPack-capable array without copying (no graph); a Tensor is returned as is."""
        if isinstance(array, Tensor):
            return array
        arr = array if isinstance(array, np.ndarray) else np.from_dlpack(array)
        return Tensor._real(arr)

    @staticmethod
    def from_graph_value(value: Value) -> Tensor:
        """An unrealized tensor for ``value`` in the current realization context."""
        if not isinstance(value, TensorValue | BufferValue):
            raise RealizationError(f"{value=} must be a tensor or buffer value [REAL-21]")
        t: Tensor = current_realization_context().create_unrealized((value,))
        return t

    @staticmethod
    def from_shard_values(values: Sequence[Value], mapping: DeviceMapping | None = None
                          ) -> Tensor:
        vals = tuple(values)
        if len(vals) > 1 and mapping is None:
            raise ValueError("from_shard_values: more than one value needs a mapping "
                             "[REAL-22]")
        if not all(isinstance(v, TensorValue | BufferValue) for v in vals):
            raise RealizationError("from_shard_values: values must be graph values [REAL-22]")
        t: Tensor = current_realization_context().create_unrealized(vals, mapping=mapping)
        return t

    # -- factories (delegate to F) -----------------------------------------------------------
    @staticmethod
    def constant(value: Any, dtype: DType | None = None, device: DeviceRef | None = None
                 ) -> Tensor:
        import warnings

        warnings.warn("Tensor.constant() is deprecated. Use Tensor(value, dtype=dtype, "
                      "device=device) instead.", DeprecationWarning, stacklevel=2)
        return Tensor(value, dtype=dtype, device=device)

    @staticmethod
    def full(shape: Sequence[int], value: Any, dtype: DType | None = None,
             device: DeviceRef | None = None) -> Tensor:
        from . import functional as F

        return F.full(shape, value, dtype=dtype, device=device)

    @staticmethod
    def zeros(shape: Sequence[int], dtype: DType | None = None,
              device: DeviceRef | None = None) -> Tensor:
        return Tensor.full(shape, 0, dtype=dtype, device=device)

    @staticmethod
    def ones(shape: Sequence[int], dtype: DType | None = None,
             device: DeviceRef | None = None) -> Tensor:
        return Tensor.full(shape, 1, dtype=dtype, device=device)

    @staticmethod
    def full_like(t: Tensor, value: Any) -> Tensor:
        from . import functional as F

        return F.full_like(t, value)

    @staticmethod
    def zeros_like(t: Tensor) -> Tensor:
        return Tensor.full_like(t, 0)

    @staticmethod
    def ones_like(t: Tensor) -> Tensor:
        return Tensor.full_like(t, 1)

    @staticmethod
    def arange(start: float, stop: float | None = None, step: float = 1,
               dtype: DType | None = None, device: DeviceRef | None = None) -> Tensor:
        from . import functional as F

        return F.arange(start, stop, step, dtype=dtype, device=device)

    # -- state and metadata ------------------------------------------------------------------
    @property
    def real(self) -> bool:
        return self._state is None

    @property
    def state(self) -> RealizationState | None:
        return self._state

    @property
    def storage(self) -> np.ndarray:
        """The single realized array (no realization; ``TypeError`` when unrealized)."""
        if self._state is not None or self._storages is None:
            raise RealizationError("Can't get storage of an unrealized tensor - realize the "
                                   "tensor first. [REAL-23]")
        self._check_not_distributed("storage")
        return self._storages[0]

    driver_tensor = storage

    @property
    def buffers(self) -> tuple[np.ndarray, ...]:
        if self._state is not None or self._storages is None:
            raise RealizationError("Can't get buffers for unrealized tensor - realize the "
                                   "tensor first. [REAL-23]")
        return self._storages

    @property
    def _graph_value(self) -> Value:
        if self._state is None:
            raise RealizationError("Can't get symbolic value for real tensor. [REAL-23]")
        return self._state.value

    @property
    def type(self) -> TensorType:
        self._check_not_distributed("type")
        return self._type

    @property
    def shape(self) -> tuple[int, ...]:
        return self._type.shape

    @property
    def dtype(self) -> DType:
        return self._type.dtype

    @property
    def device(self) -> DeviceRef:
        self._check_not_distributed("device")
        return self._type.device

    @property
    def rank(self) -> int:
        return len(self._type.shape)

    def num_elements(self) -> int:
        return self._type.num_elements

    @property
    def mapping(self) -> DeviceMapping:
        if self._mapping is None:
            from .mesh import DeviceMapping

            self._mapping = DeviceMapping.single(self._type.device)
        return self._mapping

    @property
    def mesh(self) -> DeviceMesh:
        return self.mapping.mesh

    @property
    def placements(self) -> tuple[Any, ...]:
        return self.mapping.placements

    @property
    def is_distributed(self) -> bool:
        return self._mapping is not None and self._mapping.mesh.num_devices > 1

    @property
    def num_shards(self) -> int:
        if self._state is not None:
            return len(self._state.values)
        assert self._storages is not None
        return len(self._storages)

    @property
    def graph_values(self) -> tuple[Value, ...]:
        if self._state is None:
            raise RealizationError("Can't get symbolic value for real tensor. [REAL-23]")
        return self._state.values

    @property
    def local_shards(self) -> list[Tensor]:
        """One single-device tensor per shard (unrealized shards share the context)."""
        devices = self.mapping.mesh.devices
        if self._state is None:
            assert self._storages is not None
            return [Tensor._real(a, device=d) for a, d in zip(self._storages, devices,
                                                              strict=True)]
        ctx = self._state.ctx
        return [Tensor._unreal(RealizationState((v,), ctx), None) for v in self._state.values]

    def _check_not_distributed(self, op: str) -> None:
        if self._mapping is not None and self._mapping.mesh.num_devices > 1:
            raise ValueError(f"Cannot call {op!r} on a sharded tensor distributed over "
                             f"{self._mapping}. Use per-shard access or transfer_to first. "
                             "[REAL-22]")

    # -- realization ------------------------------------------------------------------------
    def _sync_realize(self) -> None:
        st = self._state
        if st is not None:
            _realize_ctx(st.ctx)
            if self._state is not None:
                raise RealizationError("tensor is still unrealized after its context was "
                                       "realized (it is not tracked by its context) [REAL-11]")

    async def _realize(self) -> Tensor:
        st = self._state
        if st is not None:
            await st.ctx.realize_all()
        return self

    @property
    def realize(self) -> Any:
        """``await t.realize`` realizes ``t``'s whole context and returns ``t`` (REAL-11)."""
        return self._realize()

    def __await__(self) -> Any:
        return self._realize().__await__()

    # -- graph staging (used by F) --------------------------------------------------------
    def __tensorvalue__(self) -> TensorValue:
        ctx = _CONTEXT.get()
        from .functional import _value_in

        v: TensorValue = _value_in(self, ctx)
        return v

    def __buffervalue__(self) -> BufferValue:
        from .functional import _buffer_in

        return _buffer_in(self, _CONTEXT.get())

    # -- conversions (realize) --------------------------------------------------------------
    def item(self) -> Any:
        """The single element as a Python scalar; realizes the tensor (REAL-12)."""
        self._sync_realize()
        if self._type.num_elements != 1:
            raise ValueError(f"item(): tensor of shape {list(self.shape)} has "
                             f"{self._type.num_elements} elements, expected 1 [REAL-12]")
        assert self._storages is not None
        v = self._storages[0].reshape(-1)[0]
        d = self._type.dtype
        if d is DType.bool:
            return bool(v)
        if d.is_integral():
            return int(v)
        return float(v)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __index__(self) -> int:
        if not self._type.dtype.is_integral():
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    def _array(self) -> np.ndarray:
        self._sync_realize()
        if self.is_distributed:
            raise ValueError("to_numpy(): gather a distributed tensor first (transfer_to a "
                             "single device) [REAL-22]")
        assert self._storages is not None
        return self._storages[0]

    def to_numpy(self) -> np.ndarray:
        """A copy of the values as a numpy array; realizes the tensor (REAL-12)."""
        return self._array().copy()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self._array()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            return arr.astype(dtype)
        if copy:
            return arr.copy()
        view = arr.view()
        view.flags.writeable = False
        return view

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._array().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        dev: tuple[int, int] = self._array().__dlpack_device__()
        return dev

    def __iter__(self) -> Iterator[Tensor]:
        if self.rank == 0:
            raise TypeError("iteration over a rank-0 tensor")
        self._sync_realize()
        for i in range(self.shape[0]):
            yield self[i]

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a rank-0 tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        from .tensor_repr import tensor_repr

        return tensor_repr(self)

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo: Any) -> Tensor:
        return self  # tensors are value-semantic

    # -- ops: straight to the staging call (one frame less on the hottest path) -----------
    def __add__(self, o: Any) -> Tensor: return _op(_ops.add, (self, o))
    def __radd__(self, o: Any) -> Tensor: return _op(_ops.add, (o, self))
    def __sub__(self, o: Any) -> Tensor: return _op(_ops.sub, (self, o))
    def __rsub__(self, o: Any) -> Tensor: return _op(_ops.sub, (o, self))
    def __mul__(self, o: Any) -> Tensor: return _op(_ops.mul, (self, o))
    def __rmul__(self, o: Any) -> Tensor: return _op(_ops.mul, (o, self))
    def __truediv__(self, o: Any) -> Tensor: return _op(_ops.div, (self, o))
    def __rtruediv__(self, o: Any) -> Tensor: return _op(_ops.div, (o, self))
    def __floordiv__(self, o: Any) -> Tensor: return _op(_ops.floor_div, (self, o))
    def __rfloordiv__(self, o: Any) -> Tensor: return _op(_ops.floor_div, (o, self))
    def __mod__(self, o: Any) -> Tensor: return _op(_ops.mod, (self, o))
    def __rmod__(self, o: Any) -> Tensor: return _op(_ops.mod, (o, self))
    def __pow__(self, o: Any) -> Tensor: return _op(_ops.pow, (self, o))
    def __rpow__(self, o: Any) -> Tensor: return _op(_ops.pow, (o, self))
    def __matmul__(self, o: Any) -> Tensor: return _op(_ops.matmul, (self, o))
    def __rmatmul__(self, o: Any) -> Tensor: return _op(_ops.matmul, (o, self))
    def __divmod__(self, o: Any) -> tuple[Tensor, Tensor]: return (self // o, self % o)
    def __rdivmod__(self, o: Any) -> tuple[Tensor, Tensor]: return (o // self, o % self)
    def __neg__(self) -> Tensor: return _op(_ops.negate, (self,))
    def __pos__(self) -> Tensor: return self
    def __abs__(self) -> Tensor: return _op(_ops.abs, (self,))
    def __invert__(self) -> Tensor: return _op(_ops.logical_not, (self,))
    def __and__(self, o: Any) -> Tensor: return _op(_ops.logical_and, (self, o))
    def __rand__(self, o: Any) -> Tensor: return _op(_ops.logical_and, (o, self))
    def __or__(self, o: Any) -> Tensor: return _op(_ops.logical_or, (self, o))
    def __ror__(self, o: Any) -> Tensor: return _op(_ops.logical_or, (o, self))
    def __xor__(self, o: Any) -> Tensor: return _op(_ops.logical_xor, (self, o))
    def __rxor__(self, o: Any) -> Tensor: return _op(_ops.logical_xor, (o, self))
    def __eq__(self, o: Any) -> Tensor: return _op(_ops.equal, (self, o))  # type: ignore[override]
    def __ne__(self, o: Any) -> Tensor: return _op(_ops.not_equal, (self, o))  # type: ignore[override]
    def __gt__(self, o: Any) -> Tensor: return _op(_ops.greater, (self, o))
    def __ge__(self, o: Any) -> Tensor: return _op(_ops.greater_equal, (self, o))
    def __lt__(self, o: Any) -> Tensor: return _op(_ops.less, (self, o))  # IEEE (REAL-24)
    def __le__(self, o: Any) -> Tensor: return _op(_ops.less_equal, (self, o))

    def __getitem__(self, index: Any) -> Tensor:
        return _Fm.getitem(self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        """In-place store of ``value`` into ``self[index]`` (``buffer_store_slice``, REAL-25)."""
        if not isinstance(value, Tensor):
            raise RealizationError("__setitem__ requires a Tensor value; use Buffer indexing "
                                   "for scalar writes. [REAL-25]")
        _Fm.buffer_store_slice(self, value, index)

    # -- methods ----------------------------------------------------------------------------
    def cast(self, dtype: DType) -> Tensor:
        if self._state is None and self._type.dtype is dtype:
            return self
        return _Fm.cast(self, dtype)

    def to(self, target: Any) -> Tensor:
        """Move to a device, mesh or mapping (``F.transfer_to``)."""
        from .mesh import DeviceMapping, DeviceMesh

        if isinstance(target, DeviceRef):
            if self._state is None and not self.is_distributed:
                if self._type.device == target:
                    return self
                assert self._storages is not None
                return Tensor._real(self._storages[0].copy(), self._type.with_(device=target))
        elif not isinstance(target, DeviceMesh | DeviceMapping):
            raise TypeError(f"Tensor.to: expected a DeviceRef, DeviceMesh or DeviceMapping, "
                            f"got {type(target).__name__}")
        return _Fm.transfer_to(self, target)

    @property
    def T(self) -> Tensor:
        return _Fm.transpose(self, -1, -2)

    def transpose(self, a: int, b: int) -> Tensor:
        return _Fm.transpose(self, a, b)

    def permute(self, dims: Sequence[int]) -> Tensor:
        return _Fm.permute(self, dims)

    def reshape(self, shape: Sequence[int]) -> Tensor:
        return _Fm.reshape(self, shape)

    def flatten(self) -> Tensor:
        return _Fm.reshape(self, (-1,))

    def broadcast_to(self, shape: Sequence[int]) -> Tensor:
        return _Fm.broadcast_to(self, shape)

    def clip(self, *, min: Any = None, max: Any = None) -> Tensor:
        x = self
        if min is not None:
            x = _Fm.maximum(x, min)
        if max is not None:
            x = _Fm.minimum(x, max)
        return x

    def sum(self, axis: int | None = -1) -> Tensor:
        return _Fm.sum(self, axis=axis)

    def mean(self, axis: int | None = -1) -> Tensor:
        return _Fm.mean(self, axis=axis)

    def prod(self, axis: int | None = -1) -> Tensor:
        return _Fm.prod(self, axis=axis)

    def max(self, axis: int | None = -1) -> Tensor:
        return _Fm.max(self, axis=axis)

    def min(self, axis: int | None = -1) -> Tensor:
        return _Fm.min(self, axis=axis)

    def argmax(self, axis: int | None = -1) -> Tensor:
        return _Fm.argmax(self, axis=axis)

    def argmin(self, axis: int | None = -1) -> Tensor:
        return _Fm.argmin(self, axis=axis)


_ = BufferType
from .graph import ops as _ops  # noqa: E402


def _op(fn: Any, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Any:
    """Stage ``fn`` on ``args``. ``interpreter.functional`` replaces this with its ``_call``
    when it loads (just below, or earlier if it was imported first)."""
    return _functional._call(fn, args, kwargs)


from . import functional as _functional  # noqa: E402  (circular: F uses Tensor at call time)

_Fm: Any = _functional
