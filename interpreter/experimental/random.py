"""Random tensors and the global seed (MAX ``max.experimental.random``; REAL-30..34).

The global seed is a realized uint64 tensor of shape [1] on the CPU, initially 0. Every
eager graph reads it as an input; each random op staged advances the graph's seed by 1 at
staging time; the final seed is written back only after a successful execution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..dtype import DType
from ..graph import ops
from ..graph.core import TensorValue
from ..types import DeviceRef
from .context import CURRENT
from .functional import transfer_to
from .realization_context import seed, set_seed
from .staging import call
from .tensor import Tensor

__all__ = ["gaussian", "normal", "seed", "set_seed", "uniform"]


def _random(kind: str, shape: Sequence[int], a: float, b: float, dtype: DType | None,
            device: Any) -> Tensor:
    shape = tuple(int(d) for d in shape)
    dt = dtype or DType.float32

    op = ops.uniform if kind == "uniform" else ops.normal

    def body() -> TensorValue:
        return op(CURRENT.get().next_seed(), shape, a, b, dt)

    t: Tensor = call(body, (), {})
    if device is not None and device != DeviceRef.CPU():
        t = transfer_to(t, device)
    return t


def uniform(shape: Sequence[int] = (), low: float = 0.0, high: float = 1.0,
            dtype: DType | None = None, device: Any = None) -> Tensor:
    """Uniform values in ``[low, high)`` (one seed step, REAL-31)."""
    return _random("uniform", shape, low, high, dtype, device)


def normal(shape: Sequence[int] = (), mean: float = 0.0, std: float = 1.0,
           dtype: DType | None = None, device: Any = None) -> Tensor:
    """Normal values with ``mean`` and ``std`` (one seed step, REAL-31)."""
    return _random("normal", shape, mean, std, dtype, device)


gaussian = normal
