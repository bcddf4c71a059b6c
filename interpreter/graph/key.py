"""The structural key of a graph: a hashable identity of its computation (JIT-2, COMP-9).

``structural_key(graph)`` is a flat tuple built in one walk over the graph: the input types,
per node its op (the registry entry itself), operand positions, attributes (each value tagged
with its kind; floats by their bits, arrays by ``splat.array_key``: dtype, shape and bytes
or, when large, a sha256 digest) and result types, then the output positions. Two graphs
with equal keys are the same computation; the name and source locations are not part of
it. It is what the text form's ``structural_hash`` (TEXT-7) identifies, without rendering
text, so executors can key their caches with it on every call. Kept on the graph until it
changes (``Graph.memo``, GRAPH-13); ``fresh_structural_key(graph)`` computes it afresh, for
callers that must see an in-place edit of a node (EXEC-15).
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..dtype import DType
from ..types import BufferType, DeviceRef, TensorType, ValueType
from .core import Graph, Value
from .splat import array_key
from .text import format_attr, to_text

__all__ = ["fresh_structural_key", "key_nodes", "structural_key"]

_PACK_DOUBLE = struct.Struct("<d").pack


def _attr_key(x: Any) -> Hashable:
    """``x`` as a hashable value equal only to the key of an identical attribute value."""
    cls = x.__class__
    if cls is int or cls is str:
        return x
    if cls is DeviceRef:
        return (cls, x.device_type, x.id)
    if cls is float:
        return (float, _PACK_DOUBLE(x))  # -0.0 and NaN payloads stay distinct
    if cls is tuple or cls is list:
        return (cls, tuple(map(_attr_key, x)))
    if cls is np.ndarray:
        return array_key(x)
    if isinstance(x, np.generic):
        return (cls, x.tobytes())
    if x is None or cls is bool or cls is DType:
        return (cls, x)
    if cls is TensorType or cls is BufferType:
        return _type_key(x)
    return (cls, format_attr(x))  # what the text form cannot encode raises its TEXT-4 error


def _type_key(t: ValueType) -> Hashable:
    """``t`` by kind, dtype, shape and device, in a tuple hashed without Python code."""
    d = t.device
    return (t.__class__, t.dtype, t.shape, d.device_type, d.id)


def _attrs_key(attrs: dict[str, Any]) -> Hashable:
    """Name, key, name, key, ... in name order (flat: fewer tuples)."""
    flat: list[Hashable] = []
    for name in sorted(attrs):
        flat.append(name)
        flat.append(_attr_key(attrs[name]))
    return tuple(flat)


def _compute(graph: Graph) -> tuple[Hashable, ...]:
    """The key as one flat tuple: the input types, per node its op, operand positions,
    attributes and one entry per result type, then the output positions. Unambiguous: an
    op (an ``OpDef``) starts each node, and a result type's entry is a tuple."""
    index: dict[Value, int] = {v: i for i, v in enumerate(graph.inputs)}
    position = index.__getitem__
    parts: list[Hashable] = [tuple(map(_type_key, graph.input_types))]
    add = parts.append
    for node in graph.nodes:
        attrs = node.attrs
        add(node.op)
        add(tuple(map(position, node.operands)))
        add(_attrs_key(attrs) if attrs else ())
        for v in node.results:
            t = v.type
            d = t.device
            add((t.__class__, t.dtype, t.shape, d.device_type, d.id))  # _type_key, inline
            index[v] = len(index)
    outs = graph.outputs
    add(None if outs is None else tuple(map(position, outs)))
    return tuple(parts)


def key_nodes(key: tuple[Hashable, ...]) -> tuple[Any, list[tuple[Any, ...]], Any]:
    """A key split back into its input types, per node ``(op, operand positions,
    attributes, result types)`` and the output positions (for describing a difference)."""
    flat: list[Any] = list(key)
    nodes: list[tuple[Any, ...]] = []
    i = 1
    while i < len(flat) - 1:
        op, operands, flat_attrs = flat[i:i + 3]
        attrs = tuple(zip(flat_attrs[::2], flat_attrs[1::2], strict=True))  # (name, key)
        i += 3
        results = []
        while i < len(flat) - 1 and isinstance(flat[i], tuple):
            results.append(flat[i])
            i += 1
        nodes.append((op, operands, attrs, tuple(results)))
    return flat[0], nodes, flat[-1]


def fresh_structural_key(graph: Graph) -> tuple[Hashable, ...]:
    """The structural key of ``graph`` computed now, neither read from nor stored in its
    memo: it sees edits the memo cannot (a node's attributes or operands changed in place
    without ``graph.changed()``). ``KeyError`` when a value is used before it is defined."""
    return _compute(graph)


def structural_key(graph: Graph) -> tuple[Hashable, ...]:
    """The structural key of ``graph`` in its current state (``graph.memo``, GRAPH-13)."""
    return graph.memo("structural_key", _checked)


def _checked(graph: Graph) -> tuple[Hashable, ...]:
    """``_compute``; a value used before it is defined raises the text form's TEXT-2 error."""
    try:
        return _compute(graph)
    except KeyError:
        to_text(graph)
        raise
