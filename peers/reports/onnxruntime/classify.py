"""The ONNX Runtime run's failures by divergence class (peers/reports/onnxruntime.md):
``python peers/reports/onnxruntime/classify.py peers/reports/onnxruntime.json`` (or the
run's ``.jsonl`` files) prints each class with its tests. A failure goes to the first class
whose rule matches its op, dtype, test id and message; anything unmatched is listed as
``unclassified`` (none in the committed run)."""

from __future__ import annotations

import collections
import json
import re
import sys
from collections.abc import Callable

#: (op, dtype, test id, message + diagnosis) -> matches
Rule = Callable[[str, str, str, str], bool]


def _ops(*names: str) -> Rule:
    return lambda op, dt, tid, msg: op in names


def _when(ops: tuple[str, ...], pattern: str) -> Rule:
    return lambda op, dt, tid, msg: op in ops and re.search(pattern, msg) is not None


def _test(pattern: str) -> Rule:
    return lambda op, dt, tid, msg: re.search(pattern, tid) is not None


INTS = r"int8|int16|int32|int64|uint8|uint16|uint32|uint64"
#: class name -> rule, in order (first match wins)
CLASSES: dict[str, Rule] = {
    "suite-flaky-budget": lambda op, dt, tid, msg: "FlakyFailure" in msg,
    "matmul-unsigned-k0": lambda op, dt, tid, msg: "MutableData" in msg,
    # GroupNormalization's function body (its Reshape) fails on zero-size inputs; checked
    # for the random graph too (its one group_norm has a (1, 0, 5) input)
    "group-norm-empty": lambda op, dt, tid, msg: "Reshape node" in msg,
    # ORT's basic optimizations drop an Expand of a size-1 axis to 0: the stale (1,)-shaped
    # value then meets a preallocated output ("re-use buffer") or, as an integer divisor
    # that the adapter's guard never saw (the operand is empty), divides by zero; each case
    # runs with ORT_DISABLE_ALL
    "expand-to-empty": lambda op, dt, tid, msg: ("re-use buffer" in msg
                                                 or "Integer division by zero" in msg
                                                 or "Integer modulo by zero" in msg),
    "cast-double-rounding": lambda op, dt, tid, msg: "'class': 'double-rounding'" in msg,
    "f16-excess-precision": _test(r"test_hazard\[(fma|chain)"),
    "f16-nan-payload": lambda op, dt, tid, msg: "NaN elements have other bytes" in msg,
    "where-signed-zero": _ops("select"),
    "max-min-signed-zero": _ops("max", "min"),
    "reduce-max-min-nan": _ops("reduce_max", "reduce_min"),
    "argmax-argmin-nan": _ops("argmax", "argmin"),
    "max-pool-nan": _ops("max_pool2d"),
    "scatter-max-min-nan": _ops("scatter_max", "scatter_min", "scatter_nd_max",
                                "scatter_nd_min"),
    "relu-nan-negzero": _ops("relu"),
    "int-reduction-saturates": _ops("reduce_sum", "reduce_prod", "gather_sum", "cumsum"),
    "int-pow-overflow": _ops("pow"),
    "gelu-neg-inf": _when(("gelu",), r"-0\.0 -> nan"),
    "gelu-accuracy": _ops("gelu"),
    "sigmoid-negative-accuracy": _ops("sigmoid"),
    "transcendental-ulp": _ops("tanh", "log", "sin", "cos", "exp", "erf", "atanh"),
    "cast-float8-negzero-bool": _when(("cast",), r"cast \[bool\]"),
    "cast-float8-overflow": _when(("cast",), r"float8"),
    "logsoftmax-inf": _ops("logsoftmax", "softmax"),
    "range-accumulates": _ops("range"),
    "reduce-mean-empty": _ops("reduce_mean"),
    "avg-pool-empty-window": _when(("avg_pool2d",), r"nan -> 0\.0"),
    "avg-pool-ceil-divisor": _ops("avg_pool2d"),
    "resize-linear-zero-weight-tap": _ops("resize_linear"),
    "bicubic-reference-overflow": _ops("resize_bicubic"),
}


def _op_of(row: dict[str, object], msg: str) -> str:
    """The test's op; for a graph, the op named in the failing output."""
    op = str(row.get("op") or "")
    if not op or op == "None":
        m = re.search(r"output \d+ \((\w+) \[", msg)
        op = m.group(1) if m else ""
    return op


def _failures(path: str) -> list[dict[str, object]]:
    """The failing tests of a report (``.json``: its ``failures``; ``.jsonl``: the rows)."""
    if path.endswith(".json"):
        rows: list[dict[str, object]] = json.load(open(path))["failures"]
        return [dict(r, nodeid=r["test"], diagnosis=str(r.get("diagnosis", "")))
                for r in rows]
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return [r for r in rows
            if r.get("kind") == "test" and r.get("verdict") in ("fail", "suite_error")]


def classify(paths: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = collections.defaultdict(list)
    for path in paths:
        for row in _failures(path):
            msg = f"{row.get('message', '')}\ndiagnosis: {row.get('diagnosis', '')}"
            tid = str(row["nodeid"]).split("::")[-1]
            op, dt = _op_of(row, msg), str(row.get("dtype") or "")
            name = next((c for c, rule in CLASSES.items() if rule(op, dt, tid, msg)),
                        "unclassified")
            out[name].append(tid)
    return out


def main(paths: list[str]) -> None:
    found = classify(paths)
    total = sum(len(v) for v in found.values())
    print(f"{total} failing tests in {len(found)} classes")
    for name in [*CLASSES, "unclassified"]:
        if name in found:
            tests = found[name]
            print(f"\n{name}: {len(tests)}")
            for t in sorted(tests):
                print(f"  {t}")


if __name__ == "__main__":
    main(sys.argv[1:])
