"""The tensor front end (MAX ``max.experimental``), layered bottom-up without cycles:

``context`` (current context, ``RealizationState``, the context protocol) -> ``mesh`` (device
meshes, data only) -> ``tensor`` (``Tensor``: data and its state transitions) ->
``realization_context`` (eager, lazy, graph contexts; the seed) -> ``staging`` (tensors into
graph values) -> ``distributed`` (meshes of tensors) -> ``functional`` (``F``; installs
``Tensor``'s operators and methods) -> ``random``.
"""

from . import functional, random
from .context import current_realization_context
from .realization_context import (
    EagerRealizationContext,
    GraphRealizationContext,
    LazyRealizationContext,
)
from .tensor import Tensor

__all__ = ["EagerRealizationContext", "GraphRealizationContext", "LazyRealizationContext",
           "Tensor", "current_realization_context", "functional", "random"]
