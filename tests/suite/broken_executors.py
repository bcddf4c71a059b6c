"""Deliberately broken executors: the conformance suite must catch every one (CONF-18).

Each class is a small variation of the reference interpreter with one realistic bug. They
are built with no arguments, so ``--executor=tests.suite.broken_executors:Name`` selects them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.evaluate import fresh_outputs
from interpreter.executor import InterpreterExecutor, validate_inputs
from interpreter.graph.core import Graph, Node, Value
from interpreter.graph.lowering import lowered
from interpreter.graph.splat import array_key, is_splat
from interpreter.registry import REGISTRY
from interpreter.registry.core import as_results
from interpreter.registry.targets import host_targets
from interpreter.types import BufferType

__all__ = [
    "AliasingOutputs",
    "ArgsortDescendingByReversal",
    "AvgPoolCountsPadding",
    "BlockedTailElementwise",
    "Conv2dPaddingSwapped",
    "CrashingExecutor",
    "DoubleRoundingCast",
    "DroppedMutation",
    "EarlyOverflowCast",
    "Float16ChainInFloat32",
    "FlushToZero",
    "FlushToZeroSignBug",
    "FusedMultiplyAdd",
    "HalfBuiltPlanCache",
    "HalfPixelRoiAlign",
    "HangingExecutor",
    "IgnoredSeed",
    "LhsOnTieMaxMin",
    "NaNComparisonByNegation",
    "NaNIgnoringArgmax",
    "NaNIgnoringMaximum",
    "NaNIgnoringScatterMax",
    "NaNLastTopK",
    "NaNSkippingMaxPool",
    "NaNSkippingSum",
    "NondeterministicExecutor",
    "OffByOneReduceScatter",
    "OutputSlotPerType",
    "OverflowingSigmoid",
    "PooledOutputs",
    "RaisingSigmoid",
    "ReciprocalDivision",
    "RefusesAfterWrite",
    "ReplayedMutation",
    "RhsOnTieMaxMin",
    "RoundHalfAwayFromZero",
    "SaturatingInt8Negate",
    "SaturatingIntReductions",
    "ScalarKeyedPlanCache",
    "ScatterAddDropsDuplicates",
    "ScratchReuseIgnoresViews",
    "SelectSwapsFloatBranches",
    "TiledSumDropsTail",
    "TruncatingFloorDiv",
    "TupleAttrsToListsInPlace",
    "UnsignedCastViaSigned",
    "UnzeroedScratchPool",
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
    x64 = np.asarray(x, np.float64)
    return (1 / (1 + np.exp(-x64))).astype(np.asarray(x).dtype)  # right for x >= 0


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


def _flushing(kernel: Kernel, node: Node, flush: Callable[[Any], Any]) -> Kernel:
    """``kernel`` with ``flush`` applied to its operands and results (FTZ/DAZ), except for
    the buffer, creation, random and debug ops, which compute nothing to flush."""
    if node.op.category in ("buffer", "creation", "random", "debug"):
        return kernel

    def flushed(*args: Any, **attrs: Any) -> Any:
        out = kernel(*[flush(a) for a in args], **attrs)
        if isinstance(out, tuple | list):
            return type(out)(flush(o) for o in out)
        return flush(out)

    return flushed


class FlushToZero(PatchedInterpreter):
    """Every float16/32/64 op flushes subnormal operands and results to zero (FTZ/DAZ)."""

    def kernel_for(self, node: Node) -> Kernel:
        return _flushing(super().kernel_for(node), node, _daz)


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


def _fmax_where_nan(a: Any, b: Any) -> Any:
    """``np.fmax`` where an operand is NaN, the reference ``max`` elsewhere (``np.fmax``'s
    sign of a zero tie depends on numpy's SIMD path: not this effect)."""
    nan = np.isnan(a) | np.isnan(b)
    return np.where(nan, np.fmax(a, b), REGISTRY["max"].kernel(a, b)).astype(a.dtype)


class NaNIgnoringMaximum(PatchedInterpreter):
    """``max`` returns the other operand when one is NaN (C ``fmax``, x86 ``maxps``-style)."""

    overrides: ClassVar[dict[str, Kernel]] = {"max": _fmax_where_nan}


class RhsOnTieMaxMin(PatchedInterpreter):
    """``max``/``min`` as ``a > b ? a : b`` / ``a < b ? a : b`` with NaN propagated: a tie of
    zeros gives the second operand, ``max(+0, -0) = -0`` (ONNX Runtime 1.32's Max/Min)."""

    overrides: ClassVar[dict[str, Kernel]] = {
        "max": lambda a, b: np.where(np.isnan(a) | (a > b), a, b),
        "min": lambda a, b: np.where(np.isnan(a) | (a < b), a, b)}


class LhsOnTieMaxMin(PatchedInterpreter):
    """``max``/``min`` as ``b > a ? b : a`` / ``b < a ? b : a`` with NaN propagated: a tie of
    zeros gives the first operand, ``max(-0, +0) = -0``."""

    overrides: ClassVar[dict[str, Kernel]] = {
        "max": lambda a, b: np.where(np.isnan(b) | (b > a), b, a),
        "min": lambda a, b: np.where(np.isnan(b) | (b < a), b, a)}


class NaNIgnoringArgmax(PatchedInterpreter):
    """``argmax``/``argmin`` read NaN as -inf/+inf: the index of the extreme number, not of
    the first NaN (ONNX Runtime 1.32, MAX 26.7)."""

    overrides: ClassVar[dict[str, Kernel]] = {
        "argmax": lambda x, *, axis: np.argmax(np.where(np.isnan(x), -np.inf, x), axis=axis,
                                               keepdims=True).astype(np.int64),
        "argmin": lambda x, *, axis: np.argmin(np.where(np.isnan(x), np.inf, x), axis=axis,
                                               keepdims=True).astype(np.int64)}


def _max_pool_nan_as_lowest(x: Any, **attrs: Any) -> Any:
    return REGISTRY["max_pool2d"].kernel(np.where(np.isnan(x), -np.inf, x).astype(x.dtype),
                                         **attrs)


class NaNSkippingMaxPool(PatchedInterpreter):
    """``max_pool2d`` reads NaN as -inf: a NaN in a window loses to its numbers (ONNX Runtime
    1.32, MAX 26.7; a window of NaNs only gives -inf, as MAX)."""

    overrides: ClassVar[dict[str, Kernel]] = {"max_pool2d": _max_pool_nan_as_lowest}


def _scatter_by_ufunc_at(pick: np.ufunc) -> Kernel:
    def kernel(x: Any, updates: Any, indices: Any, **attrs: Any) -> Any:
        targets, values = host_targets([x, updates, indices], attrs)
        out = np.array(x, copy=True)
        pick.at(out.reshape(-1), targets, values)
        return out

    return kernel


class NaNIgnoringScatterMax(PatchedInterpreter):
    """The max/min scatters combine with ``np.fmax.at``/``np.fmin.at``: a NaN in the data or
    in the updates loses to a number (ONNX Runtime 1.32 for a NaN in the data, MAX 26.7)."""

    overrides: ClassVar[dict[str, Kernel]] = {
        "scatter_max": _scatter_by_ufunc_at(np.fmax),
        "scatter_min": _scatter_by_ufunc_at(np.fmin),
        "scatter_nd_max": _scatter_by_ufunc_at(np.fmax),
        "scatter_nd_min": _scatter_by_ufunc_at(np.fmin)}


def _top_k_nan_last(x: Any, *, k: int, axis: int) -> tuple[Any, Any]:
    key = np.where(np.isnan(x), np.inf, -x.astype(np.float64))
    idx = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


class NaNLastTopK(PatchedInterpreter):
    """``top_k`` sorts NaN below every number (taken last), not above +inf."""

    overrides: ClassVar[dict[str, Kernel]] = {"top_k": _top_k_nan_last}


def _int64_then_saturated(kernel: Kernel) -> Kernel:
    """``kernel`` on integers under 64 bits computed in int64 and clamped to the dtype."""

    def run(x: Any, *rest: Any, **attrs: Any) -> Any:
        if x.dtype.kind not in "iu" or x.dtype.itemsize == 8:
            return kernel(x, *rest, **attrs)
        info = np.iinfo(x.dtype)
        wide = kernel(x.astype(np.int64), *rest, **attrs)
        return np.clip(wide, info.min, info.max).astype(x.dtype)

    return run


class SaturatingIntReductions(PatchedInterpreter):
    """Integer ``reduce_sum``/``reduce_prod``/``cumsum``/``gather_sum`` accumulate in int64 and
    saturate instead of wrapping around (ONNX Runtime 1.32's int32 ReduceSum/ReduceProd)."""

    overrides: ClassVar[dict[str, Kernel]] = {
        name: _int64_then_saturated(REGISTRY[name].kernel)
        for name in ("reduce_sum", "reduce_prod", "cumsum", "gather_sum")}


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


# -- long axes: remainder loops and tiles (caught by conformance/test_reach.py, CONF-86) --------
def _tail_off_by_a_vector(kernel: Kernel, width: int = 8) -> Kernel:
    def blocked(*args: Any, **attrs: Any) -> Any:
        out = np.array(kernel(*args, **attrs))
        n = out.shape[-1] if out.ndim >= 2 and out.size > out.shape[-1] else 0
        r = n % width
        if n > 2 * width and r:  # rows' tails re-store the lanes of their last full vector
            out[..., n - r:] = out[..., n - r - width:n - width]
        return out
    return blocked


class BlockedTailElementwise(PatchedInterpreter):
    """``add``/``sub``/``mul`` as a 2-D kernel over (rows, last axis), 8 lanes wide, whose
    scalar remainder loop (last axis > 16 and not a multiple of 8; more than one row) indexes
    from the start of the row's last full vector instead of its end: the last ``n % 8``
    elements of every row repeat the 8 before them (1-D inputs take a separate, correct
    path). The classic epilogue-offset bug of hand- and auto-vectorised kernels; invisible
    while no axis is longer than 16."""

    overrides: ClassVar[dict[str, Kernel]] = {
        name: _tail_off_by_a_vector(REGISTRY[name].kernel) for name in ("add", "sub", "mul")}


def _sum_whole_tiles(x: Any, *, axis: int, tile: int = 64) -> Any:
    n = x.shape[axis]
    if n > tile and n % tile:  # the grid is n // tile blocks: the partial tile is lost
        x = np.take(x, np.arange(n - n % tile), axis=axis)
    return REGISTRY["reduce_sum"].kernel(x, axis=axis)


class TiledSumDropsTail(PatchedInterpreter):
    """``reduce_sum`` over tiles of 64 along the reduced axis, launched with ``n // 64``
    blocks instead of ``ceil(n / 64)``: for axes longer than 64 that are not a multiple of 64
    the last partial tile is never added (a GPU reduction grid-size bug); invisible while no
    axis is longer than 64."""

    overrides: ClassVar[dict[str, Kernel]] = {"reduce_sum": _sum_whole_tiles}


# -- constants: folding and plan caches (caught by conformance/test_constants.py, CONF-88/89) ---
def _uniform_constants(graph: Graph) -> set[Value]:
    """Results of ``constant`` nodes holding one value (a splat, or one element)."""
    return {n.results[0] for n in graph.nodes if n.op.name == "constant"
            and (is_splat(n.attrs["value"]) or n.attrs["value"].size == 1)}


class ReciprocalDivision(PatchedInterpreter):
    """Floating ``x / c`` by a uniform constant ``c`` (a weak scalar's splat or a rank-0
    ``constant``) strength-reduced to ``x * (1 / c)``: legal only where ``1 / c`` is exact (a
    power of two), but applied for every ``c`` as under reciprocal math (``-freciprocal-math``
    / ``arcp``; XLA's and TVM's simplifiers rewrite division by a constant this way). ``x / 3``
    and ``x / 10`` are then off by an ulp for many ``x``."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        uniform = _uniform_constants(graph)
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in graph.nodes:
                args = [env[v] for v in node.operands]
                if node.op.name == "div" and node.operands[1] in uniform \
                        and np.asarray(args[1]).dtype.kind in "fV":
                    c = np.asarray(args[1])
                    out: Any = np.multiply(args[0], np.divide(np.ones((), c.dtype), c))
                else:
                    out = self.kernel_for(node)(*args, **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        return [env[v] for v in graph.outputs or ()]


def _plan_key(graph: Graph) -> Hashable:
    """The graph's structure with each splat's value as a Python scalar (compared with
    ``==``: ``0.0 == -0.0``), every other attribute by its bytes."""
    ids: dict[Value, int] = {v: i for i, v in enumerate(graph.inputs)}
    parts: list[Any] = [tuple(str(v.type) for v in graph.inputs)]
    for node in graph.nodes:
        attrs = []
        for k, a in sorted(node.attrs.items()):
            if isinstance(a, np.ndarray):
                a = (("splat", str(a.dtype), a.shape, a.flat[0].item()) if is_splat(a)
                     else array_key(a))
            else:
                a = repr(a)
            attrs.append((k, a))
        for r in node.results:
            ids[r] = len(ids)
        parts.append((node.op.name, tuple(ids[v] for v in node.operands), tuple(attrs)))
    parts.append(tuple(ids[v] for v in graph.outputs or ()))
    return tuple(parts)


class ScalarKeyedPlanCache(PatchedInterpreter):
    """A JIT's plan cache keyed on the graph structure with each weak scalar keyed by its
    Python value, compared with ``==`` (as trace caches guard on a specialised float:
    ``0.0 == -0.0``, so ``x * -0.0`` reuses the plan compiled for ``x * 0.0``): a graph that
    differs from a cached one only in a weak scalar's sign of zero runs the cached graph."""

    def __init__(self) -> None:
        super().__init__()
        self.plans: dict[Hashable, Graph] = {}

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        plan = self.plans.setdefault(_plan_key(graph), graph)
        return super().run(plan, inputs)

# -- state that leaks between executions (caught by conformance/test_state.py) ---------------
class PooledOutputs(PatchedInterpreter):
    """An output allocator with a free list: when a call returns, the arrays the previous
    call returned go back to the pool (the runtime assumes the caller has consumed them),
    and a new output of the same dtype and shape is written into one of them. Every call's
    own results are right; the caller's earlier results change under it (EXEC-5). (The
    front-end and random families catch it too, since they keep earlier results; their
    single-call repros agree.)"""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pool: list[np.ndarray] = []

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(graph, inputs)
        with self._lock:
            result = [_into_pooled(self._pool, o) for o in outs]
            self._pool = list(result)
        return result


def _into_pooled(free: list[np.ndarray], a: Any) -> Any:
    """``a`` copied into (and taken from) an array of ``free`` of its dtype and shape, or
    ``a`` itself when there is none."""
    k = next((i for i, p in enumerate(free) if isinstance(a, np.ndarray)
              and p.dtype == a.dtype and p.shape == a.shape), None)
    if k is None:
        return a
    slot = free.pop(k)
    np.copyto(slot, a)
    return slot


class OutputSlotPerType(PatchedInterpreter):
    """An output planner that gives each (dtype, shape) one slot instead of each value: of a
    graph's outputs of the same type, all read the last one's result. A graph with one
    output is always right; independent parts in one graph are not (CONF-136)."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(graph, inputs)
        last = {(o.dtype, o.shape): o for o in outs if isinstance(o, np.ndarray)}
        return [np.array(last[(o.dtype, o.shape)]) if isinstance(o, np.ndarray) else o
                for o in outs]


class ScratchReuseIgnoresViews(PatchedInterpreter):
    """A memory planner that recycles an intermediate's array after its last *direct*
    read, not seeing that a view of it (a slice, a reshape) is read later: the next
    intermediate of the same dtype and shape is written into that array, under the view
    (CONF-109)."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        last = {v: i for i, node in enumerate(graph.nodes) for v in node.operands}
        keep = set(graph.outputs or ()) | set(graph.inputs)
        free: list[np.ndarray] = []

        def owned(a: Any) -> bool:
            return isinstance(a, np.ndarray) and a.flags.owndata and a.flags.writeable

        with np.errstate(all="ignore"):
            for i, node in enumerate(graph.nodes):
                out = self.kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                placed = [_into_pooled(free, r) if owned(r) else r for r in as_results(out)]
                env.update(zip(node.results, placed, strict=True))
                free += [env[v] for v in set(node.operands)
                         if last[v] == i and v not in keep and owned(env[v])]
        return [env[v] for v in graph.outputs or ()]

class UnzeroedScratchPool(PatchedInterpreter):
    """``buffer_create`` is served from a per-instance pool of scratch buffers keyed by dtype
    and shape: buffers go back to the pool when an execution ends and are handed out again
    without being cleared. A fresh instance's buffers are zero; later ones hold whatever
    the last execution left in them (MUT-4: all zero)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pool: list[np.ndarray] = []
        self._taken = threading.local()

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        self._taken.items = []
        try:
            return super().run(graph, inputs)
        finally:
            with self._lock:
                self._pool.extend(self._taken.items)

    def kernel_for(self, node: Node) -> Kernel:
        if node.op.name != "buffer_create":
            return super().kernel_for(node)

        def create(*, dtype: DType, shape: tuple[int, ...], device: Any) -> np.ndarray:
            want = np.dtype(dtype.to_numpy())
            with self._lock:
                k = next((i for i, p in enumerate(self._pool)
                          if p.dtype == want and p.shape == tuple(shape)), None)
                b = self._pool.pop(k) if k is not None else None
            if b is None:
                b = np.zeros(shape, want)
            self._taken.items.append(b)
            return b
        return create


class _Plan:
    """A cached plan of one structure: the positions of the nodes to run (any graph of the
    structure runs it), output buffers preallocated per call from the declared types."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def run(self, graph: Graph, inputs: Sequence[Any], kernel_for: Callable[[Node], Kernel]
            ) -> list[np.ndarray]:
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in (graph.nodes[i] for i in self.steps):
                out = kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        outs = []
        for v in graph.outputs or ():
            o = np.zeros(v.type.shape, v.type.dtype.to_numpy())
            if v in env:
                np.copyto(o, env[v])
            outs.append(o)
        return outs


