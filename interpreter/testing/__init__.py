"""Test support: build, run and compare one-off graphs (``sampling``: random op calls).

``run(fn, *arrays)`` stages ``fn`` on graph inputs typed after ``arrays`` (wrap an array in
``Buf`` to pass it as a mutable ``BufferType`` input), executes with the reference interpreter
and returns the outputs. ``assert_same`` compares dtype, shape and every bit that matters
(NaN equals NaN, -0.0 differs from +0.0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dtype import DType
from ..executor import Executor, InterpreterExecutor
from ..graph.core import Graph, Value
from ..types import DeviceRef, TensorType

__all__ = ["Buf", "assert_same", "build", "run"]


@dataclass
class Buf:
    """Marks an array passed to ``run`` as a mutable buffer input (mutated in place)."""

    array: np.ndarray


def build(fn: Callable[..., Any], *args: np.ndarray | Buf, name: str = "example") -> Graph:
    """Stage ``fn(*input_values)`` into a new graph whose outputs are ``fn``'s results."""
    types = []
    for a in args:
        arr = a.array if isinstance(a, Buf) else np.asarray(a)
        t = TensorType(DType.from_numpy(arr.dtype), arr.shape, DeviceRef.CPU())
        types.append(t.as_buffer() if isinstance(a, Buf) else t)
    with Graph(name, input_types=types) as g:
        out = fn(*g.inputs)
        outs: Sequence[Value] = () if out is None else (
            tuple(out) if isinstance(out, tuple | list) else (out,))
        g.output(*outs)
    return g


def run(fn: Callable[..., Any], *args: np.ndarray | Buf, executor: Executor | None = None
        ) -> Any:
    """Build and execute; returns the single output, a list of outputs, or None."""
    g = build(fn, *args)
    arrays = [a.array if isinstance(a, Buf) else np.asarray(a) for a in args]
    outs = list((executor or InterpreterExecutor()).execute(g, arrays))
    if not outs:
        return None
    return outs[0] if len(outs) == 1 else outs


def assert_same(got: Any, expected: Any, *, msg: str = "") -> None:
    """Exact comparison: same dtype, shape and values; NaN == NaN; signed zeros differ."""
    if isinstance(expected, list | tuple):
        assert isinstance(got, list | tuple) and len(got) == len(expected), \
            f"{msg} expected {len(expected)} outputs, got {got!r}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same(g, e, msg=f"{msg} output {i}:")
        return
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"{msg} dtype {g.dtype} != expected {e.dtype}"
    assert g.shape == e.shape, f"{msg} shape {g.shape} != expected {e.shape}"
    if e.dtype.kind in "fV" and e.dtype.itemsize > 0:
        gf, ef = g.astype(np.float64), e.astype(np.float64)
        both_nan = np.isnan(gf) & np.isnan(ef)
        same = both_nan | ((gf == ef) & (np.signbit(gf) == np.signbit(ef)))
    else:
        same = g == e
    assert np.all(same), f"{msg} values differ:\n got      {g!r}\n expected {e!r}"

