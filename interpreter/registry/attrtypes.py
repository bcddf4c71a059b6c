"""The exact Python type of every op attribute an executor reads in ``node.attrs`` (GRAPH-21).

An attribute name has one type across ops (``axis`` is an ``int`` everywhere); an op whose
attribute differs declares it in its registry entry (``OpDef.attr_types``: ``constant``'s
``value`` is an array, ``pad``'s a scalar). The spec's attribute table (``spec/graph.md``)
is generated from :func:`attr_type`, and a test checks every declared type against graphs
staged from each op's ``sample`` function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..dtype import DType
from ..types import DeviceRef
from .core import get_op

__all__ = ["NUMBER", "AttrType", "attr_type"]


@dataclass(frozen=True)
class AttrType:
    """``text``: the type as the spec writes it; ``check(value)``: whether a value has it
    (exactly: ``bool`` is no ``int``, ``numpy.int64`` no ``int``); ``note``: its layout."""

    text: str
    check: Callable[[Any], bool]
    note: str = ""


def _is(*types: type) -> Callable[[Any], bool]:
    return lambda v: type(v) in types


def _tuple_of(item: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: type(v) is tuple and all(item(x) for x in v)


def _pair(v: Any) -> bool:
    return type(v) is tuple and len(v) == 2 and all(type(x) is int for x in v)


def _triple(v: Any) -> bool:
    return (type(v) is tuple and len(v) == 3 and all(x is None or type(x) is int for x in v[:2])
            and type(v[2]) is int)


_INT = _is(int)
_FLOAT = _is(float)
_INTS = _tuple_of(_INT)

_BY_NAME: dict[str, AttrType] = {
    "approximate": AttrType("str", _is(str),
                            "`'none'` (erf form), `'tanh'` or `'quick'` (sigmoid form)"),
    "ascending": AttrType("bool", _is(bool)),
    "axis": AttrType("int", _INT, "in [-rank, rank); negative counts from the end (AXIS-1)"),
    "batch_dims": AttrType("int", _INT, "leading dims shared by the operands"),
    "device": AttrType("DeviceRef", _is(DeviceRef), "the result's device"),
    "dtype": AttrType("DType", _is(DType), "the result dtype"),
    "epsilon": AttrType("float", _FLOAT, "added to the variance or mean square (as float32)"),
    "exclusive": AttrType("bool", _is(bool)),
    "reverse": AttrType("bool", _is(bool)),
    "high": AttrType("float", _FLOAT),
    "low": AttrType("float", _FLOAT),
    "mean": AttrType("float", _FLOAT),
    "multiply_before_cast": AttrType("bool", _is(bool)),
    "num_groups": AttrType("int", _INT, "divides the channel count"),
    "std": AttrType("float", _FLOAT),
    "weight_offset": AttrType("float", _FLOAT, "added to the weight (its float32 value)"),
    "k": AttrType("int", _INT),
    "label": AttrType("str", _is(str)),
    "paddings": AttrType("tuple[tuple[int, int], ...]", _tuple_of(_pair),
                         "one (before, after) pair per axis (per spatial axis: convolution, "
                         "pooling)"),
    "perm": AttrType("tuple[int, ...]", _INTS, "a permutation of range(rank)"),
    "repeats": AttrType("tuple[int, ...]", _INTS, "one count per axis"),
    "shape": AttrType("tuple[int, ...]", _INTS, "the result shape"),
    "sizes": AttrType("tuple[int, ...]", _INTS, "one size per result, in result order"),
    "slices": AttrType("tuple[tuple[int | None, int | None, int], ...]", _tuple_of(_triple),
                       "one (start, stop, step) triple per axis, Python slice semantics; "
                       "None: the default bound (SLICE-1)"),
    # convolution and pooling: one entry per spatial axis
    "ceil_mode": AttrType("bool", _is(bool)),
    "count_boundary": AttrType("bool", _is(bool)),
    "dilation": AttrType("tuple[int, ...]", _INTS, "one int >= 1 per spatial axis"),
    "groups": AttrType("int", _INT),
    "kernel_size": AttrType("tuple[int, ...]", _INTS, "one int >= 1 per spatial axis"),
    "output_paddings": AttrType("tuple[int, ...]", _INTS, "one int per spatial axis"),
    "stride": AttrType("tuple[int, ...]", _INTS, "one int >= 1 per spatial axis"),
}
#: ``int | float`` attributes (``range``'s bounds), declared in their op's ``attr_types``.
NUMBER = AttrType("int | float", lambda v: type(v) in (int, float),
                  "int when the dtype is an integer dtype")


def attr_type(op: str, attr: str) -> AttrType:
    """The declared type of attribute ``attr`` of op ``op``: the op's own
    (``OpDef.attr_types``), else the one of the attribute's name (KeyError: none declared)."""
    return get_op(op).attr_types.get(attr) or _BY_NAME[attr]