class HalfBuiltPlanCache(PatchedInterpreter):
    """A plan cache keyed by graph structure. The first call of a structure registers its
    entry (output buffers preallocated from the declared types), then validates the inputs
    (EXEC-7) and fills in the nodes to run. A first call with mismatched inputs raises after
    the entry was registered: the half-built entry, with no nodes, then serves every later
    call of that structure and returns the preallocated outputs unwritten (zeros)."""

    def __init__(self) -> None:
        super().__init__()
        self._plans: dict[str, _Plan] = {}

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"{type(self).__name__}: {why}")
        graph = lowered(graph)
        key = graph.structural_hash()
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = _Plan()  # registered before it is built
            validate_inputs(type(self).__name__, graph, inputs)
            plan.steps = list(range(len(graph.nodes)))
        else:
            validate_inputs(type(self).__name__, graph, inputs)
        return plan.run(graph, list(inputs), self.kernel_for)


# -- bytes, layout and store order (caught by the MUT-6..9 / DT-6..8 checks) -------------------
#: ops whose kernels only move bytes (DT-6) that ``CanonicalNaNMoves`` routes through floats
_MOVES = ("reshape", "permute", "broadcast_to", "slice", "concat", "split", "tile", "gather",
          "select", "transfer", "buffer_load")


def _canonical_nans(out: Any) -> Any:
    def fix(a: Any) -> Any:
        a = np.asarray(a)
        if a.dtype.kind != "f" and a.dtype.name not in ("bfloat16", "float8_e5m2"):
            return a
        a = np.array(a, copy=True)
        a[np.isnan(a.astype(np.float32))] = np.nan
        return a

    return tuple(fix(o) for o in out) if isinstance(out, tuple | list) else fix(out)


