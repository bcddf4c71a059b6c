"""The graph an executor is given comes back unchanged (EXEC-15, CONF-83).

Around each executor call the suite's call pipeline (``conformance.pipeline``) takes a
:class:`Snapshot` of the graph it hands over: its structural key, computed afresh
(``fresh_structural_key``: the key cached on the graph cannot see a node edited in place),
and what :meth:`Snapshot.restore` puts back. After the call :meth:`Snapshot.change` names
the first difference (None: none) and puts the graph back as it was (its lists, nodes,
attribute dicts and value types), so the suite's own work after the call (minimisation,
artifacts) sees the graph as generated; :func:`change_verdict` turns a change into the
verdict. After a refusal the change is the failure (a refusal must come before any side
effect); after any other exception the exception stays the verdict and gets a note about
the change. Under ``--conformance-isolate`` the worker takes the snapshot of its own parsed
copy and sends the change back; the parent gives the same verdict (``conformance.isolate``).
"""

from __future__ import annotations

import struct
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from interpreter.errors import ExecutorResultError, UnsupportedGraphError
from interpreter.graph.core import Graph, Value
from interpreter.graph.key import fresh_structural_key, key_nodes
from interpreter.types import BufferType, DeviceRef, TensorType

__all__ = ["GraphChangedError", "Snapshot", "change_verdict", "graph_change"]

PREFIX = "execute changed the graph it was given"

Key = tuple[Hashable, ...]


class GraphChangedError(ExecutorResultError):
    """The executor changed the graph it was given (EXEC-15); found by the suite around the
    call, so reported without the suite's traceback."""


def _show(k: Any) -> str:
    """One attribute or type key of ``interpreter.graph.key`` as readable text."""
    if not isinstance(k, tuple) or not k or not isinstance(k[0], type | str):
        return repr(k)
    head = k[0]
    if head in (tuple, list) and len(k) == 2:
        items = [_show(x) for x in k[1]]
        if head is tuple:
            return "(" + items[0] + ",)" if len(items) == 1 else "(" + ", ".join(items) + ")"
        return "[" + ", ".join(items) + "]"
    if head is float and len(k) == 2:
        return repr(struct.unpack("<d", k[1])[0])
    if head in ("array", "splat") and len(k) == 4:
        return f"{head}<{k[1]}{list(k[2])}>"
    if head in (TensorType, BufferType) and len(k) == 5:
        return str(head(k[1], k[2], DeviceRef(k[3], k[4])))
    if head is DeviceRef and len(k) == 3:
        return f"{k[1]}:{k[2]}"
    if isinstance(head, type) and issubclass(head, np.generic) and len(k) == 2:
        return f"{head.__name__}({np.frombuffer(k[1], head)[0]!r})"
    if len(k) == 2:
        return k[1] if isinstance(k[1], str) else repr(k[1])
    return repr(k)


def _values(idx: Sequence[int]) -> str:
    return "(" + ", ".join(f"%{i}" for i in idx) + ")"


def _node_change(i: int, before: Any, after: Any) -> str:
    op, operands, attrs, results = before
    op2, operands2, attrs2, results2 = after
    what = []
    if op is not op2:
        what.append(f"op {op.name} -> {op2.name}")
    if operands != operands2:
        what.append(f"operands {_values(operands)} -> {_values(operands2)}")
    if attrs != attrs2:
        a, b = dict(attrs), dict(attrs2)
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                was = _show(a[name]) if name in a else "(absent)"
                now = _show(b[name]) if name in b else "(absent)"
                what.append(f"attribute {name!r}: {was} -> {now}")
    if results != results2:
        what.append(f"result types {', '.join(map(_show, results))} -> "
                    f"{', '.join(map(_show, results2))}")
    return f"node {i} ({op.name}) differs: " + "; ".join(what)


def _outputs(outs: Sequence[int] | None) -> str:
    return "none" if outs is None else _values(outs)


def _ops(nodes: Sequence[Any], most: int = 4) -> str:
    names = [n[0].name for n in nodes[:most]] + (["..."] if len(nodes) > most else [])
    return "(" + ", ".join(names) + ")"


