"""Which (op, data dtype) pairs ONNX Runtime runs: ``python -m peers.onnx_probe``.

For every registry op and data dtype, graphs drawn by the op's registry sampler (the data
dtype pinned) are run by ``OnnxRuntimeExecutor`` with the op table's dtype sets lifted:
loaded into an ``InferenceSession``, then run once on the sampled inputs. Prints, per op,
the dtypes that run, those ORT has no kernel for (``NOT_IMPLEMENTED``) or fails on
otherwise, and flags a dtype of the table that never ran: the evidence behind the
``dtypes`` of ``peers.onnx_graph.OPS``, to re-run on a new ORT version. Graphs a node's
``check`` refuses are skipped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph import Graph, ops
from interpreter.graph.core import BufferValue, TensorValue
from interpreter.graph.lowering import lowered
from interpreter.registry import REGISTRY, OpDef
from interpreter.registry.core import OpCall
from interpreter.testing.sampling import RandomArgSource
from interpreter.types import DeviceRef, TensorType

from . import onnx_graph
from .table import data_dtypes

__all__ = ["probe"]


class _Pinned(RandomArgSource):
    """A sampler source whose data dtype draw (OPDT-3) is ``pin`` where allowed."""

    def __init__(self, pin: DType, seed: int) -> None:
        super().__init__(seed)
        self.pin = pin

    def dtype(self, allowed: Iterable[DType], data: bool = False) -> DType:
        options = list(allowed)
        return self.pin if data and self.pin in options else super().dtype(options, data)


def _graph(op: OpDef, call: OpCall) -> Graph:
    types = []
    for i, a in enumerate(call.operands):
        t = TensorType(DType.from_numpy(a.dtype), a.shape, DeviceRef.CPU())
        types.append(t.as_buffer() if i in call.buffers else t)
    with Graph(f"probe_{op.name}", input_types=types) as g:
        results = g.stage(op, list(g.inputs), call.attrs)
        outs: list[Any] = [r for r in results if isinstance(r, TensorValue)]
        bufs = [v for v in (*g.inputs, *results) if isinstance(v, BufferValue)]
        g.output(*outs, *[ops.buffer_load(b) for b in bufs])
    return g


def _load(graph: Graph, inputs: list[np.ndarray]) -> str:
    """Load ``graph`` into a session, then run it once on ``inputs`` (an error at run time
    is an unsupported case too, e.g. a reduction ORT implements for some dtypes only)."""
    from .onnxruntime import OnnxRuntimeExecutor
    try:
        OnnxRuntimeExecutor().execute(graph, [a.copy() for a in inputs])
    except Exception as e:
        text = str(e)
        return ("no kernel" if "NOT_IMPLEMENTED" in text or "no CPU kernel" in text
                else f"{type(e).__name__}: {text.splitlines()[0][:200]}")
    return "ok"


def probe(name: str, dtype: DType, tries: int = 4) -> str:
    """"ok" when every sampled graph of ``name`` on ``dtype`` ran ("ok; also: ..." when some
    failed), the first failure when none ran, "no sample" when the sampler gave none."""
    op = REGISTRY[name]
    results: list[str] = []
    for seed in range(tries * 5):
        if op.sample is None or len(results) == tries:
            break
        try:
            call = op.sample(_Pinned(dtype, seed))
            graph = _graph(op, call)
        except Exception:
            continue
        low = lowered(graph)
        if (dtype.name not in set().union(*(data_dtypes(n) for n in low.nodes
                                           if n.op.name == name))
                or onnx_graph.refusal(low) is not None):  # a node's check refuses it
            continue
        results.append(_load(graph, call.operands))
    if not results:
        return "no sample"
    failures = sorted({r for r in results if r != "ok"})
    if "ok" not in results:
        return failures[0]
    return "ok" + (f"; also: {failures[0]}" if failures else "")


def main() -> int:
    saved = {k: v.dtypes for k, v in onnx_graph.OPS.items()}
    for row in onnx_graph.OPS.values():  # lift the dtype sets: probe every dtype
        object.__setattr__(row, "dtypes", frozenset(onnx_graph.ONNX_TYPES))
    try:
        for name in sorted(onnx_graph.OPS):
            got = {d.name: probe(name, d) for d in sorted(REGISTRY[name].data_dtypes,
                                                          key=lambda d: d.value)}
            ok = sorted(d for d, r in got.items() if r.startswith("ok"))
            table = saved[name]
            print(f"{name}: loads {' '.join(ok)}")
            for d, r in sorted(got.items()):
                if r != "ok":
                    print(f"    {d}: {r}")
            if table - set(ok) & set(got):
                print(f"    IN THE TABLE BUT NOT LOADED: {sorted(table - set(ok) & set(got))}")
    finally:
        for k, v in saved.items():
            object.__setattr__(onnx_graph.OPS[k], "dtypes", v)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