class CanonicalNaNMoves(PatchedInterpreter):
    """Data movement (reshape, permute, slice, concat, gather, select, loads, ...) runs as a
    float move in a default-NaN mode (ARM ``FPCR.DN``, a GPU's float copy path): every NaN
    comes out as the canonical ``+qNaN``, losing its payload and sign bit (DT-6, MUT-2)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name not in _MOVES:
            return kernel
        return lambda *a, **k: _canonical_nans(kernel(*a, **k))


class StridedPermute(PatchedInterpreter):
    """Results are made fresh with ``np.copy`` (EXEC-5), whose default ``order="K"`` keeps a
    view's memory order: ``permute``'s transposed view comes back Fortran-ordered (or
    strided), not C-contiguous (DT-2). Values, dtype and shape are right."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = self.raw_outputs(graph, inputs)
        return [np.copy(o) if isinstance(o, np.ndarray) else np.array(o) for o in outs]


def _buffer_of(node: Node) -> Value | None:
    if node.op.name in ("buffer_load", "buffer_store", "buffer_store_slice"):
        return node.operands[0]
    return None


class LoadHoistedAboveSliceStore(PatchedInterpreter):
    """The scheduler's alias analysis treats ``buffer_store_slice`` as writing only the
    region, and a whole-buffer ``buffer_load`` as independent of it: a load right after a
    slice store of the same buffer is hoisted above it and misses the slice (GRAPH-5,
    MUT-2)."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        nodes = list(graph.nodes)
        last: dict[Value, int] = {}
        for i, node in enumerate(list(nodes)):
            buf = _buffer_of(node)
            if buf is None:
                continue
            j = last.get(buf)
            if (node.op.name == "buffer_load" and j is not None and j == i - 1
                    and nodes[j].op.name == "buffer_store_slice"):
                nodes[j], nodes[i] = nodes[i], nodes[j]
            last[buf] = i
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for node in nodes:
                out = self.kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        return [env[v] for v in graph.outputs or ()]


class DeadStoreBeforeSliceStore(PatchedInterpreter):
    """Dead-store elimination deletes a ``buffer_store`` followed, with no load of the buffer
    in between, by a ``buffer_store_slice`` of the same buffer, as if the slice store
    overwrote the whole buffer: the elements outside the slice keep their old contents
    (MUT-2, MUT-3)."""

    def raw_outputs(self, graph: Graph, inputs: list[np.ndarray]) -> list[Any]:
        dead: set[int] = set()
        pending: dict[Value, int] = {}
        for i, node in enumerate(graph.nodes):
            buf = _buffer_of(node)
            if buf is None:
                continue
            if node.op.name == "buffer_store_slice" and buf in pending:
                dead.add(pending.pop(buf))
            elif node.op.name == "buffer_store":
                pending[buf] = i
            else:
                pending.pop(buf, None)
        env: dict[Value, Any] = dict(zip(graph.inputs, inputs, strict=True))
        with np.errstate(all="ignore"):
            for i, node in enumerate(graph.nodes):
                if i in dead:
                    continue
                out = self.kernel_for(node)(*[env[v] for v in node.operands], **node.attrs)
                env.update(zip(node.results, as_results(out), strict=True))
        return [env[v] for v in graph.outputs or ()]


class PooledScratchBuffers(PatchedInterpreter):
    """``buffer_create`` takes its storage from a per-executor pool keyed by dtype and shape
    and does not clear it on reuse: a scratch buffer starts with what the previous execution
    left in it, not zeros (MUT-4)."""

    def __init__(self) -> None:
        super().__init__()
        self.pool: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}

    def kernel_for(self, node: Node) -> Kernel:
        if node.op.name != "buffer_create":
            return super().kernel_for(node)

        def create(*, dtype: DType, shape: tuple[int, ...], device: Any) -> np.ndarray:
            key = (dtype.value, tuple(shape))
            if key not in self.pool:
                self.pool[key] = np.zeros(shape, dtype.to_numpy())
            return self.pool[key]

        return create


__all__ += ["CanonicalNaNMoves", "DeadStoreBeforeSliceStore", "LoadHoistedAboveSliceStore",
            "PooledScratchBuffers", "StridedPermute"]

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


# -- masks, shapes and resize (issue 19) -------------------------------------------------------
def _linear_aligning_corners(x: Any, *, shape: tuple[int, ...],
                             coordinate_transform_mode: str) -> Any:
    kernel = REGISTRY["resize_linear"].kernel
    mode = ("align_corners" if coordinate_transform_mode == "half_pixel"
            else coordinate_transform_mode)
    return kernel(x, shape=shape, coordinate_transform_mode=mode)


class ResizeLinearAlignsCorners(PatchedInterpreter):
    """``resize_linear`` maps coordinates with ``align_corners`` where ``half_pixel`` (MAX's
    default) is asked: a kernel written for one framework's convention."""

    overrides: ClassVar[dict[str, Kernel]] = {"resize_linear": _linear_aligning_corners}


