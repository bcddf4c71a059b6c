"""Eager/lazy tensors (MAX ``max.experimental.tensor``; spec/realization.md, REAL-n).

A ``Tensor`` is *realized* (backed by one numpy array per shard, ``real`` is True) or
*unrealized* (backed by a ``RealizationState``: graph values plus the realization context
whose graph computes them). Its state changes only through its own methods (``stage``,
``realize_from``, ``realize_in_place``). Operators, ops and factories that stage graph ops
are installed on the class by ``interpreter.experimental.functional`` (``F``), the layer that
can stage; the declarations below give them their types.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dtype import DType
from ..errors import RealizationError
from ..graph.core import BufferValue, TensorValue, Value
from ..types import DeviceRef, TensorType
from .context import (
    RealizationContext,
    RealizationState,
    current_realization_context,
    realization_context,
    realize_context,
)
from .mesh import DeviceMapping, DeviceMesh
from .tensor_repr import tensor_repr

# The context names live in ``context`` (the layer below); MAX users import them from here.
__all__ = ["RealizationContext", "RealizationState", "Tensor", "current_realization_context",
           "realization_context"]

_CPU = DeviceRef.CPU()


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
            return Tensor.from_data(data, dtype=dtype, device=device)
        if dtype is not None or device is not None:
            raise RealizationError("'dtype' and 'device' are only valid when 'data' is "
                                   "provided. [REAL-21]")
        if (storage is None) == (state is None):
            raise RealizationError("Must supply exactly one of 'storage' and 'state'. "
                                   "[REAL-21]")
        if storage is not None:
            return Tensor.from_storage(storage)
        assert state is not None
        return Tensor.from_state(state)

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        pass  # everything happens in __new__

    # -- constructors of the front end (the hot path) -------------------------------------
    @staticmethod
    def from_storage(array: np.ndarray, type: TensorType | None = None,
                     device: DeviceRef = _CPU) -> Tensor:
        """A realized tensor on ``array`` (not copied); ``type`` defaults to the array's."""
        if not isinstance(array, np.ndarray):
            raise RealizationError(f"Tensor storage must be a numpy.ndarray, got "
                                   f"{array.__class__.__name__} [REAL-21]")
        t = object.__new__(Tensor)
        t._storages = (array,)
        t._state = None
        t._type = type or TensorType(DType.from_numpy(array.dtype), array.shape, device)
        t._mapping = None
        return t

    @staticmethod
    def from_state(state: RealizationState, mapping: DeviceMapping | None = None,
                   type: TensorType | None = None) -> Tensor:
        """An unrealized tensor for ``state`` (its global ``type`` when distributed)."""
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
        return Tensor.from_storage(arr)

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

    @staticmethod
    def constant(value: Any, dtype: DType | None = None, device: DeviceRef | None = None
                 ) -> Tensor:
        warnings.warn("Tensor.constant() is deprecated. Use Tensor(value, dtype=dtype, "
                      "device=device) instead.", DeprecationWarning, stacklevel=2)
        return Tensor(value, dtype=dtype, device=device)

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
        self.check_not_distributed("storage")
        return self._storages[0]

    driver_tensor = storage

    @property
    def storages(self) -> tuple[np.ndarray, ...] | None:
        """The arrays held (one per shard), also while staged as a mutable source; None
        for a tensor computed by a graph that has not run yet."""
        return self._storages

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
        self.check_not_distributed("type")
        return self._type

    @property
    def global_type(self) -> TensorType:
        """The type of the (global) value, also for a distributed tensor."""
        return self._type

    @property
    def shape(self) -> tuple[int, ...]:
        return self._type.shape

    @property
    def dtype(self) -> DType:
        return self._type.dtype

    @property
    def device(self) -> DeviceRef:
        self.check_not_distributed("device")
        return self._type.device

    @property
    def rank(self) -> int:
        return len(self._type.shape)

    def num_elements(self) -> int:
        return self._type.num_elements

    @property
    def mapping(self) -> DeviceMapping:
        if self._mapping is None:
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
            return [Tensor.from_storage(a, device=d) for a, d in zip(self._storages, devices,
                                                              strict=True)]
        ctx = self._state.ctx
        return [Tensor.from_state(RealizationState((v,), ctx), None) for v in self._state.values]

    def check_not_distributed(self, op: str) -> None:
        if self._mapping is not None and self._mapping.mesh.num_devices > 1:
            raise ValueError(f"Cannot call {op!r} on a sharded tensor distributed over "
                             f"{self._mapping}. Use per-shard access or transfer_to first. "
                             "[REAL-22]")

    # -- state transitions (the only writers of the state) ---------------------------------
    def stage(self, state: RealizationState) -> None:
        """Become unrealized, computed by ``state`` (a mutable source, a copy-on-write buffer;
        REAL-25, REAL-26)."""
        self._state = state

    def realize_from(self, storages: Sequence[np.ndarray]) -> None:
        """Become realized with one array per shard, from an execution (REAL-9)."""
        self._storages = tuple(storages)
        self._state = None

    def realize_in_place(self) -> None:
        """The storage was mutated in place by an execution: realized again (REAL-26)."""
        self._state = None

    # -- realization ------------------------------------------------------------------------
    def realize_sync(self) -> None:
        """Realize this tensor now by realizing its context (REAL-11)."""
        st = self._state
        if st is not None:
            realize_context(st.ctx)
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

    # -- conversions (realize) --------------------------------------------------------------
    def item(self) -> Any:
        """The single element as a Python scalar; realizes the tensor (REAL-12)."""
        self.realize_sync()
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
        self.realize_sync()
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
        self.realize_sync()
        for i in range(self.shape[0]):
            yield self[i]

    def __len__(self) -> int:
        if self.rank == 0:
            raise TypeError("len() of a rank-0 tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo: Any) -> Tensor:
        return self  # tensors are value-semantic

    def cast(self, dtype: DType) -> Tensor:
        if self._state is None and self._type.dtype is dtype:
            return self
        return self._cast(dtype)

    def to(self, target: DeviceRef | DeviceMesh | DeviceMapping) -> Tensor:
        """Move to a device, mesh or mapping (``F.transfer_to``)."""
        if isinstance(target, DeviceRef):
            if self._state is None and not self.is_distributed:
                if self._type.device == target:
                    return self
                assert self._storages is not None
                return Tensor.from_storage(self._storages[0].copy(),
                                           self._type.with_(device=target))
        elif not isinstance(target, DeviceMesh | DeviceMapping):
            raise TypeError(f"Tensor.to: expected a DeviceRef, DeviceMesh or DeviceMapping, "
                            f"got {type(target).__name__}")
        return self._transfer_to(target)

    def __pos__(self) -> Tensor:
        return self

    def __divmod__(self, o: Any) -> tuple[Tensor, Tensor]:
        return (self // o, self % o)

    def __rdivmod__(self, o: Any) -> tuple[Tensor, Tensor]:
        return (o // self, o % self)

    def flatten(self) -> Tensor:
        return self.reshape((-1,))

    def clip(self, *, min: Any = None, max: Any = None) -> Tensor:
        x = self
        if min is not None:
            x = x._maximum(min)
        if max is not None:
            x = x._minimum(max)
        return x

    if TYPE_CHECKING:  # installed by interpreter.experimental.functional (install_methods)
        @staticmethod
        def from_data(data: Any, dtype: DType | None = None,
                      device: DeviceRef | None = None) -> Tensor:
            """``Tensor(data, dtype=, device=)``: ``F.constant``."""
        @staticmethod
        def full(shape: Sequence[int], value: Any, dtype: DType | None = None,
                 device: DeviceRef | None = None) -> Tensor: ...
        @staticmethod
        def zeros(shape: Sequence[int], dtype: DType | None = None,
                  device: DeviceRef | None = None) -> Tensor: ...
        @staticmethod
        def ones(shape: Sequence[int], dtype: DType | None = None,
                 device: DeviceRef | None = None) -> Tensor: ...
        @staticmethod
        def full_like(t: Tensor, value: Any) -> Tensor: ...
        @staticmethod
        def zeros_like(t: Tensor) -> Tensor: ...
        @staticmethod
        def ones_like(t: Tensor) -> Tensor: ...
        @staticmethod
        def arange(start: float, stop: float | None = None, step: float = 1,
                   dtype: DType | None = None, device: DeviceRef | None = None) -> Tensor: ...
        def __add__(self, o: Any) -> Tensor: ...
        def __radd__(self, o: Any) -> Tensor: ...
        def __sub__(self, o: Any) -> Tensor: ...
        def __rsub__(self, o: Any) -> Tensor: ...
        def __mul__(self, o: Any) -> Tensor: ...
        def __rmul__(self, o: Any) -> Tensor: ...
        def __truediv__(self, o: Any) -> Tensor: ...
        def __rtruediv__(self, o: Any) -> Tensor: ...
        def __floordiv__(self, o: Any) -> Tensor: ...
        def __rfloordiv__(self, o: Any) -> Tensor: ...
        def __mod__(self, o: Any) -> Tensor: ...
        def __rmod__(self, o: Any) -> Tensor: ...
        def __pow__(self, o: Any) -> Tensor: ...
        def __rpow__(self, o: Any) -> Tensor: ...
        def __matmul__(self, o: Any) -> Tensor: ...
        def __rmatmul__(self, o: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __and__(self, o: Any) -> Tensor: ...
        def __rand__(self, o: Any) -> Tensor: ...
        def __or__(self, o: Any) -> Tensor: ...
        def __ror__(self, o: Any) -> Tensor: ...
        def __xor__(self, o: Any) -> Tensor: ...
        def __rxor__(self, o: Any) -> Tensor: ...
        def __eq__(self, o: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, o: Any) -> Tensor: ...  # type: ignore[override]
        def __gt__(self, o: Any) -> Tensor: ...
        def __ge__(self, o: Any) -> Tensor: ...
        def __lt__(self, o: Any) -> Tensor: ...  # IEEE (REAL-24)
        def __le__(self, o: Any) -> Tensor: ...
        def __getitem__(self, index: Any) -> Tensor: ...
        def __setitem__(self, index: Any, value: Tensor) -> None:
            """In-place store of ``value`` into ``self[index]`` (REAL-25)."""
        @property
        def T(self) -> Tensor: ...
        def transpose(self, a: int, b: int) -> Tensor: ...
        def permute(self, dims: Sequence[int]) -> Tensor: ...
        def reshape(self, shape: Sequence[int]) -> Tensor: ...
        def broadcast_to(self, shape: Sequence[int]) -> Tensor: ...
        def sum(self, axis: int | None = -1) -> Tensor: ...
        def mean(self, axis: int | None = -1) -> Tensor: ...
        def prod(self, axis: int | None = -1) -> Tensor: ...
        def max(self, axis: int | None = -1) -> Tensor: ...
        def min(self, axis: int | None = -1) -> Tensor: ...
        def argmax(self, axis: int | None = -1) -> Tensor: ...
        def argmin(self, axis: int | None = -1) -> Tensor: ...
        def _cast(self, dtype: DType) -> Tensor: ...
        def _transfer_to(self, target: DeviceMesh | DeviceMapping | DeviceRef) -> Tensor: ...
        def _maximum(self, o: Any) -> Tensor: ...
        def _minimum(self, o: Any) -> Tensor: ...
