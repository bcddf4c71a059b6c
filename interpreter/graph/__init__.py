"""The graph IR (MAX ``max.graph`` names): ``Graph``, types, values and ``ops``."""

from ..types import BufferType, DeviceRef, TensorType
from . import ops
from .core import BufferValue, Graph, Node, TensorValue, Value
from .lowering import lower

__all__ = ["BufferType", "BufferValue", "DeviceRef", "Graph", "Node", "TensorType",
           "TensorValue", "Value", "lower", "ops"]
