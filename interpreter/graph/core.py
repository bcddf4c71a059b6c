"""Graph IR: values, nodes and the ``Graph`` container (spec/graph.md).

A graph is a list of input values, an ordered list of nodes (staging order is execution
order, GRAPH-5) and the output values. Values are SSA: each is produced once, by a graph
input or by a node result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import GraphBuildError
from ..registry.core import OpDef
from ..types import BufferType, DeviceRef, TensorType, ValueType
from .caches import (
    INFERRED,
    Site,
    infer_once,
    location_of,
    site_key,
    site_location,
    user_location,
)
from .normalize import normalized_types

if TYPE_CHECKING:
    from ..dtype import DType

__all__ = ["CURRENT_GRAPH", "BufferValue", "Graph", "Node", "Site", "TensorValue", "Value",
           "location_of", "site_key", "site_location", "user_location"]

#: The graph being built by the innermost ``with Graph(...)`` of this thread/task.
CURRENT_GRAPH: ContextVar[Graph | None] = ContextVar("current_graph", default=None)
T = TypeVar("T")
#: The attributes whose assignment is a change of the graph (GRAPH-13).
_LISTS = frozenset({"inputs", "nodes", "outputs"})


class Value:
    """An SSA value of a graph. Compared and hashed by identity."""

    __slots__ = ("__weakref__", "graph", "type")

    def __init__(self, graph: Graph, type: ValueType) -> None:
        self.graph = graph
        self.type = type

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape

    @property
    def device(self) -> DeviceRef:
        return self.type.device

    @property
    def rank(self) -> int:
        return len(self.type.shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.type})"

    @staticmethod
    def of(graph: Graph, type: ValueType) -> Value:
        if isinstance(type, BufferType):
            return BufferValue(graph, type)
        return TensorValue(graph, type)


class TensorValue(Value):
    """A value-semantic tensor. Python operators stage ops (``x + 1`` is ``ops.add``)."""

    __slots__ = ()
    type: TensorType

    if TYPE_CHECKING:  # installed by interpreter.graph.ops (see ops/methods.py)
        def __add__(self, o: Any) -> TensorValue: ...
        def __radd__(self, o: Any) -> TensorValue: ...
        def __sub__(self, o: Any) -> TensorValue: ...
        def __rsub__(self, o: Any) -> TensorValue: ...
        def __mul__(self, o: Any) -> TensorValue: ...
        def __rmul__(self, o: Any) -> TensorValue: ...
        def __truediv__(self, o: Any) -> TensorValue: ...
        def __rtruediv__(self, o: Any) -> TensorValue: ...
        def __floordiv__(self, o: Any) -> TensorValue: ...
        def __rfloordiv__(self, o: Any) -> TensorValue: ...
        def __mod__(self, o: Any) -> TensorValue: ...
        def __rmod__(self, o: Any) -> TensorValue: ...
        def __pow__(self, o: Any) -> TensorValue: ...
        def __rpow__(self, o: Any) -> TensorValue: ...
        def __matmul__(self, o: Any) -> TensorValue: ...
        def __rmatmul__(self, o: Any) -> TensorValue: ...
        def __neg__(self) -> TensorValue: ...
        def __abs__(self) -> TensorValue: ...
        def __invert__(self) -> TensorValue: ...
        def __and__(self, o: Any) -> TensorValue: ...
        def __or__(self, o: Any) -> TensorValue: ...
        def __xor__(self, o: Any) -> TensorValue: ...
        def __eq__(self, o: Any) -> TensorValue: ...  # type: ignore[override]
        def __ne__(self, o: Any) -> TensorValue: ...  # type: ignore[override]
        def __gt__(self, o: Any) -> TensorValue: ...
        def __ge__(self, o: Any) -> TensorValue: ...
        def __lt__(self, o: Any) -> TensorValue: ...
        def __le__(self, o: Any) -> TensorValue: ...
        def __getitem__(self, index: Any) -> TensorValue: ...
        @property
        def T(self) -> TensorValue: ...
        def reshape(self, shape: Sequence[int]) -> TensorValue: ...
        def cast(self, dtype: DType) -> TensorValue: ...

    __hash__ = Value.__hash__

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a graph value is unknown while staging "
                        "(`==` on values stages ops.equal; compare with `is` instead)")


class BufferValue(Value):
    """A mutable buffer value (a ``BufferType`` graph input or a ``buffer_create`` result)."""

    __slots__ = ()
    type: BufferType

    if TYPE_CHECKING:  # installed by interpreter.graph.ops: ``buffer_load`` then index
        def __getitem__(self, index: Any) -> TensorValue: ...


class Node:
    """One staged op: registry entry, operand values, attributes and result values."""

    __slots__ = ("attrs", "op", "operands", "results", "site")

    def __init__(self, op: OpDef, operands: tuple[Value, ...], attrs: dict[str, Any],
                 results: tuple[Value, ...], site: Site | None = None) -> None:
        self.op = op
        self.operands = operands
        self.attrs = attrs
        self.results = results
        self.site = site  # copy this (not ``location``) to keep where a node came from

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def location(self) -> tuple[str, int] | None:
        """``(file, line)`` where the user staged this node (None: unknown)."""
        return site_location(self.site)

    @location.setter
    def location(self, value: tuple[str, int] | None) -> None:
        self.site = value

    def location_str(self) -> str:
        loc = self.location
        return f"{loc[0]}:{loc[1]}" if loc else "<unknown>"

    def __repr__(self) -> str:
        return f"Node({self.op.name}, attrs={self.attrs})"


def _infer(op: OpDef, types: list[ValueType], attrs: dict[str, Any]
           ) -> tuple[tuple[ValueType, ...], bool]:
    """``op``'s result types on operands of ``types`` (GRAPH-3, OPDT-1), and whether they
    need implicit promotion or broadcasting made explicit by lowering (GRAPH-7)."""
    if len(types) != len(op.operands) and not (op.variadic and types):
        want = "at least one operand" if op.variadic else \
            f"{len(op.operands)} operands ({', '.join(op.operands)})"
        op.fail(types, "GRAPH-4", f"expects {want}, got {len(types)}")
    norm = normalized_types(op, types)
    if types and norm[0].dtype not in op.dtypes:
        op.check_dtype(types, norm[0])  # raises OPDT-1
    return tuple(op.infer(op, norm, attrs)), norm is not types


def _result_values(graph: Graph, types: Sequence[ValueType]) -> tuple[Value, ...]:
    """New values of ``graph`` for a node's results (most nodes: one tensor)."""
    if len(types) == 1 and types[0].__class__ is TensorType:
        return (TensorValue(graph, types[0]),)
    return tuple([Value.of(graph, t) for t in types])


