"""Wall-clock timing shared by the ratio benchmarks (best of several calls)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

__all__ = ["best_of"]


def best_of(fn: Callable[[], Any], repeat: int, *, warm_up: bool = False) -> float:
    """Least wall time of ``repeat`` calls of ``fn``, in seconds (after one untimed call
    when ``warm_up``: kernel compiles, memory pools); the least-disturbed figure on a
    shared machine."""
    if warm_up:
        fn()
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best
