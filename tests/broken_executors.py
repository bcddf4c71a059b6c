"""Deliberately broken executors: the conformance suite must catch every one (CONF-18).

Each class is a small variation of the reference interpreter with one realistic bug. They
are built with no arguments, so ``--executor=tests.broken_executors:Name`` selects them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.evaluate import fresh_outputs
from interpreter.executor import InterpreterExecutor, validate_inputs
from interpreter.graph.core import Graph, Node, Value
from interpreter.graph.lowering import lower
from interpreter.registry import REGISTRY
from interpreter.types import BufferType

__all__ = [
    "AliasingOutputs",
    "CrashingExecutor",
    "DoubleRoundingCast",
    "DroppedMutation",
    "Float16ChainInFloat32",
    "FmaContraction",
    "HangingExecutor",
    "IgnoredSeed",
    "NaNComparisonByNegation",
    "NaNSkippingSum",
    "NondeterministicExecutor",
    "OverflowingSigmoid",
    "RefusesAfterWrite",
    "ReplayedMutation",
    "RoundHalfAwayFromZero",
    "SaturatingInt8Negate",
    "SelectSwapsFloatBranches",
    "TruncatingFloorDiv",
    "WrongOutputDtype",
]

Kernel = Callable[..., Any]
_CAST = REGISTRY["cast"].kernel
_NEGATE = REGISTRY["negate"].kernel


class PatchedInterpreter(InterpreterExecutor):
    """The reference loop with some kernels replaced (``overrides``: op name -> kernel)."""

    overrides: ClassVar[dict[str, Kernel]] = {}

    def __init__(self) -> None:
        super().__init__(max_ops=None)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"{type(self).__name__}: {why}")
        lower(graph)
        validate_inputs(type(self).__name__, graph, inputs)
        return self.run(graph, list(inputs))

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return fresh_outputs(self.raw_outputs(graph, inputs), inputs)

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                out = self.kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                if len(node.results) == 1:
                    env[node.results[0]] = out
                elif node.results:
                    env.update(zip(node.results, out, strict=True))
        return [env[v] for v in graph.outputs or ()]

    def kernel_for(self, node: Node) -> Kernel:
        return self.overrides.get(node.op.name, node.op.kernel)


# -- wrong numerics ---------------------------------------------------------------------------
def _round_half_away(x: Any) -> Any:
    return (np.sign(x) * np.floor(np.abs(x) + np.asarray(0.5, x.dtype))).astype(x.dtype)


class RoundHalfAwayFromZero(PatchedInterpreter):
    """``round`` rounds halves away from zero (C ``round``) instead of to even."""

    overrides: ClassVar[dict[str, Kernel]] = {"round": _round_half_away}


def _trunc_div(lhs: Any, rhs: Any) -> Any:
    if np.dtype(lhs.dtype).kind in "iu":
        q = np.trunc(np.true_divide(lhs, np.where(rhs == 0, 1, rhs)))
        return q.astype(lhs.dtype)
    return np.floor_divide(lhs, rhs)


class TruncatingFloorDiv(PatchedInterpreter):
    """Integer ``floor_div`` truncates toward zero (C division): -7 // 2 gives -3."""

    overrides: ClassVar[dict[str, Kernel]] = {"floor_div": _trunc_div}


class NaNComparisonByNegation(PatchedInterpreter):
    """MAX's quirk: ``x > y`` computed as ``not (x <= y)`` makes comparisons with NaN True."""

    overrides: ClassVar[dict[str, Kernel]] = {
        "greater": lambda a, b: np.logical_not(np.less_equal(a, b)),
        "greater_equal": lambda a, b: np.logical_not(np.less(a, b)),
    }


def _nansum(x: Any, *, axis: int) -> Any:
    wide = x.astype(np.float32) if x.dtype.itemsize < 4 and x.dtype.kind in "fV" else x
    return np.nansum(wide, axis=axis, keepdims=True).astype(x.dtype)


