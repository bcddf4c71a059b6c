"""eager-conformance reference: graph IR, op registry, interpreter, tensors and contexts.

The tensor front end is the ``interpreter.experimental`` package (MAX ``max.experimental``).
"""

from .dtype import DType

__version__ = "0.1.0"
__all__ = ["DType", "__version__"]
