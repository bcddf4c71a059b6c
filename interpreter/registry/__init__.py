"""The op registry (one ``OpDef`` per primitive op). Importing this registers every op."""

from . import buffer, creation, devices, elementwise, linalg, random, reduction, shape  # noqa: F401
from .core import EXACT, REDUCTION, REGISTRY, OpDef, Tolerance, get_op, register, ulp

__all__ = ["EXACT", "REDUCTION", "REGISTRY", "OpDef", "Tolerance", "get_op", "register", "ulp"]
