"""eager-conformance reference: graph IR, op registry, interpreter, tensors and contexts."""

from .dtype import DType

__version__ = "0.1.0"
__all__ = ["DType", "__version__"]

# The tensor front end, imported on first use (keeps ``import interpreter`` light).
_LAZY = {
    "Tensor": "interpreter.tensor",
    "EagerRealizationContext": "interpreter.realization_context",
    "LazyRealizationContext": "interpreter.realization_context",
    "GraphRealizationContext": "interpreter.realization_context",
    "current_realization_context": "interpreter.tensor",
}
__all__ += list(_LAZY)


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'interpreter' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
