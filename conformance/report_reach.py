"""The value-reach matrix of the HTML report (CONF-104): op x dtype x operand rows, one
column per value class and shape class, one folded table per op category (opened where
a class is missing), with a legend and the summary counts. Inline CSS, no scripts."""

from __future__ import annotations

import html
import re
from collections import defaultdict
from typing import Any

from .report_html import dtype_order, short_dtype
from .value_classes import INFORMATIONAL

__all__ = ["HEADS", "section"]

#: Column heads (the full class name is the header's tooltip).
HEADS = {"nan": "NaN", "nan_payload": "NaN*", "+inf": "+∞", "-inf": "−∞", "+0": "+0",
         "-0": "−0", "+subnormal": "+sub", "-subnormal": "−sub", "+max": "+max",
         "-max": "−max", "min_normal": "min norm", "tie": "tie .5", "int_min": "int min",
         "int_max": "int max", "zero": "0", "false": "F", "true": "T", "rank0": "rank 0",
         "empty": "empty", "axis>=8": "≥8", "axis>=64": "≥64", "axis>4096": ">4096"}
_TITLES = {"nan_payload": "NaN with a payload or sign other than the default NaN",
           "min_normal": "smallest normal (either sign)", "tie": "exact tie x.5",
           "axis>=8": "an axis of size >= 8", "axis>=64": "an axis of size >= 64",
           "axis>4096": "an axis of size > 4096", "rank0": "rank 0", "empty": "size 0"}
_CSS = """<style>
table.reach { border-collapse: collapse; font-size: 12px; margin: 4px 0 10px; }
table.reach th, table.reach td { border: 1px solid #e0e0e0; padding: 1px 3px; }
table.reach thead th { background: #eceff1; font-weight: 600; text-align: center;
  white-space: nowrap; font-size: 11px; }
table.reach th.l { text-align: left; white-space: nowrap; background: #f5f5f5; }
table.reach tr.first > * { border-top: 2px solid #78909c; }
table.reach tr.next > * { border-top: 1px solid #90a4ae; }
table.reach td { min-width: 24px; text-align: center; }
table.reach td.met, .legend span.met { background: #c8e6c9; color: #1b5e20; }
table.reach td.gap, .legend span.gap { background: #ef9a9a; color: #b71c1c; font-weight: bold; }
table.reach td.info, .legend span.info { background: #eceff1; color: #546e7a; }
table.reach td.na, .legend span.na { background: #fafafa; color: #e0e0e0; }
table.reach td.k { text-align: left; color: #546e7a; font-size: 11px; white-space: nowrap; }
table.reach th.sep, table.reach td.sep { border-left: 2px solid #90a4ae; }
details.reach > summary { cursor: pointer; font-weight: 600; margin: 6px 0; }
.legend span.c { display: inline-block; width: 22px; text-align: center; margin: 0 3px 0 10px;
  border: 1px solid #e0e0e0; }
</style>"""
_MARK = {"met": "●", "gap": "✕", "info": "●", "na": ""}


def _kinds(kinds: list[str]) -> str:
    """``index:0, index:3`` shown once as ``index:N``."""
    return ", ".join(dict.fromkeys(re.sub(r":\d+$", ":N", k) for k in kinds)) or "?"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _cell(cls: str, row: dict[str, Any], sep: bool) -> str:
    """One cell, kept short (a full run has ~25000): its column names the class; only a
    gap carries a tooltip."""
    met, accepts = cls in row["met"], cls in row["accepts"] and cls not in INFORMATIONAL
    state = "met" if met and accepts else "gap" if accepts else "info" if met else "na"
    title = (f' title="{_e(row["op"])} {_e(row["dtype"])} {_e(row["operand"])}: {_e(cls)} '
             f'accepted, never met"' if state == "gap" else "")
    return f'<td class="{state}{" sep" if sep else ""}"{title}>{_MARK[state]}</td>'


