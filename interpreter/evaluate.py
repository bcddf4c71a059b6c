"""The reference interpreter loop: run a lowered graph node by node with numpy kernels.

Deliberately simple (EXEC-9): an environment maps each value to its array, every node calls
its registry kernel, outputs are made fresh (EXEC-5). Debug checks live in ``debug.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .graph.core import Graph, Value

__all__ = ["evaluate", "fresh_outputs"]


def evaluate(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Execute ``graph`` (lowered, inputs validated) and return fresh output arrays."""
    env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
    with np.errstate(all="ignore"):  # IEEE results, never warnings (NUM-5)
        for node in graph.nodes:
            out = node.op.kernel(*[env[v] for v in node.operands], **node.attrs)
            results = node.results
            if len(results) == 1:
                env[results[0]] = out
            elif results:
                env.update(zip(results, out, strict=True))
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
