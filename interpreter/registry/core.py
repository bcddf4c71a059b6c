"""The op registry: one ``OpDef`` per primitive op, the single source of truth.

The staging code, the lowering pass, the interpreter, the text parser, the spec index and
the conformance strategies all read these entries; nothing about an op is written twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, Protocol, TypeVar

import numpy as np

from ..dtype import DType
from ..errors import GraphShapeError, GraphTypeError, UnknownOpError
from ..types import BufferType, TensorType, ValueType
from ..validators import axis_problem

__all__ = [
    "EXACT",
    "REDUCTION",
    "REGISTRY",
    "ArgSource",
    "OpCall",
    "OpDef",
    "Tolerance",
    "get_op",
    "register",
    "ulp",
]

Attrs = Mapping[str, Any]
InferFn = Callable[["OpDef", Sequence[ValueType], Attrs], tuple[ValueType, ...]]
KernelFn = Callable[..., Any]
UnspecifiedFn = Callable[..., np.ndarray]
T = TypeVar("T")


class ArgSource(Protocol):
    """Where an op's ``sample`` function draws from (hypothesis in the conformance suite,
    a seeded numpy RNG in unit tests: ``interpreter.testing.sampling.RandomArgSource``).

    ``values`` kinds: ``"any"`` (special values included: NaN, +-inf, +-0, subnormals, extremes,
    integer min/max), ``"finite"``, ``"positive"`` (finite, > 0), ``"small"`` (finite, |x| <= 4,
    for ops that overflow easily), ``"index:N"`` (ints in [-N, N)), ``"uindex:N"`` (ints in
    [0, N)), ``"nonzero"`` (no zeros: divisors).
    """

    def dtype(self, allowed: Iterable[DType]) -> DType: ...
    def shape(self, min_rank: int = 0, max_rank: int = 4, min_side: int = 0,
              max_side: int = 5) -> tuple[int, ...]: ...
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


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How results of an op are compared against the reference (spec/executor.md, TOL-n).

    * ``exact``: bit-identical (NaN matches NaN; -0.0 and +0.0 must match too).
    * ``ulp``: within ``ulps`` units in the last place of the result dtype.
    * ``reduction``: order of accumulation is implementation-defined; the error bound is
      ``ulps`` ULP times the number of accumulated terms, relative to the sum of |terms|.
    """

    kind: Literal["exact", "ulp", "reduction"]
    ulps: int = 0

    def __str__(self) -> str:
        return self.kind if self.kind == "exact" else f"{self.kind}({self.ulps})"


EXACT = Tolerance("exact")
REDUCTION = Tolerance("reduction", 2)


def ulp(n: int) -> Tolerance:
    return Tolerance("ulp", n)


@dataclass(frozen=True, eq=False, slots=True)
class OpDef:
    """Everything about one primitive op.

    ``infer`` is the *primitive* type rule: operands already have the normalized types (after
    ``promote``/``broadcast``); it validates attributes and returns the result types, raising
    ``GraphTypeError``/``GraphShapeError`` through :meth:`fail`. ``kernel`` is the numpy
    reference: ``kernel(*operand_arrays, **attrs)`` returns one array, a tuple of arrays (one
    per result) or None (no results). ``dtypes`` is the set accepted for operand 0 (for ops
    without operands: for the ``dtype`` attribute). ``sample`` draws a random valid call of
    the op (operands and attributes), so strategies, coverage and fuzzing need no per-op code
    outside the registry.
    """

    name: str
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


def get_op(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownOpError(f"unknown op {name!r}; the registry has {len(REGISTRY)} ops "
                             "(see spec/README.md)") from None