def _table(rows: list[dict[str, Any]], classes: list[str], first_shape: str) -> str:
    head = "".join(f'<th class="{"sep" if c == first_shape else ""}" '
                   f'title="{_e(_TITLES.get(c, c))}">{_e(HEADS.get(c, c))}</th>'
                   for c in classes)
    body, last = [], ("", "")
    for r in rows:
        first, new_operand = r["op"] != last[0], (r["op"], r["operand"]) != last
        last = (r["op"], r["operand"])
        gaps, tr = len(r["gaps"]), "first" if first else "next" if new_operand else ""
        body.append(
            f'<tr class="{tr}" data-op="{_e(r["op"])}" '
            f'data-dtype="{_e(r["dtype"])}" data-operand="{_e(r["operand"])}" '
            f'data-gaps="{gaps}"><th class="l op">{_e(r["op"]) if first else ""}</th>'
            f'<th class="l" title="{_e(r["dtype"])}">{_e(short_dtype(r["dtype"]))}</th>'
            f'<th class="l">{_e(r["operand"]) if new_operand else ""}</th>'
            f'<td class="k" title="{_e(", ".join(r["kinds"]))}">{_e(_kinds(r["kinds"]))}</td>'
            f'{"".join(_cell(c, r, c == first_shape) for c in classes)}</tr>')
    return (f'<table class="reach"><thead><tr><th>op</th><th>dtype</th><th>operand</th>'
            f'<th>kinds</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>')


def section(report: dict[str, Any]) -> str:
    """The ``value-reach`` section of the page."""
    reach = report.get("value_reach") or {}
    rows: list[dict[str, Any]] = list(reach.get("rows") or [])
    classes: list[str] = list(reach.get("classes") or HEADS)
    first_shape = next((c for c in classes if c in ("rank0",)), "")
    category = {o["op"]: o.get("category") or "-" for o in report.get("ops") or []}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["op"], r["operand"], dtype_order(r["dtype"]))):
        groups[category.get(r["op"], "-")].append(r)
    applicable = sum(len(set(r["accepts"]) - INFORMATIONAL) for r in rows)
    n_gaps = sum(len(r["gaps"]) for r in rows)
    gap_rows = sum(1 for r in rows if r["gaps"])
    parts = []
    for cat, items in sorted(groups.items()):
        g = sum(len(r["gaps"]) for r in items)
        ops = len({r["op"] for r in items})
        parts.append(f'<details class="reach" data-category="{_e(cat)}"{" open" if g else ""}>'
                     f'<summary>{_e(cat)}: {ops} ops, {len(items)} rows, '
                     f'{g} gaps</summary>{_table(items, classes, first_shape)}</details>')
    legend = "".join(f'<span class="c {s}">{_MARK[s] or "&nbsp;"}</span>{_e(t)}'
                     for s, t in (("met", "met"), ("gap", "accepted, never met (gap)"),
                                  ("info", "met, not required"), ("na", "not applicable")))
    listed = "".join(f'<li data-op="{_e(r["op"])}"><code>{_e(r["op"])} {_e(r["dtype"])} '
                     f'{_e(r["operand"])}</code>: {_e(", ".join(r["gaps"]))}</li>'
                     for cat in sorted(groups) for r in groups[cat] if r["gaps"])
    gap_list = (f'<details class="reach"><summary>every gap ({n_gaps} in {gap_rows} rows)'
                f'</summary><ul class="reasons">{listed}</ul></details>' if listed else "")
    return (f'{_CSS}<section id="value-reach"><h2>value reach ({n_gaps} gaps)</h2>'
            f'<p class="note">Per op &times; data dtype &times; operand: the value classes '
            f'the judged one-op cases of this run gave that operand (CONF-102), against the '
            f'classes it accepts (CONF-103): every class of its dtype, or the in-range '
            f'integers for an operand sampled as <code>index:N</code>/<code>uindex:N</code> '
            f'(<i>kinds</i>: how the sampler drew it). NaN* and the shape classes are '
            f'recorded, never required. <b>{len(rows)}</b> rows; <b>{applicable - n_gaps}'
            f'</b> of <b>{applicable}</b> accepted classes met; <b>{n_gaps}</b> gaps in '
            f'<b>{gap_rows}</b> rows. Categories with gaps start open.</p>'
            f'<p class="note legend">{legend}</p>{gap_list}'
            f'{"".join(parts) or "<p>no one-op case was judged</p>"}</section>')
