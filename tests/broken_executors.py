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
from interpreter.graph.lowering import lowered
from interpreter.registry.core import as_results
from interpreter.types import BufferType

__all__ = [
    "AliasingOutputs",
    "CrashingExecutor",
    "DoubleRoundingCast",
    "DroppedMutation",
    "EarlyOverflowCast",
    "Float16ChainInFloat32",
    "FlushToZero",
    "FlushToZeroSignBug",
    "FusedMultiplyAdd",
    "HangingExecutor",
    "IgnoredSeed",
    "NaNComparisonByNegation",
    "NaNIgnoringMaximum",
    "NaNSkippingSum",
    "NondeterministicExecutor",
    "OverflowingSigmoid",
    "RaisingSigmoid",
    "RefusesAfterWrite",
    "ReplayedMutation",
    "RoundHalfAwayFromZero",
    "SaturatingInt8Negate",
    "SelectSwapsFloatBranches",
    "TruncatingFloorDiv",
    "TupleAttrsToListsInPlace",
    "UnsignedCastViaSigned",
    "WrongOutputDtype",
]

Kernel = Callable[..., Any]


class PatchedInterpreter(InterpreterExecutor):
    """The reference loop with some kernels replaced (``overrides``: op name -> kernel)."""

    overrides: ClassVar[dict[str, Kernel]] = {}

    def __init__(self) -> None:
        super().__init__(max_ops=None)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"{type(self).__name__}: {why}")
        graph = lowered(graph)  # a copy: the graph given stays as it is (EXEC-15)
        validate_inputs(type(self).__name__, graph, inputs)
        return self.run(graph, list(inputs))

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        return fresh_outputs(self.raw_outputs(graph, inputs), inputs)

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                out = self.kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        return [env[v] for v in graph.outputs or ()]

    def kernel_for(self, node: Node) -> Kernel:
        return self.overrides.get(node.op.name, node.op.kernel)


# -- wrong numerics ---------------------------------------------------------------------------
def _round_half_away(x: Any) -> Any:
    """Differs from the reference on exact ties only: not ``floor(|x| + 0.5)``, whose
    addition also rounds (0.49999999999999994 -> 1) and whose ``sign`` loses -0.0, so the
    suite's counterexample is always a tie."""
    a = np.abs(x)
    with np.errstate(invalid="ignore"):  # inf - inf
        tie = a - np.floor(a) == np.asarray(0.5, x.dtype)
    return np.where(tie, np.copysign(np.floor(a) + np.asarray(1, x.dtype), x),
                    np.round(x)).astype(x.dtype)


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


def _sigmoid_rejecting_negatives(x: Any) -> Any:
    if np.any(np.asarray(x) < 0):  # a fast path that only handles x >= 0
        raise ValueError("sigmoid: negative input reached the x >= 0 fast path")
    return _sigmoid_by_ratio(x)


class RaisingSigmoid(PatchedInterpreter):
    """``sigmoid`` raises ``ValueError`` when any element is negative (an executor crash in
    one kernel: the stored case is minimised while it still raises, CONF-19)."""

    overrides: ClassVar[dict[str, Kernel]] = {"sigmoid": _sigmoid_rejecting_negatives}


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


# -- platform effects (diagnosed by conformance/diagnosis.py, CONF-40) --------------------------
_FLOATS = {np.dtype(np.float16): 2.0**-14, np.dtype(np.float32): 2.0**-126,
           np.dtype(np.float64): 2.0**-1022}


def _daz(a: Any) -> Any:
    """Subnormals of float16/32/64 replaced by a zero of the same sign (x86 FTZ + DAZ)."""
    if not isinstance(a, np.ndarray) or a.dtype not in _FLOATS:
        return a
    tiny = a.dtype.type(_FLOATS[a.dtype])
    return np.where((np.abs(a) < tiny) & (a != 0), a * a.dtype.type(0), a)


class FlushToZero(PatchedInterpreter):
    """Every float16/32/64 op flushes subnormal operands and results to zero (FTZ/DAZ)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.category in ("buffer", "creation", "random", "debug"):
            return kernel

        def flushed(*args: Any, **attrs: Any) -> Any:
            out = kernel(*[_daz(a) for a in args], **attrs)
            if isinstance(out, tuple | list):
                return type(out)(_daz(o) for o in out)
            return _daz(out)

        return flushed


class FlushToZeroSignBug(FlushToZero):
    """FTZ as :class:`FlushToZero`, and float32 ``add`` of two negative operands returns the
    sum with the wrong sign: a real bug in the same cells as the platform effect."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name != "add":
            return kernel

        def add(a: Any, b: Any) -> Any:
            out = kernel(a, b)
            if out.dtype == np.float32:
                return np.where((a < 0) & (b < 0), -out, out)
            return out

        return add


def _fma64(a: float, b: float, c: float) -> float:
    if not all(np.isfinite((a, b, c))):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0 or abs(exact) > Fraction(np.finfo(np.float64).max):
        return a * b + c
    return exact.numerator / exact.denominator  # one correct rounding


