"""The op registry: one ``OpDef`` per primitive op, the single source of truth.

The staging code, the lowering pass, the interpreter, the text parser, the spec index and
the conformance strategies all read these entries; nothing about an op is written twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, TypeVar

import ml_dtypes
import numpy as np

from ..dtype import DType
from ..errors import GraphShapeError, GraphTypeError, UnknownOpError
from ..types import BufferType, TensorType, ValueType
from ..validators import axis_problem

if TYPE_CHECKING:
    from .attrtypes import AttrType

__all__ = [
    "EXACT",
    "HOST_ONLY",
    "REGISTRY",
    "TRAITS",
    "VARIANTS",
    "ArgSource",
    "OpCall",
    "OpDef",
    "Tolerance",
    "as_results",
    "get_op",
    "op_with",
    "ops_with",
    "register",
    "ulp",
    "ulp_of",
]

Attrs = Mapping[str, Any]
InferFn = Callable[["OpDef", Sequence[ValueType], Attrs], tuple[ValueType, ...]]
KernelFn = Callable[..., Any]
UnspecifiedFn = Callable[..., np.ndarray]
T = TypeVar("T")


class ArgSource(Protocol):
    """Where an op's ``sample`` function draws from (hypothesis in the conformance suite,
    a seeded numpy RNG in unit tests: ``interpreter.testing.sampling.RandomArgSource``).

    ``dtype(allowed, data=True)`` marks the draw of the op's *data dtype* (``OpDef.data_dtypes``,
    OPDT-3): a sampler makes exactly one such draw, and a conformance cell pins it.

    ``values`` kinds: ``"any"`` (special values included: NaN, +-inf, +-0, subnormals, extremes,
    integer min/max), ``"finite"``, ``"positive"`` (finite, > 0), ``"small"`` (finite, |x| <= 4,
    for ops that overflow easily), ``"index:N"`` (ints in [-N, N)), ``"uindex:N"`` (ints in
    [0, N)), ``"nonzero"`` (no zeros: divisors), ``"halfway"`` (``"any"`` with most float
    elements exact ties x.5 of several magnitudes and both signs: rounding ops),
    ``"edges:<dtype>"`` (``"any"`` with most elements ``cast_edge_values(dtype of the array,
    <dtype>)``: a cast target's boundaries, ties and specials, NUM-20).

    Axis lengths: ``shape`` draws whole shapes; ``axis_size`` draws the length of one axis an
    op is free to make long (matmul's m/k/n, a concat operand's axis). Both take ``rest``,
    the number of elements the tensor's *other* axes already hold. An ordinary source keeps
    to ``[min_side, max_side]`` / ``[lo, hi]`` and ignores ``rest``; a *reach* source
    (CONF-86) may return lengths beyond ``max_side``/``hi`` (vector and tile widths), keeping
    ``length * rest`` within its element budget. A ``max_side`` below 5 marks axes the op
    keeps short (the cost of its result, e.g. ``tile``'s repeats): a reach source respects it.
    """

    def dtype(self, allowed: Iterable[DType], data: bool = False) -> DType: ...
    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5, rest: int = 1) -> tuple[int, ...]: ...
    def axis_size(self, lo: int, hi: int, rest: int = 1) -> int: ...  # inclusive bounds
    def integer(self, lo: int, hi: int) -> int: ...  # inclusive bounds
    def choice(self, options: Sequence[T]) -> T: ...
    def boolean(self) -> bool: ...
    def values(self, dtype: DType, shape: tuple[int, ...], kind: str = "any") -> np.ndarray: ...


@dataclass
class OpCall:
    """One sampled, type-correct use of an op: the operand arrays (graph inputs; indices in
    ``buffers`` are passed as ``BufferType`` inputs) and the attributes."""

    operands: list[np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    buffers: frozenset[int] = frozenset()


SampleFn = Callable[[ArgSource], OpCall]


#: A per-op piece of a tolerance bound: ``fn(operands, attrs, expected)`` -> an array
#: broadcastable to ``expected`` (float64). Its docstring is the formula shown in the spec.
BoundFn = Callable[[Sequence[np.ndarray], Attrs, np.ndarray], Any]


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How results of an op are compared against the reference (spec/executor.md, TOL-n).

    * ``exact``: bit-identical (NaN matches NaN; -0.0 and +0.0 must match too).
    * ``ulp``: within ``ulps`` units in the last place of the result dtype; with a ``scale``
      (RNG-8), also within ``ulps`` ULP of ``scale`` (as an absolute error).
    * ``reduction``: REDUCE-6, ``|got - ref| <= ulps * n * eps * M + n * tiny`` with the
      op's own ``count`` (n) and ``scale`` (M) per result element.

    Special values (TOL-4): NaN matches only NaN in every class; :meth:`bound` applies where
    both the reference and the result are finite (``ulp`` counts +-inf by NUM-10).
    """

    kind: Literal["exact", "ulp", "reduction"]
    ulps: int = 0
    count: BoundFn | None = None
    scale: BoundFn | None = None

    def __post_init__(self) -> None:
        per_op = (self.count is not None, self.scale is not None)
        if per_op not in {"exact": [(False, False)], "ulp": [(False, False), (False, True)],
                          "reduction": [(True, True)]}[self.kind]:
            raise ValueError(f"tolerance {self.kind}: unexpected count/scale functions; a "
                             "reduction declares both (REDUCE-6), an ulp op at most a scale")

    def __str__(self) -> str:
        return self.kind if self.kind == "exact" else f"{self.kind}({self.ulps})"

    def bound(self, operands: Sequence[np.ndarray], attrs: Attrs, expected: np.ndarray
              ) -> np.ndarray:
        """The allowed ``|got - expected|`` per element of ``expected`` (float64), besides
        bit equality and, for ``ulp``, the ULP count: 0 for ``exact``, for non-float results
        and for ``ulp`` ops without a scale; ``ulps * ulp(scale)`` for ``ulp`` ops with one
        (RNG-8); ``ulps * n * eps * M + n * tiny`` for ``reduction`` (REDUCE-6)."""
        e = np.asarray(expected)
        zero = np.zeros(e.shape, np.float64)
        if self.kind == "exact" or self.scale is None or e.dtype.kind not in "fV":
            return zero
        info = ml_dtypes.finfo(e.dtype)
        with np.errstate(all="ignore"):
            m = np.abs(np.asarray(self.scale(operands, attrs, e), np.float64))
            if self.count is None:  # ulp with a scale (RNG-8)
                return zero + self.ulps * ulp_of(m, e.dtype)
            n = np.asarray(self.count(operands, attrs, e), np.float64)
            return zero + (self.ulps * n * float(info.eps) * m
                           + n * float(info.smallest_subnormal))

    def formula(self) -> str:
        """The bound in words, for the spec pages (generated from the registry)."""
        if self.kind == "exact":
            return "exact: bit-identical (TOL-1)"
        if self.kind == "ulp":
            if self.scale is None:
                return f"ulp({self.ulps}): within {self.ulps} ULP of the reference (TOL-1)"
            return (f"ulp({self.ulps}): within {self.ulps} ULP of the reference, or |got - ref| "
                    f"<= {self.ulps} * ulp({_doc(self.scale)}) (TOL-1, RNG-8)")
        return (f"reduction({self.ulps}): |got - ref| <= {self.ulps} * n * eps * M + n * tiny, "
                f"n = {_doc(self.count)}, M = {_doc(self.scale)} (REDUCE-6)")


def _doc(fn: Any) -> str:
    """The formula a bound function documents (its docstring, one line)."""
    return " ".join((getattr(fn, "__doc__", None) or "?").split())


def ulp_of(x: Any, dtype: Any) -> np.ndarray:
    """The spacing of ``dtype`` at |x| (float64): 2**(e - mantissa bits) for |x| in
    [2**e, 2**(e+1)), the smallest subnormal below the normal range."""
    info = ml_dtypes.finfo(dtype)
    _, exp = np.frexp(np.abs(np.asarray(x, np.float64)))
    return np.ldexp(1.0, np.maximum(exp - 1, int(info.minexp)) - int(info.nmant))


EXACT = Tolerance("exact")

#: The op traits (``OpDef.traits``), each with what it tells a backend, the lowering, the
#: suite or its diagnosis. Code that needs such a fact reads the trait (``ops_with``,
#: ``op_with``), never a list of op names (REG-1).
TRAITS: dict[str, str] = {
    "transcendental": "computed by a libm-style approximation within its ulp budget (NUM-7): "
                      "a backend may use its own, and the diagnosis blames it on a miss",
    "collective": "exchanges values between devices (DEV-4): an executor that serves one "
                  "device's values at a time, without peer communication, refuses it",
    "host-output": "writes to the host's stdout: on a device every call would need a round "
                   "trip to the host, so device executors refuse it",
    "nan-last-sort": "sorts stably with NaN as the largest value (numpy's order, top_k.C2): "
                     "CuPy documents its sort as stable but not where it puts NaN, so "
                     "executors running the kernel on CuPy arrays refuse it",
    "normalization": "a softmax-style normalization along an axis, computed through exp and "
                     "log: a backend may use its own exp within the op's REDUCE-6 bound, and "
                     "mutation testing evaluates it at a narrower precision (CONF-105)",
    "byte-copy": "every result element is the bytes of an operand (or buffer) element, of "
                 "its value attribute, or zero: NaN payloads and sign bits survive (DT-6)",
    "buffer-load": "a copy of its buffer operand's contents at its place in staging order "
                   "(MUT-1)",
    "buffer-store": "writes its source operand's bytes into its buffer operand, in staging "
                    "order with the buffer's other accesses (MUT-2)",
    "literal": "its result is its `value` attribute: Python scalars are staged as this op "
               "(weak constants, PROMO-4)",
    "lowering-cast": "converts its operand to its `dtype` attribute: lowering inserts it "
                     "before a promoted operand (LOWER-1)",
    "lowering-broadcast": "broadcasts its operand to its `shape` attribute: lowering inserts "
                          "it before a broadcast operand (LOWER-1)",
    "cross-device": "its result lives on another device than its operand (DEV-3): the one op "
                    "an executor computes across devices, by copying",
    "fusable": "elementwise: each result element is computed from the operands' elements at "
               "its index (after broadcasting) alone, with no side effect and one result, so "
               "a compiler may fuse it with its neighbours into one loop (COMP-2, GPU-5)",
    "broadcast-view": "the result is operand 0 broadcast to the result's shape, no arithmetic: "
                      "a fused loop reads the operand through a broadcast view, or at index 0 "
                      "when it has one element (COMP-2, COMP-15)",
    "compile-time": "the result depends on the attributes alone and is read-only: a compiler "
                    "may evaluate the op once, when it compiles the graph, and read that array "
                    "on every run (COMP-20)",
    "product": "its result is the product of its two operands: a backend may contract it "
               "into a following op's fused multiply-add (the op's ``fma`` variant, NUM-12)",
    "conversion": "converts its operand to the dtype its ``dtype`` attribute names, rounding "
                  "once: a backend keeping intermediates wide still rounds here (NUM-12)",
}

#: The keys of ``OpDef.variants`` (the suite's diagnosis classes that replace an op's kernel),
#: each with what its kernel computes; it takes the op's operands and attributes unless said.
VARIANTS: dict[str, str] = {
    "nan-dropped": "NaN operands or elements ignored (fmax-style, nan-reductions; NUM-8): a "
                   "NaN loses to any number, NaN (argmax/argmin: index 0) where there is no "
                   "number; where no NaN is involved the max/min family equals its kernel "
                   "bit for bit",
    "int-saturation": "integer results clamped to the dtype's range, not wrapped (NUM-2); a "
                      "reduction's exact result clamped once (``registry.reduction."
                      "saturating``)",
    "rounding-mode": "ties away from zero, truncating division and remainder (NUM-3)",
    "double-rounding": "the conversion rounded through float32 first (NUM-4)",
    "ftz": "an intermediate the op computes in its float dtype (a quotient) flushed to a zero "
           "of its sign where subnormal; operands and results are flushed by the class "
           "itself (NUM-11)",
    "fma": "``(x, y, other, *, product_first)``: the op on the product ``x * y`` (its first "
           "operand if ``product_first``) and ``other``, rounded once (NUM-12)",
}
#: The traits that keep an op on the host: an executor that runs the registry kernels on
#: device arrays (``interpreter/arrays.py``; the GPU executor) refuses an op with one of
#: them, the trait's text being the reason (``OpDef.host_only``, GPU-11).
HOST_ONLY = frozenset({"collective", "host-output", "nan-last-sort"})


def as_results(out: Any) -> tuple[Any, ...]:
    """A kernel's return value as one entry per result: the one place that reads the kernel
    convention (an array for one result, a tuple or list for several, None for none)."""
    if isinstance(out, tuple | list):
        return tuple(out)
    return () if out is None else (out,)


def ulp(n: int, scale: BoundFn | None = None) -> Tolerance:
    return Tolerance("ulp", n, scale=scale)


@dataclass(frozen=True, eq=False, slots=True)
class OpDef:
    """Everything about one primitive op.

    ``infer`` is the *primitive* type rule: operands already have the normalized types (after
    ``promote``/``broadcast``); it validates attributes and returns the result types, raising
    ``GraphTypeError``/``GraphShapeError`` through :meth:`fail`. ``kernel`` is the numpy
    reference: ``kernel(*operand_arrays, **attrs)`` returns one array, a tuple of arrays (one
    per result) or None (no results); callers use :meth:`apply`, which always gives a tuple.
    ``dtypes`` is the set accepted for operand 0 (for ops without operands: for the ``dtype``
    attribute). ``sample`` draws a random valid call of
    the op (operands and attributes), so strategies, coverage and fuzzing need no per-op code
    outside the registry.

    Dtype sets (OPDT-2, OPDT-3; read them through the properties): ``operand_dtypes`` gives one
    set per primitive operand (None: every operand takes ``dtypes``; a variadic op's one set
    covers all its operands), ``result_dtypes`` the dtypes any result can have (None: those of
    ``dtypes``). ``data_operand`` names the operand whose dtype is the op's *data dtype*, the
    dtype axis of the conformance cells (None, or an op without operands: the result dtype,
    chosen by an attribute): ``select``'s values, not its bool condition; ``random_uniform``'s
    result, not its uint64 seed.
    """

    name: str
    _: KW_ONLY  # every other field by keyword: 19 fields are unreadable by position
    summary: str
    category: str
    operands: tuple[str, ...]
    attrs: tuple[str, ...]
    infer: InferFn
    kernel: KernelFn
    dtypes: frozenset[DType]
    tolerance: Tolerance = EXACT
    promote: tuple[int, ...] = ()
    broadcast: bool = False
    side_effect: bool = False
    deterministic: bool = True
    variadic: bool = False
    unspecified: UnspecifiedFn | None = None
    sample: SampleFn | None = None
    result_dtypes: frozenset[DType] | None = None
    operand_dtypes: tuple[frozenset[DType], ...] | None = None
    data_operand: int | None = 0
    #: facts about the op that backends and the suite's diagnosis read (names in ``TRAITS``)
    traits: frozenset[str] = frozenset()
    #: what a backend that breaks one of the op's rules computes instead, by diagnosis class
    #: (``conformance/diagnosis.py``; keys and signatures in ``VARIANTS``), e.g.
    #: ``{"nan-dropped": ...}`` for ``max`` (``fmax``: a NaN operand loses)
    variants: Mapping[str, KernelFn] = field(default_factory=dict)
    #: the exact Python type of an attribute whose type is not the one its name has in
    #: ``attrtypes`` (GRAPH-21; read through ``attrtypes.attr_type``)
    attr_types: Mapping[str, AttrType] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = self.traits - TRAITS.keys()
        if unknown:
            raise ValueError(f"op {self.name!r}: unknown traits {sorted(unknown)}; "
                             f"known: {sorted(TRAITS)}")
        strange = set(self.variants) - VARIANTS.keys()
        if strange:
            raise ValueError(f"op {self.name!r}: unknown variants {sorted(strange)}; "
                             f"known: {sorted(VARIANTS)}")
        if not self.attr_types.keys() <= set(self.attrs):
            raise ValueError(f"op {self.name!r}: attribute types for "
                             f"{sorted(self.attr_types.keys() - set(self.attrs))}, which are "
                             f"not among its attributes {self.attrs}")

    @property
    def host_only(self) -> str | None:
        """Why the op runs on the host only (the text of its ``HOST_ONLY`` trait), or None:
        its kernel also runs on device arrays (``interpreter/arrays.py``)."""
        reasons = [TRAITS[t] for t in sorted(self.traits & HOST_ONLY)]
        return "; ".join(reasons) if reasons else None

    def apply(self, *arrays: Any, **attrs: Any) -> tuple[Any, ...]:
        """Run the reference kernel: one entry per result, always a tuple."""
        return as_results(self.kernel(*arrays, **attrs))

    @property
    def operand_dtype_sets(self) -> tuple[frozenset[DType], ...]:
        """One accepted dtype set per declared operand (OPDT-2)."""
        if self.operand_dtypes is not None:
            return self.operand_dtypes
        return (self.dtypes,) * len(self.operands)

    @property
    def result_dtype_set(self) -> frozenset[DType]:
        """Every dtype a result of this op can have (empty: the op has no results; OPDT-2)."""
        return self.dtypes if self.result_dtypes is None else self.result_dtypes

    @property
    def data_dtypes(self) -> frozenset[DType]:
        """The data dtypes: the dtype axis of the conformance cells (OPDT-3, CONF-21)."""
        if self.data_operand is None or not self.operands:
            return self.result_dtype_set
        return self.operand_dtype_sets[self.data_operand]

    def fail(self, types: Sequence[ValueType], rule: str, detail: str,
             exc: type[Exception] = GraphShapeError) -> NoReturn:
        """Raise ``exc`` naming this op, the operand types and the broken rule."""
        shown = ", ".join(str(t) for t in types) if types else "none"
        raise exc(f"{self.name}: {detail} [{rule}]; operands: ({shown})")

    def check_dtype(self, types: Sequence[ValueType], t: ValueType | DType,
                    allowed: frozenset[DType] | None = None, what: str = "operand") -> None:
        dtype = t if isinstance(t, DType) else t.dtype
        allowed = self.dtypes if allowed is None else allowed
        if dtype not in allowed:
            names = ", ".join(sorted(d.value for d in allowed))
            self.fail(types, "OPDT-1", f"{what} dtype {dtype.value} is not supported; "
                      f"expected one of {{{names}}}", GraphTypeError)

    def check_tensor(self, types: Sequence[ValueType], index: int) -> TensorType:
        t = types[index]
        if not isinstance(t, TensorType):
            self.fail(types, "GRAPH-4", f"operand {index} must be a tensor, got {t}",
                      GraphTypeError)
        return t

    def check_buffer(self, types: Sequence[ValueType], index: int) -> BufferType:
        t = types[index]
        if not isinstance(t, BufferType):
            self.fail(types, "GRAPH-4", f"operand {index} must be a buffer, got {t}",
                      GraphTypeError)
        return t

    def check_axis(self, types: Sequence[ValueType], axis: Any, rank: int,
                   rule: str = "AXIS-1") -> int:
        """Normalize ``axis`` (negative counts from the end) for a tensor of ``rank``."""
        problem = axis_problem(axis, rank)
        if problem is not None:
            self.fail(types, rule, problem)
        return axis % rank


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} is registered twice")
    REGISTRY[op.name] = op
    return op


def ops_with(trait: str) -> tuple[OpDef, ...]:
    """The registered ops with ``trait`` (a key of ``TRAITS``), in registration order."""
    if trait not in TRAITS:
        raise ValueError(f"unknown trait {trait!r}; known: {sorted(TRAITS)}")
    return tuple(op for op in REGISTRY.values() if trait in op.traits)


def op_with(trait: str) -> OpDef:
    """The one registered op with ``trait``: for a trait naming a role the IR gives to one
    op (``literal``, ``lowering-cast``, ``lowering-broadcast``, ``buffer-load``)."""
    found = ops_with(trait)
    if len(found) != 1:
        raise ValueError(f"trait {trait!r} is held by {len(found)} ops "
                         f"({', '.join(op.name for op in found) or 'none'}); expected one")
    return found[0]


def get_op(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownOpError(f"unknown op {name!r}; the registry has {len(REGISTRY)} ops "
                             "(see spec/README.md)") from None
