"""The reference interpreter loop: run a lowered graph node by node with numpy kernels.

Deliberately simple (EXEC-9): an environment maps each value to its array, every node calls
its registry kernel, a value is dropped after its last use (memory stays bounded on long
graphs, as JAX's ``eval_jaxpr``), outputs are made fresh (EXEC-5). This is the only loop:
debug mode (``debug.py``) and the suite's bisection observe it through ``on_node``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .graph.core import Graph, Node, Value

__all__ = ["OnNode", "evaluate", "fresh_outputs", "node_note"]

#: ``on_node(position, node, operand_arrays, result_arrays)``, called after each kernel.
OnNode = Callable[[int, Node, list[Any], tuple[Any, ...]], None]


def node_note(node: Node, pos: int) -> str:
    """The note added to a kernel's exception: which node, on what, staged where."""
    types = ", ".join(str(v.type) for v in node.operands) or "no operands"
    return (f"while interpreting node #{pos} {node.op.name}({types}) staged at "
            f"{node.location_str()}")


def _last_uses(graph: Graph) -> dict[Value, int]:
    """Value -> the position of the last node that reads it (outputs are never dropped)."""
    last = {v: pos for pos, node in enumerate(graph.nodes) for v in node.operands}
    for v in graph.outputs or ():
        last.pop(v, None)
    return last


def evaluate(graph: Graph, inputs: Sequence[np.ndarray], on_node: OnNode | None = None
             ) -> list[np.ndarray]:
    """Execute ``graph`` (lowered, inputs validated) and return fresh output arrays.

    A kernel's exception propagates with its type unchanged and a note naming the node."""
    env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
    last = _last_uses(graph)
    with np.errstate(all="ignore"):  # IEEE results, never warnings (NUM-5)
        for pos, node in enumerate(graph.nodes):
            args = [env[v] for v in node.operands]
            try:
                outs = node.op.apply(*args, **node.attrs)
            except Exception as e:
                e.add_note(node_note(node, pos))
                raise
            if on_node is not None:
                on_node(pos, node, args, outs)
            env.update(zip(node.results, outs, strict=True))
            for v in node.operands:
                if last.get(v) == pos:
                    env.pop(v, None)  # its last use: drop it (an operand may repeat)
    return fresh_outputs([env[v] for v in graph.outputs or ()], inputs)


def fresh_outputs(outputs: Sequence[Any], inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Copy any output that is a view, read-only, an input, or returned twice (EXEC-5)."""
    taken = {id(a) for a in inputs}
    fresh: list[np.ndarray] = []
    for a in outputs:
        if (not isinstance(a, np.ndarray) or a.base is not None or not a.flags.writeable
                or id(a) in taken):
            a = np.array(a, copy=True)
        taken.add(id(a))
        fresh.append(a)
    return fresh