__all__ += ["ResizeLinearAlignsCorners"]
# -- issue 19: collectives on the simulated mesh, roi_align -----------------------------------
def _rotated_reducescatter(*xs: Any, axis: int) -> Any:
    """Device ``i`` gets chunk ``i + 1`` (the last device chunk 0): a rank off by one."""
    chunks = as_results(REGISTRY["reducescatter_sum"].kernel(*xs, axis=axis))
    return tuple(chunks[1:] + chunks[:1]) if len(chunks) > 1 else chunks[0]


class OffByOneReduceScatter(PatchedInterpreter):
    """``reducescatter_sum`` gives each device the chunk of the next device (DEV-7)."""

    overrides: ClassVar[dict[str, Kernel]] = {"reducescatter_sum": _rotated_reducescatter}


def _roi_align_unshifted(x: Any, rois: Any, **attrs: Any) -> Any:
    """``aligned`` regions keep their coordinates: off by half a pixel from the reference's
    ``x * spatial_scale - 0.5`` (still without the minimum size of 1)."""
    if attrs["aligned"]:
        rois = rois.copy()
        rois[:, 1:] += np.asarray(0.5 / attrs["spatial_scale"], rois.dtype)
    return REGISTRY["roi_align"].kernel(x, rois, **attrs)


class HalfPixelRoiAlign(PatchedInterpreter):
    """``roi_align`` with ``aligned=True`` forgets the half-pixel shift of the regions."""

    overrides: ClassVar[dict[str, Kernel]] = {"roi_align": _roi_align_unshifted}
