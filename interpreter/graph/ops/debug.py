"""Debugging graph-building functions (MAX ``ops.print``)."""

from __future__ import annotations

from ..core import TensorValue
from .staging import stage


def print(value: TensorValue, label: str = "debug_tensor") -> None:
    """Write ``[label] values`` to stdout when the graph runs (a side effect, kept by DCE)."""
    stage("debug_print", (value,), {"label": label})


__all__ = ["print"]
