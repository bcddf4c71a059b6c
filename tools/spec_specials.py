"""The special-value tables of the op pages (CONF-101), computed by the reference kernels on
the inputs of the float32 special-value sweep (``conformance/sweeps.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np

SPECIALS_BEGIN = ("<!-- special-value table (CONF-101) generated from the reference by "
                  "`python -m tools.spec`; do not edit -->")
SPECIALS_END = "<!-- end of special-value table -->"
UNSPEC = "unspec."


def fmt(v: Any) -> str:
    """One element, shortest round-trip form: NaN, inf, -inf, -0, true/false, 1.5."""
    a = np.asarray(v)
    if a.dtype == np.bool_:
        return "true" if bool(a) else "false"
    if a.dtype.kind in "iu":
        return str(int(a))
    f = float(a.astype(np.float64))
    if np.isnan(f):
        return "NaN"
    if f == 0:
        return "-0" if np.signbit(f) else "0"
    text = str(a[()])
    return text[:-2] if text.endswith(".0") else text


def _row(vals: Any, mask: Any = None) -> str:
    flat = np.asarray(vals).ravel()
    m = np.zeros(flat.shape, bool) if mask is None else np.asarray(mask).ravel()
    return ", ".join(UNSPEC if u else fmt(x) for x, u in zip(flat, m, strict=True))


def _mask(op: Any, operands: list[np.ndarray], attrs: dict[str, Any], shape: tuple[int, ...]
          ) -> np.ndarray:
    if op.unspecified is None:
        return np.zeros(shape, bool)
    m = np.asarray(op.unspecified(*operands, **attrs), bool)
    return m if m.shape == shape else np.zeros(shape, bool)


def _dtype(op: Any) -> Any:
    from interpreter.dtype import DType

    if DType.float32 in op.data_dtypes:
        return DType.float32
    return sorted(op.data_dtypes, key=lambda d: d.value)[0]


def render(op: Any) -> str | None:
    """The page section, or None where the op has no float32-style table (no sweep, or a
    data-movement op whose sweep only checks that special values pass through)."""
    with np.errstate(all="ignore"):
        return _render(op)


def _render(op: Any) -> str | None:
    from conformance.sweeps import NoSweep, sweep_case, sweep_rows
    from interpreter.dtype import DType
    from interpreter.testing.sampling import special_values

    dtype = _dtype(op)
    elementwise = op.category.startswith("elementwise")
    if not (elementwise or op.category in ("reduction", "linalg", "normalization")):
        return None
    try:
        case = sweep_case(op, dtype, DType.float32 if op.name == "cast" else None)
    except NoSweep:
        return None
    assert case.call is not None
    operands, attrs = case.call.operands, dict(case.call.attrs)
    head = [SPECIALS_BEGIN, "## Special values", ""]
    name = f"`{op.name}`"
    lines: list[str] = []
    if op.name == "cast":
        xs = special_values(DType.float32)
        targets = sorted(op.result_dtype_set, key=lambda d: d.value)
        lines += [f"{name} of each float32 special value (row) to each target (column); "
                  f"`{UNSPEC}`: unspecified (NUM-4). The suite runs these and the NUM-20 "
                  "edge values of every (source, target) pair (CONF-98).", "",
                  "| x | " + " | ".join(t.value for t in targets) + " |",
                  "| --- |" + " --- |" * len(targets)]
        cols = []
        for t in targets:
            out = np.asarray(op.apply(xs, dtype=t)[0])
            cols.append((out, _mask(op, [xs], {"dtype": t}, out.shape)))
        for i, x in enumerate(xs):
            lines.append(f"| {fmt(x)} | " + " | ".join(
                UNSPEC if m[i] else fmt(o[i]) for o, m in cols) + " |")
    elif elementwise and len(operands) == 1:
        out = np.asarray(op.apply(*operands, **attrs)[0])
        mask = _mask(op, operands, attrs, out.shape)
        shown = f" ({', '.join(f'{k}={v!r}' for k, v in attrs.items())})" if attrs else ""
        lines += [f"{name}{shown} on every {dtype.value} special value:", "",
                  "| x | result |", "| --- | --- |"]
        lines += [f"| {fmt(x)} | {UNSPEC if u else fmt(r)} |"
                  for x, r, u in zip(operands[0], out, mask, strict=True)]
    elif elementwise and len(operands) == 2:
        out = np.asarray(op.apply(*operands, **attrs)[0])
        mask = _mask(op, operands, attrs, out.shape)
        lhs = special_values(dtype) if dtype is not DType.bool else np.array([False, True])
        n = len(lhs)
        grid, gmask = out.reshape(n, n), mask.reshape(n, n)
        lines += [f"{name}(lhs, rhs) on {dtype.value} special values: lhs down, rhs across"
                  f"{'; `' + UNSPEC + '`: unspecified' if mask.any() else ''}.", "",
                  "| lhs \\ rhs | " + " | ".join(fmt(x) for x in lhs) + " |",
                  "| --- |" + " --- |" * n]
        for i, x in enumerate(lhs):
            lines.append(f"| **{fmt(x)}** | " + " | ".join(
                UNSPEC if gmask[i, j] else fmt(grid[i, j]) for j in range(n)) + " |")
    elif elementwise:
        lines += [f"{name} picks between its operands elementwise; the suite runs it on every "
                  "combination of the special values (CONF-98)."]
    else:
        rows = sweep_rows(dtype)
        width = rows.shape[1]
        first = list(range(0, len(special_values(dtype)) * width, width))
        keep = first + list(range(len(special_values(dtype)) * width, len(rows)))
        results = [np.asarray(r) for r in op.apply(*operands, **attrs)]
        masks = [_mask(op, operands, attrs, r.shape) for r in results]
        shown = ", ".join(f"{k}={v!r}" for k, v in attrs.items())
        extra = (" times the finite right operand " + _row(operands[1])
                 if len(operands) > 1 else "")
        if op.category == "normalization":  # per-column operands (gamma, beta, weight)
            extra = " with " + ", ".join(f"{n} ({_row(a)})" for n, a in
                                         zip(op.operands[1:], operands[1:], strict=True))
        lines += [f"{name}({shown}) on rows of {dtype.value}{extra}: the rows with each "
                  "special value first, then (inf, -inf), (NaN, inf), all-NaN and all-equal "
                  "rows (the suite runs each special value at each position, CONF-98).", "",
                  "| row | " + " | ".join(f"result {k}" for k in range(len(results))) + " |",
                  "| --- |" + " --- |" * len(results)]
        for i in keep:
            outs = [_row(r[i], m[i] if m.shape == r.shape else None)
                    for r, m in zip(results, masks, strict=True)]
            lines.append(f"| {_row(rows[i])} | " + " | ".join(outs) + " |")
    return "\n".join([*head, *lines, SPECIALS_END])


def replace_section(text: str, op: Any) -> str:
    """``text`` (an op page) with its special-value section up to date, placed before
    ``## Examples`` (or at the end)."""
    block = render(op)
    begin = text.find(SPECIALS_BEGIN)
    if begin >= 0:
        end = text.index(SPECIALS_END, begin) + len(SPECIALS_END)
        text = text[:begin].rstrip("\n") + "\n\n" + text[end:].lstrip("\n")
    if block is None:
        return text
    at = text.find("\n## Examples")
    if at < 0:
        return text.rstrip("\n") + "\n\n" + block + "\n"
    return text[:at].rstrip("\n") + "\n\n" + block + "\n" + text[at:]