# -- convolution and pooling (issue 19) ---------------------------------------------------------
def _conv2d_pads_swapped(x: Any, w: Any, *, paddings: Any, **attrs: Any) -> Any:
    swapped = tuple((hi, lo) for lo, hi in paddings)
    return REGISTRY["conv2d"].kernel(x, w, paddings=swapped, **attrs)


class Conv2dPaddingSwapped(PatchedInterpreter):
    """``conv2d`` pads each spatial axis on the wrong side: the ``before`` rows/columns go
    after and the ``after`` ones before (an odd "same" padding's extra row on top instead of
    at the bottom). Invisible whenever the padding is symmetric."""

    overrides: ClassVar[dict[str, Kernel]] = {"conv2d": _conv2d_pads_swapped}


def _avg_pool_always_boundary(x: Any, *, count_boundary: bool, **attrs: Any) -> Any:
    return REGISTRY["avg_pool2d"].kernel(x, count_boundary=True, **attrs)


class AvgPoolCountsPadding(PatchedInterpreter):
    """``avg_pool2d`` always divides by the window size: with ``count_boundary=False`` the
    padding (and the ceil-mode overhang) still counts in the divisor."""

    overrides: ClassVar[dict[str, Kernel]] = {"avg_pool2d": _avg_pool_always_boundary}


