"""Small executors written as a vendor would, to check the verdicts and messages the suite
gives them (CONF-22..21): legal 1-ULP differences, a crash inside the executor's own
nested function, a wrong rank-0 bfloat16 result, legal reduction differences (one of them
from an executor that warns).

``--executor=tests.suite.vendor_executors:Name`` selects them (built with no arguments).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import ml_dtypes
import numpy as np

from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph.core import Graph, Node
from interpreter.registry.core import as_results

from .broken_executors import Kernel, PatchedInterpreter

__all__ = [
    "CrashesInNestedFunction",
    "LastBitFlipped",
    "NoisyOneUlpReductions",
    "OneUlpExp",
    "OneUlpOnScalars",
    "OneUlpReductions",
    "RefusesEverything",
    "ScalarBfloat16Off",
    "SlowCalls",
    "SlowCompiler",
    "ThreeUlpExp",
]


def _up(x: Any) -> Any:
    """One ULP towards +inf (NaN, inf and the largest finite value unchanged: a finite
    result never becomes an infinity, TOL-4)."""
    a = np.asarray(x)
    moved = np.nextafter(a, np.array(np.inf, a.dtype))
    return np.where(np.isfinite(a) & np.isfinite(moved), moved, a).astype(a.dtype).reshape(a.shape)


class OneUlpOnScalars(PatchedInterpreter):
    """``exp`` on a rank-0 float32 operand is 1 ULP above the reference: legal (ulp(2))."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name != "exp" or node.results[0].type.shape != ():
            return kernel
        return lambda *args, **attrs: _up(kernel(*args, **attrs))


class OneUlpExp(PatchedInterpreter):
    """Every ``exp`` result is 1 ULP above the reference (legal; later ops may amplify it)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name != "exp":
            return kernel
        return lambda *args, **attrs: _up(kernel(*args, **attrs))


class ThreeUlpExp(PatchedInterpreter):
    """Every ``exp`` result is 3 ULPs above the reference: beyond exp's ``ulp(2)`` (TOL-1),
    within a relative ``1e-12`` in float64."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name != "exp":
            return kernel
        return lambda *args, **attrs: _up(_up(_up(kernel(*args, **attrs))))


