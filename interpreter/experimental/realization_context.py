"""Realization contexts: eager, lazy and graph (MAX ``max.experimental.realization_context``).

A context owns a graph. Ops staged while it is current add nodes; realized tensors used by
them become graph inputs (*sources*); results are unrealized tensors tracked by weakref.
Realizing the context finalizes the graph (seed first, then live tracked tensors; DCE;
unused-input removal; lowering), runs it through the context's executor in **one** call,
validates the results and only then changes any tensor (spec/realization.md, REAL-n).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..dtype import NUMPY_DTYPES, DType
from ..errors import ExecutorResultError, RealizationError
from ..graph import ops
from ..graph.core import CURRENT_GRAPH, BufferValue, Graph, TensorValue, Value
from ..graph.lowering import lower
from ..graph.ops.staging import constant as stage_constant
from ..graph.passes import prune
from ..selection import PreferInterpreterExecutor, SetterContext, build_executor, default_executor
from ..types import DeviceRef, TensorType
from .context import CURRENT, RealizationState, current_realization_context
from .mesh import DeviceMapping, DeviceMesh, global_shape
from .tensor import Tensor

__all__ = [
    "SIGNAL_BUFFER_BYTES",
    "EagerRealizationContext",
    "GraphRealizationContext",
    "LazyRealizationContext",
    "check_results",
    "default_factory",
    "default_realization_context",
    "distributed_error",
    "ensure_context",
    "seed",
    "set_default_realization_context",
    "set_seed",
]

_CPU = DeviceRef.CPU()
_SEED_TYPE = TensorType(DType.uint64, (1,), _CPU)
_SEED_STORAGE = np.zeros(1, np.uint64)
_SEED = Tensor.from_storage(_SEED_STORAGE, _SEED_TYPE)
#: Serializes executions that consume random numbers with the seed write-back (REAL-33).
_SEED_LOCK = threading.RLock()
_ONE = np.ones(1, np.uint64)
_ONE.flags.writeable = False
#: Eager/lazy contexts that may hold sources; see ``_snapshot_for_readers`` (REAL-48).
_LIVE_CONTEXTS: weakref.WeakSet[EagerRealizationContext] = weakref.WeakSet()


def seed() -> Tensor:
    """The global seed: a realized uint64 tensor of shape [1] on the CPU, initially 0 (REAL-30)."""
    return _SEED


def set_seed(value: int) -> None:
    """Write ``value`` into the global seed now; open contexts read it at execution (REAL-32)."""
    v = int(value)
    if not 0 <= v < 2**64:
        raise ValueError(f"set_seed: {value!r} is not in [0, 2**64) [REAL-30]")
    with _SEED_LOCK:
        _SEED_STORAGE[0] = v


class _Staging:
    """What the eager and graph contexts share: the graph, seeds, unrealized tensors."""

    graph: Graph
    _seed_value: TensorValue | None
    _seed_count: int

    def source_value(self, tensor: Tensor) -> Value:
        raise NotImplementedError

    def add_source(self, tensor: Tensor) -> RealizationState:
        """Register a realized tensor as a graph source (REAL-3, REAL-4)."""
        if tensor.state is not None:
            raise RealizationError("Only realized tensors may be graph sources. [REAL-3]")
        if tensor.is_distributed:
            return RealizationState(self._shard_values(tensor), self)  # type: ignore[arg-type]
        return RealizationState((self.source_value(tensor),), self)  # type: ignore[arg-type]

    def _shard_values(self, tensor: Tensor) -> tuple[Value, ...]:
        return tuple(self.source_value(s) for s in tensor.local_shards)

    def next_seed(self) -> TensorValue:
        """The seed for one random op; the graph's seed advances by 1 now (REAL-31)."""
        cur = self._seed_value
        if cur is None:  # graph contexts embed the global seed as it is now
            cur = stage_constant(self.graph, _SEED_STORAGE.copy(), DType.uint64, _CPU)
        one = stage_constant(self.graph, _ONE, DType.uint64, _CPU)
        self._seed_value = ops.add(cur, one)
        self._seed_count += 1
        return cur


