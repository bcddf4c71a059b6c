"""Project exception classes.

Every error the reference raises for bad user input is one of these, so callers can catch
``EagerConformanceError`` and messages always name the op, the operand types and the rule
(spec id) that was broken. They also subclass the builtin a Python user would expect
(``TypeError`` for dtype problems, ``ValueError`` for shapes/axes, ...).
"""

from __future__ import annotations

__all__ = [
    "EagerConformanceError",
    "ExecutorInputError",
    "ExecutorResultError",
    "ExecutorUnavailableError",
    "GraphBuildError",
    "GraphIndexError",
    "GraphParseError",
    "GraphShapeError",
    "GraphTypeError",
    "GraphVerificationError",
    "NumericalDebugError",
    "RealizationError",
    "UnknownOpError",
    "UnsupportedGraphError",
]


class EagerConformanceError(Exception):
    """Base class of every error raised by this project."""


class GraphTypeError(EagerConformanceError, TypeError):
    """An op was staged with operands of unacceptable dtypes (or kinds)."""


class GraphShapeError(EagerConformanceError, ValueError):
    """An op was staged with incompatible shapes, a bad axis or bad attributes."""


class GraphBuildError(EagerConformanceError, RuntimeError):
    """Graph construction misuse: no current graph, value from another graph, double output."""


class GraphParseError(EagerConformanceError, ValueError):
    """The text form of a graph could not be parsed; the message gives line and column."""


class GraphVerificationError(EagerConformanceError, ValueError):
    """A graph violates an IR invariant (see spec/graph.md)."""


class ExecutorInputError(EagerConformanceError, ValueError):
    """Inputs handed to ``execute`` do not match the graph's declared inputs."""


class UnknownOpError(EagerConformanceError, KeyError):
    """An op name is not in the registry."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class NumericalDebugError(EagerConformanceError, FloatingPointError):
    """Debug mode: an op produced NaN/Inf from finite inputs, or a result of the wrong type."""


class UnsupportedGraphError(EagerConformanceError, RuntimeError):
    """An executor refuses a graph. Raised only before any side effect (EXEC-3)."""


class GraphIndexError(EagerConformanceError, IndexError):
    """An integer index is out of bounds at staging time (INDEX-1)."""


class RealizationError(EagerConformanceError, TypeError):
    """Misuse of tensors or realization contexts (spec/realization.md, REAL-n)."""


class ExecutorResultError(EagerConformanceError, RuntimeError):
    """An executor returned outputs that do not match the graph's declared outputs (REAL-n)."""


class ExecutorUnavailableError(EagerConformanceError, RuntimeError):
    """A named executor (``compile``, ``jit``, ``composite``) is not installed (SEL-n)."""
