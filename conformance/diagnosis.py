"""What kind of divergence a failure is (CONF-40): re-checked against reference *variants*.

Each diagnosis class is a modified reference run: the graph is evaluated again with some
kernels wrapped or replaced (subnormals flushed, ``a*b+c`` fused, float16 chains kept in
float32, ...). A class *explains* a failure when the executor's outputs and final buffer
contents agree with that variant's (under each producing op's tolerance, TOL-1) where they
did not agree with the reference. ``transcendental`` is not a variant: it names an
ULP-budget op (NUM-7) whose result no variant explains, with the measured ULP error.

The classes and the rules they break:

=================  ====================================================  ========
class              variant                                               rule
=================  ====================================================  ========
ftz                subnormal operands and float results flushed to ±0    NUM-11
fma                ``add``/``sub`` of a ``mul`` result rounded once      NUM-12
excess-precision   float16/bfloat16 elementwise chains kept in float32   NUM-12
reduced-precision  float32 elementwise ops computed in float16           NUM-9
double-rounding    float64/int64 -> 16/8-bit float casts through float32 NUM-4
nan-dropped        ``max``/``min``/reductions ignore NaN                 NUM-8
signed-zero        float zero results lose their sign                    NUM-9
int-saturation     integer add/sub/mul/negate/abs saturate               NUM-2
rounding-mode      ``round`` half away from zero, truncating ``//``/%    NUM-3
transcendental     (no variant) an ULP-budget op beyond its budget       NUM-7
store-order        one load/store of a buffer moved past another access  MUT-7
                   of it, or a store deleted (CONF-96)
stale-buffer       (no variant) a fresh buffer's first load not all zero MUT-6
nan-payload        (no variant) values right, NaN bytes changed          DT-6
layout             (no variant) a CPU output not C-contiguous            DT-2
=================  ====================================================  ========

Declared deviations (``deviations = ["ftz"]`` in the expectations file, CONF-41) are checked
with :func:`explained_by`: the variant composed of all declared classes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from interpreter.graph.core import Graph, Node, Value
from interpreter.rounding import round_to
from interpreter.types import BufferType

from .compare import compare_arrays, compare_op, same_bits, ulp_distance
from .layout import byte_exact_buffers, byte_exact_values, nan_bytes

__all__ = ["CLASSES", "Finding", "annotate", "diagnose", "explained_by", "format_findings",
           "variant_outputs"]

Kernel = Callable[..., Any]
_F32 = np.dtype(np.float32)
_NARROW = frozenset(np.dtype(t) for t in (np.float16, ml_dtypes.bfloat16))
_SMALL_TARGETS = frozenset(np.dtype(t) for t in (
    np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2))
_ELEMENTWISE = ("elementwise-unary", "elementwise-binary")


@dataclass
class Finding:
    """One diagnosis: ``cls`` (a class name), the spec ``rule`` it breaks and a detail."""

    cls: str
    rule: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"class": self.cls, "rule": self.rule, "detail": self.detail}

    def __str__(self) -> str:
        return f"{self.cls}: {self.detail} [{self.rule}]"


@dataclass
class _Run:
    """State of one variant evaluation: each value's producer and operands, wide copies."""

    producer: dict[Value, tuple[Node, list[Any]]] = field(default_factory=dict)
    wide: dict[Value, np.ndarray] = field(default_factory=dict)
    operands: list[list[np.ndarray]] = field(default_factory=list)


Wrap = Callable[[Node, Kernel, _Run], Kernel | None]


# -- helpers ------------------------------------------------------------------------------------
def _is_float(a: Any) -> bool:
    dt = np.asarray(a).dtype
    return dt.kind == "f" or dt in _SMALL_TARGETS


def _result_dtype(node: Node) -> np.dtype[Any] | None:
    if len(node.results) != 1:
        return None
    return np.dtype(node.results[0].type.dtype.to_numpy())


