"""Moving a whole graph to one device (EXEC-14): same ops and attributes, other devices.

``retarget(graph, DeviceRef.CPU())`` is the CPU copy of a device graph that the reference
runs; ``retarget(graph, DeviceRef.GPU(0))`` is the device copy of a CPU graph that the
conformance suite hands a GPU executor. Ops' semantics do not depend on the device.
"""

from __future__ import annotations

from typing import Any

from ..types import DeviceRef
from .core import Graph, Value

__all__ = ["devices_of", "retarget"]


def _named(attr: Any) -> tuple[DeviceRef, ...]:
    """The devices an attribute names: a ``DeviceRef``, or a tuple of them (``devices``)."""
    if isinstance(attr, DeviceRef):
        return (attr,)
    if isinstance(attr, tuple) and attr and all(isinstance(a, DeviceRef) for a in attr):
        return attr
    return ()


def devices_of(graph: Graph) -> set[DeviceRef]:
    """Every device named by the graph: input and result types and ``DeviceRef`` attributes
    (also inside a tuple of devices)."""
    found = {v.type.device for v in graph.inputs}
    for node in graph.nodes:
        found.update(r.type.device for r in node.results)
        for a in node.attrs.values():
            found.update(_named(a))
    return found


def retarget(graph: Graph, device: DeviceRef | None = None) -> Graph:
    """A new graph like ``graph`` with every device (of every input and result type and of
    every ``DeviceRef`` attribute, also inside a tuple of devices) replaced by ``device``
    (default ``DeviceRef.CPU()``).

    Nodes keep their op, order, other attributes and staging location; inputs keep their
    order and kind (tensor or buffer). ``graph`` itself is not changed."""
    target = DeviceRef.CPU() if device is None else device
    g = Graph(graph.name, [t.__class__(t.dtype, t.shape, target) for t in graph.input_types])
    env: dict[Value, Value] = dict(zip(graph.inputs, g.inputs, strict=True))
    for node in graph.nodes:
        attrs: dict[str, Any] = {k: a if not _named(a) else target if isinstance(
            a, DeviceRef) else (target,) * len(a) for k, a in node.attrs.items()}
        results = g.stage(node.op, [env[v] for v in node.operands], attrs)
        g.nodes[-1].site = node.site
        env.update(zip(node.results, results, strict=True))
    if graph.outputs is not None:
        g.output(*(env[v] for v in graph.outputs))
    return g
