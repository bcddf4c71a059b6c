"""Lowering: make implicit promotion and broadcasting explicit (GRAPH-7, LOWER-1..3).

High-level nodes may have operands of different dtypes/shapes when their op declares
``promote`` (operand indices promoted to one dtype, PROMO-1/2) or ``broadcast`` (all
operands broadcast to one shape, BCAST-1). ``lower`` inserts ``cast`` and ``broadcast_to``
nodes so every node's operands have exactly the normalized types its primitive rule expects.
``lowered`` does the same on a copy, for executors, which never change the graph they are
given (EXEC-15).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..registry import OpDef, op_with
from ..types import ValueType
from .copy import copy_graph
from .core import Graph, Node, Value
from .normalize import normalized_types

__all__ = ["lower", "lowered", "lowered_node_count", "normalized_types"]

#: The ops lowering inserts: a dtype conversion, then a broadcast (LOWER-1).
_CAST, _BROADCAST = op_with("lowering-cast"), op_with("lowering-broadcast")


def lower(graph: Graph) -> Graph:
    """Rewrite ``graph`` in place into primitive form and return it (idempotent)."""
    if not graph.needs_lowering:
        return graph
    nodes: list[Node] = []

    def emit(op: OpDef, operand: Value, attrs: dict[str, object], loc: Node) -> Value:
        (result_type,) = op.infer(op, [operand.type], attrs)
        result = Value.of(graph, result_type)
        nodes.append(Node(op, (operand,), attrs, (result,), loc.site))
        return result

    for node in graph.nodes:
        types = [v.type for v in node.operands]
        norm: Sequence[ValueType] = normalized_types(node.op, types)
        if norm is not types:
            operands = list(node.operands)
            for i, (v, want) in enumerate(zip(node.operands, norm, strict=True)):
                if v.type.dtype != want.dtype:
                    v = emit(_CAST, v, {"dtype": want.dtype}, node)
                if v.type.shape != want.shape:
                    v = emit(_BROADCAST, v, {"shape": want.shape}, node)
                operands[i] = v
            node.operands = tuple(operands)
        nodes.append(node)
    graph.nodes = nodes
    graph.needs_lowering = False
    return graph


def lowered(graph: Graph) -> Graph:
    """``graph`` itself when it needs no lowering, else its lowered structural copy (same
    inputs, ops, attributes, sites and outputs, ``copy_graph``), kept until ``graph``
    changes (``Graph.memo``); ``graph`` is not changed (EXEC-15)."""
    if not graph.needs_lowering:
        return graph
    return graph.memo("lowered", _lowered_copy)


def _lowered_copy(graph: Graph) -> Graph:
    return lower(copy_graph(graph))


def lowered_node_count(graph: Graph) -> int:
    """How many nodes ``lower(graph)`` would leave, without changing ``graph``."""
    n = len(graph.nodes)
    if graph.needs_lowering:
        for node in graph.nodes:
            types = [v.type for v in node.operands]
            norm = normalized_types(node.op, types)
            if norm is not types:
                n += sum((a.dtype != b.dtype) + (a.shape != b.shape)
                         for a, b in zip(types, norm, strict=True))
    return n