# -- issue 19: normalizations (REDUCE-8) -------------------------------------------------------
def _layer_norm_unbiased(x: Any, gamma: Any, beta: Any, *, epsilon: float) -> Any:
    """The sample variance, divided by n - 1 (``torch.var``'s default), not the population one."""
    a = np.asarray(x, np.float64)
    n = a.shape[-1] if a.ndim else 1
    d = a - np.mean(a, axis=-1, keepdims=True) if a.size else a
    with np.errstate(all="ignore"):
        var = np.sum(d * d, axis=-1, keepdims=True) / np.float64(n - 1)
        z = d / np.sqrt(var + float(np.float32(epsilon)))
        return (z * gamma.astype(np.float64) + beta.astype(np.float64)).astype(x.dtype)


class UnbiasedVarianceLayerNorm(PatchedInterpreter):
    """``layer_norm`` with the unbiased (n - 1) variance instead of the biased one."""

    overrides: ClassVar[dict[str, Kernel]] = {"layer_norm": _layer_norm_unbiased}


def _rms_norm_epsilon_outside(x: Any, weight: Any, *, epsilon: float, weight_offset: float,
                              multiply_before_cast: bool) -> Any:
    """``x / (sqrt(mean(x**2)) + epsilon)``: epsilon added outside the square root."""
    a = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        ms = np.sum(a * a, axis=-1, keepdims=True) / max(1, a.shape[-1])
        w = weight.astype(np.float64) + float(np.float32(weight_offset))
        return (a / (np.sqrt(ms) + float(np.float32(epsilon))) * w).astype(x.dtype)


