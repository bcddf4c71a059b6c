"""Counts per op x dtype and per verdict from a conformance ``.jsonl`` (incremental report):
``python peers/reports/summarize.py peers/reports/max-interpreter.jsonl``. Markdown out."""

from __future__ import annotations

import collections
import json
import sys


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path) if line.strip()]
    tests = [r for r in rows if r.get("kind") == "test"]
    verdicts = collections.Counter(r["verdict"] for r in tests)
    print(f"{len(tests)} tests: " + ", ".join(f"{v} {k}" for k, v in verdicts.most_common()))
    print()
    cells: dict[tuple[str, str], collections.Counter[str]] = collections.defaultdict(
        collections.Counter)
    for r in tests:
        cells[(r.get("op") or "(no op)", r.get("dtype") or "-")][r["verdict"]] += 1
    print("| op | dtype | pass | fail | refused | deviation | other |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (op, dt), c in sorted(cells.items()):
        other = sum(v for k, v in c.items()
                    if k not in ("pass", "fail", "refused", "deviation"))
        print(f"| {op} | {dt} | {c['pass']} | {c['fail']} | {c['refused']} | "
              f"{c['deviation']} | {other} |")
    print()
    print("Failures:")
    for r in tests:
        if r["verdict"] == "fail":
            lines = [x for x in r.get("message", "").splitlines() if x.strip()]
            diag = ",".join(d["class"] for d in r.get("diagnosis") or []) or "-"
            head = lines[1].strip() if len(lines) > 1 else (lines[0] if lines else "")
            print(f"- `{r['nodeid'].split('::')[-1]}` [{diag}]: {head[:150]}")


if __name__ == "__main__":
    main(sys.argv[1])
