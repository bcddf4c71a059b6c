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
nan-dropped        a NaN loses to any number: ``max``/``min`` and their      NUM-8
                   reductions, arg, pooling, scatter and top_k forms;
                   NaN terms left out of sums, products, means
signed-zero        float zero results lose their sign                    NUM-9
int-saturation     integer add/sub/mul/negate/abs and integer sums,      NUM-2
                   products, cumsum, gather_sum saturate
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
from typing import Any

import ml_dtypes
import numpy as np

from interpreter.evaluate import evaluate
from interpreter.graph.core import Graph, Node, Value
from interpreter.types import BufferType

from .compare import _within, compare_arrays, compare_op, same_bits, ulp_distance
from .layout import byte_exact_buffers, byte_exact_values, nan_bytes

__all__ = ["CLASSES", "Excuse", "Finding", "Scoped", "annotate", "diagnose", "excuse",
           "explained_by", "format_findings", "variant_outputs"]

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


@dataclass(frozen=True)
class Scoped:
    """A declared class limited to nodes of ``ops`` and to arrays (``ftz``) or nodes (the
    other classes) of ``dtypes``; None: everywhere (CONF-141)."""

    cls: str
    dtypes: frozenset[str] | None = None
    ops: frozenset[str] | None = None

    def __str__(self) -> str:
        return self.cls


def _scoped(c: str | Scoped) -> Scoped:
    return c if isinstance(c, Scoped) else Scoped(c)


def _dtype_name(v: Value) -> str | None:
    dt = getattr(v.type, "dtype", None)
    return None if dt is None else str(getattr(dt, "value", dt))


