"""The op registry (one ``OpDef`` per primitive op). Importing this registers every op."""

from .core import EXACT, REDUCTION, REGISTRY, OpDef, Tolerance, get_op, register, ulp

from . import creation, elementwise, shape, buffer  # noqa: E402, F401, I001  (registration)
from . import reduction, linalg, random, devices  # noqa: E402, F401, I001  (registration)

__all__ = ["EXACT", "REDUCTION", "REGISTRY", "OpDef", "Tolerance", "get_op", "register", "ulp"]
