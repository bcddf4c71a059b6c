"""Linear algebra: the primitive (batched) matmul (spec/ops/matmul.md) and band_part
(spec/ops/band_part.md).

The high-level ``ops.matmul`` handles rank-1 operands and batch broadcasting; the primitive
takes two tensors of one rank >= 2 with identical batch dimensions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import arrays
from ..errors import GraphTypeError
from ..types import TensorType, ValueType
from ..validators import is_int
from .attrtypes import AttrType
from .core import ArgSource, Attrs, OpCall, OpDef, Tolerance, register
from .dtypesets import ALL, NUMERIC
from .reduction import float_info, is_low_float, widen

Array = Any


def tensor_pair(op: OpDef, types: Sequence[ValueType]) -> tuple[TensorType, TensorType]:
    """A primitive's two tensor operands, of one dtype (LOWER-1) on one device (DEV-1)."""
    a, b = op.check_tensor(types, 0), op.check_tensor(types, 1)
    if a.dtype != b.dtype:
        op.fail(types, "LOWER-1", "primitive operands must have identical dtypes",
                GraphTypeError)
    if a.device != b.device:
        op.fail(types, "DEV-1", "operands must be on the same device; transfer first")
    return a, b


def _matmul_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                  ) -> tuple[ValueType, ...]:
    a, b = tensor_pair(op, types)
    if a.rank < 2 or a.rank != b.rank or a.shape[:-2] != b.shape[:-2]:
        op.fail(types, "matmul.C2", "primitive operands must have the same rank >= 2 and "
                "identical batch dimensions")
    if a.shape[-1] != b.shape[-2]:
        op.fail(types, "matmul.C1", f"contraction dimensions differ: lhs has {a.shape[-1]} "
                f"columns, rhs has {b.shape[-2]} rows")
    return (a.with_(shape=a.shape[:-1] + b.shape[-1:]),)


def _matmul(a: Array, b: Array) -> Array:
    xp = arrays.namespace(a)
    if is_low_float(np.dtype(a.dtype)):
        return xp.matmul(widen(a), widen(b)).astype(a.dtype)
    return xp.matmul(a, b)


def _matmul_overflow(a: Array, b: Array) -> np.ndarray:
    """Where the finite |products| add up past the dtype's max the result depends on the
    order of accumulation (REDUCE-5)."""
    if np.dtype(a.dtype).kind in "biu":
        return np.zeros(a.shape[:-1] + b.shape[-1:], bool)
    fa = np.asarray(a, np.float64)
    fb = np.asarray(b, np.float64)
    ok_a, ok_b = np.isfinite(fa), np.isfinite(fb)
    with np.errstate(all="ignore"):
        total = np.matmul(np.where(ok_a, np.abs(fa), 0.0), np.where(ok_b, np.abs(fb), 0.0))
    return np.asarray(total > float(float_info(a.dtype).max))


def _sample_matmul(src: ArgSource) -> OpCall:
    dtype = src.dtype(NUMERIC, data=True)
    batch = src.shape(min_rank=0, max_rank=2, max_side=3)
    b = math.prod(batch)  # the axes may be long (CONF-86): each operand stays bounded
    m = src.axis_size(0, 4, rest=b)
    k = src.axis_size(0, 4, rest=b * max(m, 1))
    n = src.axis_size(0, 4, rest=b * max(m, k, 1))
    return OpCall([src.values(dtype, (*batch, m, k), "small"),
                   src.values(dtype, (*batch, k, n), "small")])