class _GraphMeta(type):
    @property
    def current(cls) -> Graph:
        """The graph being built by the innermost ``with Graph(...)`` (MAX: ``Graph.current``)."""
        g = CURRENT_GRAPH.get()
        if g is None:
            raise GraphBuildError("no current graph: stage ops inside `with Graph(...):` or "
                                  "pass graph values as operands")
        return g


class Graph(metaclass=_GraphMeta):
    """A computation graph: ``with Graph("g", input_types=[...]) as g: ...; g.output(...)``.

    ``version`` counts the changes of its input, node and output lists (GRAPH-13): staging,
    ``add_input``, ``output`` and assigning ``inputs``, ``nodes`` or ``outputs`` (passes,
    lowering) each increase it; whoever edits a list or a node in place calls ``changed``.
    ``memo`` keeps data derived from the graph until the next change."""

    #: None until ``output`` (class defaults: an assignment goes through ``__setattr__``)
    outputs: list[Value] | None = None
    needs_lowering: bool = False

    def __init__(self, name: str, input_types: Sequence[ValueType] = ()) -> None:
        #: ``version`` in a one-element list: staging increases it without an attribute
        #: assignment (which ``__setattr__`` makes slow).
        self._version = [0]
        self.name = name
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        #: ``memo``'s: name -> (the version it was computed at, the value); never read by
        #: the graph itself.
        self.derived: dict[str, tuple[int, Any]] = {}
        self._tokens: list[Token[Graph | None]] = []
        for t in input_types:
            self.add_input(t)

    # -- the lists, and what is derived from them (GRAPH-13) -----------------------------
    if not TYPE_CHECKING:  # type checkers would accept any attribute name after it
        def __setattr__(self, name: str, value: Any) -> None:
            object.__setattr__(self, name, value)
            if name in _LISTS:  # assigning a list is a change
                self._version[0] += 1

    @property
    def version(self) -> int:
        """How many changes the graph has seen (GRAPH-13)."""
        return self._version[0]

    def changed(self) -> None:
        """Record a change made in place (to a list or a node): memos are computed again."""
        self._version[0] += 1

    def memo(self, name: str, compute: Callable[[Graph], T]) -> T:
        """``compute(self)``, kept in ``derived[name]`` until the graph changes (GRAPH-13)."""
        version = self._version[0]
        got = self.derived.get(name)
        if got is not None and got[0] == version:
            value: T = got[1]
            return value
        value = compute(self)
        self.derived[name] = (version, value)
        return value

    # -- building --------------------------------------------------------------------
    def __enter__(self) -> Graph:
        self._tokens.append(CURRENT_GRAPH.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        CURRENT_GRAPH.reset(self._tokens.pop())

    def add_input(self, type: ValueType) -> Value:
        """Append a graph input of ``type`` and return its value."""
        if not isinstance(type, TensorType | BufferType):
            raise GraphBuildError(f"graph input type must be TensorType or BufferType, "
                                  f"got {type!r}")
        v = Value.of(self, type)
        self.inputs.append(v)
        self._version[0] += 1
        return v

    def stage(self, op: OpDef, operands: Sequence[Value], attrs: Mapping[str, Any] | None,
              location: Site | None = None) -> tuple[Value, ...]:
        """Type-check ``op`` on ``operands`` and append it; returns the result values.

        Operands may still need implicit promotion/broadcasting (the high level); the
        lowering pass makes that explicit (GRAPH-7). ``location``: where the user staged it
        (default: the first stack frame outside this package).
        """
        key: list[Any] = [op]  # the ``INFERRED`` key: the op, the ids of the operand types
        for v in operands:
            if v.graph is not self:
                raise GraphBuildError(f"{op.name}: operand {v!r} belongs to graph "
                                      f"{v.graph.name!r}, not {self.name!r}")
            key.append(id(v.type))
        if attrs:
            attrs = dict(attrs)
            result_types, lower = _infer(op, [v.type for v in operands], attrs)
        else:  # most nodes: the type rule depends on the operand types alone
            attrs = {}
            k = tuple(key)
            got = INFERRED.get(k) or infer_once(k, op, operands, _infer)
            result_types, lower = got[1], got[2]
        if lower:
            self.needs_lowering = True
        results = _result_values(self, result_types)
        self.nodes.append(Node(op, tuple(operands), attrs, results,
                               location or location_of(sys._getframe(1))))
        self._version[0] += 1  # ``changed()`` inline: the staging hot path
        return results

    def append(self, op: OpDef, operands: tuple[Value, ...], attrs: dict[str, Any],
               result_type: TensorType, location: Site | None = None) -> TensorValue:
        """Append a node with one tensor result whose type is known to be ``op``'s on these
        operands (a weak constant's: the tensor's type), without ``stage``'s checks."""
        result = TensorValue(self, result_type)
        self.nodes.append(Node(op, operands, attrs, (result,),
                               location or location_of(sys._getframe(1))))
        self._version[0] += 1  # ``changed()`` inline
        return result

    def output(self, *values: Value) -> None:
        """Set the graph outputs (GRAPH-6). May be called once."""
        if self.outputs is not None:
            raise GraphBuildError(f"graph {self.name!r} already has outputs")
        for v in values:
            if not isinstance(v, Value) or v.graph is not self:
                raise GraphBuildError(f"graph {self.name!r}: output {v!r} is not a value of "
                                      "this graph")
            if isinstance(v, BufferValue):
                raise GraphBuildError(f"graph {self.name!r}: a buffer cannot be an output; "
                                      "output buffer_load(buffer) instead [GRAPH-6]")
        self.outputs = list(values)  # a change (GRAPH-13)

    # -- introspection ---------------------------------------------------------------
    @property
    def input_types(self) -> list[ValueType]:
        return [v.type for v in self.inputs]

    @property
    def output_types(self) -> list[ValueType]:
        return [v.type for v in self.outputs or ()]

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.inputs)} inputs, {len(self.nodes)} nodes)"

    if TYPE_CHECKING:  # installed by interpreter.graph.text (spec/text-form.md)
        def to_text(self) -> str: ...
        @staticmethod
        def parse(text: str) -> Graph: ...
        def structural_hash(self) -> str: ...