def _node_in(node: Node, dtypes: frozenset[str]) -> bool:
    """Whether a result (or, for a node without tensor results, an operand) of ``node`` has
    one of ``dtypes``."""
    names = [_dtype_name(r) for r in node.results] or [_dtype_name(v) for v in node.operands]
    return any(n in dtypes for n in names)


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
def _ftz_in(dtypes: frozenset[str] | None = None) -> Wrap:
    """``ftz``: operands and results flushed, and the op's ``ftz`` variant (a flushed
    intermediate) in place of its own kernel; with ``dtypes``, only arrays of those dtypes
    (CONF-141)."""

    def flush(a: Any) -> Any:
        a = np.asarray(a)
        return _flush(a) if dtypes is None or str(a.dtype) in dtypes else a

    def wrap(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
        if node.op.category in ("buffer", "creation", "random", "debug"):
            return None
        inner = node.op.variants.get("ftz")
        if inner is not None and kernel is node.op.kernel and node.results and (
                dtypes is None or _node_in(node, dtypes)):
            kernel = inner
        return lambda *a, **k: _each(kernel(*[flush(x) for x in a], **k), flush)

    return wrap


_ftz = _ftz_in()


def _fma(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    fused = node.op.variants.get("fma")
    dt = _result_dtype(node)
    if fused is None or dt is None or not (dt.kind == "f" or dt in _SMALL_TARGETS):
        return None
    made = [run.producer.get(v) for v in node.operands]
    is_product = [m is not None and "product" in m[0].op.traits for m in made]
    if not any(is_product):
        return None
    first = is_product[0]
    product = made[0 if first else 1]
    assert product is not None
    return lambda lhs, rhs: fused(*product[1], rhs if first else lhs, product_first=first)


def _excess(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if node.op.category not in _ELEMENTWISE:
        return None
    if not any(np.dtype(v.type.dtype.to_numpy()) in _NARROW for v in node.operands):
        return None

    def wide(*args: Any, **attrs: Any) -> Any:
        args2 = [run.wide.get(v, np.asarray(a).astype(_F32) if np.asarray(a).dtype in _NARROW
                              else a) for v, a in zip(node.operands, args, strict=True)]
        if "conversion" in node.op.traits:
            return kernel(*args2, **attrs)  # an explicit conversion rounds
        out = np.asarray(kernel(*args2, **attrs))
        if dt in _NARROW and out.dtype == _F32:
            run.wide[node.results[0]] = out
            return out.astype(dt)
        return out

    return wide


def _reduced(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.category not in _ELEMENTWISE or "conversion" in node.op.traits:
        return None
    if _result_dtype(node) != _F32:
        return None
    return lambda *a, **k: np.asarray(kernel(*[
        np.asarray(x).astype(np.float16) if np.asarray(x).dtype == _F32 else x for x in a],
        **k)).astype(_F32)


def _double_rounding(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if "double-rounding" not in node.op.variants or dt not in _SMALL_TARGETS:
        return None
    src = np.dtype(node.operands[0].type.dtype.to_numpy())
    if src.itemsize < 8 or src.kind not in "fiu":
        return None
    return node.op.variants["double-rounding"]


def _holds_float(v: Value) -> bool:
    dt = getattr(v.type, "dtype", None)
    return dt is not None and (np.dtype(dt.to_numpy()).kind == "f"
                               or np.dtype(dt.to_numpy()) in _SMALL_TARGETS)


def _nan_dropped(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    """The op's ``nan-dropped`` variant where a float operand or result can hold a NaN
    (argmax: float data, integer result)."""
    if not any(_holds_float(v) for v in (*node.operands, *node.results)):
        return None
    return node.op.variants.get("nan-dropped")


def _unsigned_zero(a: Any) -> Any:
    a = np.asarray(a)
    if not _is_float(a) or a.size == 0:
        return a
    return np.where(a.astype(np.float64) == 0, np.zeros((), a.dtype), a).astype(a.dtype)


def _signed_zero(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    if node.op.category in ("buffer", "creation", "random", "debug"):
        return None
    return lambda *a, **k: _each(kernel(*a, **k), _unsigned_zero)


def _int_saturation(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    dt = _result_dtype(node)
    if dt is None or dt.kind not in "iu":
        return None
    return node.op.variants.get("int-saturation")


def _rounding_mode(node: Node, kernel: Kernel, run: _Run) -> Kernel | None:
    return node.op.variants.get("rounding-mode")


@dataclass(frozen=True)
class _Class:
    wrap: Wrap
    rule: str
    what: str


_VARIANTS: dict[str, _Class] = {
    "ftz": _Class(_ftz, "NUM-11", "flush-to-zero / denormals-are-zero: matches the reference "
                  "with subnormal operands and results (and a floor_div/mod quotient) "
                  "flushed to ±0"),
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
                          "NaN losing to any number in max/min, their reductions, argmax/"
                          "argmin, max pooling, max/min scatters and top_k, and NaN terms "
                          "left out of sums, products and means (REDUCE-4 for reductions)"),
    "signed-zero": _Class(_signed_zero, "NUM-9", "signed zero lost: matches the reference "
                          "with every zero result made +0"),
    "int-saturation": _Class(_int_saturation, "NUM-2", "integer saturation: matches the "
                             "reference with integer add/sub/mul/negate/abs and integer sums, "
                             "products, cumsum and gather_sum clamped to the dtype's range "
                             "instead of wrapping around"),
    "rounding-mode": _Class(_rounding_mode, "NUM-3", "wrong rounding mode: matches the "
                            "reference with round() halves away from zero and truncating "
                            "floor_div/mod"),
}
#: every diagnosis class name (what ``deviations = [...]`` accepts)
CLASSES: tuple[str, ...] = (*_VARIANTS, "transcendental", "store-order", "stale-buffer",
                            "nan-payload", "layout")
#: at most this many reorderings are tried per failure (store-order)
MAX_ORDERS = 64


# -- buffers: told apart by their types, not by op names --------------------------------------
def _accesses(node: Node) -> bool:
    """Whether ``node`` reads or writes the buffer that is its first operand."""
    return bool(node.operands) and isinstance(node.operands[0].type, BufferType)


def _stores(node: Node) -> bool:
    return node.op.side_effect and _accesses(node)


def _creates(node: Node) -> bool:
    """Whether ``node`` makes a fresh buffer (no operands, a buffer result)."""
    return not node.operands and any(isinstance(r.type, BufferType) for r in node.results)


# -- evaluation --------------------------------------------------------------------------------
def variant_outputs(graph: Graph, inputs: Sequence[np.ndarray],
                    classes: Sequence[str | Scoped]
                    ) -> tuple[dict[str, np.ndarray], list[list[np.ndarray]]] | None:
    """The graph's outputs (``out<i>``) and final buffers (``buf<i>``) under the variant
    composed of ``classes``, with each node's operands; None when no class changes a node.
    The reference loop (``evaluate``) runs it, each class wrapping the kernel in turn; a
    :class:`Scoped` class only where its ops and dtypes are (CONF-141)."""
    scoped = [s for s in map(_scoped, classes) if s.cls in _VARIANTS]
    run = _Run()
    changed = False

    def wraps(node: Node) -> list[Wrap]:
        out: list[Wrap] = []
        for s in scoped:
            if s.ops is not None and node.op.name not in s.ops:
                continue
            if s.dtypes is not None and s.cls == "ftz":
                out.append(_ftz_in(s.dtypes))
            elif s.dtypes is None or _node_in(node, s.dtypes):
                out.append(_VARIANTS[s.cls].wrap)
        return out

    def kernel_for(node: Node) -> Kernel | None:
        nonlocal changed
        kernel: Kernel = node.op.kernel
        for w in wraps(node):
            k2 = w(node, kernel, run)
            if k2 is not None:
                kernel, changed = k2, True
        return kernel

    def record(pos: int, node: Node, args: list[Any], outs: tuple[Any, ...]) -> None:
        run.operands.append([np.asarray(a) for a in args])
        for r in node.results:
            run.producer[r] = (node, args)

    copies = [np.array(a, copy=True) for a in inputs]
    outputs = evaluate(graph, copies, on_node=record, kernel=kernel_for)
    if not changed:
        return None
    return _values(graph, outputs, copies), run.operands


def _values(graph: Graph, outputs: Sequence[np.ndarray], buffers: Sequence[np.ndarray]
            ) -> dict[str, np.ndarray]:
    """``out<i>`` for the outputs, ``buf<i>`` for the buffer inputs' final contents."""
    result = {f"out{i}": np.asarray(a) for i, a in enumerate(outputs)}
    result.update({f"buf{i}": buffers[i] for i, v in enumerate(graph.inputs)
                   if isinstance(v.type, BufferType)})
    return result


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
                 classes: Sequence[str | Scoped]) -> bool:
    """True when the variant composed of ``classes`` reproduces ``actual`` (CONF-41). No
    class explains a layout (DT-2) or NaN-bytes (DT-6) failure."""
    if _form_findings(graph, None, actual):
        return False
    got = _variant(graph, inputs, actual, classes)
    return got is not None and not _form_findings(graph, got, actual)


def _variant(graph: Graph, inputs: Sequence[np.ndarray], actual: dict[str, np.ndarray],
             classes: Sequence[str | Scoped]) -> dict[str, np.ndarray] | None:
    """The variant's values where they reproduce ``actual``'s values (NaN matching NaN)."""
    try:
        got = variant_outputs(graph, inputs, classes)
    except Exception:
        return None
    return got[0] if got is not None and _agrees(graph, got[0], got[1], actual) else None


@dataclass
class Excuse:
    """What declared classes excuse in one failing example (CONF-140): ``excused``
    elements (the executor equals the variant there and differs from the reference),
    ``residual`` (the executor's values with those elements set to the reference's) and
    ``unexplained``, the mismatch messages of the residual (empty: a deviation), and
    ``unproven``, those of residual values the verdict did not prove failing (their
    difference may follow from the executor's own operands): the example is then judged
    as a whole, as without the excuse."""

    excused: int
    residual: dict[str, np.ndarray]
    unexplained: list[str]
    unproven: list[str] = field(default_factory=list)


def _reference_operands(graph: Graph, inputs: Sequence[np.ndarray]) -> list[list[np.ndarray]]:
    operands: list[list[np.ndarray]] = []

    def record(pos: int, node: Node, args: list[Any], outs: tuple[Any, ...]) -> None:
        operands.append([np.array(a, copy=True) for a in args])

    evaluate(graph, [np.array(a, copy=True) for a in inputs], on_node=record)
    return operands


def _element_ok(graph: Graph, key: str, want: np.ndarray, got: np.ndarray,
                operands: list[list[np.ndarray]]) -> np.ndarray:
    """Per element: ``got`` equals ``want`` under the producing op's tolerance (bit-exact
    for buffers and inputs passed through)."""
    outs = list(graph.outputs or ())
    producer = {r: k for k, n in enumerate(graph.nodes) for r in n.results}
    k = producer.get(outs[int(key[3:])]) if key.startswith("out") else None
    if k is None:
        return same_bits(want, got)
    node = graph.nodes[k]
    tol = node.op.tolerance
    try:
        bound = tol.bound(operands[k], node.attrs, want) if len(node.results) == 1 else None
    except Exception:
        bound = None
    return np.asarray(_within(want, got, tol, bound), bool)


def _residual_mismatches(graph: Graph, inputs: Sequence[np.ndarray],
                         expected: dict[str, np.ndarray], residual: dict[str, np.ndarray],
                         proven: Sequence[Value]) -> tuple[list[str], list[str]]:
    """The mismatches of ``residual`` against the reference, each under its producer's
    tolerance (TOL-1, TOL-2). A value downstream of a toleranced op that the verdict did
    not prove failing (``proven``) and whose producer's operands are not all graph inputs
    is listed apart (second list): its difference may follow from the executor's own
    operands."""
    from .differential import _strict, cone

    operands = _reference_operands(graph, inputs)
    producer = {r: k for k, n in enumerate(graph.nodes) for r in n.results}
    outs = list(graph.outputs or ())
    found: list[str] = []
    unproven: list[str] = []
    for key, e in expected.items():
        got = residual.get(key)
        if got is None:
            found.append(f"{key}: missing")
            continue
        value = outs[int(key[3:])] if key.startswith("out") else graph.inputs[int(key[3:])]
        nodes = cone(graph, [value])
        into = unproven if (len(nodes) > 1 and not _strict(graph, nodes)
                            and not any(value is p for p in proven)) else found
        k = producer.get(outs[int(key[3:])]) if key.startswith("out") else None
        label = f"output {key[3:]}" if key.startswith("out") else f"buffer input {key[3:]}"
        if k is None:
            m = compare_arrays(e, got, label=label)
        else:
            node = graph.nodes[k]
            if len(node.results) > 1:
                m = compare_arrays(e, got, node.op.tolerance, label=label)
            else:
                m = compare_op(node.op, operands[k], node.attrs, [e], [got],
                               label=f"{label} ({node.op.name} [{e.dtype}])")
        if m is not None:
            into.append(m.message)
    return found, unproven


def excuse(graph: Graph, inputs: Sequence[np.ndarray], expected: dict[str, np.ndarray],
           actual: dict[str, np.ndarray], classes: Sequence[str | Scoped],
           proven: Sequence[Value] = ()) -> Excuse | None:
    """The elements the variant of ``classes`` explains (CONF-140): where the executor equals
    the variant (under the producer's tolerance; a flushed zero of either sign, CONF-143)
    and differs from the reference. None when the variant changes nothing, explains no
    element, or a layout/NaN-bytes finding (DT-2, DT-6) stands."""
    if not classes or _form_findings(graph, expected, actual):
        return None
    try:
        got = variant_outputs(graph, inputs, classes)
    except Exception:
        return None
    if got is None:
        return None
    want, operands = got
    ftz = any(_scoped(c).cls == "ftz" for c in classes)
    residual = dict(actual)
    n = 0
    for key, w in want.items():
        e, a = expected.get(key), actual.get(key)
        if e is None or a is None or not isinstance(a, np.ndarray) or not (
                e.shape == a.shape == w.shape and e.dtype == a.dtype == w.dtype):
            continue
        ok = _element_ok(graph, key, w, a, operands)
        if ftz and _is_float(a) and a.size:  # the sign of a flushed zero is unspecified
            tiny = float(ml_dtypes.finfo(a.dtype).smallest_normal)
            with np.errstate(all="ignore"):
                e64, a64, w64 = (x.astype(np.float64) for x in (e, a, w))
                ok = ok | ((a64 == 0) & (w64 == 0) & (e64 != 0) & (np.abs(e64) < tiny))
        ok = ok & ~same_bits(e, a)
        if ok.any():
            residual[key] = np.where(ok, e, a).astype(a.dtype)
            n += int(ok.sum())
    if not n:
        return None
    return Excuse(n, residual, *_residual_mismatches(graph, inputs, expected, residual,
                                                     proven))


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
        if _accesses(node):
            per.setdefault(node.operands[0], []).append(k)
    name = [node.op.name for node in graph.nodes]
    writes = [_stores(node) for node in graph.nodes]
    moves: dict[tuple[str, str], list[tuple[int, int]]] = {}
    drops: dict[tuple[str, str], list[int]] = {}
    for ks in per.values():
        for a, b in itertools.pairwise(ks):
            if not writes[a] and not writes[b]:
                continue  # two loads
            if all(made.get(v, -1) < a for v in graph.nodes[b].operands[1:]):
                moves.setdefault((name[a], name[b]), []).append((a, b))
        for a, nxt in zip(ks, [*ks[1:], None], strict=True):
            if writes[a]:
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
    """The reference run of ``graph``'s nodes in ``order`` (some may be left out), with each
    node's operands as it received them; None when an output's node was left out."""
    made = set(graph.inputs)
    for k in order:
        made.update(graph.nodes[k].results)
    if any(v not in made for v in graph.outputs or ()):
        return None  # an output of a dropped node
    reordered = Graph(f"{graph.name}_reordered")
    reordered.inputs, reordered.outputs = graph.inputs, graph.outputs
    reordered.nodes = [graph.nodes[k] for k in order]
    operands: list[list[np.ndarray]] = [[] for _ in graph.nodes]

    def record(pos: int, node: Node, args: list[Any], outs: tuple[Any, ...]) -> None:
        operands[order[pos]] = [np.array(a, copy=True) for a in args]

    copies = [np.array(a, copy=True) for a in inputs]
    outputs = evaluate(reordered, copies, on_node=record)
    return _values(graph, outputs, copies), operands


def _stale_buffers(graph: Graph, actual: dict[str, np.ndarray]) -> list[Finding]:
    """``stale-buffer``: an output loaded from a ``buffer_create`` buffer before any store
    into it holds nonzero bytes (MUT-4, MUT-6: storage reused without clearing)."""
    first: dict[Value, Node] = {}
    for node in graph.nodes:
        if _accesses(node) and node.operands[0] not in first:
            first[node.operands[0]] = node
    fresh = {first[r].results[0] for node in graph.nodes if _creates(node)
             for r in node.results if r in first and not _stores(first[r])}
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
    if len(found) > 1:  # one variant reproducing every element bit-exactly wins (CONF-144)
        exact = [f for f in found if _exact(graph, inputs, actual, f.cls)]
        found = exact if len(exact) == 1 else found
    if not found and any(_accesses(n) for n in graph.nodes):
        found = _stale_buffers(graph, actual) or _store_order(graph, inputs, actual)
    return form + (found or _transcendental(graph, expected, actual))


def _exact(graph: Graph, inputs: Sequence[np.ndarray], actual: dict[str, np.ndarray],
           cls: str) -> bool:
    """Whether the variant of ``cls`` reproduces every value of ``actual`` bit for bit."""
    try:
        got = variant_outputs(graph, inputs, [cls])
    except Exception:
        return False
    return got is not None and all(
        (a := actual.get(k)) is not None and a.shape == w.shape and a.dtype == w.dtype
        and bool(same_bits(w, a).all()) for k, w in got[0].items())


def format_findings(findings: Sequence[Finding]) -> str:
    """The ``diagnosis:`` block of a failure message (CONF-40); ``ambiguous: A or B`` when
    more than one variant explains every element (CONF-144)."""
    if not findings:
        return ("diagnosis: unexplained: no known platform effect reproduces these results "
                f"(checked: {', '.join(CLASSES)})")
    variants = [f.cls for f in findings if f.cls in _VARIANTS]
    head = (f"diagnosis: ambiguous: {' or '.join(variants)}" if len(variants) > 1
            else "diagnosis:")
    lines = [head] + [f"  {f}" for f in findings]
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
