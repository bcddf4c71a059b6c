"""Graph passes: dead-code elimination, unused-input removal, verification (GRAPH-8..10)."""

from __future__ import annotations

from ..errors import GraphVerificationError
from ..types import TensorType
from .core import Graph, Value
from .normalize import normalized_types

__all__ = ["dead_code_elimination", "prune", "remove_unused_inputs", "verify"]


def _live_values(graph: Graph) -> set[Value]:
    """Drop dead nodes (GRAPH-8) and return the values the remaining nodes and outputs use."""
    live: set[Value] = set(graph.outputs or ())
    kept = []
    for node in reversed(graph.nodes):
        if node.op.side_effect or not live.isdisjoint(node.results):
            kept.append(node)
            live.update(node.operands)
    if len(kept) != len(graph.nodes):
        kept.reverse()
        graph.nodes = kept
    return live


def _keep_inputs(graph: Graph, used: set[Value]) -> list[int]:
    kept = [i for i, v in enumerate(graph.inputs) if v in used]
    if len(kept) != len(graph.inputs):
        graph.inputs = [graph.inputs[i] for i in kept]
    return kept


def dead_code_elimination(graph: Graph) -> int:
    """Drop nodes whose results reach no output and no side effect (GRAPH-8).

    Side-effecting nodes (stores) and everything they depend on are kept, in order.
    Returns the number of nodes removed.
    """
    before = len(graph.nodes)
    _live_values(graph)
    return before - len(graph.nodes)


def remove_unused_inputs(graph: Graph) -> list[int]:
    """Remove inputs no node or output uses, keeping the others' order (GRAPH-9).

    Returns the original indices of the inputs that were kept.
    """
    used: set[Value] = set(graph.outputs or ())
    for node in graph.nodes:
        used.update(node.operands)
    return _keep_inputs(graph, used)


def prune(graph: Graph) -> list[int]:
    """``dead_code_elimination`` then ``remove_unused_inputs`` in one walk over the nodes
    (what the kept nodes read is known once the dead ones are gone); returns the original
    indices of the inputs kept."""
    return _keep_inputs(graph, _live_values(graph))


def verify(graph: Graph) -> None:
    """Check the IR invariants of spec/graph.md (GRAPH-10); raise GraphVerificationError."""

    def bad(msg: str) -> GraphVerificationError:
        return GraphVerificationError(f"graph {graph.name!r}: {msg} [GRAPH-10]")

    defined: set[Value] = set()
    for v in graph.inputs:
        if v.graph is not graph or v in defined:
            raise bad(f"input {v!r} is foreign or repeated")
        defined.add(v)
    for pos, node in enumerate(graph.nodes):
        for v in node.operands:
            if v not in defined:
                raise bad(f"node {pos} ({node.op.name}) uses a value before it is defined")
        types = [v.type for v in node.operands]
        norm = normalized_types(node.op, types)
        if norm is not types and not graph.needs_lowering:
            raise bad(f"node {pos} ({node.op.name}) needs lowering but the graph is marked "
                      "lowered")
        try:
            expected = node.op.infer(node.op, norm, node.attrs)
        except Exception as e:
            raise bad(f"node {pos} ({node.op.name}) fails its type rule: {e}") from e
        got = tuple(r.type for r in node.results)
        if expected != got:
            shown = ", ".join(map(str, got))
            raise bad(f"node {pos} ({node.op.name}) results ({shown}) differ from its type "
                      f"rule ({', '.join(map(str, expected))})")
        for r in node.results:
            if r in defined or r.graph is not graph:
                raise bad(f"node {pos} ({node.op.name}) redefines a value")
            defined.add(r)
    if graph.outputs is None:
        raise bad("graph has no outputs")
    for v in graph.outputs:
        if v not in defined:
            raise bad(f"output {v!r} is not defined in the graph")
        if not isinstance(v.type, TensorType):
            raise bad(f"output {v!r} is not a tensor")
