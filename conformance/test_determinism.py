"""Determinism (CONF-17, TOL-3): the same graph on the same inputs, executed twice, gives
bit-identical outputs and buffer contents wherever the registry marks the op deterministic.
Unspecified elements (TOL-2) are not compared."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given

from conformance.artifacts import ArtifactDir
from conformance.outcomes import refused
from conformance.strategies import Case, case_from_call, random_graphs
from interpreter.errors import UnsupportedGraphError
from interpreter.registry import REGISTRY
from interpreter.testing.sampling import RandomArgSource

SAMPLES_PER_OP = 3
DETERMINISTIC_OPS = sorted(name for name, op in REGISTRY.items()
                           if op.deterministic and op.sample is not None)


def twice(executor: Any, case: Case, art: ArtifactDir | None = None, sub: str | None = None,
          ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Outputs and final inputs of two executions on fresh copies of the same inputs; the
    case is written to ``art`` first, so a failure leaves a repro (CONF-11)."""
    if art is not None:
        art.write_case(case.graph, case.input_copies(), sub=sub)
    try:
        in1, in2 = case.input_copies(), case.input_copies()
        out1 = [np.asarray(o) for o in executor.execute(case.graph, in1)]
        out2 = [np.asarray(o) for o in executor.execute(case.graph, in2)]
    except UnsupportedGraphError as e:
        refused(f"graph {case.graph.name!r}: {e}")
    return out1, out2, in1, in2


def differing(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> list[int]:
    """Flat indices where the bytes of ``a`` and ``b`` differ (``mask``: ignore these)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return [-1]
    n = a.dtype.itemsize
    ra = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(-1, n) if n else None
    rb = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(-1, n) if n else None
    if ra is None or rb is None:
        return []
    bad = (ra != rb).any(axis=1)
    if mask is not None and mask.shape == a.shape:
        bad &= ~mask.reshape(-1)
    return [int(i) for i in np.flatnonzero(bad)]


def check(case: Case, what: str, results: tuple[list[np.ndarray], ...],
          masks: list[np.ndarray | None]) -> None:
    out1, out2, in1, in2 = results
    assert len(out1) == len(out2), f"{what}: {len(out1)} then {len(out2)} outputs [TOL-3]"
    for kind, xs, ys, ms in (("output", out1, out2, masks), ("input", in1, in2, [])):
        for i, (a, b) in enumerate(zip(xs, ys, strict=True)):
            bad = differing(a, b, ms[i] if i < len(ms) else None)
            if bad:
                k = bad[0]
                shown = (f"first at flat index {k}: {a.reshape(-1)[k]!r} then "
                         f"{b.reshape(-1)[k]!r}") if k >= 0 else (
                    f"{a.dtype}{list(a.shape)} then {b.dtype}{list(b.shape)}")
                pytest.fail(f"{what}: {kind} {i} differs between two executions of the same "
                            f"graph on the same inputs ({len(bad)} elements; {shown}) "
                            "[TOL-3, CONF-17]", pytrace=False)


@pytest.mark.spec("CONF-17", "TOL-2", "TOL-3")
@pytest.mark.parametrize("op_name", DETERMINISTIC_OPS)
def test_op_deterministic(executor: Any, op_name: str,
                          conformance_artifacts: ArtifactDir) -> None:
    op = REGISTRY[op_name]
    assert op.sample is not None
    for seed in range(SAMPLES_PER_OP):
        call = op.sample(RandomArgSource(seed))
        case = case_from_call(op, call, name=f"determinism_{op_name}")
        masks: list[np.ndarray | None] = []
        if op.unspecified is not None and len(case.graph.outputs or ()) == 1:
            masks = [np.asarray(op.unspecified(*call.operands, **call.attrs), bool)]
        results = twice(executor, case, conformance_artifacts, sub=f"seed{seed}")
        check(case, f"{op_name} (sample seed {seed})", results, masks)


@pytest.mark.spec("CONF-17", "TOL-3")
@given(case=random_graphs(max_ops=15, name="determinism_graph"))
def test_random_graph_deterministic(executor: Any, case: Case) -> None:
    ops = {n.op.name for n in case.graph.nodes}
    if any(not REGISTRY[o].deterministic for o in ops if o in REGISTRY):
        return
    if any(REGISTRY[o].unspecified is not None for o in ops if o in REGISTRY):
        return  # unspecified elements propagate through later ops: not comparable
    check(case, f"random graph (seed {case.seed}, {len(case.graph.nodes)} nodes)",
          twice(executor, case), [])
