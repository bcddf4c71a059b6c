"""Debugging ops: ``debug_print`` writes a labelled tensor to stdout (spec/ops/debug_print.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from ..types import ValueType
from .core import EXACT, ArgSource, Attrs, OpCall, OpDef, register
from .dtypesets import ALL

__all__ = [
    "format_print",
]


def _print_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs) -> tuple[ValueType, ...]:
    op.check_tensor(types, 0)
    if not isinstance(attrs.get("label"), str):
        op.fail(types, "debug_print.C1", f"attribute label must be a str, got "
                f"{attrs.get('label')!r}")
    return ()


def format_print(x: np.ndarray, label: str) -> str:
    """The line ``debug_print`` writes: ``[label] values`` (or just the values)."""
    text = np.array2string(np.asarray(x), separator=" ", threshold=1000)
    return f"[{label}] {text}" if label else text


def _print(x: np.ndarray, *, label: str) -> None:
    sys.stdout.write(format_print(x, label) + "\n")


def _sample_print(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    x = src.values(dtype, src.shape(max_rank=2, max_side=3))
    return OpCall([x], {"label": src.choice(["", "x", "debug_tensor"])})


register(OpDef("debug_print",
               summary="Write `[label] values` of a tensor to stdout (a side effect).",
               category="debug", operands=("x",), attrs=("label",), infer=_print_infer,
               kernel=_print, dtypes=ALL, tolerance=EXACT, side_effect=True, sample=_sample_print,
               result_dtypes=frozenset(), traits=frozenset({"host-output"})))
