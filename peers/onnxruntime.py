"""ONNX Runtime 1.32 as a peer executor: a lowered graph (spec/graph.md GRAPH-20..23) is
translated to an ONNX model at opset 28 (``peers/onnx_graph.py``: the op table, refusals,
buffers as extra outputs) and run by an ``onnxruntime.InferenceSession`` on the CPU
execution provider, one session per graph structure (``PlanCache``, LRU, keyed by the
structural key): a repeated structure is neither translated nor loaded again.

Arrays cross as ``OrtValue``s over numpy memory, bound with ``IOBinding``: inputs are
private copies, outputs are fresh arrays allocated here that ORT writes into (EXEC-5);
bfloat16 and float8 arrays go as their bits with the ONNX element type. After a successful
run the final contents of every stored buffer input are copied into the caller's array, once
(EXEC-6); a refusal or a failed run leaves them untouched (EXEC-3).

Refusals (``UnsupportedGraphError``, EXEC-2) come before anything runs: from the op table
(``onnx_graph.refusal``) and, for a kernel ORT lacks, from the session's creation
(``NOT_IMPLEMENTED``). Sessions use ORT's default graph optimizations (what a user gets)
and one thread (``intra_op_num_threads=1``, no spinning: the suite runs one executor per
worker process).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from interpreter.errors import ExecutorUnavailableError, UnsupportedGraphError
from interpreter.executor import PlanCache, validate_inputs
from interpreter.graph.core import Graph
from interpreter.graph.key import structural_key
from interpreter.graph.lowering import lowered

from .onnx_graph import ONNX_TYPES, OPS, OPSET, UNMAPPED, refusal, translate

__all__ = ["OPS", "OPSET", "ORT_VERSION", "UNMAPPED", "OnnxRuntimeExecutor",
           "onnxruntime_available"]

ORT_VERSION = "1.32.0"


def _installed() -> str:
    """The installed onnxruntime's version (what the suite's report names), unimported."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"onnxruntime {version('onnxruntime')}, onnx {version('onnx')}, opset {OPSET}"
    except PackageNotFoundError:
        return "onnxruntime not installed"


__version__ = _installed()


def onnxruntime_available() -> str | None:
    """None when ``onnx`` and ``onnxruntime`` import, else why not."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the environment
        return f"{type(e).__name__}: {e}"
    return None


@dataclass(frozen=True)
class _Plan:
    """One cached structure: its session, output names and buffer write-backs."""

    session: Any
    outputs: list[str]
    writebacks: list[tuple[int, str]]


def _bits(a: np.ndarray) -> np.ndarray:
    """``a`` itself, or its bits as unsigned integers for dtypes numpy-to-ORT cannot pass
    (ml_dtypes' bfloat16 and float8)."""
    if a.dtype.kind == "V" or a.dtype.name.startswith(("bfloat16", "float8")):
        return a.view(f"u{a.dtype.itemsize}")
    return a


def _ort_value(a: np.ndarray, dtype_name: str) -> Any:
    from onnxruntime import OrtValue
    return OrtValue.ortvalue_from_numpy_with_onnx_type(_bits(a), ONNX_TYPES[dtype_name])


class OnnxRuntimeExecutor:
    """Runs graphs through ONNX Runtime 1.32 (CPU), one ``InferenceSession`` per structure."""

    name = "OnnxRuntimeExecutor"

    def __init__(self, cache_size: int = 256) -> None:
        why = onnxruntime_available()
        if why is not None:
            raise ExecutorUnavailableError(
                f"{self.name} needs onnx and onnxruntime=={ORT_VERSION} "
                f"(pip install -e '.[peer-onnx]'): {why}")
        self._cache: PlanCache[Hashable, _Plan] = PlanCache(cache_size)
        self.cache_size = cache_size

    def __repr__(self) -> str:
        return f"{self.name}(opset={OPSET})"

    def refusal(self, graph: Graph) -> str | None:
        return refusal(lowered(graph))

    def _options(self) -> Any:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.log_severity_level = 4  # errors reach the caller as exceptions
        return so

    def _load(self, graph: Graph, low: Graph) -> _Plan:
        import onnxruntime as ort
        t = translate(low)
        if not t.outputs and not t.writebacks:  # nothing to observe: ORT cannot load a
            return _Plan(None, [], [])          # model without outputs; nothing runs
        try:
            session = ort.InferenceSession(t.model, self._options(),
                                           providers=["CPUExecutionProvider"])
        except Exception as e:
            text = str(e)
            if "NOT_IMPLEMENTED" in text:  # ORT has no kernel: nothing ran yet
                raise UnsupportedGraphError(
                    f"{self.name}: graph {graph.name!r} refused: ONNX Runtime has no CPU "
                    f"kernel: {text.splitlines()[0][:300]} [EXEC-2]") from e
            raise
        return _Plan(session, t.outputs, t.writebacks)

    def _prepare(self, graph: Graph) -> tuple[Graph, _Plan]:
        """The lowered copy of ``graph`` and its cached session (loaded on a miss)."""
        low = lowered(graph)  # a lowered copy; the graph given is not changed (EXEC-15)
        why = refusal(low)
        if why is not None:
            raise UnsupportedGraphError(f"{self.name}: graph {graph.name!r} refused: {why} "
                                        "[EXEC-2]")
        return low, self._cache.get_or_build(structural_key(low),
                                             lambda: self._load(graph, low))

    @property
    def compiles(self) -> int:
        """Sessions loaded (cache misses), for tests."""
        return self._cache.builds

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        low, plan = self._prepare(graph)
        validate_inputs(self.name, low, inputs)  # EXEC-17, before anything runs
        if plan.session is None:
            return []
        binding = plan.session.io_binding()
        keep: list[Any] = []  # the OrtValues' memory stays alive through the run
        for i, (v, a) in enumerate(zip(low.inputs, inputs, strict=True)):
            private = np.array(a, copy=True, order="C")  # ORT never sees the caller's array
            keep.append(private)
            binding.bind_ortvalue_input(f"in{i}", _ort_value(private, v.type.dtype.name))
        results: list[np.ndarray] = []
        targets = [(o, v) for o, v in zip(plan.outputs, low.outputs or (), strict=True)]
        targets += [(o, low.inputs[i]) for i, o in plan.writebacks]
        for out_name, v in targets:
            out = np.empty(v.type.shape, v.type.dtype.to_numpy())  # fresh (EXEC-5)
            results.append(out)
            binding.bind_ortvalue_output(out_name, _ort_value(out, v.type.dtype.name))
        plan.session.run_with_iobinding(binding)
        n = len(plan.outputs)
        for (i, _), final in zip(plan.writebacks, results[n:], strict=True):
            np.copyto(inputs[i], final)  # the store, once, after the run (EXEC-6)
        return results[:n]