class EpsilonOutsideSqrtRmsNorm(PatchedInterpreter):
    """``rms_norm`` adds epsilon to the root mean square instead of to the mean square."""

    overrides: ClassVar[dict[str, Kernel]] = {"rms_norm": _rms_norm_epsilon_outside}


__all__ += ["EpsilonOutsideSqrtRmsNorm", "UnbiasedVarianceLayerNorm"]
# -- the indexing family (issue 19) ---------------------------------------------------------
def _scatter_add_by_fancy_index(x: Any, updates: Any, indices: Any, *, axis: int) -> Any:
    """``out[coords] += updates`` with numpy fancy indexing: the read-modify-write is
    buffered, so a target named several times receives one update, the others are lost."""
    axis %= x.ndim
    idx = indices.astype(np.int64)
    coords = list(np.indices(indices.shape))
    coords[axis] = np.where(idx < 0, idx + x.shape[axis], idx)
    out = x.copy()
    out[tuple(coords)] += updates
    return out


class ScatterAddDropsDuplicates(PatchedInterpreter):
    """``scatter_add`` keeps one update per target (numpy's buffered ``a[i] += u``): with
    indices [0, 0] and updates [1, 1], x[0] grows by 1, not 2 (INDEX-7)."""

    overrides: ClassVar[dict[str, Kernel]] = {"scatter_add": _scatter_add_by_fancy_index}