class EagerRealizationContext(_Staging):
    """Stages ops into one graph and realizes every tracked tensor at ``__exit__`` (REAL-5..)."""

    graph: Graph
    sources: dict[Value, Tensor]
    source_values: dict[int, Value]
    unrealized: list[weakref.ReferenceType[Tensor]]
    signal_buffers: list[BufferValue] | None

    def __init__(self, executor: Any = None, *, use_interpreter: bool | None = None) -> None:
        if use_interpreter is not None:
            warnings.warn("EagerRealizationContext(use_interpreter=...) is deprecated; pass "
                          "executor=InterpreterExecutor() (or another executor) or use "
                          "interpreter.selection.set_default_executor(...) [SEL-2]",
                          DeprecationWarning, stacklevel=2)
        if executor is not None:
            self._executor = executor
        elif use_interpreter is True:
            self._executor = PreferInterpreterExecutor()
        elif use_interpreter is False:
            self._executor = build_executor("compile")
        else:
            self._executor = default_executor()
        self._graph_tokens: list[Any] = []
        self._new_graph()

    @property
    def executor(self) -> Any:
        """The executor bound at construction (SEL-1)."""
        return self._executor

    def _new_graph(self) -> None:
        self.graph = Graph("main")
        self.sources = {}
        self.source_values = {}
        self.unrealized = []
        self.signal_buffers = None
        self._mutated: list[Tensor] = []
        self._spent = False
        self._seed_count = 0
        self._seed_value = None
        self._seed_value = self.source_value(_SEED)  # type: ignore[assignment]
        _LIVE_CONTEXTS.add(self)

    # -- sources --------------------------------------------------------------------------
    def source_value(self, tensor: Tensor) -> Value:
        v = self.source_values.get(id(tensor))
        if v is None:
            if tensor.state is not None:
                raise RealizationError("Only realized tensors may be graph sources. [REAL-3]")
            if tensor.is_distributed:
                raise distributed_error(tensor)
            v = self.graph.add_input(tensor.global_type)
            self.sources[v] = tensor
            self.source_values[id(tensor)] = v
        return v

    def add_mutable_source(self, tensor: Tensor) -> RealizationState:
        """Register a realized tensor as a mutable (``BufferType``) input (REAL-6).

        An earlier read-only registration is upgraded: a new buffer input is added and later
        ``add_source`` calls return it; the unused read-only input is pruned at finalize."""
        if tensor.state is not None and tensor.state.ctx is not self:
            raise RealizationError("Only realized tensors may be graph sources. [REAL-3]")
        v = self.source_values.get(id(tensor))
        if not isinstance(v, BufferValue):
            if tensor.is_distributed:
                raise RealizationError("cannot mutate a distributed tensor [REAL-22]")
            _snapshot_for_readers(tensor, self)
            v = self.graph.add_input(tensor.global_type.as_buffer())
            self.sources[v] = tensor
            self.source_values[id(tensor)] = v
            self._mutated.append(tensor)
        return RealizationState((v,), self)

    def create_unrealized(self, values: tuple[Value, ...], *,
                          mapping: DeviceMapping | None = None) -> Tensor:
        """A new unrealized tensor for ``values``, tracked by weakref (REAL-7)."""
        if mapping is not None and mapping.mesh.num_devices == 1:
            mapping = None
        t = Tensor.from_state(RealizationState(values, self), mapping,
                           None if mapping is None else _global_type(values, mapping))
        self.unrealized.append(weakref.ref(t))
        return t

    def ensure_signal_buffers(self, mesh: DeviceMesh) -> list[BufferValue] | None:
        """Signal buffers for collectives on ``mesh`` (REAL-40): ``None`` for CPU-only and
        single-GPU meshes; else one uint8 buffer input per GPU, cached per context."""
        if self.signal_buffers is not None:
            return self.signal_buffers
        gpus: list[int] = []
        for d in mesh.devices:
            if d.is_gpu() and d.id not in gpus:
                gpus.append(d.id)
        if len(gpus) < 2:
            return None
        arrays = _signal_arrays(tuple(gpus))
        values: list[BufferValue] = []
        for gid, arr in zip(gpus, arrays, strict=True):
            src = Tensor.from_storage(arr, TensorType(DType.uint8, arr.shape, DeviceRef.GPU(gid)))
            state = self.add_mutable_source(src)
            src.stage(state)
            values.append(state.values[0])  # type: ignore[arg-type]
        self.signal_buffers = values
        return values

    # -- finalize and realize ----------------------------------------------------------------
    def finalize_graph(self) -> tuple[list[Tensor], Graph]:
        """Set the outputs (the seed, then live tracked tensors in creation order), remove
        dead code and unused inputs, lower; returns ``(outputs, graph)`` (REAL-8).

        May be called again (a retry after a failure): the outputs are rebuilt."""
        g = self.graph
        assert self._seed_value is not None
        seed_t = Tensor.from_state(RealizationState((self._seed_value,), self), None, _SEED_TYPE)
        outputs = [seed_t]
        out_values: list[Value] = [self._seed_value]
        alive = []
        for ref in self.unrealized:
            t = ref()
            if t is None:
                continue
            alive.append(ref)
            st = t.state
            if st is None or st.ctx is not self:
                continue
            outputs.append(t)
            for v in st.values:
                if v.__class__ is BufferValue:
                    v = ops.buffer_load(v)
                out_values.append(v)
        self.unrealized = alive
        g.outputs = None
        g.output(*out_values)
        before = g.inputs
        kept = prune(g)  # dead code, then unused inputs (GRAPH-8, GRAPH-9)
        if len(kept) != len(before):
            keep = set(kept)
            for i, v in enumerate(before):
                if i not in keep:
                    t = self.sources.pop(v)
                    if self.source_values.get(id(t)) is v:
                        del self.source_values[id(t)]
                    if self.signal_buffers is not None and v in self.signal_buffers:
                        self.signal_buffers = None
        lower(g)
        return outputs, g

    def tracked(self) -> list[Tensor]:
        """The live tensors created here that this context still computes, oldest first."""
        alive = []
        for ref in self.unrealized:
            t = ref()
            if t is not None and t.state is not None and t.state.ctx is self:
                alive.append(t)
        return alive

    def replayable(self) -> bool:
        """Whether executing this context's graph again on the same sources would do what
        staging it again does: it drew no random numbers (REAL-31), mutates no source
        (REAL-6) and uses no signal buffers (REAL-40). For the eager-op memo (REAL-49)."""
        return (self._seed_count == 0 and self.signal_buffers is None
                and not any(v.__class__ is BufferValue for v in self.graph.inputs))

    async def realize_all(self) -> list[Tensor]:
        """Finalize, execute once, validate, then realize every tracked tensor (REAL-9)."""
        return self.realize_sync()

    def realize_sync(self, reset: bool = True) -> list[Tensor]:
        if CURRENT.get(None) is self:
            raise RealizationError("Can't realize tensor before realization context is "
                                   "completed. [REAL-10]")
        outputs, graph = self.finalize_graph()
        sources = self.sources
        inputs = []
        for v in graph.inputs:  # a loop: a comprehension's frame costs more here
            inputs.append(sources[v].storages[0])  # type: ignore[index]
        ex = self._executor
        if self._seed_count:
            with _SEED_LOCK:
                results = ex.execute(graph, inputs)
                check_results(ex, graph, results)
                _SEED_STORAGE[0] = results[0][0]  # written back only after success
        else:
            results = ex.execute(graph, inputs)
            check_results(ex, graph, results)
        i = 1
        for t in outputs[1:]:
            st = t.state
            assert st is not None
            n = len(st.values)
            t.realize_from(results[i:i + n])
            i += n
        for t in self._mutated:
            st = t.state
            if st is not None and st.ctx is self:
                t.realize_in_place()  # mutated in place: real again (REAL-26)
        self._mutated = []
        self.unrealized = []
        if reset:
            self._new_graph()
        else:
            self._spent = True
        return outputs[1:]

    # -- context manager ---------------------------------------------------------------------
    def __enter__(self) -> EagerRealizationContext:
        if self._spent:
            self._new_graph()
        self._graph_tokens.append(CURRENT_GRAPH.set(self.graph))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        CURRENT_GRAPH.reset(self._graph_tokens.pop())
        if exc_type is None:
            self.realize_sync(reset=False)


