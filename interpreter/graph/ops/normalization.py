"""Normalization graph-building functions (MAX ``ops`` names; spec/ops/layer_norm.md,
rms_norm.md, group_norm.md)."""

from __future__ import annotations

from typing import Any

from ..core import TensorValue
from .staging import Operand, stage1


def _float(value: Any) -> Any:
    """A Python int or float as a float (MAX's ``epsilon: float``); anything else as given,
    for the op's type rule to reject."""
    return float(value) if type(value) in (int, float) else value


def layer_norm(input: TensorValue, gamma: Operand, beta: Operand, epsilon: float
               ) -> TensorValue:
    """``(input - mean) / sqrt(var + epsilon) * gamma + beta`` over the last axis."""
    return stage1("layer_norm", (input, gamma, beta), {"epsilon": _float(epsilon)})


def rms_norm(input: TensorValue, weight: Operand, epsilon: float, weight_offset: float = 0.0,
             multiply_before_cast: bool = False) -> TensorValue:
    """``input / sqrt(mean(input**2) + epsilon) * (weight + weight_offset)`` over the last
    axis."""
    return stage1("rms_norm", (input, weight),
                  {"epsilon": _float(epsilon), "weight_offset": _float(weight_offset),
                   "multiply_before_cast": multiply_before_cast})


def group_norm(input: TensorValue, gamma: Operand, beta: Operand, num_groups: int,
               epsilon: float) -> TensorValue:
    """Normalize ``num_groups`` groups of the channels (axis 1) of each sample, then scale
    and shift each channel by ``gamma`` and ``beta``."""
    return stage1("group_norm", (input, gamma, beta),
                  {"num_groups": num_groups, "epsilon": _float(epsilon)})


__all__ = ["group_norm", "layer_norm", "rms_norm"]
