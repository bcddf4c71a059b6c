"""The graph package's module-level caches, in one module read top to bottom.

Each trades memory for time on a staging hot path and changes no result: without it only
the speed would differ (``python -m benchmarks.ratios`` measures it). One discipline:

* A table keyed by objects that are slow to hash (code objects, types) is keyed by their
  ``id`` and holds the objects themselves in the entry, so no other object can take such an
  id while it is cached; a lookup checks the entry's object ``is`` the one asked about.
* Every table is bounded: ``keep`` empties it when it is full (code made at run time by
  ``exec`` or notebooks, and types made per call, would otherwise grow it forever).

Data derived from one graph (its structural key, lowered copy, interpreter plan, an
executor's own) is not kept here but on the graph: ``Graph.memo`` (GRAPH-13). Weak
constants' shared splat arrays and their keys are ``splat.py``'s, kept the same way.

1. Sites (GRAPH-12): where the user staged a node, as the frame's ``(code object, bytecode
   offset)``; its line is found only when shown.
2. Result types of attribute-free nodes per op and operand types (GRAPH-3, OPDT-1).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from types import CodeType, FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..registry.core import OpDef
    from ..types import ValueType

__all__ = ["INFERRED", "Site", "infer_once", "keep", "location_of", "site_key",
           "site_location", "user_location"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: Entries each table holds before ``keep`` empties it.
SIZE = 4096


def keep(table: dict[K, V], key: K, value: V) -> V:
    """``table[key] = value``, emptying ``table`` first when it is full; returns ``value``."""
    if len(table) >= SIZE:
        table.clear()
    table[key] = value
    return value


# -- 1. sites ----------------------------------------------------------------------------------
#: A node's site: the frame's ``(code object, bytecode offset)`` as recorded while staging
#: (``f_lineno`` would scan the code's line table: ~16 us at line 2000 of a function), or an
#: already known ``(file, line)``; ``site_location`` turns either into ``(file, line)``.
Site = tuple[Any, int]
#: id(code) -> (code, defined inside this package?): hashing a code object hashes its
#: bytecode (~11 us for a 2000-line function).
_INTERNAL_CODE: dict[int, tuple[CodeType, bool]] = {}
#: (id(code), offset) -> (code, line), filled when a location is shown.
_LINES: dict[tuple[int, int], tuple[CodeType, int]] = {}


def location_of(frame: FrameType | None) -> Site | None:
    """The site of ``frame``, or of the first frame below it that is outside this package
    (where the user staged an op)."""
    internal = _INTERNAL_CODE.get
    f = frame
    while f is not None:
        code = f.f_code
        got = internal(id(code))
        if got is None or got[0] is not code:
            mod = f.f_globals.get("__name__", "")
            got = keep(_INTERNAL_CODE, id(code),
                       (code, mod == "interpreter" or mod.startswith("interpreter.")))
        if not got[1]:
            return (code, f.f_lasti)
        f = f.f_back
    return None


def user_location() -> Site | None:
    """The site of the first stack frame outside this package (recorded per staged op);
    the search starts at the caller's caller."""
    return location_of(sys._getframe(2))


def site_location(site: Site | None) -> tuple[str, int] | None:
    """``(file, line)`` of a site (None: unknown)."""
    if site is None:
        return None
    code, where = site
    if not isinstance(code, CodeType):
        return site  # already (file, line)
    got = _LINES.get((id(code), where))
    if got is None or got[0] is not code:
        line = next((ln for start, end, ln in code.co_lines() if start <= where < end
                     and ln is not None), code.co_firstlineno)
        got = keep(_LINES, (id(code), where), (code, line))
    return (code.co_filename, got[1])


def site_key(site: Site | None) -> Hashable:
    """A site as a cheap dictionary key: a code object by its id. Whoever keeps the key
    must keep the site too, so the id stays that code's."""
    if site is not None and isinstance(site[0], CodeType):
        return (id(site[0]), site[1])
    return site


# -- 2. result types of attribute-free nodes ---------------------------------------------------
#: (op, id of each operand type) -> (those types, the result types, needs lowering?): a type
#: rule without attributes depends on the operand types alone. ``Graph.stage`` looks a key
#: up itself (a dict lookup: the staging hot path) and calls ``infer_once`` on a miss.
INFERRED: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[Any, ...], bool]] = {}
Infer = Callable[["OpDef", list["ValueType"], dict[str, Any]],
                 tuple[tuple["ValueType", ...], bool]]


def infer_once(key: tuple[Any, ...], op: OpDef, operands: Sequence[Any], infer: Infer
               ) -> tuple[tuple[Any, ...], tuple[ValueType, ...], bool]:
    """``INFERRED[key]``: ``infer(op, operand types, {})`` for an attribute-free node on
    ``operands``, whose ``key`` is ``(op, id of each operand's type)``."""
    types = [v.type for v in operands]
    return keep(INFERRED, key, (tuple(types), *infer(op, types, {})))
