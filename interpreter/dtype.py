"""Element types (spec/dtypes.md).

``DType`` mirrors ``max.dtype.DType`` names. The ML types (bfloat16, float8) are backed by
``ml_dtypes`` so every dtype has an exact numpy representation.
"""

from __future__ import annotations

import builtins
from enum import Enum
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["NUMPY_DTYPES", "DType"]


class DType(Enum):
    """Element type of a tensor (DT-1)."""

    bool = "bool"
    int8 = "int8"
    int16 = "int16"
    int32 = "int32"
    int64 = "int64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"
    float16 = "float16"
    bfloat16 = "bfloat16"
    float32 = "float32"
    float64 = "float64"
    float8_e4m3fn = "float8_e4m3fn"
    float8_e5m2 = "float8_e5m2"

    # Members are singletons: identity hashing is exact and C-fast (Enum's default hashes
    # the name in Python, which showed up in every staged op's dtype-set membership test).
    __hash__ = object.__hash__

    # -- conversions -----------------------------------------------------------------
    def to_numpy(self) -> np.dtype[Any]:
        """The numpy dtype that stores this element type (DT-2)."""
        return _TO_NUMPY[self]

    @staticmethod
    def from_numpy(dtype: Any) -> DType:
        """The ``DType`` of a numpy dtype (or anything ``np.dtype`` accepts)."""
        try:
            return _FROM_NUMPY[np.dtype(dtype)]
        except (KeyError, TypeError):
            raise TypeError(f"DType.from_numpy: unsupported numpy dtype {dtype!r}") from None

    # -- classification --------------------------------------------------------------
    @property
    def size_in_bytes(self) -> int:
        return _TO_NUMPY[self].itemsize

    @property
    def size_in_bits(self) -> int:
        return 8 * _TO_NUMPY[self].itemsize

    def is_float(self) -> builtins.bool:
        return self in _FLOATS

    def is_float8(self) -> builtins.bool:
        return self in (DType.float8_e4m3fn, DType.float8_e5m2)

    def is_integral(self) -> builtins.bool:
        """True for signed and unsigned integers (not bool)."""
        return self in _SIGNED or self in _UNSIGNED

    def is_signed(self) -> builtins.bool:
        """True for signed integers and floats."""
        return self in _SIGNED or self in _FLOATS

    def is_unsigned(self) -> builtins.bool:
        return self in _UNSIGNED

    @property
    def short(self) -> str:
        """Compact spelling used in the text form (``f32``, ``bf16``, ``i64``, ...)."""
        return _SHORT[self]

    @staticmethod
    def from_short(text: str) -> DType:
        try:
            return _FROM_SHORT[text]
        except KeyError:
            raise ValueError(f"unknown dtype spelling {text!r}") from None

    def __repr__(self) -> str:
        return f"DType.{self.value}"

    __str__ = __repr__


_TO_NUMPY: dict[DType, np.dtype[Any]] = {
    DType.bool: np.dtype(np.bool_),
    DType.int8: np.dtype(np.int8),
    DType.int16: np.dtype(np.int16),
    DType.int32: np.dtype(np.int32),
    DType.int64: np.dtype(np.int64),
    DType.uint8: np.dtype(np.uint8),
    DType.uint16: np.dtype(np.uint16),
    DType.uint32: np.dtype(np.uint32),
    DType.uint64: np.dtype(np.uint64),
    DType.float16: np.dtype(np.float16),
    DType.bfloat16: np.dtype(ml_dtypes.bfloat16),
    DType.float32: np.dtype(np.float32),
    DType.float64: np.dtype(np.float64),
    DType.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    DType.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
}
#: ``DType.to_numpy()`` as a mapping, for loops that check many arrays (read only).
NUMPY_DTYPES = _TO_NUMPY
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items()}
_SIGNED = frozenset({DType.int8, DType.int16, DType.int32, DType.int64})
_UNSIGNED = frozenset({DType.uint8, DType.uint16, DType.uint32, DType.uint64})
_FLOATS = frozenset(
    {DType.float16, DType.bfloat16, DType.float32, DType.float64, DType.float8_e4m3fn,
     DType.float8_e5m2}
)
_SHORT = {
    DType.bool: "i1", DType.int8: "si8", DType.int16: "si16", DType.int32: "si32",
    DType.int64: "si64", DType.uint8: "ui8", DType.uint16: "ui16", DType.uint32: "ui32",
    DType.uint64: "ui64", DType.float16: "f16", DType.bfloat16: "bf16", DType.float32: "f32",
    DType.float64: "f64", DType.float8_e4m3fn: "f8e4m3fn", DType.float8_e5m2: "f8e5m2",
}
_FROM_SHORT = {v: k for k, v in _SHORT.items()}
