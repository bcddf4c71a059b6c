"""Is a surviving mutant equivalent? The reference and the mutant kernel on a large input set.

A survivor is run directly (no graph, no executor) on ``calls`` sampled calls of the op
(``op.sample`` over a seeded ``RandomArgSource``, half of them with a high special-value
rate) plus, for elementwise ops with 8/16-bit data dtypes, every bit pattern (unary) or
every pair (8-bit binary). It is *equivalent* when every result is equal to the
reference's under the op's tolerance with its unspecified mask (``compare_op``, the suite's
own verdict): ``bit-identical`` or ``within tolerance`` is said. Otherwise the first
differing call is its *witness*: the suite has a blind spot there (CONF-106).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.promotion import promote_dtypes
from interpreter.registry import OpDef
from interpreter.registry.core import OpCall, as_results
from interpreter.testing.sampling import RandomArgSource, special_values

from .compare import compare_arrays, compare_op, same_bits

__all__ = ["Equivalence", "check_equivalence"]


@dataclass
class Equivalence:
    equivalent: bool
    reason: str
    calls: int = 0
    elements: int = 0
    witness: str | None = None
    executed_lines: set[int] = field(default_factory=set)


def _fmt(a: Any) -> str:
    a = np.asarray(a)
    text = np.array2string(a.ravel()[:8], threshold=8, max_line_width=120)
    return f"{a.dtype}{list(a.shape)} {text}"


def _describe(call: OpCall) -> str:
    ops = ", ".join(_fmt(a) for a in call.operands)
    return f"operands ({ops}), attrs {call.attrs}"


def _run(kernel: Callable[..., Any], call: OpCall) -> tuple[tuple[Any, ...], list[np.ndarray]]:
    ops = [np.array(a, copy=True) for a in call.operands]
    with np.errstate(all="ignore"):
        out = as_results(kernel(*ops, **call.attrs))
    return tuple(np.asarray(o) for o in out), ops


def _promoted(op: OpDef, call: OpCall) -> OpCall:
    """The operands as the kernel gets them in a graph: those in ``op.promote`` cast to
    their promoted dtype (PROMO-1), as lowering does."""
    if len(op.promote) < 2:
        return call
    dts = [DType.from_numpy(np.asarray(call.operands[i]).dtype) for i in op.promote]
    to = promote_dtypes(dts)
    if to is None:
        return call
    ops = list(call.operands)
    for i in op.promote:
        ops[i] = np.asarray(ops[i]).astype(to.to_numpy())
    return OpCall(ops, call.attrs, call.buffers)


def _sampled(op: OpDef, calls: int, seed: int) -> Iterator[OpCall]:
    assert op.sample is not None
    plain, special = RandomArgSource(seed), RandomArgSource(seed + 1, special_rate=0.6)
    for i in range(calls):
        try:
            yield _promoted(op, op.sample(special if i % 2 else plain))
        except Exception:  # a sampler that needs hypothesis-only draws: skip the call
            continue


def _all_patterns(dtype: Any) -> np.ndarray | None:
    np_dtype = dtype.to_numpy()
    size = np.dtype(np_dtype).itemsize
    if dtype.value == "bool":
        return np.array([False, True])
    if size > 2:
        return None
    bits = np.arange(2 ** (8 * size), dtype={1: np.uint8, 2: np.uint16}[size])
    return bits.view(np_dtype)


def _exhaustive(op: OpDef, attrs_seen: list[dict[str, Any]]) -> Iterator[OpCall]:
    """Every bit pattern of each 8/16-bit data dtype (unary ops, with each attribute set
    the sampler drew), every pair for 8-bit binary ops."""
    if not op.category.startswith("elementwise"):
        return
    for dtype in sorted(op.data_dtypes, key=lambda d: d.value):
        x = _all_patterns(dtype)
        if x is None:
            continue
        if len(op.operands) == 1:
            for attrs in attrs_seen or [{}]:
                yield OpCall([x.copy()], dict(attrs))
        elif len(op.operands) == 2 and x.size <= 256:
            a, b = np.meshgrid(x, x)
            yield OpCall([a.ravel().copy(), b.ravel().copy()])


def _tracer(fn: Any, lines: set[int]) -> Callable[..., Any]:
    code = getattr(fn, "__code__", None)
    if code is None:
        return lambda *a: None
    filename, first = code.co_filename, code.co_firstlineno
    last = max((ln for _, _, ln in code.co_lines() if ln is not None), default=first)

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        c = frame.f_code
        if c.co_filename == filename and first <= c.co_firstlineno <= last:
            lines.add(c.co_firstlineno)
            return local
        return None

    return tracer


def check_equivalence(op: OpDef, mutant: Any, calls: int = 2000, seed: int = 0,
                      traced_calls: int = 200) -> Equivalence:
    """Run ``mutant.kernel`` against ``op.kernel`` (see the module docstring)."""
    if op.sample is None:
        return Equivalence(False, "the op has no sampler: not checked")
    identical = True
    n = elements = 0
    lines: set[int] = set()
    attrs_seen: list[dict[str, Any]] = []
    sampled = list(_sampled(op, calls, seed))
    for call in sampled:
        if call.attrs not in attrs_seen and len(attrs_seen) < 32:
            attrs_seen.append(dict(call.attrs))
    specials = [OpCall([special_values(d).copy()], dict(a))
                for d in sorted(op.data_dtypes, key=lambda d: d.value)
                for a in (attrs_seen or [{}])[:8]
                if len(op.operands) == 1 and op.category.startswith("elementwise")]
    for call in [*sampled, *specials, *_exhaustive(op, attrs_seen)]:
        try:
            if n < traced_calls and mutant.original is not None:
                sys.settrace(_tracer(mutant.original, lines))
                try:
                    ref, ref_ops = _run(op.kernel, call)
                finally:
                    sys.settrace(None)
            else:
                ref, ref_ops = _run(op.kernel, call)
        except Exception:
            continue  # the reference rejects it (not a valid call): not an input
        n += 1
        elements += sum(int(np.size(a)) for a in call.operands)
        try:
            got, got_ops = _run(mutant.kernel, call)
        except Exception as e:
            return Equivalence(False, "", n, elements,
                               f"raises {type(e).__name__}: {e} on {_describe(call)}", lines)
        bad = compare_op(op, call.operands, call.attrs, ref, got, label=op.name)
        for k, (r, g) in enumerate(zip(ref_ops, got_ops, strict=True)):
            if bad is None:
                bad = compare_arrays(r, g, label=f"{op.name} operand {k} after the call")
        if bad is not None:
            return Equivalence(False, "", n, elements,
                               f"{bad.message.splitlines()[0]} on {_describe(call)}", lines)
        if identical:
            identical = all(r.shape == g.shape and r.dtype == g.dtype
                            and bool(np.all(same_bits(r, g)))
                            for r, g in zip(ref, got, strict=False))
    how = "bit-identical" if identical else f"within tolerance {op.tolerance}"
    return Equivalence(True, f"{how} on {n} calls ({elements} elements, special values and "
                             f"exhaustive 8/16-bit sweeps included)", n, elements, None, lines)