def _snapshot_for_readers(tensor: Tensor, writer: EagerRealizationContext) -> None:
    """Before ``writer`` stages an in-place write to ``tensor``, every *other* pending
    context that reads it as a source gets a private copy of its current value, so what it
    staged keeps value semantics; its later uses of ``tensor`` add a fresh source (REAL-48).
    """
    storage = tensor.storages[0] if tensor.storages else None
    if storage is None:
        return
    for ctx in list(_LIVE_CONTEXTS):
        if ctx is writer:
            continue
        v = ctx.source_values.get(id(tensor))
        if v is not None and v.__class__ is not BufferValue and ctx.sources.get(v) is tensor:
            ctx.sources[v] = Tensor.from_storage(storage.copy(), tensor.global_type)
            del ctx.source_values[id(tensor)]


def distributed_error(t: Tensor) -> RealizationError:
    """What staging an op on a distributed tensor raises (a source is one device's, REAL-22)."""
    return RealizationError(f"ops on a distributed tensor ({t.mapping}) are not supported; "
                            "use local_shards, transfer_to or a collective [REAL-22]")


def check_results(ex: Any, graph: Graph, results: Any) -> None:
    """Count, kind, dtype and shape of every returned buffer (REAL-35); the error names the
    first that fails."""
    outs = graph.outputs or []
    name = type(ex).__name__
    if len(results) != len(outs):
        raise ExecutorResultError(f"{name}.execute returned {len(results)} outputs for graph "
                                  f"{graph.name!r}, which declares {len(outs)} [REAL-35]")
    numpy_dtype = NUMPY_DTYPES
    for i, v in enumerate(outs):  # by index (lengths checked): no zip(strict) cost
        r, t = results[i], v.type
        if r.__class__ is not np.ndarray and not isinstance(r, np.ndarray):
            raise ExecutorResultError(f"{name}.execute: output {i} is a {type(r).__name__}, "
                                      f"expected a numpy.ndarray for {t} [REAL-35]")
        if r.shape != t.shape or r.dtype != numpy_dtype[t.dtype]:
            raise ExecutorResultError(f"{name}.execute: output {i} has dtype {r.dtype} and "
                                      f"shape {list(r.shape)}; the graph declares {t} "
                                      "[REAL-35]")


