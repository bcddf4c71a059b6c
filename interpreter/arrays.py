"""The array namespace a kernel computes in: numpy in the interpreter, CuPy on a GPU.

A registry kernel is written once: ``xp = arrays.namespace(x)`` (array-api's
``array_namespace``) is ``numpy`` for numpy arrays and ``cupy`` for CuPy arrays, and the
kernel writes ``xp.sum`` where it would write ``np.sum``. The GPU executor runs the
registry's own kernels on device arrays for every op it does not fuse (GPU-9). Dtype
objects (``np.float32``, ``x.dtype``) are the same in both and stay ``np.``.

What numpy has and CuPy lacks sits here, behind functions that work for either:

* :func:`errstate`: numpy's floating-point warning control. CuPy raises no floating-point
  warnings, so for it the context changes nothing.
* :func:`fill_value`: a Python number rounded to a dtype on the host (numpy's conversion;
  ml_dtypes' for bfloat16 and float8), a scalar any namespace's ``full`` accepts.
* Casts are ``x.astype(dtype)`` in every namespace. CuPy has no bfloat16 or float8 dtypes,
  so a device array never holds one (the GPU executor refuses them, GPU-3) and ml_dtypes
  is only ever reached through numpy.
"""

from __future__ import annotations

import contextlib
import sys
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

__all__ = ["errstate", "fill_value", "namespace"]


def namespace(x: Any) -> Any:
    """The array module of ``x``: ``cupy`` for a ``cupy.ndarray``, else ``numpy``.

    CuPy is never imported here: an array can only be a CuPy array once ``cupy`` is in
    ``sys.modules``. A kernel asks for the namespace of its first operand; an op's operands
    share one device (DEV-1)."""
    if type(x) is np.ndarray:  # the interpreter's case, first and cheapest
        return np
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return cupy
    return np


def errstate(xp: Any, **kwargs: Any) -> AbstractContextManager[Any]:
    """``np.errstate(**kwargs)`` for numpy; no change for a namespace without floating-point
    warnings (CuPy)."""
    return np.errstate(**kwargs) if xp is np else contextlib.nullcontext()


def fill_value(value: bool | int | float, dtype: Any) -> Any:
    """``value`` rounded to ``dtype`` as a host scalar (numpy's conversion, ml_dtypes' for
    bfloat16 and float8): what ``xp.full`` fills with in any namespace. Past the dtype's
    range a float rounds to +-inf, silently (NUM-5)."""
    with np.errstate(over="ignore"):
        return np.array(value).astype(dtype)[()]
