"""Floating-point exceptions off around a run of numpy kernels (NUM-5), at little cost.

``with np.errstate(all="ignore")`` builds numpy's error-state object on every entry (about
1.5 µs, the largest single cost of executing a one-op graph). Since numpy 2 that state is a
context variable, so ``ignore_fp_errors`` sets it to one "ignore all" state built once, and
``restore_fp_errors`` puts the caller's back::

    token = ignore_fp_errors()
    try:
        ...  # numpy calls: IEEE results, never a warning or FloatingPointError
    finally:
        restore_fp_errors(token)

A numpy without that variable (1.x) gets ``np.errstate`` itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ignore_fp_errors", "restore_fp_errors"]

try:  # numpy >= 2: the error state is a context variable (private names, hence the guard)
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar as _STATE,
    )
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _make_extobj,
    )

    _IGNORE_ALL: Any = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):  # pragma: no cover - numpy 1.x
    _STATE = None


def ignore_fp_errors() -> Any:
    """Ignore every floating-point exception in this thread/task until ``restore``."""
    if _STATE is None:  # pragma: no cover - numpy 1.x
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    return _STATE.set(_IGNORE_ALL)


def restore_fp_errors(token: Any) -> None:
    """Restore the error state ``ignore_fp_errors`` replaced (``token`` is what it returned)."""
    if _STATE is None:  # pragma: no cover - numpy 1.x
        token.__exit__(None, None, None)
    else:
        _STATE.reset(token)
