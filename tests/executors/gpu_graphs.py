"""Graphs for the GPU executor's tests and benchmarks: any graph restaged on a device."""

from __future__ import annotations

from interpreter.graph import BufferType, DeviceRef, Graph, TensorType
from interpreter.graph.lowering import lower

#: ops whose ``device`` attribute places their result (restaged onto the new device).
_PLACING = frozenset({"constant", "range", "buffer_create"})


def on_device(graph: Graph, device: DeviceRef) -> Graph:
    """The same lowered graph with every input (and placing op) on ``device``; transfers
    keep their targets. The reference runs ``graph`` itself on the CPU."""
    lower(graph)

    def moved(t: TensorType | BufferType) -> TensorType | BufferType:
        if isinstance(t, BufferType):
            return BufferType(t.dtype, t.shape, device)
        return TensorType(t.dtype, t.shape, device)

    g = Graph(graph.name, [moved(v.type) for v in graph.inputs])  # type: ignore[arg-type]
    env = dict(zip(graph.inputs, g.inputs, strict=True))
    with g:
        for node in graph.nodes:
            attrs = dict(node.attrs)
            if node.op.name in _PLACING:
                attrs["device"] = device
            results = g.stage(node.op, [env[v] for v in node.operands], attrs)
            env.update(zip(node.results, results, strict=True))
        g.output(*(env[v] for v in graph.outputs or ()))
    return lower(g)