class NaNSkippingSum(PatchedInterpreter):
    """``reduce_sum`` skips NaN terms (``np.nansum``): [nan, 1, 2] sums to 3, not NaN."""

    overrides: ClassVar[dict[str, Kernel]] = {"reduce_sum": _nansum}


def _sigmoid_by_ratio(x: Any) -> Any:
    e = np.exp(x.astype(np.float64))
    return (e / (1 + e)).astype(x.dtype)


class OverflowingSigmoid(PatchedInterpreter):
    """``sigmoid`` as ``exp(x) / (1 + exp(x))``: inf / inf = NaN for large x (> 709)."""

    overrides: ClassVar[dict[str, Kernel]] = {"sigmoid": _sigmoid_by_ratio}


def _select_swapping_floats(cond: Any, x: Any, y: Any) -> Any:
    if DType.from_numpy(x.dtype).is_float():  # a float-only lowering with swapped branches
        return np.where(cond, y, x)
    return np.where(cond, x, y)


class SelectSwapsFloatBranches(PatchedInterpreter):
    """``select`` returns ``y`` where the condition is true, for float data only (bool and
    integer values are right): caught only by cells whose *data* dtype is a float."""

    overrides: ClassVar[dict[str, Kernel]] = {"select": _select_swapping_floats}


class WrongOutputDtype(PatchedInterpreter):
    """Returns float32 results widened to float64 (declared dtype ignored)."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [o.astype(np.float64) if o.dtype == np.float32 else o
                for o in super().run(graph, inputs)]


class NondeterministicExecutor(PatchedInterpreter):
    """Every second call nudges the first element of each float64 output by one ULP."""

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0
        self._lock = threading.Lock()

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(graph, inputs)
        with self._lock:
            self._calls += 1
            odd = self._calls % 2 == 0
        if odd:
            for o in outs:
                if o.dtype == np.float64 and o.size and np.isfinite(o.flat[0]):
                    o.flat[0] = np.nextafter(o.flat[0], np.inf)
        return outs


# -- wrong mutation / memory behaviour ------------------------------------------------------
def _buffer_indices(graph: Graph) -> list[int]:
    return [i for i, v in enumerate(graph.inputs) if isinstance(v.type, BufferType)]


class DroppedMutation(PatchedInterpreter):
    """Runs on copies of the mutable inputs, so stores never reach the caller's buffers."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        copies = [a.copy() if i in _buffer_indices(graph) else a for i, a in enumerate(inputs)]
        return super().run(graph, copies)


class ReplayedMutation(PatchedInterpreter):
    """Runs every graph with stores twice (e.g. a retry after a warm-up), replaying them."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if _buffer_indices(graph):
            super().run(graph, inputs)
        return super().run(graph, inputs)


class AliasingOutputs(PatchedInterpreter):
    """Returns kernel results as they are: views of inputs, inputs themselves, repeats."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return [np.asarray(o) for o in self.raw_outputs(graph, inputs)]


class RefusesAfterWrite(PatchedInterpreter):
    """Executes a graph with stores, then refuses it: the mutation already happened."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(graph, inputs)
        if any(n.op.side_effect for n in graph.nodes):
            raise UnsupportedGraphError(f"{type(self).__name__}: stores need compilation")
        return outs


# -- random ------------------------------------------------------------------------------------
def _seed_zero(kernel: Kernel) -> Kernel:
    def k(seed: Any, **attrs: Any) -> Any:
        return kernel(np.zeros_like(seed), **attrs)

    return k


class IgnoredSeed(PatchedInterpreter):
    """Random ops ignore their seed operand and always use seed 0."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        return _seed_zero(kernel) if node.op.category == "random" else kernel


# -- process-level failures (catchable only with --conformance-isolate) -------------------------
def _has(graph: Graph, name: str) -> bool:
    return any(n.op.name == name for n in graph.nodes)


class CrashingExecutor(PatchedInterpreter):
    """Dies with SIGSEGV on any graph containing ``mul`` (as a native executor would)."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if _has(graph, "mul"):
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().run(graph, inputs)


class HangingExecutor(PatchedInterpreter):
    """Never returns on a graph containing ``sub`` (a deadlock in a native runtime)."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if _has(graph, "sub"):
            time.sleep(3600)
        return super().run(graph, inputs)


