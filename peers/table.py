"""What every peer's op table shares (``peers/max_engine.py``, ``peers/onnx_graph.py``): the
data dtypes of a node and the refusal walk over a lowered graph (EXEC-2), decided from the
table before anything runs.

A table maps registry op names to rows (``Row``: the data dtypes the mapping is made for and
an optional per-node ``check``); ``unmapped`` gives the reason for every other op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeVar

from interpreter.graph.core import Graph, Node
from interpreter.types import DeviceRef

__all__ = ["Row", "data_dtypes", "table_refusal"]


class Row(Protocol):
    """One row of a peer's op table."""

    @property
    def dtypes(self) -> frozenset[str]: ...

    @property
    def check(self) -> Callable[[Node], str | None] | None: ...


R = TypeVar("R", bound=Row)


def data_dtypes(node: Node) -> set[str]:
    """The dtypes an op works on (OPDT-3): its first operand's (lowering has promoted the
    others), ``select``'s values, the result of an op without operands; ``cast``: both."""
    name = node.op.name
    if name == "cast":
        return {node.operands[0].type.dtype.name, node.results[0].type.dtype.name}
    if name == "select":
        return {node.operands[1].type.dtype.name}
    if not node.operands:
        return {node.results[0].type.dtype.name}
    return {node.operands[0].type.dtype.name}


def _on_cpu0(device: DeviceRef) -> bool:
    return device.is_cpu() and device.id == 0


def table_refusal(graph: Graph, peer: str, ops: Mapping[str, R],
                  unmapped: Mapping[str, str],
                  more: Callable[[Node, R], str | None] | None = None,
                  note: Callable[[R], str] | None = None) -> str | None:
    """Why ``peer`` refuses the lowered ``graph``, or None: no outputs, a value off
    ``cpu:0``, an op not in ``ops`` (with its ``unmapped`` reason), a data dtype outside the
    row (``note(row)`` appended), then the row's ``check`` and the peer's ``more``."""
    if graph.outputs is None:
        return "graph has no outputs"
    for v in graph.inputs:
        if not _on_cpu0(v.type.device):
            return f"input on {v.type.device} (the {peer} peer serves cpu:0 only)"
    for pos, node in enumerate(graph.nodes):
        name = node.op.name
        row = ops.get(name)
        if row is None:
            return f"node {pos}: op {name!r} is not mapped ({unmapped.get(name, 'unknown')})"
        for r in node.results:
            if not _on_cpu0(r.type.device):
                return f"node {pos}: {name} produces a value on {r.type.device}"
        bad = sorted(data_dtypes(node) - row.dtypes)
        if bad:
            extra = f" ({note(row)})" if note is not None else ""
            return f"node {pos}: {name} on {', '.join(bad)} is not mapped{extra}"
        why = row.check(node) if row.check is not None else None
        if why is None and more is not None:
            why = more(node, row)
        if why is not None:
            return f"node {pos}: {name}: {why}"
    return None
