"""The graph IR (MAX ``max.graph`` names): ``Graph``, types, values and ``ops``.

Importing the package installs the operators of graph values (``ops``) and the text form of
graphs (``text``: ``Graph.to_text``, ``Graph.parse``, ``Graph.structural_hash``).
"""

from ..types import BufferType, DeviceRef, TensorType
from . import ops, text
from .core import BufferValue, Graph, Node, TensorValue, Value
from .lowering import lower, lowered

__all__ = ["BufferType", "BufferValue", "DeviceRef", "Graph", "Node", "TensorType",
           "TensorValue", "Value", "lower", "lowered", "ops", "text"]
