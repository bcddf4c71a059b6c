"""A graph's structural copy (GRAPH-13): what the JIT compiles and lowering rewrites.

``copy_graph(graph)`` is a new graph with new values of the same types, and per node the
same op, operands (mapped to the new values), attributes (a new dict; a writable array
copied, so no later write reaches the copy), results and site, then the same outputs.
Nothing is staged again: no type rule runs, and no text is rendered or parsed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Graph, Node, Value

__all__ = ["copy_graph"]


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


def _attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """A node's attributes for the copy: writable arrays copied, other values shared (they
    are immutable: numbers, strings, tuples, types, read-only arrays such as splats)."""
    out = dict(attrs)
    for name, a in attrs.items():
        if a.__class__ is np.ndarray and a.flags.writeable:
            out[name] = a.copy()
    return out
