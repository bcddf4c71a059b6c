"""Named dtype sets used by op definitions (spec/dtypes.md, DT-4)."""

from __future__ import annotations

from ..dtype import DType

__all__ = [
    "ALL",
    "BOOL",
    "FLOATS",
    "INDEX",
    "INTS",
    "NUMERIC",
    "SIGNED_INTS",
    "SIGNED_NUMERIC",
    "UNSIGNED_INTS",
]

BOOL = frozenset({DType.bool})
SIGNED_INTS = frozenset({DType.int8, DType.int16, DType.int32, DType.int64})
UNSIGNED_INTS = frozenset({DType.uint8, DType.uint16, DType.uint32, DType.uint64})
INTS = SIGNED_INTS | UNSIGNED_INTS
#: floats with arithmetic kernels (float8 is storage-only: cast it first, DT-5)
FLOATS = frozenset({DType.float16, DType.bfloat16, DType.float32, DType.float64})
FLOAT8 = frozenset({DType.float8_e4m3fn, DType.float8_e5m2})
NUMERIC = INTS | FLOATS
SIGNED_NUMERIC = SIGNED_INTS | FLOATS
ALL = frozenset(DType)
INDEX = frozenset({DType.int32, DType.int64})
