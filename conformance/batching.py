"""Batched cases (CONF-136): several independent cases of one cell judged in one graph.

A cell's cases are one-op graphs on separate inputs. ``batches`` groups them (at most
``BATCH_CASES`` per group and ``BATCH_ELEMENTS`` input elements per merged input set),
``merge_cases`` puts a group's graphs side by side in one lowered graph, and
``merged_input_sets`` pairs their input sets: set *j* of the merged graph is each case's
set *j* (a case with fewer sets repeats them in turn), so every set of every case is run.
A batch that passes proves each of its cases; one that does not is judged case by case.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from interpreter.graph import Graph, lower
from interpreter.graph.copy import side_by_side

from .strategies import Case

__all__ = ["BATCH_CASES", "BATCH_ELEMENTS", "batches", "merge_cases", "merged_input_sets"]

#: the most cases in one merged graph
BATCH_CASES = 8
#: the most input elements in one merged input set (a larger case is a batch of its own)
BATCH_ELEMENTS = 65_536


def _elements(case: Case) -> int:
    sets = [case.inputs, *case.extra_inputs]
    return max(sum(int(np.asarray(a).size) for a in s) for s in sets)


def batches(cases: Sequence[Case], most: int = BATCH_CASES) -> Iterator[list[int]]:
    """Indices of ``cases`` in consecutive groups of at most ``most`` cases and
    ``BATCH_ELEMENTS`` input elements; every index appears once, in order."""
    group: list[int] = []
    size = 0
    for i, case in enumerate(cases):
        n = _elements(case)
        if group and (len(group) >= most or size + n > BATCH_ELEMENTS):
            yield group
            group, size = [], 0
        group.append(i)
        size += n
    if group:
        yield group


def merge_cases(cases: Sequence[Case], *, name: str) -> Graph:
    """The lowered graph of ``cases`` side by side (``side_by_side``): case *i*'s inputs
    and outputs follow case *i-1*'s."""
    return lower(side_by_side(name, [c.graph for c in cases]))


def merged_input_sets(sets: Sequence[Sequence[Case]]) -> Iterator[list[np.ndarray]]:
    """For per-case lists of input sets (each case's ``Case`` per set), the merged graph's
    input sets: as many as the longest list, set *j* taking each case's set *j* modulo
    its count."""
    for j in range(max((len(s) for s in sets), default=0)):
        yield [a for s in sets for a in s[j % len(s)].inputs]