def _global_type(values: tuple[Value, ...], mapping: DeviceMapping) -> TensorType:
    t0 = values[0].type
    return TensorType(t0.dtype, global_shape([v.type.shape for v in values], mapping),
                      mapping.mesh.devices[0])


class LazyRealizationContext(EagerRealizationContext):
    """Like eager, but ``__exit__`` never realizes; tensors realize when forced (REAL-11)."""

    subgraph_cache: dict[Any, Any] | None = None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        CURRENT_GRAPH.reset(self._graph_tokens.pop())


class GraphRealizationContext(_Staging):
    """Ops staged into a user's graph: sources become constants, nothing realizes (REAL-14)."""

    def __init__(self, graph: Graph, signal_buffers: list[BufferValue] | None = None,
                 prefix: str = "") -> None:
        self.graph = graph
        self.signal_buffers = signal_buffers
        self.prefix = prefix
        self._seed_value = None
        self._seed_count = 0
        self._graph_tokens: list[Any] = []

    def source_value(self, tensor: Tensor) -> Value:
        if tensor.state is not None:
            raise RealizationError("Only realized tensors may be graph sources. [REAL-3]")
        if tensor.is_distributed:
            raise distributed_error(tensor)
        t = tensor.global_type
        return stage_constant(self.graph, tensor.buffers[0], t.dtype, t.device)

    def add_mutable_source(self, tensor: Tensor) -> RealizationState:
        raise RealizationError("a realized tensor cannot be mutated inside a graph context "
                               "(its value is embedded as a constant) [REAL-16]")

    def create_unrealized(self, values: tuple[Value, ...], *,
                          mapping: DeviceMapping | None = None) -> Tensor:
        if mapping is not None and mapping.mesh.num_devices == 1:
            mapping = None
        return Tensor.from_state(RealizationState(values, self), mapping,
                              None if mapping is None else _global_type(values, mapping))

    def ensure_signal_buffers(self, mesh: DeviceMesh) -> list[BufferValue] | None:
        return self.signal_buffers

    async def realize_all(self) -> list[Tensor]:
        raise RealizationError("Can't realize from a graph context. [REAL-15]")

    def realize_sync(self, reset: bool = True) -> list[Tensor]:
        raise RealizationError("Can't realize from a graph context. [REAL-15]")

    def __enter__(self) -> GraphRealizationContext:
        self._graph_tokens.append(CURRENT_GRAPH.set(self.graph))
        return self

    def __exit__(self, *exc: Any) -> None:
        CURRENT_GRAPH.reset(self._graph_tokens.pop())