def _contracted(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """K (the contracted size)"""
    return ops[0].shape[-1]


def _abs_dot(ops: Sequence[np.ndarray], attrs: Attrs, expected: Array) -> Any:
    """sum over k of |lhs[.., i, k] * rhs[.., k, j]|"""
    fa, fb = (np.asarray(a, np.float64) for a in ops)
    return np.matmul(np.where(np.isfinite(fa), np.abs(fa), 0.0),
                     np.where(np.isfinite(fb), np.abs(fb), 0.0))


#: REDUCE-6 with n = K and M = the dot product of |lhs| and |rhs|
MATMUL_TOLERANCE = Tolerance("reduction", 2, _contracted, _abs_dot)
register(OpDef("matmul",
               summary="Batched matrix product over the last two dims; batch dims must be "
                       "identical (the builder broadcasts them); integers wrap.",
               category="linalg", operands=("lhs", "rhs"), attrs=(), infer=_matmul_infer,
               kernel=_matmul, dtypes=NUMERIC, tolerance=MATMUL_TOLERANCE, promote=(0, 1),
               unspecified=_matmul_overflow, sample=_sample_matmul))



# -- band_part -----------------------------------------------------------------------------
def _band_part_infer(op: OpDef, types: Sequence[ValueType], attrs: Attrs
                     ) -> tuple[ValueType, ...]:
    t = op.check_tensor(types, 0)
    if t.rank < 2:
        op.fail(types, "band_part.C1", f"input must have rank >= 2, got rank {t.rank}")
    for name, dim, size in (("num_lower", "rows", t.shape[-2]),
                            ("num_upper", "columns", t.shape[-1])):
        k: Any = attrs.get(name)
        if not is_int(k) or not -1 <= k < max(size, 0):
            op.fail(types, "band_part.C2", f"{name}={k!r} must be -1 (the whole triangle) "
                    f"or an int in [0, {size}) (the matrices have {size} {dim})")
    if not isinstance(attrs.get("exclude"), bool):
        op.fail(types, "band_part.C3", f"exclude={attrs.get('exclude')!r} must be a bool")
    return (t,)


def band_mask(rows: int, cols: int, num_lower: int, num_upper: int, exclude: bool
              ) -> np.ndarray:
    """The (rows, cols) bool mask of the kept elements (host numpy)."""
    d = np.arange(rows)[:, None] - np.arange(cols)[None, :]  # row - column
    band = ((num_lower < 0) | (d <= num_lower)) & ((num_upper < 0) | (-d <= num_upper))
    return band ^ exclude


def _band_part(x: Array, *, num_lower: int, num_upper: int, exclude: bool) -> Array:
    xp = arrays.namespace(x)
    keep = xp.asarray(band_mask(x.shape[-2], x.shape[-1], num_lower, num_upper, exclude))
    return xp.where(keep, x, xp.zeros((), x.dtype))


def _sample_band_part(src: ArgSource) -> OpCall:
    dtype = src.dtype(ALL, data=True)
    shape = src.shape(min_rank=2, max_rank=4)

    def band(size: int) -> int:  # -1, 0, 1, the whole matrix, or any
        return src.choice([-1, *{0, min(1, size - 1), size - 1, src.integer(0, size - 1)}]) \
            if size else -1

    return OpCall([src.values(dtype, shape)], {
        "num_lower": band(shape[-2]), "num_upper": band(shape[-1]), "exclude": src.boolean()})


register(OpDef("band_part",
               summary="Zero everything outside (or, with exclude, inside) a diagonal band of "
                       "the matrices in the last two axes.",
               category="linalg", operands=("input",),
               attrs=("num_lower", "num_upper", "exclude"), infer=_band_part_infer,
               kernel=_band_part, dtypes=ALL, sample=_sample_band_part,
               traits=frozenset({"byte-copy"}),
               attr_types={"num_lower": AttrType("int", lambda v: type(v) is int,
                                                 "sub-diagonals kept; -1: all"),
                           "num_upper": AttrType("int", lambda v: type(v) is int,
                                                 "super-diagonals kept; -1: all"),
                           "exclude": AttrType("bool", lambda v: type(v) is bool,
                                               "zero the band instead of the rest")}))

__all__ = ["band_mask", "tensor_pair"]