def _flush(a: Any) -> Any:
    a = np.asarray(a)
    if not _is_float(a) or a.size == 0:
        return a
    tiny = float(ml_dtypes.finfo(a.dtype).smallest_normal)
    x = a.astype(np.float64)
    sub = (x != 0) & (np.abs(x) < tiny)
    if not sub.any():
        return a
    return np.where(sub, np.copysign(0.0, x), x).astype(a.dtype)


def _each(out: Any, f: Callable[[Any], Any]) -> Any:
    if isinstance(out, tuple | list):
        return type(out)(f(o) for o in out)
    return f(out)


# -- the variants -------------------------------------------------------------------------------
def _ftz(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.category in ("buffer", "creation", "random", "debug"):
        return None
    return lambda *a, **k: _each(kernel(*[_flush(x) for x in a], **k), _flush)


def _fma_exact(a: float, b: float, c: float) -> float:
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c  # the sign of an exact zero follows IEEE addition
    try:
        return float(exact)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


_FMA = np.frompyfunc(_fma_exact, 3, 1)


def _fma(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.name not in ("add", "sub") or len(node.operands) != 2:
        return None
    dt = _result_dtype(node)
    if dt is None or not (dt.kind == "f" or dt in _SMALL_TARGETS):
        return None
    x, y = node.operands
    mx, my = run.producer.get(x), run.producer.get(y)
    is_mul = [m is not None and m[0].op.name == "mul" for m in (mx, my)]
    if not any(is_mul):
        return None

    def fused(lhs: Any, rhs: Any) -> Any:
        fused_left = is_mul[0]
        mul = mx if fused_left else my
        assert mul is not None
        a, b = (np.asarray(v, np.float64) for v in mul[1])
        other = np.asarray(rhs if fused_left else lhs, np.float64)
        if node.op.name == "sub":
            if fused_left:
                other = -other
            else:
                a = -a
        a, b, other = np.broadcast_arrays(a, b, other)
        if dt == np.float64:
            out = np.asarray(_FMA(a, b, other)).astype(np.float64)
            return out
        with np.errstate(all="ignore"):
            out = a * b + other  # exact product; one rounding to float64 first
        return round_to(out, dt)

    return fused


def _excess(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if node.op.category not in _ELEMENTWISE:
        return None
    if not any(np.dtype(v.type.dtype.to_numpy()) in _NARROW for v in node.operands):
        return None

    def wide(*args: Any, **attrs: Any) -> Any:
        args2 = [run.wide.get(v, np.asarray(a).astype(_F32) if np.asarray(a).dtype in _NARROW
                              else a) for v, a in zip(node.operands, args, strict=True)]
        if node.op.name == "cast":
            return kernel(*args2, **attrs)  # an explicit cast rounds
        out = np.asarray(kernel(*args2, **attrs))
        if dt in _NARROW and out.dtype == _F32:
            run.wide[node.results[0]] = out
            return out.astype(dt)
        return out

    return wide


def _reduced(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.category not in _ELEMENTWISE or node.op.name == "cast":
        return None
    if _result_dtype(node) != _F32:
        return None
    return lambda *a, **k: np.asarray(kernel(*[
        np.asarray(x).astype(np.float16) if np.asarray(x).dtype == _F32 else x for x in a],
        **k)).astype(_F32)


def _double_rounding(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if node.op.name != "cast" or dt not in _SMALL_TARGETS:
        return None
    src = np.dtype(node.operands[0].type.dtype.to_numpy())
    if src.itemsize < 8 or src.kind not in "fiu":
        return None
    return lambda x, **k: np.asarray(x).astype(np.float32).astype(dt)


def _nan_reduce(f: Callable[..., Any]) -> Kernel:
    def kernel(x: Any, *, axis: int) -> Any:
        x = np.asarray(x)
        if not _is_float(x):
            return None
        with np.errstate(all="ignore"):
            return np.asarray(f(x.astype(np.float64), axis=axis, keepdims=True)).astype(x.dtype)
    return kernel


_NAN_DROP: dict[str, Kernel] = {
    "max": np.fmax, "min": np.fmin,
    "reduce_max": _nan_reduce(np.nanmax), "reduce_min": _nan_reduce(np.nanmin),
    "reduce_sum": _nan_reduce(np.nansum), "reduce_mean": _nan_reduce(np.nanmean),
    "reduce_prod": _nan_reduce(np.nanprod),
}


def _nan_dropped(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    alt = _NAN_DROP.get(node.op.name)
    dt = _result_dtype(node)
    if alt is None or dt is None or not (dt.kind == "f" or dt in _SMALL_TARGETS):
        return None
    if node.op.name in ("max", "min"):
        return lambda a, b: np.asarray(alt(a, b)).astype(dt)
    return lambda x, **k: alt(x, **k)


def _unsigned_zero(a: Any) -> Any:
    a = np.asarray(a)
    if not _is_float(a) or a.size == 0:
        return a
    return np.where(a.astype(np.float64) == 0, np.zeros((), a.dtype), a).astype(a.dtype)


def _signed_zero(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.category in ("buffer", "creation", "random", "debug"):
        return None
    return lambda *a, **k: _each(kernel(*a, **k), _unsigned_zero)


def _saturate(f: Callable[..., Any]) -> Kernel:
    def kernel(*args: Any) -> Any:
        dt = np.asarray(args[0]).dtype
        info = np.iinfo(dt)
        wide = f(*[np.asarray(a).astype(object) for a in args])
        return np.asarray(np.clip(wide, int(info.min), int(info.max))).astype(dt)
    return kernel


_SATURATING: dict[str, Kernel] = {
    "add": _saturate(lambda a, b: a + b), "sub": _saturate(lambda a, b: a - b),
    "mul": _saturate(lambda a, b: a * b), "negate": _saturate(lambda a: -a),
    "abs": _saturate(lambda a: np.abs(a)),
}


def _int_saturation(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if dt is None or dt.kind not in "iu" or node.op.name not in _SATURATING:
        return None
    return _SATURATING[node.op.name]


def _half_away(x: Any) -> Any:
    x = np.asarray(x)
    if not _is_float(x):
        return x
    w = x.astype(np.float64)
    return (np.sign(w) * np.floor(np.abs(w) + 0.5)).astype(x.dtype)


def _trunc_div(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu":
        q = np.trunc(np.true_divide(a.astype(np.float64), np.where(b == 0, 1, b)))
        return q.astype(a.dtype)
    with np.errstate(all="ignore"):
        return np.trunc(a.astype(np.float64) / b.astype(np.float64)).astype(a.dtype)


def _trunc_mod(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iu":
            return np.fmod(a, np.where(b == 0, 1, b)).astype(a.dtype)
        return np.fmod(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


_ROUNDING: dict[str, Kernel] = {"round": _half_away, "floor_div": _trunc_div,
                                "mod": _trunc_mod}


def _rounding_mode(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    return _ROUNDING.get(node.op.name)


@dataclass(frozen=True)
class _Class:
    wrap: Wrap
    rule: str
    what: str


_VARIANTS: dict[str, _Class] = {
    "ftz": _Class(_ftz, "NUM-11", "flush-to-zero / denormals-are-zero: matches the reference "
                  "with subnormal operands and results flushed to ±0"),
    "fma": _Class(_fma, "NUM-12", "FMA contraction: matches the reference with a*b+c "
                  "(mul feeding add/sub) rounded once"),
    "excess-precision": _Class(_excess, "NUM-12", "excess precision: matches the reference "
                               "with float16/bfloat16 elementwise intermediates kept in "
                               "float32 (not rounded between ops)"),
    "reduced-precision": _Class(_reduced, "NUM-9", "reduced precision: matches the reference "
                                "with float32 elementwise ops computed in float16"),
    "double-rounding": _Class(_double_rounding, "NUM-4", "double rounding: matches the "
                              "reference with float64/int64 -> 16/8-bit float casts rounded "
                              "through float32"),
    "nan-dropped": _Class(_nan_dropped, "NUM-8", "NaN dropped: matches the reference with "
                          "max/min and reductions ignoring NaN (REDUCE-4 for reductions)"),
    "signed-zero": _Class(_signed_zero, "NUM-9", "signed zero lost: matches the reference "
                          "with every zero result made +0"),
    "int-saturation": _Class(_int_saturation, "NUM-2", "integer saturation: matches the "
                             "reference with integer add/sub/mul/negate/abs clamped to the "
                             "dtype's range instead of wrapping around"),
    "rounding-mode": _Class(_rounding_mode, "NUM-3", "wrong rounding mode: matches the "
                            "reference with round() halves away from zero and truncating "
                            "floor_div/mod"),
}
#: every diagnosis class name (what ``deviations = [...]`` accepts)
CLASSES: tuple[str, ...] = (*_VARIANTS, "transcendental", "store-order", "stale-buffer",
                            "nan-payload", "layout")
_ACCESS = ("buffer_load", "buffer_store", "buffer_store_slice")
#: at most this many reorderings are tried per failure (store-order)
MAX_ORDERS = 64


# -- evaluation --------------------------------------------------------------------------------
def variant_outputs(graph: Graph, inputs: Sequence[np.ndarray], classes: Sequence[str]
                    ) -> tuple[dict[str, np.ndarray], list[list[np.ndarray]]] | None:
    """The graph's outputs (``out<i>``) and final buffers (``buf<i>``) under the variant
    composed of ``classes``, with each node's operands; None when no class changes a node."""
    wraps = [_VARIANTS[c].wrap for c in classes if c in _VARIANTS]
    run = _Run()
    copies = [np.array(a, copy=True) for a in inputs]
    env: dict[Value, Any] = dict(zip(graph.inputs, copies, strict=True))
    changed = False
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            kernel: Kernel = node.op.kernel
            for w in wraps:
                k2 = w(node, kernel, run)
                if k2 is not None:
                    kernel, changed = k2, True
            args = [env[v] for v in node.operands]
            run.operands.append([np.asarray(a) for a in args])
            out = kernel(*args, **node.attrs)
            if len(node.results) == 1:
                outs: tuple[Any, ...] = (out,)
            else:
                outs = () if out is None else tuple(out)
            for r, o in zip(node.results, outs, strict=True):
                env[r] = o
                run.producer[r] = (node, args)
    if not changed:
        return None
    result = {f"out{i}": np.asarray(env[v]) for i, v in enumerate(graph.outputs or ())}
    result.update({f"buf{i}": copies[i] for i, v in enumerate(graph.inputs)
                   if isinstance(v.type, BufferType)})
    return result, run.operands


def _agrees(graph: Graph, want: dict[str, np.ndarray], operands: list[list[np.ndarray]],
            actual: dict[str, np.ndarray]) -> bool:
    """True when ``actual`` matches the variant's values, each under its producer's
    tolerance (bit-exact for buffers and graph inputs passed through)."""
    producer = {r: (k, j) for k, n in enumerate(graph.nodes) for j, r in enumerate(n.results)}
    outs = list(graph.outputs or ())
    for key, w in want.items():
        got = actual.get(key)
        if got is None:
            return False
        if w.shape == got.shape and w.dtype == got.dtype and same_bits(w, got).all():
            continue
        where = producer.get(outs[int(key[3:])]) if key.startswith("out") else None
        if where is None:
            if compare_arrays(w, got) is not None:
                return False
            continue
        k, _ = where
        node = graph.nodes[k]
        if len(node.results) > 1:
            if compare_arrays(w, got, node.op.tolerance) is not None:
                return False
        elif compare_op(node.op, operands[k], node.attrs, [w], [got]) is not None:
            return False
    return True


def explained_by(graph: Graph, inputs: Sequence[np.ndarray], actual: dict[str, np.ndarray],
                 classes: Sequence[str]) -> bool:
    """True when the variant composed of ``classes`` reproduces ``actual`` (CONF-41). No
    class explains a layout (DT-2) or NaN-bytes (DT-6) failure."""
    if _form_findings(graph, None, actual):
        return False
    got = _variant(graph, inputs, actual, classes)
    return got is not None and not _form_findings(graph, got, actual)


def _variant(graph: Graph, inputs: Sequence[np.ndarray], actual: dict[str, np.ndarray],
             classes: Sequence[str]) -> dict[str, np.ndarray] | None:
    """The variant's values where they reproduce ``actual``'s values (NaN matching NaN)."""
    try:
        got = variant_outputs(graph, inputs, classes)
    except Exception:
        return None
    return got[0] if got is not None and _agrees(graph, got[0], got[1], actual) else None


def _form_findings(graph: Graph, expected: dict[str, np.ndarray] | None,
                   actual: dict[str, np.ndarray]) -> list[Finding]:
    """``layout`` for a CPU output that is not C-contiguous (DT-2); with ``expected``,
    ``nan-payload`` for NaNs of byte-exact values (DT-6) whose bytes differ."""
    found: list[Finding] = []
    outs = list(graph.outputs or ())
    strided = [k for k, a in actual.items() if k.startswith("out") and int(k[3:]) < len(outs)
               and outs[int(k[3:])].type.device.is_cpu() and isinstance(a, np.ndarray)
               and not a.flags.c_contiguous]
    if strided:
        found.append(Finding("layout", "DT-2", f"{', '.join(strided)} not C-contiguous "
                             f"(a view's strides or Fortran order kept in the result)"))
    if expected is None:
        return found
    exact = byte_exact_values(graph) | byte_exact_buffers(graph)
    keys = [f"out{i}" for i, v in enumerate(outs) if v in exact]
    keys += [f"buf{i}" for i, v in enumerate(graph.inputs) if v in exact
             and isinstance(v.type, BufferType)]
    bad = []
    for key in keys:
        e, g = expected.get(key), actual.get(key)
        if e is not None and g is not None and e.shape == g.shape and e.dtype == g.dtype \
                and nan_bytes(e, g, key) is not None:
            bad.append(key)
    if bad:
        found.append(Finding("nan-payload", "DT-6", f"NaN payload or sign bytes differ in "
                             f"{', '.join(bad)}: a byte copy went through float arithmetic "
                             f"or a default-NaN mode"))
    return found


def _transcendental(graph: Graph, expected: dict[str, np.ndarray],
                    actual: dict[str, np.ndarray]) -> list[Finding]:
    producer = {r: n for n in graph.nodes for r in n.results}
    found: list[Finding] = []
    for i, v in enumerate(graph.outputs or ()):
        node = producer.get(v)
        e, g = expected.get(f"out{i}"), actual.get(f"out{i}")
        if node is None or "transcendental" not in node.op.traits or e is None or g is None:
            continue
        if e.shape != g.shape or e.dtype != g.dtype or not _is_float(e):
            continue
        d = ulp_distance(e, g)
        budget = node.op.tolerance.ulps if node.op.tolerance.kind == "ulp" else 0
        worst = d[np.isfinite(d)]
        nan = int(np.isinf(d).sum())
        where = f"{node.op.name} [{e.dtype}]"
        if worst.size and worst.max() > budget:
            found.append(Finding("transcendental", "NUM-7", (
                f"{where} is off by up to {int(worst.max())} ULP (budget {budget} ULP, "
                f"NUM-10)" + (f"; NaN mismatches in {nan} elements" if nan else ""))))
        elif nan:
            found.append(Finding("transcendental", "NUM-7", (
                f"{where} differs in NaN-ness from the reference in {nan} elements (NaN "
                f"where the function is defined, or a number where it is NaN)")))
    return found


def _orders(graph: Graph) -> list[tuple[str, list[int]]]:
    """Node orders of ``graph`` with buffer accesses moved or stores removed: each access
    hoisted above the previous access of the same buffer (where one of the two writes and
    its operands exist there), each store dropped; then every move (every drop) of one kind
    at once, e.g. each load hoisted above the slice store before it."""
    n = len(graph.nodes)
    made = {r: k for k, node in enumerate(graph.nodes) for r in node.results}
    per: dict[Value, list[int]] = {}
    for k, node in enumerate(graph.nodes):
        if node.op.name in _ACCESS:
            per.setdefault(node.operands[0], []).append(k)
    name = [node.op.name for node in graph.nodes]
    moves: dict[tuple[str, str], list[tuple[int, int]]] = {}
    drops: dict[tuple[str, str], list[int]] = {}
    for ks in per.values():
        for a, b in itertools.pairwise(ks):
            if name[a] == name[b] == "buffer_load":
                continue
            if all(made.get(v, -1) < a for v in graph.nodes[b].operands[1:]):
                moves.setdefault((name[a], name[b]), []).append((a, b))
        for a, nxt in zip(ks, [*ks[1:], None], strict=True):
            if name[a] != "buffer_load":
                drops.setdefault((name[a], "end" if nxt is None else name[nxt]),
                                 []).append(a)

    def moved(pairs: list[tuple[int, int]]) -> list[int]:
        order = list(range(n))
        for a, b in sorted(pairs):
            order.remove(b)
            order.insert(order.index(a), b)
        return order

    out: list[tuple[str, list[int]]] = []
    for pairs in moves.values():
        out += [(f"node #{b} {name[b]} run before node #{a} {name[a]} of the same buffer",
                 moved([(a, b)])) for a, b in pairs]
    for ks in drops.values():
        out += [(f"node #{k} {name[k]} not run (a deleted store)",
                 [j for j in range(n) if j != k]) for k in ks]
    for (first, then), pairs in moves.items():
        if len(pairs) > 1:
            out.append((f"every {then} run before the {first} of the same buffer just before "
                        f"it ({len(pairs)} nodes)", moved(pairs)))
    for (store, then), ks in drops.items():
        if len(ks) > 1:
            out.append((f"every {store} followed by a {then} of the same buffer not run "
                        f"({len(ks)} deleted stores)", [j for j in range(n) if j not in ks]))
    return out[:MAX_ORDERS]


def _run_order(graph: Graph, inputs: Sequence[np.ndarray], order: Sequence[int]
               ) -> tuple[dict[str, np.ndarray], list[list[np.ndarray]]] | None:
    copies = [np.array(a, copy=True) for a in inputs]
    env: dict[Value, Any] = dict(zip(graph.inputs, copies, strict=True))
    operands: list[list[np.ndarray]] = [[] for _ in graph.nodes]
    with np.errstate(all="ignore"):
        for k in order:
            node = graph.nodes[k]
            args = [env[v] for v in node.operands]
            operands[k] = [np.array(a, copy=True) for a in args]
            out = node.op.kernel(*args, **node.attrs)
            outs: tuple[Any, ...] = ((out,) if len(node.results) == 1
                                     else () if out is None else tuple(out))
            env.update(zip(node.results, outs, strict=True))
    if any(v not in env for v in graph.outputs or ()):
        return None  # an output of a dropped node
    result = {f"out{i}": np.asarray(env[v]) for i, v in enumerate(graph.outputs or ())}
    result.update({f"buf{i}": copies[i] for i, v in enumerate(graph.inputs)
                   if isinstance(v.type, BufferType)})
    return result, operands


def _stale_buffers(graph: Graph, actual: dict[str, np.ndarray]) -> list[Finding]:
    """``stale-buffer``: an output loaded from a ``buffer_create`` buffer before any store
    into it holds nonzero bytes (MUT-4, MUT-6: storage reused without clearing)."""
    first: dict[Value, Node] = {}
    for node in graph.nodes:
        if node.op.name in _ACCESS and node.operands[0] not in first:
            first[node.operands[0]] = node
    fresh = {first[r].results[0] for node in graph.nodes if node.op.name == "buffer_create"
             for r in node.results if r in first and first[r].op.name == "buffer_load"}
    bad = [f"out{i}" for i, v in enumerate(graph.outputs or ()) if v in fresh
           and (a := actual.get(f"out{i}")) is not None and a.size
           and np.ascontiguousarray(a).view(np.uint8).any()]
    if not bad:
        return []
    return [Finding("stale-buffer", "MUT-6", f"{', '.join(bad)} loaded from a fresh "
                    f"buffer_create buffer before any store hold nonzero bytes: its storage "
                    f"kept an earlier execution's contents (all-zero bytes required, MUT-4)")]


def _store_order(graph: Graph, inputs: Sequence[np.ndarray], actual: dict[str, np.ndarray]
                 ) -> list[Finding]:
    """``store-order``: the first reordering (:func:`_orders`) that reproduces ``actual``."""
    for what, order in _orders(graph):
        try:
            got = _run_order(graph, inputs, order)
        except Exception:
            continue
        if got is not None and _agrees(graph, got[0], got[1], actual):
            return [Finding("store-order", "MUT-7", f"buffer accesses out of staging order "
                            f"(GRAPH-5): matches the reference with {what}")]
    return []


def diagnose(graph: Graph, inputs: Sequence[np.ndarray], expected: dict[str, np.ndarray],
             actual: dict[str, np.ndarray]) -> list[Finding]:
    """Every class whose variant alone reproduces the executor's ``actual`` values; when none
    does, ``transcendental`` findings for ULP-budget ops off by more than their budget,
    ``store-order`` for a buffer access reordering (or deleted store) that reproduces the
    results; ``layout`` (DT-2) and ``nan-payload`` (DT-6) alongside, or alone where every
    value agrees."""
    same = all(k in actual and actual[k].shape == e.shape and actual[k].dtype == e.dtype
               and same_bits(e, actual[k]).all() for k, e in expected.items())
    form = _form_findings(graph, expected, actual)
    if same:  # values agree: only bytes or layout can be wrong
        return form
    found = [Finding(name, c.rule, c.what) for name, c in _VARIANTS.items()
             if _variant(graph, inputs, actual, [name]) is not None]
    if not found and any(n.op.name in _ACCESS for n in graph.nodes):
        found = _stale_buffers(graph, actual) or _store_order(graph, inputs, actual)
    return form + (found or _transcendental(graph, expected, actual))


def format_findings(findings: Sequence[Finding]) -> str:
    """The ``diagnosis:`` block of a failure message (CONF-40)."""
    if not findings:
        return ("diagnosis: unexplained: no known platform effect reproduces these results "
                f"(checked: {', '.join(CLASSES)})")
    lines = ["diagnosis:"] + [f"  {f}" for f in findings]
    return "\n".join(lines)


def annotate(graph: Graph, inputs: Sequence[np.ndarray], expected: dict[str, np.ndarray],
             actual: dict[str, np.ndarray]) -> tuple[str, list[dict[str, str]]]:
    """The ``diagnosis:`` block for a failure message and the report metadata (a list of
    ``{"class", "rule", "detail"}``). A diagnosis that raises never hides the failure; a
    failure of dtype, shape or output count has none (empty text)."""
    for key, e in expected.items():
        got = actual.get(key)
        if got is None or got.dtype != e.dtype or got.shape != e.shape:
            return "", []
    try:
        findings = diagnose(graph, inputs, expected, actual)
    except Exception as e:
        return (f"diagnosis: not available (the suite's diagnosis raised "
                f"{type(e).__name__}: {e})", [])
    return format_findings(findings), [f.as_dict() for f in findings]