class CrashesInNestedFunction(PatchedInterpreter):
    """Raises ``IndexError`` from a nested helper on any graph containing ``exp``."""

    def run(self, graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
        def lookup_exp_table(node: Node) -> int:
            table: list[int] = []
            return table[len(node.operands)]  # the vendor's bug

        for node in graph.nodes:
            if node.op.name == "exp":
                lookup_exp_table(node)
        return super().run(graph, inputs)


class ScalarBfloat16Off(PatchedInterpreter):
    """Adds 1 to every rank-0 bfloat16 result of ``add`` (a wrong value, exact class)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        t = node.results[0].type if node.results else None
        if node.op.name != "add" or t is None or t.shape != () or (
                t.dtype.to_numpy() != np.dtype(ml_dtypes.bfloat16)):
            return kernel

        def wrong(*args: Any, **attrs: Any) -> Any:
            out = np.asarray(kernel(*args, **attrs))
            return (out.astype(np.float32) + 1).astype(out.dtype)
        return wrong


class OneUlpReductions(PatchedInterpreter):
    """Every nonzero float result of a ``reduction``-class op is 1 ULP above the reference
    (legal: the order of accumulation is the executor's). The suite then compares under tolerance,
    computing bounds and unspecified masks on special values."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.tolerance.kind != "reduction" or len(node.results) != 1 or (
                node.results[0].type.dtype.to_numpy().kind not in "fV"):
            return kernel

        def up_unless_zero(*args: Any, **attrs: Any) -> Any:
            out = np.asarray(kernel(*args, **attrs))
            if any(np.asarray(a).size == 0 for a in args):
                return out  # empty sums and products are exact: 0 and 1 (REDUCE-3, n = 0)
            # an exclusive cumsum's first element is an empty sum too: exactly 0
            return np.where(out == 0, out, _up(out)).astype(out.dtype)
        return up_unless_zero


class NoisyOneUlpReductions(OneUlpReductions):
    """:class:`OneUlpReductions` whose ``reduce_sum`` also lets numpy warn (no ``errstate``):
    the vendor's own warning, which must still reach the vendor's warnings summary."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.name != "reduce_sum":
            return kernel

        def noisy(*args: Any, **attrs: Any) -> Any:
            with np.errstate(divide="warn"):
                np.float32(1.0) / np.float32(0.0)  # warns: divide by zero
            return kernel(*args, **attrs)
        return noisy


def _flip(x: Any) -> Any:
    """The lowest bit of every element flipped (bool: negated); any dtype and rank."""
    a = np.array(x, copy=True)
    if a.dtype == np.bool_:
        return ~a
    bits = a.view(f"u{a.dtype.itemsize}").reshape(a.shape)
    return (bits ^ np.array(1, bits.dtype)).view(a.dtype).reshape(a.shape)


class LastBitFlipped(PatchedInterpreter):
    """Every result of every op has its lowest bit flipped: wrong everywhere, in every value
    kind (rank 0, empty, size 1, bool, bfloat16, float8, several results)."""

    def kernel_for(self, node: Node) -> Kernel:
        kernel = super().kernel_for(node)
        if node.op.side_effect or not node.results:
            return kernel

        def wrong(*args: Any, **attrs: Any) -> Any:
            return tuple(_flip(o) for o in as_results(kernel(*args, **attrs)))
        return wrong


class SlowCompiler(InterpreterExecutor):
    """A correct executor that pays ``COMPILE_S`` (50 ms) the first time it sees a graph
    structure (``Graph.structural_hash``; cache per instance), like an XLA-style compiler:
    the control of CONF-30..33. With env ``SLOW_COMPILER_STATS=FILE`` each process appends
    ``{"pid", "structures", "calls", "compile_s"}`` to FILE (one JSON line) at exit; env
    ``SLOW_COMPILER_SECONDS`` overrides the compile time (0: count only)."""

    COMPILE_S: ClassVar[float] = float(os.environ.get("SLOW_COMPILER_SECONDS", "0.05"))

    def __init__(self) -> None:
        super().__init__()
        self.compiled: set[str] = set()
        self.calls = 0
        path = os.environ.get("SLOW_COMPILER_STATS")
        if path:
            atexit.register(self._dump, path)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        self.calls += 1
        key = graph.structural_hash()
        if key not in self.compiled:
            self.compiled.add(key)
            time.sleep(self.COMPILE_S)
        return super().execute(graph, inputs)

    def _dump(self, path: str) -> None:
        line = {"pid": os.getpid(), "structures": len(self.compiled), "calls": self.calls,
                "compile_s": len(self.compiled) * self.COMPILE_S}
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")


class RefusesEverything(InterpreterExecutor):
    """Refuses every graph (``UnsupportedGraphError``) and counts the calls (CONF-34)."""

    calls: ClassVar[int] = 0

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        type(self).calls += 1
        raise UnsupportedGraphError("RefusesEverything: no graph is supported")


class SlowCalls(InterpreterExecutor):
    """Correct, but every call sleeps ``SLEEP_S`` (50 ms): slow-call reports (CONF-36)."""

    SLEEP_S: ClassVar[float] = 0.05

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        time.sleep(self.SLEEP_S)
        return super().execute(graph, inputs)


class CorrectlyRounded(PatchedInterpreter):
    """The reference with every inexact float op (``tests.ops.oracle.ORACLE_OPS``: the
    transcendental and activation ops, ``pow``, ``div``, ``sqrt``) returning the correctly
    rounded value from mpmath (CONF-84). Correct by construction: the suite must pass it
    whole (NUM-15). ``pow`` with a non-finite operand keeps the reference's C99 value."""

    def kernel_for(self, node: Node) -> Kernel:
        from tests.ops.oracle import ORACLE_OPS

        kernel = super().kernel_for(node)
        name = node.op.name
        if name not in ORACLE_OPS:
            return kernel

        def rounded(*args: Any, **attrs: Any) -> Any:
            from tests.ops.oracle import correctly_rounded

            if np.asarray(args[0]).dtype.kind not in "fV":
                return kernel(*args, **attrs)
            if name != "pow":
                return correctly_rounded(name, args, attrs)
            with np.errstate(all="ignore"):
                a, b = np.broadcast_arrays(*(np.asarray(x) for x in args))
                finite = np.isfinite(a.astype(np.float64)) & np.isfinite(b.astype(np.float64))
            one = np.ones((), a.dtype)
            out = correctly_rounded(name, [np.where(finite, a, one), np.where(finite, b, one)],
                                    attrs)
            out = np.where(finite, out, np.asarray(kernel(*args, **attrs))).astype(out.dtype)
            return out

        return rounded


# -- issue 19: legal-but-different normalizations (REDUCE-8) ----------------------------------
class SequentialNormalizations(PatchedInterpreter):
    """``layer_norm`` and ``group_norm`` by Welford's one-pass update, ``rms_norm`` by a
    sequential sum of squares, all accumulated in the operand dtype (16-bit floats too):
    legal (REDUCE-2, REDUCE-8), so the suite must pass it."""

    hows: ClassVar[dict[str, str]] = {"layer_norm": "welford", "group_norm": "welford",
                                      "rms_norm": "two-pass"}

    def kernel_for(self, node: Node) -> Kernel:
        how = self.hows.get(node.op.name)
        if how is None:
            return super().kernel_for(node)
        from tests.ops import normalization_controls as controls

        return functools.partial(getattr(controls, node.op.name), how=how)


class ApproxRsqrtNormalizations(SequentialNormalizations):
    """Sequential two-pass statistics in the operand dtype and a reciprocal square root
    2 ulp above the correctly rounded one (an approximate hardware rsqrt): legal."""

    hows: ClassVar[dict[str, str]] = dict.fromkeys(("layer_norm", "group_norm", "rms_norm"),
                                                   "rsqrt-2ulp")


__all__ += ["ApproxRsqrtNormalizations", "SequentialNormalizations"]