# -- signal buffers ----------------------------------------------------------------------------
#: Size of each simulated signal buffer (implementation-defined; MAX uses 1 + 1024 MiB).
SIGNAL_BUFFER_BYTES = 1 << 16
_SIGNAL_CACHE: OrderedDict[tuple[int, ...], list[np.ndarray]] = OrderedDict()
_SIGNAL_LOCK = threading.Lock()


def _signal_arrays(gpus: tuple[int, ...]) -> list[np.ndarray]:
    """Backing arrays, allocated once per GPU set and shared across contexts (LRU of 4)."""
    with _SIGNAL_LOCK:
        arrays = _SIGNAL_CACHE.get(gpus)
        if arrays is None:
            arrays = [np.zeros(SIGNAL_BUFFER_BYTES, np.uint8) for _ in gpus]
            _SIGNAL_CACHE[gpus] = arrays
            while len(_SIGNAL_CACHE) > 4:
                _SIGNAL_CACHE.popitem(last=False)
        else:
            _SIGNAL_CACHE.move_to_end(gpus)
        return arrays


# -- implicit contexts --------------------------------------------------------------------------
_factory: Any = EagerRealizationContext


def default_factory() -> Any:
    """The installed zero-argument context factory (initially ``EagerRealizationContext``)."""
    return _factory


def default_realization_context() -> Any:
    """A new context from the installed factory (initially ``EagerRealizationContext``)."""
    return _factory()


def _set_factory(fn: Any) -> None:
    global _factory
    _factory = fn


def set_default_realization_context(fn: Any) -> SetterContext:
    """Install a zero-argument context factory now; the handle restores the old one (REAL-18)."""
    previous = _factory
    _set_factory(fn)
    return SetterContext(fn, previous, _set_factory)


def implicit_context() -> Any:
    """The context an op uses when none is current: a graph context inside ``with Graph``,
    otherwise a new one from the default factory (REAL-17)."""
    g = CURRENT_GRAPH.get()
    if g is not None:
        return GraphRealizationContext(g)
    return _factory()


@contextlib.contextmanager
def ensure_context() -> Iterator[Any]:
    """Use the current context, or enter an implicit one for the duration (REAL-17)."""
    ctx = current_realization_context(None)
    if ctx is not None:
        yield ctx
        return
    ctx = implicit_context()
    with ctx:
        token = CURRENT.set(ctx)
        try:
            yield ctx
        finally:
            CURRENT.reset(token)