def _argsort_by_reversal(x: Any, *, ascending: bool) -> Any:
    low = x.dtype.kind == "V" or (x.dtype.kind == "f" and x.dtype.itemsize < 4)
    key = x.astype(np.float32) if low else x
    order = np.argsort(key, kind="stable")
    return (order if ascending else order[::-1]).astype(np.int64)


class ArgsortDescendingByReversal(PatchedInterpreter):
    """Descending ``argsort`` is the ascending order reversed: equal elements (NaN too) come
    in reverse index order, so the sort is not stable (argsort.C3)."""

    overrides: ClassVar[dict[str, Kernel]] = {"argsort": _argsort_by_reversal}


# -- activations (issue 19): gelu's approximate forms ----------------------------------------------
def _gelu_tanh_as_erf(x: Any, *, approximate: str) -> Any:
    return REGISTRY["gelu"].kernel(x, approximate="none" if approximate == "tanh"
                                   else approximate)


class GeluTanhAsErf(PatchedInterpreter):
    """``gelu(approximate="tanh")`` computes the erf form: a backend mapping every gelu onto
    its one exact kernel and dropping the flag (the forms differ by up to ~3e-4 near |x| = 2).
    """

    overrides: ClassVar[dict[str, Kernel]] = {"gelu": _gelu_tanh_as_erf}


__all__ += ["GeluTanhAsErf"]


_WIDE = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _daz_wide(a: Any) -> Any:
    """:func:`_daz` for float32/float64 only: float16 keeps its subnormals."""
    return _daz(a) if isinstance(a, np.ndarray) and a.dtype in _WIDE else a


def _sigmoid_by_ratio_f32(x: Any) -> Any:
    """``exp(x) / (1 + exp(x))`` in the operand's own dtype: NaN for float32 x > 88.7."""
    with np.errstate(all="ignore"):
        e = np.exp(x)
        return (e / (x.dtype.type(1) + e)).astype(x.dtype)


class ScopedFlushToZeroSigmoidBug(PatchedInterpreter):
    """FTZ/DAZ in float32 and float64 only (float16 keeps its subnormals, as XLA does), and
    one independent bug: float32 ``sigmoid`` as ``exp(x) / (1 + exp(x))`` in float32, NaN
    where ``exp`` overflows (CONF-140, CONF-141)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name == "sigmoid" and node.operands \
                and node.operands[0].type.dtype.value == "float32":
            kernel = _sigmoid_by_ratio_f32
        return _flushing(kernel, node, _daz_wide)
