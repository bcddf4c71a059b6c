"""The global seed and random tensors (REAL-30..34)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from interpreter.dtype import DType
from interpreter.experimental import random
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import Tensor, realization_context
from tests.frontend.helpers import Failing


@pytest.mark.spec("REAL-30")
def test_seed_is_an_integral_cpu_tensor_of_shape_1() -> None:
    s = random.seed()
    assert s.real and s.dtype is DType.uint64 and s.dtype.is_integral() and s.shape == (1,)
    random.set_seed(123)
    assert s.item() == 123 and random.seed() is s


@pytest.mark.spec("REAL-34")
def test_same_seed_same_values_and_successive_draws_differ() -> None:
    random.set_seed(42)
    a = random.uniform([16]).to_numpy()
    random.set_seed(42)
    b = random.uniform([16]).to_numpy()
    random.set_seed(123)
    c = random.uniform([16]).to_numpy()
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    d = random.normal([20]).to_numpy()
    e = random.normal([20]).to_numpy()
    assert not np.array_equal(d, e)


@pytest.mark.spec("REAL-31", "REAL-33")
def test_each_staged_random_op_advances_the_seed_even_if_dropped() -> None:
    random.set_seed(10)
    with EagerRealizationContext() as ctx, realization_context(ctx):
        a = random.uniform([2])
        b = random.uniform([2])
        del a
        gc.collect()
        assert random.seed().item() == 10  # not written back yet
    assert b.real and random.seed().item() == 12
    with EagerRealizationContext() as ctx, realization_context(ctx):
        _ = Tensor.ones([1]) + 1
    assert random.seed().item() == 12  # no random ops: unchanged


@pytest.mark.spec("REAL-32")
def test_set_seed_inside_an_open_context_is_used() -> None:
    with EagerRealizationContext() as ctx, realization_context(ctx):
        random.set_seed(42)
        a = random.normal([8])
    with EagerRealizationContext() as ctx, realization_context(ctx):
        random.set_seed(42)
        b = random.normal([8])
    assert np.array_equal(a.to_numpy(), b.to_numpy())


@pytest.mark.spec("REAL-34")
def test_lazy_contexts_consume_seeds_in_realization_order() -> None:
    random.set_seed(7)
    first = random.uniform([4]).to_numpy()
    random.set_seed(7)
    ctx = LazyRealizationContext()
    with ctx, realization_context(ctx):
        lazy_draw = random.uniform([4])
    random.set_seed(7)  # read when the lazy context realizes
    assert np.array_equal(lazy_draw.to_numpy(), first)


@pytest.mark.spec("REAL-34")
@pytest.mark.parametrize("dtype", [DType.float32, DType.float64])
def test_shapes_dtypes_and_statistics(dtype: DType) -> None:
    random.set_seed(1)
    n = random.normal([100, 100], mean=5.0, std=2.0, dtype=dtype)
    assert n.shape == (100, 100) and n.dtype is dtype
    values = n.to_numpy().astype(np.float64)
    assert abs(values.mean() - 5.0) < 0.1 and abs(values.std() - 2.0) < 0.1
    u = random.uniform([1000], low=-3.0, high=-1.0, dtype=dtype).to_numpy()
    assert u.dtype == dtype.to_numpy() and u.min() >= -3.0 and u.max() < -1.0
    assert u.max() - u.min() > 1.9


@pytest.mark.spec("REAL-33", "REAL-39")
def test_seed_unchanged_when_execution_fails() -> None:
    random.set_seed(99)
    ctx = EagerRealizationContext(Failing(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"), ctx, realization_context(ctx):
        random.uniform([3])
    assert random.seed().item() == 99
