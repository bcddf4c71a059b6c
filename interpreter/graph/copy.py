"""A graph's structural copy (GRAPH-13): what the JIT compiles and lowering rewrites.
``side_by_side`` copies several graphs into one (the suite's batched cases, CONF-136).

``copy_graph(graph)`` is a new graph with new values of the same types, and per node the
same op, operands (mapped to the new values), attributes (a new dict; a writable array
copied, so no later write reaches the copy), results and site, then the same outputs.
Nothing is staged again: no type rule runs, and no text is rendered or parsed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .core import Graph, Node, Value

__all__ = ["copy_graph", "side_by_side"]


def copy_graph(graph: Graph) -> Graph:
    """A structural copy of ``graph`` (same name; ``needs_lowering`` kept); ``graph`` is
    not changed. ``KeyError`` when a value is used before it is defined."""
    copy = Graph(graph.name, graph.input_types)
    env: dict[Value, Value] = dict(zip(graph.inputs, copy.inputs, strict=True))
    nodes = []
    for node in graph.nodes:
        results = tuple([Value.of(copy, r.type) for r in node.results])
        env.update(zip(node.results, results, strict=True))
        nodes.append(Node(node.op, tuple([env[v] for v in node.operands]),
                          _attrs(node.attrs), results, node.site))
    copy.nodes = nodes
    if graph.outputs is not None:
        copy.outputs = [env[v] for v in graph.outputs]
    copy.needs_lowering = graph.needs_lowering
    return copy


def side_by_side(name: str, graphs: Sequence[Graph]) -> Graph:
    """One graph holding a structural copy of each of ``graphs``, in order: its inputs are
    theirs one after the other, its nodes theirs, its outputs theirs one after the other.
    No value is shared between the parts; ``needs_lowering`` if any part needs it."""
    merged = Graph(name, [t for g in graphs for t in g.input_types])
    nodes: list[Node] = []
    outputs: list[Value] = []
    start = 0
    for graph in graphs:
        ins = merged.inputs[start:start + len(graph.inputs)]
        start += len(graph.inputs)
        env: dict[Value, Value] = dict(zip(graph.inputs, ins, strict=True))
        for node in graph.nodes:
            results = tuple([Value.of(merged, r.type) for r in node.results])
            env.update(zip(node.results, results, strict=True))
            nodes.append(Node(node.op, tuple([env[v] for v in node.operands]),
                              _attrs(node.attrs), results, node.site))
        outputs += [env[v] for v in graph.outputs or ()]
    merged.nodes = nodes
    merged.outputs = outputs
    merged.needs_lowering = any(g.needs_lowering for g in graphs)
    return merged


def _attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """A node's attributes for the copy: writable arrays copied, other values shared (they
    are immutable: numbers, strings, tuples, types, read-only arrays such as splats)."""
    out = dict(attrs)
    for name, a in attrs.items():
        if a.__class__ is np.ndarray and a.flags.writeable:
            out[name] = a.copy()
    return out