def _describe(before: Key, after: Key) -> str:
    """The first difference between two structural keys of one graph."""
    ins, nodes, outs = key_nodes(before)
    ins2, nodes2, outs2 = key_nodes(after)
    if ins != ins2:
        return (f"input types ({', '.join(map(_show, ins))}) -> "
                f"({', '.join(map(_show, ins2))})")
    if len(nodes) != len(nodes2):  # inserted or dropped nodes: the op sequence from there
        i = next((i for i, (x, y) in enumerate(zip(nodes, nodes2, strict=False)) if x != y),
                 min(len(nodes), len(nodes2)))
        return (f"{len(nodes)} nodes -> {len(nodes2)} nodes; from node {i}: "
                f"{_ops(nodes[i:])} -> {_ops(nodes2[i:])}")
    for i, (x, y) in enumerate(zip(nodes, nodes2, strict=True)):
        if x != y:
            return _node_change(i, x, y)
    return f"outputs {_outputs(outs)} -> {_outputs(outs2)}"


def _broken(graph: Graph, error: Exception) -> str:
    """What makes a changed graph's key uncomputable: the first use of an undefined value."""
    defined: set[Value] = set(graph.inputs)
    for i, node in enumerate(graph.nodes):
        if any(v not in defined for v in node.operands):
            return f"node {i} ({node.op.name}) now uses a value no earlier node defines"
        defined.update(node.results)
    if any(v not in defined for v in graph.outputs or ()):
        return "an output is now a value no node defines"
    return f"its structure can no longer be read ({type(error).__name__}: {error})"


class _Saved:
    """What :meth:`restore` puts back: the graph's lists, and per node its fields, its
    attribute dict's entries and its results' types (not a change made inside an
    attribute value itself)."""

    __slots__ = ("graph", "inputs", "nodes", "outputs")

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.inputs = [(v, v.type) for v in graph.inputs]
        self.nodes = [(n, n.op, n.operands, n.attrs, n.attrs.copy() if n.attrs else None,
                       n.results, [r.type for r in n.results]) for n in graph.nodes]
        self.outputs = None if graph.outputs is None else list(graph.outputs)

    def restore(self) -> None:
        g = self.graph
        for v, t in self.inputs:
            v.type = t
        for node, op, operands, attrs, entries, results, types in self.nodes:
            node.op, node.operands, node.attrs, node.results = op, operands, attrs, results
            attrs.clear()
            attrs.update(entries or {})
            for r, t in zip(results, types, strict=True):
                r.type = t
        g.inputs = [v for v, _ in self.inputs]
        g.nodes = [n[0] for n in self.nodes]
        g.outputs = None if self.outputs is None else list(self.outputs)


def graph_change(graph: Graph, before: Key) -> str | None:
    """How ``graph`` differs from the structure whose fresh key was ``before`` (None: not)."""
    try:
        after = fresh_structural_key(graph)
    except Exception as e:
        try:
            return _broken(graph, e)
        except Exception:  # not even its lists can be walked
            return f"its structure can no longer be read ({type(e).__name__}: {e})"
    return None if after == before else _describe(before, after)


def change_verdict(name: str, change: str,
                   error: BaseException | None) -> GraphChangedError | None:
    """The verdict on a call that changed graph ``name`` as ``change`` says (EXEC-15): the
    error to raise after a return or a refusal (``error``, then its cause); after another
    exception None, and ``error`` gets a note (it stays the verdict)."""
    if isinstance(error, UnsupportedGraphError):
        return GraphChangedError(f"graph {name!r}: {PREFIX}, then refused it ({error}): "
                                 f"{change} [EXEC-15]")
    if error is not None:
        error.add_note(f"the executor also changed the graph it was given: {change} "
                       "[EXEC-15]")
        return None
    return GraphChangedError(f"graph {name!r}: {PREFIX}: {change} [EXEC-15]")


class Snapshot:
    """``graph`` before an executor call: its fresh structural key and its saved lists.

    Taken outside the call: a graph without a key is the suite's problem, never the
    executor's."""

    __slots__ = ("graph", "key", "saved")

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.key = fresh_structural_key(graph)
        self.saved = _Saved(graph)

    def change(self) -> str | None:
        """The first difference since the snapshot (None: none); the graph is put back."""
        change = graph_change(self.graph, self.key)
        if change is not None:
            self.saved.restore()
        return change
