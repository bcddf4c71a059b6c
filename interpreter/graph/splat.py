"""Weak constants' splat arrays, shared per Python scalar, with their structural keys.

A weak constant (PROMO-4) is a ``constant`` node whose ``value`` is a read-only array with
all strides 0 (a *splat*: one element, broadcast to the tensors' shape, LOWER-1). Graphs
staging the same Python scalar at the same dtype and shape share one splat array, made here
once together with its structural key (``graph.key``), so neither staging nor keying a graph
repeats that work. Nothing outside this module holds the splat's one-element base array,
which is read-only, so the bytes behind a cached key never change.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Hashable
from typing import Any

import numpy as np

from ..dtype import DType

__all__ = ["array_key", "is_splat", "splat"]

#: Arrays up to this many bytes are keyed by their bytes, larger ones by a sha256 digest.
_INLINE_BYTES = 256
_PACK_DOUBLE = struct.Struct("<d").pack
_SIZE = 1024
#: (kind, value or its bits, DType, shape) -> the shared splat, and by id(splat) -> (splat,
#: its key): each entry holds its array, so an id is not reused while cached.
_BY_VALUE: dict[tuple[Any, ...], np.ndarray] = {}
_KEYS: dict[int, tuple[np.ndarray, Hashable]] = {}


def splat(value: Any, dtype: DType, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a read-only ``dtype`` array of ``shape`` with all strides 0; shared per
    Python scalar (arrays, e.g. the seed's, get a new splat each time)."""
    cls = value.__class__
    if not (cls is float or cls is int or cls is bool):
        return _new(value, dtype.to_numpy(), shape)
    by_value = (cls, _PACK_DOUBLE(value) if cls is float else value, dtype, shape)
    arr = _BY_VALUE.get(by_value)
    if arr is None:
        if len(_BY_VALUE) >= _SIZE:
            _BY_VALUE.clear()
            _KEYS.clear()
        arr = _BY_VALUE[by_value] = _new(value, dtype.to_numpy(), shape)
        _KEYS[id(arr)] = (arr, array_key(arr))
    return arr


def _new(value: Any, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    arr = np.array(value, dtype=dtype)
    arr.flags.writeable = False  # so no view of it can be made writeable either
    if shape:  # np.broadcast_to is much slower
        arr = np.ndarray(shape, arr.dtype, buffer=arr, strides=(0,) * len(shape))
    return arr


def is_splat(a: np.ndarray) -> bool:
    """Whether ``a`` is one element broadcast (more than one element, all strides 0)."""
    return a.size > 1 and not any(a.strides)


def array_key(a: np.ndarray) -> Hashable:
    """``a`` as a hashable key: kind, dtype, shape and bytes (a splat: its one element's;
    more than ``_INLINE_BYTES``: their sha256). A shared splat's key is looked up."""
    got = _KEYS.get(id(a))
    if got is not None and got[0] is a:
        return got[1]
    if is_splat(a):  # keyed by its one element
        return ("splat", a.dtype, a.shape, a[(0,) * a.ndim].tobytes())
    data = a.tobytes()
    if len(data) > _INLINE_BYTES:
        data = hashlib.sha256(data).digest()
    return ("array", a.dtype, a.shape, data)  # numpy dtypes compare by kind, size and order

