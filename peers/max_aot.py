"""Ahead-of-time compilation for ``MaxCompilingExecutor`` (MAX's documented multi-graph
``Module`` and compiled-artifact ``.mef`` files).

MAX 26.7's graph compiler pays a fixed cost per compile (``JitCompileKernels``: ~11-15 s on
a loaded 2-core machine, almost independent of the graph's size), so compiling a run's
graphs one by one dominates it. MAX compiles several graphs in one compilation unit
(``max.graph.Module``, ``InferenceSession.compile``), and a compiled artifact exported with
``CompiledModel.export_mef`` loads in milliseconds (``InferenceSession.compile(path)`` +
``init_all``). Three steps:

1. ``record``: run the suite with ``--executor=peers.max_aot:MaxGraphRecorder`` and env
   ``EAGER_MAX_RECORD=DIR``: it refuses exactly what the compiling executor refuses before
   compiling (``refusal``, and MAX's graph builder via ``translate``), runs the reference
   for the rest, and appends each new lowered graph (text form, TEXT-1) to
   ``DIR/record-<pid>.jsonl``, keyed by its structural hash (TEXT-7).
2. ``python -m peers.max_aot build DIR... --store STORE``: the recorded graphs, translated
   as the executor translates them, compiled ``--group`` at a time into one ``Module`` each,
   exported to ``STORE/aot-<n>.mef``; ``STORE/manifest.json`` maps each structural hash to
   its artifact and graph name (incremental: graphs already there are skipped; a group
   that fails to compile is split until the failing graph is alone, which is then left out).
3. Run the suite with ``--executor=peers.max_engine:MaxCompilingExecutor`` and env
   ``EAGER_MAX_AOT=STORE``: a structure found in the manifest is loaded from its artifact
   (once per artifact and process); any other one is compiled on its own, as without a
   store.

``python -m peers.max_aot check STORE --sample N`` compiles N stored graphs on their own and
compares their outputs with the stored artifact's, bit for bit, on seeded inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.errors import ExecutorUnavailableError, UnsupportedGraphError
from interpreter.executor import InterpreterExecutor
from interpreter.graph.core import Graph
from interpreter.graph.lowering import lowered

__all__ = ["RECORD_ENV", "STORE_ENV", "AotStore", "MaxGraphRecorder", "build", "check",
           "read_records"]

RECORD_ENV = "EAGER_MAX_RECORD"
STORE_ENV = "EAGER_MAX_AOT"
MANIFEST = "manifest.json"


class MaxGraphRecorder(InterpreterExecutor):
    """The reference executor, refusing what ``MaxCompilingExecutor`` refuses before it
    compiles, and recording every other lowered graph once (``EAGER_MAX_RECORD=DIR``)."""

    def __init__(self) -> None:
        super().__init__()
        root = os.environ.get(RECORD_ENV)
        if not root:
            raise ExecutorUnavailableError(f"MaxGraphRecorder needs env {RECORD_ENV}=DIR")
        Path(root).mkdir(parents=True, exist_ok=True)
        self.path = Path(root) / f"record-{os.getpid()}.jsonl"
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MaxGraphRecorder({self.path.parent})"

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        from peers.max_engine import _mlir_context, refusal, translate

        low = lowered(graph)
        why = refusal(low, interpreter=False)
        if why is not None:
            raise UnsupportedGraphError(f"MaxGraphRecorder: refused: {why} [EXEC-2]")
        key = low.structural_hash()
        with self.lock:
            if key not in self.seen:
                with _mlir_context():
                    translate(low)  # MAX's builder refuses a node: refused here too
                self.seen.add(key)
                with self.path.open("a") as f:
                    f.write(json.dumps({"hash": key, "text": low.to_text()}) + "\n")
        return super().execute(graph, inputs)


def read_records(paths: Iterable[Path]) -> dict[str, str]:
    """Structural hash -> graph text of every record in ``paths`` (files or directories)."""
    out: dict[str, str] = {}
    for p in paths:
        files = sorted(p.glob("record-*.jsonl")) if p.is_dir() else [p]
        for f in files:
            for line in f.read_text().splitlines():
                if line.strip():
                    rec = json.loads(line)
                    out.setdefault(rec["hash"], rec["text"])
    return out


def _name(key: str) -> str:
    return f"s{key[:24]}"


def _load_manifest(store: Path) -> dict[str, Any]:
    path = store / MANIFEST
    if path.exists():
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    return {"graphs": {}, "left_out": {}, "artifacts": 0}


def _write_manifest(store: Path, manifest: dict[str, Any]) -> None:
    tmp = store / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=0, sort_keys=True))
    tmp.replace(store / MANIFEST)


def _compile_group(graphs: list[tuple[str, Graph]]) -> Any:
    """One compiled artifact of ``graphs`` (``(hash, lowered graph)``), or raises."""
    from max.experimental.support import _session
    from max.graph import Module

    from peers.max_engine import _mlir_context, translate

    with _mlir_context():
        module = Module()
        for key, g in graphs:
            translate(g, name=_name(key), module=module)
        return _session().compile(module)


def _compile_error(e: BaseException) -> str:
    from peers.max_engine import _compile_error as describe
    return describe(e)


def kind(g: Graph) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a graph's compile can fail on: its ops and its 16-bit float dtypes."""
    ops = sorted({n.op.name for n in g.nodes})
    dts = {v.type.dtype.name for n in g.nodes for v in (*n.operands, *n.results)}
    dts |= {v.type.dtype.name for v in g.inputs}
    return tuple(ops), tuple(sorted(dts & {"float16", "bfloat16"}))


