"""``repr`` of tensors: MAX's matrix-of-matrices format (REAL-36..38).

Scalars print plain; 1-D as ``[a b c]``; 2-D as rows on separate lines (continuation lines
indented one space); extra dimensions alternate: odd levels stack blocks horizontally
(level 1 with `` | ``, level 3 with `` : ``, then `` || ``), even levels stack them vertically
(level 2 with a blank line, level 4 with a dashed rule, then a ``=`` rule). Every cell is
right-justified to the widest cell. Floats use ``{v:.4g}``; ints and bools ``str``. Above
1000 elements only the first and last 3 entries of each longer axis are shown, with ``...``.
An unrealized tensor is never realized by ``repr``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["device_str", "format_values", "tensor_repr"]

SUMMARIZE_ABOVE = 1000
EDGE = 3
_H_SEPS = [" | ", " : ", " || "]
_V_SEPS = ["", "-", "="]


def device_str(device: Any) -> str:
    return f"Device(type={device.device_type},id={device.id})"


def tensor_repr(t: Tensor) -> str:
    if t.is_distributed:
        return (f"Tensor(shape={list(t.shape)}, dtype={t.dtype}, mapping={t.mapping})")
    suffix = f"dtype={t.dtype}, device={device_str(t.device)}"
    if not t.real:
        return f"Tensor(<unrealized>, shape={list(t.shape)}, {suffix})"
    return f"Tensor({format_values(t.storage)}, {suffix})"


def _cell(v: Any, kind: str) -> str:
    if kind == "f":
        return f"{float(v):.4g}"
    if kind == "b":
        return str(bool(v))
    return str(int(v))


def _indices(n: int, summarize: bool) -> list[int | None]:
    if summarize and n > 2 * EDGE:
        return [*range(EDGE), None, *range(n - EDGE, n)]
    return list(range(n))


def format_values(arr: np.ndarray) -> str:
    """The value part of a realized tensor's repr (REAL-36)."""
    kind = "b" if arr.dtype == np.bool_ else ("f" if arr.dtype.kind in "fV" else "i")
    if arr.ndim == 0:
        return _cell(arr[()], kind)
    if arr.size == 0:
        return "[]"
    summarize = arr.size > SUMMARIZE_ABOVE
    cells: dict[tuple[int | None, ...], str] = {}

    def collect(prefix: tuple[int | None, ...], sub: Any, depth: int) -> None:
        if depth == arr.ndim:
            cells[prefix] = _cell(sub, kind)
            return
        for i in _indices(arr.shape[depth], summarize):
            if i is not None:
                collect((*prefix, i), sub[i], depth + 1)

    collect((), arr, 0)
    width = max(len(c) for c in cells.values())
    width = max(width, 3) if summarize else width

    def block(prefix: tuple[int | None, ...], depth: int) -> list[str]:
        """Lines rendering the sub-array at ``prefix`` (``depth`` axes fixed)."""
        rest = arr.ndim - depth
        if rest == 1:
            row = ["...".rjust(width) if i is None else cells[(*prefix, i)].rjust(width)
                   for i in _indices(arr.shape[depth], summarize)]
            return [" ".join(row)]
        idx = _indices(arr.shape[depth], summarize)
        if rest == 2:
            lines = []
            for i in idx:
                if i is None:
                    lines.append("...")
                else:
                    lines.extend(block((*prefix, i), depth + 1))
            return lines
        level = rest - 2  # 1: horizontal " | ", 2: vertical blank, 3: horizontal " : ", ...
        subs = [None if i is None else block((*prefix, i), depth + 1) for i in idx]
        if level % 2 == 1:
            sep = _H_SEPS[min(level // 2, len(_H_SEPS) - 1)]
            height = max(len(s) for s in subs if s is not None)
            wide = max(len(line) for s in subs if s is not None for line in s)
            cols = [["..."] * height if s is None
                    else [line.ljust(wide) for line in s] + [" " * wide] * (height - len(s))
                    for s in subs]
            return [sep.join(c[r] for c in cols).rstrip() for r in range(height)]
        rule_char = _V_SEPS[min(level // 2 - 1, len(_V_SEPS) - 1)]
        wide = max(len(line) for s in subs if s is not None for line in s)
        rule = rule_char * wide
        out: list[str] = []
        for k, s in enumerate(subs):
            if k:
                out.append(rule)
            out.extend(["..."] if s is None else s)
        return out

    lines = block((), 0)
    return "[" + "\n".join([lines[0]] + [" " + ln if ln else "" for ln in lines[1:]]) + "]"
