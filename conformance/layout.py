"""Bytes and layout of results (DT-2, DT-6, DT-7, CONF-95).

The value comparison (``compare.py``) matches any NaN with any NaN. Where the spec fixes the
bytes of a result (DT-6: the element-moving ops, buffer loads and stores, graph inputs passed
through), a NaN must also keep its payload and sign bit; :func:`byte_exact_values` says which
values of a graph those are and :func:`nan_bytes` compares them. :func:`layout_problem`
checks that a CPU result is a C-contiguous ``numpy.ndarray`` (DT-2).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from interpreter.graph.core import Graph, Value
from interpreter.types import BufferType

from .compare import Mismatch

__all__ = ["byte_exact_buffers", "byte_exact_values", "layout_problem", "nan_bytes"]

WORST = 5


def _floaty(v: Value) -> bool:
    return v.type.dtype.is_float()


def _walk(graph: Graph) -> tuple[set[Value], set[Value]]:
    """(values whose bytes DT-6 fixes, buffer inputs whose final bytes it fixes).

    A value is byte-exact when its op has the ``byte-copy`` trait (DT-6) and each float
    operand is byte-exact and *clean* (not the result of an op with unspecified elements,
    whose elements other ops may legally differ in). Non-float operands (indices,
    conditions) compare exactly anyway. A buffer stays byte-exact while every store into it
    (``buffer-store`` trait: a copy of its source's bytes, MUT-2) has a clean source."""
    exact: set[Value] = set(graph.inputs)
    clean: set[Value] = set(graph.inputs)
    for node in graph.nodes:
        ok = all(v in clean or not _floaty(v) for v in node.operands)
        traits = node.op.traits
        if "buffer-store" in traits:
            buf, src = node.operands[0], node.operands[1]
            if not (src in clean or not _floaty(src)):
                exact.discard(buf)
                clean.discard(buf)
            continue
        if "byte-copy" in traits and ok:
            exact.update(node.results)
            if node.op.unspecified is None:
                clean.update(node.results)
    buffers = {v for v in graph.inputs if isinstance(v.type, BufferType) and v in exact}
    return exact, buffers


def byte_exact_values(graph: Graph) -> set[Value]:
    """The values of ``graph`` whose bytes the spec fixes (DT-6), graph inputs included."""
    return _walk(graph)[0]


def byte_exact_buffers(graph: Graph) -> set[Value]:
    """The buffer inputs whose final bytes the spec fixes (MUT-2, DT-6)."""
    return _walk(graph)[1]


def _bits(a: np.ndarray) -> np.ndarray:
    c = np.ascontiguousarray(a)
    return c.view(f"u{a.dtype.itemsize}").reshape(a.shape)


def nan_bytes(expected: np.ndarray, got: np.ndarray, label: str, rule: str = "DT-6",
              mask: np.ndarray | None = None) -> Mismatch | None:
    """NaN elements of ``got`` whose bytes (payload, sign) differ from ``expected``'s; the
    arrays have passed the value comparison (same dtype, shape, NaN where NaN)."""
    if expected.dtype.kind not in "fV" or expected.size == 0 or expected.dtype.itemsize == 0:
        return None
    with np.errstate(all="ignore"):
        nan = np.isnan(expected.astype(np.float32)) & np.isnan(got.astype(np.float32))
    if not nan.any():
        return None
    eb, gb = _bits(expected), _bits(got)
    bad = nan & (eb != gb)
    if mask is not None:
        bad &= ~np.broadcast_to(np.asarray(mask, bool), bad.shape)
    if not bad.any():
        return None
    width = 2 * expected.dtype.itemsize
    lines = [f"{label}: {int(bad.sum())} of {int(nan.sum())} NaN elements have other bytes "
             f"than the reference's (payload or sign bit; dtype {expected.dtype}, shape "
             f"{list(expected.shape)}): this result is a byte copy [{rule}]",
             "  first differing NaNs (index: expected bits -> got bits):"]
    for i in np.argwhere(bad)[:WORST]:
        k = tuple(int(x) for x in i)
        lines.append(f"    {list(k)}: 0x{int(eb[k]):0{width}x} -> 0x{int(gb[k]):0{width}x}")
    return Mismatch("\n".join(lines), bad=int(bad.sum()), kind="bytes")


def layout_problem(raw: Any, label: str) -> Mismatch | None:
    """A CPU result that is not a C-contiguous ``numpy.ndarray`` (DT-2)."""
    if not isinstance(raw, np.ndarray) or raw.flags.c_contiguous:
        return None
    order = "Fortran-ordered" if raw.flags.f_contiguous else "strided"
    return Mismatch(f"{label}: a {order} array (shape {list(raw.shape)}, strides "
                    f"{list(raw.strides)}, itemsize {raw.itemsize}); results on the CPU are "
                    f"C-contiguous numpy arrays [DT-2]", kind="layout")