def _groups(todo: list[tuple[str, Graph]], group: int) -> list[list[tuple[str, Graph]]]:
    """Graphs without 16-bit floats, ``group`` at a time; those with them (where MAX 26.7's
    CPU kernels can be missing: a compile error) by kind, whole kinds packed into groups of
    at most ``group // 2``, so that a failing group holds few kinds."""
    plain = [(k, g) for k, g in todo if not kind(g)[1]]
    half: dict[Any, list[tuple[str, Graph]]] = {}
    for k, g in todo:
        if kind(g)[1]:
            half.setdefault(kind(g), []).append((k, g))
    out = [plain[i:i + group] for i in range(0, len(plain), group)]
    chunk: list[tuple[str, Graph]] = []
    for _, members in sorted(half.items()):
        if chunk and len(chunk) + len(members) > group // 2:
            out.append(chunk)
            chunk = []
        chunk += members
    return [*out, chunk] if chunk else out


def _compile_chunk(chunk: list[tuple[str, Graph]], store: Path, manifest: dict[str, Any],
                   log: Any) -> None:
    """Compile ``chunk`` into one artifact. A failure: a chunk of several kinds is split in
    two halves of its kinds (of its graphs when it has one kind without 16-bit floats), and
    the parts compiled again;
    a chunk of one kind with 16-bit floats (or one graph) is left out, its graphs compiled
    one by one at run time (where each fails alone or runs)."""
    t0 = time.perf_counter()
    try:
        compiled = _compile_group(chunk)
    except Exception as e:
        why = _compile_error(e)
        kinds: dict[Any, list[tuple[str, Graph]]] = {}
        for k, g in chunk:
            kinds.setdefault(kind(g), []).append((k, g))
        log(f"build: a group of {len(chunk)} ({len(kinds)} kinds) failed to compile "
            f"({time.perf_counter() - t0:.1f} s): {why[:120]}")
        if len(chunk) == 1 or (len(kinds) == 1 and next(iter(kinds))[1]):
            for k, _ in chunk:
                manifest["left_out"][k] = why
            log(f"build: left out {len(chunk)} graphs of kind {next(iter(kinds))}")
            _write_manifest(store, manifest)
            return
        if len(kinds) > 1:  # halves of its kinds
            groups = list(kinds.values())
            parts = [[x for m in groups[:len(groups) // 2] for x in m],
                     [x for m in groups[len(groups) // 2:] for x in m]]
        else:
            parts = [chunk[:len(chunk) // 2], chunk[len(chunk) // 2:]]
        for part in parts:
            _compile_chunk(part, store, manifest, log)
        return
    n = manifest["artifacts"]
    name = f"aot-{n:04d}.mef"
    compiled.export_mef(store / name)
    manifest["artifacts"] = n + 1
    for key, _ in chunk:
        manifest["graphs"][key] = [name, _name(key)]
    _write_manifest(store, manifest)
    log(f"build: {name}: {len(chunk)} graphs in {time.perf_counter() - t0:.1f} s "
        f"({len(manifest['graphs'])} stored)")


def build(records: dict[str, str], store: Path, group: int = 48,
          log: Any = print) -> dict[str, Any]:
    """Compile the recorded graphs not yet in ``store``'s manifest, ``group`` per artifact.
    Returns the manifest (also written after every artifact)."""
    from peers.max_engine import refusal

    store.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(store)
    todo: list[tuple[str, Graph]] = []
    for key, text in sorted(records.items()):
        if key in manifest["graphs"] or key in manifest["left_out"]:
            continue
        try:
            g = lowered(Graph.parse(text))
        except Exception as e:  # pragma: no cover - a text the parser cannot read back
            manifest["left_out"][key] = f"parse: {type(e).__name__}: {e}"
            continue
        if g.structural_hash() != key:
            manifest["left_out"][key] = "the parsed text has another structural hash"
            continue
        why = refusal(g, interpreter=False)
        if why is not None:  # refused by this adapter version (recorded by an older one)
            manifest["left_out"][key] = f"refused: {why}"
            continue
        todo.append((key, g))
    log(f"build: {len(todo)} graphs to compile into {store} ({len(manifest['graphs'])} "
        "already there)")
    for chunk in _groups(todo, group):
        _compile_chunk(chunk, store, manifest, log)
    return manifest


class AotStore:
    """The compiled artifacts of ``build``: ``model(hash)`` is the loaded MAX model of a
    stored structure (its artifact loaded once, with all its models), or None."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.graphs: dict[str, list[str]] = _load_manifest(root)["graphs"]
        self.loaded: dict[str, dict[str, Any]] = {}
        self.hits = 0

    def model(self, key: str) -> Any:
        entry = self.graphs.get(key)
        if entry is None:
            return None
        file, name = entry
        models = self.loaded.get(file)
        if models is None:
            from max.experimental.support import _session
            session = _session()
            models = session.init_all(session.compile(self.root / file))
            self.loaded[file] = models
        self.hits += 1
        return models[name]


_STORES: dict[str, AotStore] = {}


def store_from_env() -> AotStore | None:
    """The store ``EAGER_MAX_AOT`` names (one per process), or None when unset."""
    root = os.environ.get(STORE_ENV)
    if not root:
        return None
    if root not in _STORES:
        _STORES[root] = AotStore(Path(root))
    return _STORES[root]


def _inputs(g: Graph, seed: int) -> list[np.ndarray]:
    """Seeded inputs for ``g``: normal floats, small integers (all 0 in a graph that
    gathers or scatters: always in range as indices), random bools."""
    rng = np.random.default_rng(seed)
    indexing = any("gather" in n.op.name or "scatter" in n.op.name for n in g.nodes)
    out = []
    for v in g.inputs:
        dt = np.dtype(v.type.dtype.to_numpy())
        shape = tuple(v.type.shape)
        if dt.kind == "b":
            a = rng.random(shape) < 0.5
        elif dt.kind in "iu" and indexing:
            a = np.zeros(shape, dt)
        elif dt.kind in "iu":
            a = rng.integers(0 if dt.kind == "u" else -5, 6, shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(np.float32).astype(dt)
        out.append(np.ascontiguousarray(a))
    return out


def check(records: dict[str, str], store: Path, sample: int, seed: int = 0,
          log: Any = print) -> tuple[int, int]:
    """Compile ``sample`` stored graphs alone and compare with the artifact's outputs, bit
    for bit (inputs: ``_inputs``). Returns (agree, differ)."""
    from peers.max_engine import MaxCompilingExecutor

    manifest = _load_manifest(store)
    keys = sorted(k for k in manifest["graphs"] if k in records)
    picked = random.Random(seed).sample(keys, min(sample, len(keys)))
    aot_env = os.environ.pop(STORE_ENV, None)
    try:
        alone = MaxCompilingExecutor()
    finally:
        if aot_env is not None:
            os.environ[STORE_ENV] = aot_env
    aot = MaxCompilingExecutor(aot=AotStore(store))
    agree = differ = 0
    for i, key in enumerate(picked):
        g = Graph.parse(records[key])
        xs = _inputs(lowered(g), seed + i)
        a = alone.execute(g, [x.copy() for x in xs])
        b = aot.execute(g, [x.copy() for x in xs])
        same = len(a) == len(b) and all(
            x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
            for x, y in zip(a, b, strict=True))
        agree += same
        differ += not same
        log(f"check {key[:12]}: {'same bytes' if same else 'DIFFERENT'} "
            f"({len(g.nodes)} nodes)")
    return agree, differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m peers.max_aot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile recorded graphs into a store")
    b.add_argument("records", nargs="+", type=Path, help="record files or directories")
    b.add_argument("--store", type=Path, required=True)
    b.add_argument("--group", type=int, default=48, help="graphs per artifact")
    c = sub.add_parser("check", help="stored artifacts against graphs compiled alone")
    c.add_argument("records", nargs="+", type=Path)
    c.add_argument("--store", type=Path, required=True)
    c.add_argument("--sample", type=int, default=20)
    c.add_argument("--seed", type=int, default=0, help="picks the sample and the inputs")
    args = parser.parse_args(argv)
    records = read_records(args.records)
    t0 = time.perf_counter()
    if args.cmd == "build":
        manifest = build(records, args.store, args.group,
                         log=lambda s: print(s, flush=True))
        print(f"build: {len(manifest['graphs'])} graphs stored, "
              f"{len(manifest['left_out'])} left out, {time.perf_counter() - t0:.0f} s")
        return 0
    agree, differ = check(records, args.store, args.sample, args.seed,
                          log=lambda s: print(s, flush=True))
    print(f"check: {agree} same bytes, {differ} different, {time.perf_counter() - t0:.0f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
