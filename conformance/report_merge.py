"""One report from the shards of a run (CONF-121), and the JUnit XML of a report's results
(CONF-124).

``python -m conformance.report merge A.jsonl B.jsonl ... -o report.html [--junit
junit.xml] [--store-durations durations.json]`` reads the results files (``.jsonl``) that
the shards' ``--conformance-report`` wrote and builds one report: JSON next to the HTML
page, optionally JUnit XML and the per-test cost file for the next split. Its results are
the union of the shards' (a test listed by two files keeps the later file's result, and
the merge says so); its metadata is the first shard's with the shard removed from the
selection, plus ``shards`` (each file's shard, tests, run time and end) and
``missing_shards`` (the ``I/N`` no file holds). The merge is *complete* when every shard
``1..N`` is there and each finished; its run time is the longest shard's (parallel CI
jobs), ``shard_seconds`` their sum. Files of different executors are refused.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

__all__ = ["MergeError", "junit_properties", "merge", "write_junit"]

Loaded = tuple[Path, dict[str, Any], dict[str, dict[str, Any]]]


class MergeError(ValueError):
    """Results files that are not shards of one run."""


def _seconds(meta: dict[str, Any]) -> float | None:
    started, last = meta.get("started"), meta.get("last_result_at")
    if isinstance(started, int | float) and isinstance(last, int | float):
        return round(last - started, 1)
    return None


def merge(loaded: list[Loaded]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(meta, results by node id) of the merged run; MergeError if the files disagree."""
    if not loaded:
        raise MergeError("no results files given")
    executors = {str(meta.get("executor")) for _, meta, _ in loaded}
    if len(executors) > 1:
        raise MergeError("the results files test different executors: "
                         + ", ".join(sorted(executors)))
    results: dict[str, dict[str, Any]] = {}
    owner: dict[str, str] = {}
    overlapping: list[str] = []
    shards, seen = [], set()
    count = None
    for path, meta, recs in loaded:
        shard = (meta.get("selection") or {}).get("shard")
        if shard:
            index, _, n = str(shard).partition("/")
            seen.add(int(index))
            count = int(n) if count is None else count
            if int(n) != count:
                raise MergeError(f"{path}: shard {shard} of a split into {n}, the others "
                                 f"into {count}")
        for nodeid, rec in recs.items():
            if nodeid in owner:
                overlapping.append(nodeid)
            owner[nodeid] = str(path)
            results[nodeid] = rec
        shards.append({"file": str(path), "shard": shard, "tests": len(recs),
                       "collected": meta.get("collected"), "seconds": _seconds(meta),
                       "complete": bool(meta.get("complete")),
                       "exit_status": meta.get("exit_status")})
    missing = [f"{i}/{count}" for i in range(1, (count or 0) + 1) if i not in seen]
    first = dict(loaded[0][1])
    for key in ("started", "last_result_at", "complete", "exit_status", "collected"):
        first.pop(key, None)
    first["selection"] = {k: v for k, v in (first.get("selection") or {}).items()
                          if k != "shard"}
    times = [float(s["seconds"]) for s in shards if s["seconds"] is not None]
    meta = {**first, "merged_from": [s["file"] for s in shards], "shards": shards,
            "missing_shards": missing, "overlapping": sorted(set(overlapping)),
            "seconds": max(times) if times else None,
            "shard_seconds": round(sum(times), 1) if times else None,
            "complete": not missing and all(s["complete"] for s in shards)}
    return meta, results


def _diagnosis_names(rec: dict[str, Any]) -> list[str]:
    out = []
    for d in rec.get("diagnosis") or ():
        name = str(d.get("class", "?"))
        out.append(f"{name} [{d['rule']}]" if d.get("rule") else name)
    return out


def junit_properties(rec: dict[str, Any]) -> dict[str, str]:
    """The flat JUnit properties of a test's record (CONF-64)."""
    props = {"op": rec.get("op"), "dtype": rec.get("dtype"),
             "shape_class": rec.get("shape_class"), "outcome": rec.get("verdict"),
             "diagnosis": ", ".join(_diagnosis_names(rec)) or None,
             "deviations": ", ".join(map(str, rec.get("deviations") or ())) or None,
             "failing_rules": ", ".join(rec.get("failing_rules") or ()) or None,
             "repro": rec.get("repro")}
    return {k: str(v) for k, v in props.items() if v is not None}


def write_junit(results: dict[str, dict[str, Any]], meta: dict[str, Any], path: Path) -> None:
    """A JUnit XML file of ``results`` (node id -> record): one ``testcase`` per test with
    the flat properties and the whole record as the JSON property ``conformance``; the
    run's metadata is the suite's JSON property ``meta``."""
    counts = {"tests": len(results), "failures": 0, "errors": 0, "skipped": 0}
    suite = ET.Element("testsuite", name="eager-conformance")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="meta", value=json.dumps(meta, default=str))
    for nodeid, rec in sorted(results.items()):
        module, _, name = nodeid.rpartition("::")
        case = ET.SubElement(suite, "testcase", name=name or nodeid,
                             classname=module.removesuffix(".py").replace("/", "."),
                             time=str(rec.get("duration", 0)))
        cprops = ET.SubElement(case, "properties")
        for key, value in junit_properties(rec).items():
            ET.SubElement(cprops, "property", name=key, value=value)
        ET.SubElement(cprops, "property", name="conformance",
                      value=json.dumps(rec, default=str, sort_keys=True))
        verdict, message = rec.get("verdict"), str(rec.get("message") or "")
        first = message.strip().splitlines()[0] if message.strip() else str(verdict)
        if verdict in ("fail", "suite_error"):
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=first).text = message
        elif verdict in ("refused", "not_covered", "skip", "xfail"):
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=first).text = message
    suite.attrib.update({k: str(v) for k, v in counts.items()})
    root = ET.Element("testsuites")
    root.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