# -- composition and rounding effects (caught by conformance/test_hazards.py) ------------------
def _fma_exact(a: Any, b: Any, c: Any, sign: int) -> Any:
    """``a*b + sign*c`` rounded once (an exact fused multiply-add, element by element)."""
    a, b, c = np.broadcast_arrays(a, b, c)
    plain = a * b + sign * c
    out = plain.copy()
    for i in np.ndindex(out.shape):
        x, y, z = float(a[i]), float(b[i]), float(c[i])
        if all(np.isfinite([x, y, z, plain[i]])):
            exact = Fraction(x) * Fraction(y) + sign * Fraction(z)
            if exact != 0:
                out[i] = float(exact)
    return out


class FmaContraction(PatchedInterpreter):
    """float64 ``add``/``sub`` of a ``mul`` result is contracted into one fused multiply-add
    (a compiler's ``-ffp-contract=fast``): ``a*b + c`` is rounded once, not twice."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        products = {n.results[0]: n.operands for n in graph.nodes
                    if n.op.name == "mul" and n.results[0].type.dtype == DType.float64}
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                args = [env[v] for v in node.operands]
                if node.op.name in ("add", "sub") and node.operands[0] in products:
                    a, b = (env[v] for v in products[node.operands[0]])
                    out = _fma_exact(a, b, args[1], 1 if node.op.name == "add" else -1)
                elif node.op.name == "add" and node.operands[1] in products:
                    a, b = (env[v] for v in products[node.operands[1]])
                    out = _fma_exact(a, b, args[0], 1)
                else:
                    out = self.kernel_for(node)(*args, **node.attrs)
                if len(node.results) == 1:
                    env[node.results[0]] = out
                elif node.results:
                    env.update(zip(node.results, out, strict=True))
        return [env[v] for v in graph.outputs or ()]


_HALF = (DType.float16, DType.bfloat16)


class Float16ChainInFloat32(PatchedInterpreter):
    """float16 and bfloat16 elementwise arithmetic runs in float32 and stays there: a chain's
    intermediates are rounded to their dtype only where another kind of op or a graph output
    reads them (excess precision)."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))

        def narrow(v: Value) -> Any:
            return np.asarray(env[v]).astype(v.type.dtype.to_numpy())

        with np.errstate(all="ignore"):
            for node in graph.nodes:
                wide = (node.op.category.startswith("elementwise") and node.op.name != "cast"
                        and len(node.results) == 1 and node.results[0].type.dtype in _HALF)
                if wide:
                    args = [np.asarray(env[v]).astype(np.float32) for v in node.operands]
                    env[node.results[0]] = node.op.kernel(*args, **node.attrs)
                    continue
                out = self.kernel_for(node)(*[narrow(v) for v in node.operands], **node.attrs)
                if len(node.results) == 1:
                    env[node.results[0]] = out
                elif node.results:
                    env.update(zip(node.results, out, strict=True))
        return [narrow(v) for v in graph.outputs or ()]


def _cast_via_float32(x: Any, *, dtype: DType) -> Any:
    if x.dtype == np.float64 and dtype == DType.float16:
        return x.astype(np.float32).astype(np.float16)
    return _CAST(x, dtype=dtype)


class DoubleRoundingCast(PatchedInterpreter):
    """``cast`` float64 -> float16 goes through float32: two roundings, wrong near ties."""

    overrides: ClassVar[dict[str, Kernel]] = {"cast": _cast_via_float32}


def _saturating_negate(x: Any) -> Any:
    if x.dtype == np.int8:
        return np.clip(-x.astype(np.int16), -128, 127).astype(np.int8)
    return _NEGATE(x)


class SaturatingInt8Negate(PatchedInterpreter):
    """int8 ``negate`` saturates: ``-(-128)`` gives 127 instead of wrapping to -128."""

    overrides: ClassVar[dict[str, Kernel]] = {"negate": _saturating_negate}
