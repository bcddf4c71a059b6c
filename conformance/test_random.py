"""Random numbers (CONF-16, RNG-n): same seed -> same values, ``random_uniform``
bit-identical to the reference, and the front end's seed advancing only on success."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from conformance.artifacts import ArtifactDir
from conformance.outcomes import refused
from interpreter.dtype import DType
from interpreter.errors import UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph import ops
from interpreter.graph.core import Graph
from interpreter.registry.dtypesets import FLOATS
from interpreter.types import DeviceRef, TensorType

SEEDS = (0, 1, 42, 2**32, 2**63 + 5, 2**64 - 1)
FLOAT_DTYPES = sorted(FLOATS, key=lambda d: str(d.value))
SEED_TYPE = TensorType(DType.uint64, (1,), DeviceRef.CPU())


def random_graph(dtype: DType, shape: tuple[int, ...] = (4, 5)) -> Graph:
    """uniform and normal draws from one uint64 [1] seed input."""
    with Graph(f"random_{dtype.value}", input_types=[SEED_TYPE]) as g:
        (s,) = g.inputs
        g.output(ops.uniform(s, shape, -2.0, 3.0, dtype),  # type: ignore[arg-type]
                 ops.uniform(s, (7,), 0.0, 1.0, dtype),  # type: ignore[arg-type]
                 ops.normal(s, shape, 0.5, 2.0, dtype))  # type: ignore[arg-type]
    return g


def run(executor: Any, graph: Graph, seed: int) -> list[np.ndarray]:
    try:
        return [np.asarray(o) for o in executor.execute(graph, [np.array([seed], np.uint64)])]
    except UnsupportedGraphError as e:
        refused(f"graph {graph.name!r}: {e}")


def bits(a: np.ndarray) -> bytes:
    return a.tobytes()


@pytest.mark.spec("CONF-16", "RNG-6")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_same_seed_same_values(executor: Any, dtype: DType) -> None:
    g = random_graph(dtype)
    for seed in SEEDS[:3]:
        first, second = run(executor, g, seed), run(executor, g, seed)
        for i, (a, b) in enumerate(zip(first, second, strict=True)):
            identical = bits(a) == bits(b)
            assert identical, (
                f"seed {seed}, {dtype.value}: output {i} differs between two executions with "
                f"the same seed:\n{a!r}\n{b!r} [RNG-6]")
    a0, a1 = run(executor, g, 1)[0], run(executor, g, 2)[0]
    differ = bits(a0) != bits(a1)
    assert differ, (
        f"{dtype.value}: seeds 1 and 2 give the same uniform values {a0.ravel()[:5]}...; the "
        "seed operand is ignored [RNG-2]")


@pytest.mark.spec("CONF-16", "RNG-1", "RNG-2", "RNG-3", "RNG-4", "RNG-8")
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_uniform_bit_identical_to_reference(executor: Any, dtype: DType,
                                            conformance_artifacts: ArtifactDir) -> None:
    g = random_graph(dtype)
    for seed in SEEDS:
        # written before the executor runs: a failure leaves a repro (CONF-11)
        conformance_artifacts.write_case(g, [np.array([seed], np.uint64)], sub=f"seed{seed}")
        got = run(executor, g, seed)
        want = InterpreterExecutor().execute(random_graph(dtype), [np.array([seed], np.uint64)])
        for i in (0, 1):  # the uniform outputs
            if bits(got[i]) != bits(want[i]):
                bad = [k for k in range(want[i].size)
                       if got[i].ravel()[k:k + 1].tobytes() != want[i].ravel()[k:k + 1].tobytes()]
                k = bad[0]
                pytest.fail(
                    f"random_uniform {dtype.value}, seed {seed}: {len(bad)} of {want[i].size} "
                    f"elements differ from the reference (Philox4x32-10, RNG-1..4); first at "
                    f"flat index {k}: got {got[i].ravel()[k]!r}, expected "
                    f"{want[i].ravel()[k]!r} [RNG-8]", pytrace=False)


@pytest.mark.spec("CONF-16")
def test_front_end_seed_advances_only_on_success(executor: Any) -> None:
    """Through ``EagerRealizationContext(executor=E)``: the global seed advances by one per
    staged random op after a successful realization, and not at all when it fails."""
    try:
        import interpreter.experimental.tensor  # noqa: F401  (the front end's import order)
        from interpreter.experimental import random as R
        from interpreter.experimental.realization_context import EagerRealizationContext
        from interpreter.experimental.tensor import realization_context
    except ImportError as e:
        pytest.skip(f"the front end's random API is not importable ({e})")

    class Failing:
        def execute(self, graph: Any, inputs: Any) -> Any:
            raise RuntimeError("injected executor failure")

    old = int(R.seed().to_numpy()[0])
    try:
        R.set_seed(1234)
        try:
            with EagerRealizationContext(executor=executor) as ctx, realization_context(ctx):
                u = R.uniform((3, 4), 0.0, 1.0, DType.float32)
                n = R.normal((5,), 0.0, 1.0, DType.float32)
        except UnsupportedGraphError as e:
            refused(f"front-end random graph: {e}")
        assert int(R.seed().to_numpy()[0]) == 1236, (
            f"after two random ops the seed is {int(R.seed().to_numpy()[0])}, expected 1236 "
            "[CONF-16]")
        with Graph("front_end_uniform", input_types=[SEED_TYPE]) as g:
            g.output(ops.uniform(g.inputs[0], (3, 4), 0.0, 1.0,  # type: ignore[arg-type]
                                 DType.float32))
        want = InterpreterExecutor().execute(g, [np.array([1234], np.uint64)])[0]
        first_ok = u.to_numpy().tobytes() == want.tobytes()
        assert first_ok, (
            "the first random op of a context must draw with the global seed (1234) "
            "[CONF-16]")
        assert n.to_numpy().shape == (5,)
        with pytest.raises(RuntimeError, match="injected"):
            with EagerRealizationContext(executor=Failing()) as ctx, realization_context(ctx):
                R.uniform((2,), 0.0, 1.0, DType.float32)
        assert int(R.seed().to_numpy()[0]) == 1236, (
            "a failed realization changed the global seed [CONF-16]")
        with EagerRealizationContext(executor=executor) as ctx, realization_context(ctx):
            again = R.uniform((3, 4), 0.0, 1.0, DType.float32)
        R.set_seed(1236)
        with EagerRealizationContext(executor=InterpreterExecutor()) as ctx, \
                realization_context(ctx):
            ref = R.uniform((3, 4), 0.0, 1.0, DType.float32)
        again_ok = again.to_numpy().tobytes() == ref.to_numpy().tobytes()
        assert again_ok, (
            "after a failed realization the next draw does not use the unchanged seed")
    finally:
        R.set_seed(old)
