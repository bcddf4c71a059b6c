"""The op registry (one ``OpDef`` per primitive op). Importing this registers every op."""

from . import (  # noqa: F401  (registration)
    buffer,
    convolution,
    creation,
    debug,
    devices,
    elementwise,
    indexing,
    linalg,
    pooling,
    normalization,
    random,
    reduction,
    resize,
    shape,
    vision,
)
from .core import EXACT, REGISTRY, OpDef, Tolerance, get_op, op_with, ops_with, register, ulp

__all__ = ["EXACT", "REGISTRY", "OpDef", "Tolerance", "get_op", "op_with", "ops_with", "register",
           "ulp"]
