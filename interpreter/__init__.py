"""eager-conformance reference: graph IR, op registry, interpreter, tensors and contexts."""

from .dtype import DType

__version__ = "0.1.0"
__all__ = ["DType", "__version__"]
