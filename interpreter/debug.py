"""Debug mode of the reference interpreter (DEBUG-1..3).

The loop of ``evaluate.evaluate`` with a check after every op (its ``on_node`` hook): the
result must match the type the op declared at staging (DEBUG-1), and the first op that turns
finite inputs into NaN/Inf is reported with its position and the user's source line
(DEBUG-2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtype import DType
from .errors import NumericalDebugError
from .evaluate import evaluate
from .graph.core import Graph, Node, Value
from .types import BufferType

__all__ = ["evaluate_debug"]


def _where(node: Node, pos: int) -> str:
    return f"op #{pos} {node.op.name} staged at {node.location_str()}"


def _finite(a: Any) -> bool:
    if not DType.from_numpy(a.dtype).is_float():
        return True
    return bool(np.all(np.isfinite(np.asarray(a, dtype=np.float64))))


def _check_type(node: Node, pos: int, value: Value, got: Any) -> None:
    want = value.type
    dtype, shape = np.dtype(getattr(got, "dtype", type(got))), tuple(np.shape(got))
    if dtype != want.dtype.to_numpy() or shape != want.shape:
        raise NumericalDebugError(
            f"{_where(node, pos)}: kernel returned dtype {dtype} shape {list(shape)}, but the "
            f"op declared {want} [DEBUG-1]")


def _check_node(pos: int, node: Node, args: list[Any], outs: tuple[Any, ...]) -> None:
    if len(outs) != len(node.results):
        raise NumericalDebugError(f"{_where(node, pos)}: kernel returned {len(outs)} "
                                  f"results, the op declared {len(node.results)} [DEBUG-1]")
    for r, o in zip(node.results, outs, strict=True):
        _check_type(node, pos, r, o)
    if args and all(_finite(a) for a in args):  # a NaN constant is intended
        written = [a for a, v in zip(args, node.operands, strict=True)
                   if isinstance(v.type, BufferType)] if node.op.side_effect else []
        for i, o in enumerate([*outs, *written]):
            if not _finite(o):
                bad = int(np.sum(~np.isfinite(np.asarray(o, dtype=np.float64))))
                shown = ", ".join(str(v.type) for v in node.operands) or "none"
                raise NumericalDebugError(
                    f"{_where(node, pos)}: produced {bad} non-finite value(s) in "
                    f"result {i} from finite operands ({shown}) [DEBUG-2]")


def evaluate_debug(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``evaluate`` with the DEBUG-1/DEBUG-2 checks after every op."""
    return evaluate(graph, inputs, on_node=_check_node)
