"""``--conformance-shard=I/N``: one of N deterministic parts of the run (CONF-120, CONF-121).

The split is a pure function of the selected node ids (after ``-k``/``-m`` and the smoke
subset) and a recorded per-test cost file, as pytest-split does: the tests are taken in
decreasing cost (ties by node id) and each goes to the shard with the least total so far
(the lowest index on a tie). A test the file does not list costs the mean of those it
lists; without a file every test costs 1, which deals the sorted node ids round-robin. So
every shard of a CI matrix, given the same selection and file, computes the same split,
and the N shards together run every selected test exactly once.

``--conformance-store-durations=PATH`` writes (or updates) such a file: node id -> seconds
(setup + call + teardown) of every test this run finished; ``python -m conformance.report
merge ... --store-durations PATH`` writes it from the shards' results files.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

__all__ = ["assign", "load_durations", "parse_shard", "record", "select", "write_durations"]

_TIMES = pytest.StashKey[dict[str, float]]()


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``1 <= I <= N``; a ValueError says what is wrong."""
    head, sep, tail = text.partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index, count = 0, 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise ValueError(f"--conformance-shard={text}: expected I/N with 1 <= I <= N "
                         "(e.g. 2/4, the second of four shards)")
    return index, count


def load_durations(path: Path) -> dict[str, float]:
    """node id -> seconds from a durations file (a JSON object); ValueError if malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"--conformance-durations={path}: {e}") from None
    if not isinstance(data, dict) or not all(
            isinstance(v, int | float) for v in data.values()):
        raise ValueError(f"--conformance-durations={path}: expected a JSON object of "
                         "node id -> seconds")
    return {str(k): float(v) for k, v in data.items()}


def assign(nodeids: Iterable[str], count: int,
           durations: Mapping[str, float] | None = None) -> dict[str, int]:
    """node id -> shard index (0-based) for ``count`` shards, balanced by ``durations``."""
    ids = sorted(set(nodeids))
    known = [durations[n] for n in ids if durations and n in durations]
    default = sum(known) / len(known) if known else 1.0
    cost = {n: (durations or {}).get(n, default) for n in ids}
    totals = [0.0] * count
    out: dict[str, int] = {}
    for n in sorted(ids, key=lambda n: (-cost[n], n)):
        shard = min(range(count), key=lambda i: (totals[i], i))
        out[n] = shard
        totals[shard] += cost[n]
    return out


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this run's shard of ``items`` (the rest is reported deselected)."""
    text = config.getoption("conformance_shard", None)
    if not text:
        return
    try:
        index, count = parse_shard(text)
        path = config.getoption("conformance_durations", None)
        durations = load_durations(Path(config.invocation_params.dir) / path) if path else None
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    shard = assign((it.nodeid for it in items), count, durations)
    keep = [it for it in items if shard[it.nodeid] == index - 1]
    dropped = [it for it in items if shard[it.nodeid] != index - 1]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def record(config: pytest.Config, report: pytest.TestReport) -> None:
    """Add a report's duration to its test's (for ``--conformance-store-durations``)."""
    if config.getoption("conformance_store_durations", None):
        times = config.stash.setdefault(_TIMES, {})
        times[report.nodeid] = times.get(report.nodeid, 0.0) + float(report.duration)


def write_durations(path: Path, times: Mapping[str, float]) -> None:
    """Update the durations file at ``path`` with ``times`` (other entries are kept)."""
    old: dict[str, float] = {}
    if path.is_file():
        try:
            old = load_durations(path)
        except ValueError:
            old = {}
    old.update({k: round(v, 4) for k, v in times.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(sorted(old.items())), indent=1) + "\n", encoding="utf-8")


def finish(config: pytest.Config) -> None:
    """At the session's end, on the controller: write the durations file."""
    path = config.getoption("conformance_store_durations", None)
    if path and not hasattr(config, "workerinput"):
        times: dict[str, float] = config.stash.get(_TIMES, {})
        write_durations(Path(config.invocation_params.dir) / path, times)
