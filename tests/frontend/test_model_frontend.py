"""The model programs of ``conformance/test_models.py`` on the front end (CONF-111,
CONF-113).

Each model runs eagerly, lazily, op by op and as the staged graph with bit-identical results
on the reference; the decoder block is checked against an independent float64 numpy model
(and is causal); the front-end functions the models use take MAX 26.7's parameters and
reject bad shapes with MAX's exception type (``ValueError``) naming the violated rule. The
smoke subset keeps one model cell, which reuses one graph structure (CONF-112).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import interpreter.experimental.functional as F
from conformance import test_models as M
from interpreter.dtype import DType
from interpreter.executor import InterpreterExecutor
from interpreter.experimental.realization_context import (
    EagerRealizationContext,
    LazyRealizationContext,
)
from interpreter.experimental.tensor import Tensor, realization_context
from interpreter.selection import set_default_executor
from tests.suite.suite_runner import run_suite

CELLS = [(m, d) for m in sorted(M.MODELS) for d in M.MODEL_DTYPES]


def _named(model: M.Model, arrays: list[np.ndarray]) -> dict[str, Any]:
    return {s.name: Tensor(a) for s, a in zip(model.inputs, arrays, strict=True)}


def _bits(outs: list[Any]) -> list[bytes]:
    return [np.asarray(o).tobytes() for o in outs]


def eager(model: M.Model, arrays: list[np.ndarray]) -> list[np.ndarray]:
    ctx = EagerRealizationContext(executor=InterpreterExecutor())
    with ctx, realization_context(ctx):
        outs = model.program(_named(model, arrays))
    return [o.to_numpy() for o in outs]


def lazy(model: M.Model, arrays: list[np.ndarray]) -> list[np.ndarray]:
    ctx = LazyRealizationContext(executor=InterpreterExecutor())
    with ctx, realization_context(ctx):
        outs = model.program(_named(model, arrays))
    assert not any(o.real for o in outs)  # nothing realized at exit (REAL-11)
    return [o.to_numpy() for o in outs]


def op_by_op(model: M.Model, arrays: list[np.ndarray]) -> list[np.ndarray]:
    with set_default_executor(InterpreterExecutor()):
        outs = model.program(_named(model, arrays))
        assert all(o.real for o in outs)  # every op realized at once (REAL-49)
    return [o.to_numpy() for o in outs]


def staged(model: M.Model, dtype: DType, arrays: list[np.ndarray]) -> list[np.ndarray]:
    return list(InterpreterExecutor().execute(M.stage(model, dtype), [a.copy() for a in arrays]))


@pytest.mark.spec("CONF-113", "CONF-111", "REAL-5", "REAL-11", "REAL-14", "REAL-49")
@pytest.mark.parametrize(("name", "dtype"), CELLS, ids=[f"{m}-{d.value}" for m, d in CELLS])
def test_eager_lazy_op_by_op_and_staged_agree_bit_for_bit(name: str, dtype: DType) -> None:
    model = M.MODELS[name]
    arrays = M.draw_inputs(model, dtype, seed=7)
    want = staged(model, dtype, arrays)
    assert [w.dtype for w in want][:1] == [dtype.to_numpy()]
    for run in (eager, lazy, op_by_op):
        got = run(model, arrays)
        assert [g.shape for g in got] == [w.shape for w in want], run.__name__
        assert _bits(got) == _bits(want), f"{name} [{dtype.value}] {run.__name__} differs"


# -- the decoder against an independent float64 model --------------------------------------------
def _rms(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + M.EPS) * w


def decoder64(a: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The decoder block in float64 numpy, written from its description: logits, keys,
    values."""
    w = {k: v.astype(np.float64) for k, v in a.items()}
    x = w["embed"][a["tokens"]]
    half = M.HEAD // 2
    freqs = 10000.0 ** (-np.arange(0, M.HEAD, 2) / M.HEAD)
    ang = np.arange(M.SEQ)[:, None] * freqs[None, :]
    cos, sin = np.cos(ang), np.sin(ang)

    def heads(y: np.ndarray) -> np.ndarray:
        return y.reshape(M.SEQ, M.HEADS, M.HEAD).transpose(1, 0, 2)

    def rope(y: np.ndarray) -> np.ndarray:
        y1, y2 = y[..., :half], y[..., half:]
        return np.concatenate([y1 * cos - y2 * sin, y1 * sin + y2 * cos], axis=-1)

    h = _rms(x, w["attn_norm"])
    q, k, v = rope(heads(h @ w["wq"])), rope(heads(h @ w["wk"])), heads(h @ w["wv"])
    s = q @ k.transpose(0, 2, 1) / math.sqrt(M.HEAD)
    s = np.where(np.tril(np.ones((M.SEQ, M.SEQ), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    x = x + (p @ v).transpose(1, 0, 2).reshape(M.SEQ, M.HIDDEN) @ w["wo"]
    h = _rms(x, w["mlp_norm"])
    g = h @ w["w_gate"]
    x = x + (g / (1 + np.exp(-g)) * (h @ w["w_up"])) @ w["w_down"]
    return _rms(x, w["final_norm"]) @ w["lm_head"], k, v


@pytest.mark.spec("CONF-111")
def test_decoder_matches_a_float64_model_and_is_causal() -> None:
    model = M.DECODER
    arrays = M.draw_inputs(model, DType.float32, seed=3)
    named = {s.name: a for s, a in zip(model.inputs, arrays, strict=True)}
    logits, values, indices, hidden, k, v = staged(model, DType.float32, arrays)
    want, want_k, want_v = decoder64(named)
    scale = np.abs(want).max()
    assert np.abs(logits - want).max() <= 1e-5 * scale, np.abs(logits - want).max()
    assert np.abs(k - want_k).max() <= 1e-5 * np.abs(want_k).max()
    assert np.abs(v - want_v).max() <= 1e-5 * np.abs(want_v).max()
    assert hidden.shape == (M.SEQ, M.HIDDEN)
    order = np.argsort(-logits.astype(np.float64), axis=-1, kind="stable")[:, :M.TOP_K]
    assert (indices == order).all() and (values == np.take_along_axis(logits, order, -1)).all()
    # causal: a new last token changes the last position only
    other = [a.copy() for a in arrays]
    other[0][-1] = (other[0][-1] + 1) % M.VOCAB
    changed = staged(model, DType.float32, other)[0]
    assert changed[:-1].tobytes() == logits[:-1].tobytes()
    assert changed[-1].tobytes() != logits[-1].tobytes()


# -- MAX's signatures and errors --------------------------------------------------------------
#: (parameter, default) of MAX 26.7's ``max.experimental.functional`` for the ops the models
#: use (recorded with ``inspect.signature``; "" = required; layouts: MAX's enums, here the
#: strings of their values)
MAX_SIGNATURES: dict[str, list[tuple[str, Any]]] = {
    "gather": [("input", ""), ("indices", ""), ("axis", "")],
    "rms_norm": [("input", ""), ("weight", ""), ("epsilon", ""), ("weight_offset", 0.0),
                 ("multiply_before_cast", False)],
    "layer_norm": [("input", ""), ("gamma", ""), ("beta", ""), ("epsilon", "")],
    "group_norm": [("input", ""), ("gamma", ""), ("beta", ""), ("num_groups", ""),
                   ("epsilon", "")],
    "band_part": [("x", ""), ("num_lower", None), ("num_upper", None), ("exclude", False)],
    "softmax": [("value", ""), ("axis", -1)],
    "top_k": [("input", ""), ("k", ""), ("axis", -1)],
    "gelu": [("x", ""), ("approximate", "none")],
    "conv2d": [("x", ""), ("filter", ""), ("stride", (1, 1)), ("dilation", (1, 1)),
               ("padding", (0, 0, 0, 0)), ("groups", 1), ("bias", None),
               ("input_layout", "NHWC"), ("filter_layout", "RSCF")],
    "max_pool2d": [("input", ""), ("kernel_size", ""), ("stride", 1), ("dilation", 1),
                   ("padding", 0), ("ceil_mode", False)],
    "avg_pool2d": [("input", ""), ("kernel_size", ""), ("stride", 1), ("dilation", 1),
                   ("padding", 0), ("ceil_mode", False), ("count_boundary", True)],
    "resize": [("input", ""), ("shape", ""), ("interpolation", F.InterpolationMode.BILINEAR)],
    "resize_linear": [("input", ""), ("size", ""), ("coordinate_transform_mode", 0),
                      ("antialias", False)],
}


@pytest.mark.spec("CONF-111")
@pytest.mark.parametrize("name", sorted(MAX_SIGNATURES))
def test_front_end_functions_take_max_parameters(name: str) -> None:
    params = inspect.signature(getattr(F, name)).parameters.values()
    got = [(p.name, "" if p.default is inspect.Parameter.empty else p.default) for p in params]
    assert got == MAX_SIGNATURES[name]


def _t(*shape: int) -> Tensor:
    return Tensor(np.zeros(shape, np.float32))


#: bad calls: what MAX 26.7 raises a ValueError for (checked on MAX), and our rule
BAD_SHAPES: dict[str, tuple[Callable[[], Any], str]] = {
    "layer_norm gamma": (lambda: F.layer_norm(_t(2, 4), _t(3), _t(4), 1e-5), "layer_norm.C2"),
    "rms_norm weight": (lambda: F.rms_norm(_t(2, 4), _t(3), 1e-5), "rms_norm.C2"),
    "group_norm groups": (lambda: F.group_norm(_t(2, 6, 3), _t(6), _t(6), 4, 1e-5),
                          "group_norm.C3"),
    "conv2d channels": (lambda: F.conv2d(_t(1, 5, 5, 3), _t(3, 3, 2, 4)), "conv2d.C3"),
    "conv2d rank": (lambda: F.conv2d(_t(5, 5, 3), _t(3, 3, 3, 4)), "conv2d.C1"),
    "band_part rank": (lambda: F.band_part(_t(4), None, 0), "band_part.C1"),
    "max_pool2d rank": (lambda: F.max_pool2d(_t(4, 4, 3), (2, 2)), "max_pool2d.C1"),
    "avg_pool2d window": (lambda: F.avg_pool2d(_t(1, 2, 2, 3), (3, 3)), "avg_pool2d.C3"),
    "resize rank": (lambda: F.resize(_t(4, 4), [8, 8]), "resize_linear.C1"),
    "top_k k": (lambda: F.top_k(_t(2, 4), 5), "top_k.C1"),
    "gelu form": (lambda: F.gelu(_t(2), approximate="fast"), "gelu.C1"),
}


@pytest.mark.spec("layer_norm.C2", "rms_norm.C2", "group_norm.C3", "conv2d.C1", "conv2d.C3",
                  "band_part.C1", "max_pool2d.C1", "avg_pool2d.C3", "resize_linear.C1",
                  "top_k.C1", "gelu.C1")
@pytest.mark.parametrize("case", sorted(BAD_SHAPES))
def test_bad_shapes_raise_a_value_error_naming_the_rule(case: str) -> None:
    call, rule = BAD_SHAPES[case]
    with pytest.raises(ValueError, match=rf"\[{rule}\]"):  # MAX raises ValueError too
        call()


@pytest.mark.spec("CONF-112", "CONF-35")
def test_smoke_keeps_the_decoder_float32_cell_on_one_structure(tmp_path: Path) -> None:
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor", ["test_models.py"],
                    None, "--conformance-smoke")
    assert run.selected == ["conformance/test_models.py::test_model[decoder-float32]"]
    assert run.code == pytest.ExitCode.OK, run.outcomes
    (meta,) = run.meta.values()
    assert meta["structures"] == 1 and meta["value_checks"] == 2 * M.INPUT_SETS, meta
