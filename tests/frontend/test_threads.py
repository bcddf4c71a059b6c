"""Context isolation per thread and per asyncio task; concurrent realization (REAL-2, REAL-44)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from interpreter.experimental.realization_context import EagerRealizationContext
from interpreter.experimental.tensor import Tensor, current_realization_context, realization_context
from interpreter.selection import default_executor


@pytest.mark.spec("REAL-2")
def test_current_context_is_per_thread() -> None:
    ctx = EagerRealizationContext()
    seen: list[object] = []
    with ctx, realization_context(ctx):
        th = threading.Thread(target=lambda: seen.append(current_realization_context(None)))
        th.start()
        th.join()
        assert current_realization_context() is ctx
    assert seen == [None]


@pytest.mark.spec("REAL-2")
def test_current_context_is_per_asyncio_task() -> None:
    async def worker(k: int) -> tuple[bool, float]:
        ctx = EagerRealizationContext()
        with ctx, realization_context(ctx):
            y = Tensor.from_dlpack(np.array([float(k)], np.float32)) * 2
            await asyncio.sleep(0)
            mine = current_realization_context() is ctx
            await asyncio.sleep(0)
        return mine, y.item()

    async def main() -> list[tuple[bool, float]]:
        return await asyncio.gather(*(worker(k) for k in range(5)))

    assert asyncio.run(main()) == [(True, 2.0 * k) for k in range(5)]


@pytest.mark.spec("REAL-44")
def test_eight_threads_realize_1000_graphs_each_through_one_executor() -> None:
    shared = default_executor()
    errors: list[str] = []

    def work(k: int) -> None:
        base = np.array([k, k + 0.5], np.float32)
        x = Tensor.from_dlpack(base)
        for i in range(1000):
            ctx = EagerRealizationContext()
            if ctx.executor is not shared:
                errors.append("executor differs")
                return
            with ctx, realization_context(ctx):
                y = x * 2 + i
            expected = base * 2 + np.float32(i)
            if not np.array_equal(y.to_numpy(), expected):
                errors.append(f"thread {k} step {i}: {y.to_numpy()} != {expected}")
                return

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