class FusedMultiplyAdd(PatchedInterpreter):
    """float64 ``add``/``sub`` of a ``mul`` result is contracted into one fused multiply-add
    (one rounding), as a compiler with ``-ffp-contract=fast`` does."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        muls: dict[Value, tuple[Any, Any]] = {}
        fma = np.vectorize(_fma64, otypes=[np.float64])
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                args = [env[v] for v in node.operands]
                name = node.op.name
                if (name in ("add", "sub") and node.results[0].type.dtype == DType.float64
                        and any(v in muls for v in node.operands)):
                    x, y = node.operands
                    if x in muls:
                        a, b = muls[x]
                        c = -args[1] if name == "sub" else args[1]
                    else:
                        a, b = muls[y]
                        a = -a if name == "sub" else a
                        c = args[0]
                    out = np.asarray(fma(a, b, c), np.float64)
                else:
                    out = self.kernel_for(node)(*args, **node.attrs)
                if name == "mul":
                    muls[node.results[0]] = (args[0], args[1])
                if len(node.results) == 1:
                    env[node.results[0]] = out
                elif node.results:
                    env.update(zip(node.results, out, strict=True))
        return [env[v] for v in graph.outputs or ()]


def _cast_through_f32(kernel: Kernel) -> Kernel:
    def cast(x: Any, *, dtype: DType) -> Any:
        if x.dtype == np.float64 and dtype in (DType.float16, DType.bfloat16):
            return x.astype(np.float32).astype(dtype.to_numpy())
        return kernel(x, dtype=dtype)

    return cast


class DoubleRoundingCast(PatchedInterpreter):
    """float64 -> float16/bfloat16 casts go through float32 (two roundings)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        return _cast_through_f32(kernel) if node.op.name == "cast" else kernel


class NaNIgnoringMaximum(PatchedInterpreter):
    """``max`` returns the other operand when one is NaN (C ``fmax``, x86 ``maxps``-style)."""

    overrides: ClassVar[dict[str, Kernel]] = {"max": np.fmax}


def _negate_saturating(x: Any) -> Any:
    if x.dtype == np.int8:
        return (-np.maximum(x.astype(np.int16), -127)).astype(np.int8)
    return np.negative(x)


class SaturatingInt8Negate(PatchedInterpreter):
    """int8 ``negate`` saturates: -(-128) gives 127 instead of wrapping around to -128."""

    overrides: ClassVar[dict[str, Kernel]] = {"negate": _negate_saturating}


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


class TupleAttrsToListsInPlace(PatchedInterpreter):
    """Runs a "canonicalisation" pass on the graph it is given before executing it: every
    tuple attribute (a shape, axes, a permutation) becomes a list in the node's own
    ``attrs`` dict, as a binding that wants lists does. Results stay right; the caller's
    graph has changed (EXEC-15)."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for node in graph.nodes:
            for name, value in node.attrs.items():
                if isinstance(value, tuple):
                    node.attrs[name] = list(value)
        return super().run(graph, inputs)


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


# -- conversions at their boundaries (caught by conformance/test_specials.py, NUM-20) ---------
def _cast_reference(x: Any, dtype: DType) -> Any:
    from interpreter.registry import REGISTRY

    return REGISTRY["cast"].kernel(x, dtype=dtype)


def _cast_via_signed(x: Any, dtype: DType) -> Any:
    """float -> uint32/uint64 through int32/int64, saturating at the signed max (a signed
    convert instruction; narrower unsigned targets go through int32 and are right)."""
    a = np.asarray(x)
    if a.dtype.kind not in "fV" or dtype not in (DType.uint32, DType.uint64):
        return _cast_reference(x, dtype)
    signed = np.dtype(f"i{np.dtype(dtype.to_numpy()).itemsize}")
    info = np.iinfo(signed)
    with np.errstate(all="ignore"):
        t = np.trunc(np.nan_to_num(a.astype(np.float64)))
        via = np.clip(t, float(info.min), float(info.max)).astype(signed)
    return via.astype(dtype.to_numpy())


class UnsignedCastViaSigned(PatchedInterpreter):
    """``cast`` float -> uint32/uint64 goes through the signed type of the same width, so
    values in [2**(bits-1), 2**bits) saturate at 2**(bits-1) - 1 instead of converting."""

    overrides: ClassVar[dict[str, Kernel]] = {"cast": _cast_via_signed}


def _cast_early_overflow(x: Any, dtype: DType) -> Any:
    """Narrowing float casts overflow to +-inf as soon as |x| > max (before rounding)."""
    out = _cast_reference(x, dtype)
    a = np.asarray(x)
    if a.dtype.kind not in "fV" or not dtype.is_float() or dtype is DType.float8_e4m3fn:
        return out
    import ml_dtypes

    mx = float(ml_dtypes.finfo(dtype.to_numpy()).max)
    wide = a.astype(np.float64)
    with np.errstate(all="ignore"):
        over = np.isfinite(wide) & (np.abs(wide) > mx)
        return np.where(over, np.copysign(np.inf, wide), out).astype(dtype.to_numpy())


class EarlyOverflowCast(PatchedInterpreter):
    """Narrowing float ``cast`` (float32 -> float16, ...) gives +-inf for every |x| above
    the target's max, though values below max + ulp/2 round to +-max (NUM-4)."""

    overrides: ClassVar[dict[str, Kernel]] = {"cast": _cast_early_overflow}
