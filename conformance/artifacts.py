"""Repro artifacts (CONF-11): one directory per failing test under ``--conformance-artifacts``.

Layout of ``<DIR>/<test id>/``::

    graph.txt      the graph in text form (Graph.to_text; Graph.parse reads it back)
    graph.device.txt  for an executor on a device (CONF-76): the graph as it was handed
                   over (graph.txt on ``devices[0]``; repro.py places it the same way)
    inputs.npz     its inputs in graph-input order (in0, in1, ...)
    repro.py       standalone replay: executor vs reference, exits 1 while they disagree
    expected.npz   reference outputs (out<i>) and final buffer contents (buf<i>)
    actual.npz     the executor's outputs and buffer contents
    failure.txt    the failure message
    divergence/    for multi-op graphs: the prefix graph ending at the first diverging
                   node, with its own inputs.npz and repro.py

``graph.txt``, ``inputs.npz`` and ``repro.py`` are written *before* the executor runs, so a
crash leaves a runnable repro; a passing test removes its directory. Arrays of the ML dtypes
(bfloat16, float8) are stored as their bits with the dtype in the key (``in0__bfloat16``), so
the files need only numpy to load: use :func:`load_arrays`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from interpreter.dtype import DType
from interpreter.graph.core import Graph
from interpreter.types import BufferType

__all__ = [
    "ArtifactDir",
    "case_repro",
    "load_arrays",
    "load_case",
    "replay",
    "repro_script",
    "safe_name",
    "save_arrays",
]

#: dtypes numpy cannot load from .npy without ml_dtypes: stored as bits
_BITS_ONLY = frozenset({DType.bfloat16, DType.float8_e4m3fn, DType.float8_e5m2})
_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")

_SCRIPT = '''#!/usr/bin/env python
"""{doc}
"""
import sys
from pathlib import Path

EXECUTOR = {spec!r}
WORKDIR = {workdir!r}  # where pytest ran: the executor's module is importable from there
# the folders the executor's module and the suite were imported from (CONF-135): no
# PYTHONPATH to set by hand
IMPORT_PATHS = {paths!r}
for _path in [*IMPORT_PATHS, WORKDIR]:
    if _path not in sys.path:
        sys.path.append(_path)

from {module} import {function}  # noqa: E402

if __name__ == "__main__":
    spec = EXECUTOR
    for arg in sys.argv[1:]:
        if arg.startswith("--executor="):
            spec = arg.split("=", 1)[1]
    here = Path(__file__).resolve().parent
    sys.exit({function}({args}))
'''


def repro_script(doc: str, replayer: str, args: str, spec: str, workdir: str) -> str:
    """The text of a ``repro.py``: ``doc`` as its docstring; it calls ``replayer``
    (``module:function``) with ``args`` (Python source; ``here`` is the script's folder and
    ``spec`` the executor, ``--executor=`` overriding the stored one) and exits with what
    that returns."""
    module, function = replayer.split(":")
    return _SCRIPT.format(doc=doc.rstrip("\n"), spec=spec, workdir=workdir, module=module,
                          function=function, args=args, paths=import_paths(spec))


def import_paths(spec: str) -> list[str]:
    """The folder ``spec``'s module (``module:attr``, already imported) was imported from,
    then the one holding this suite's package (CONF-135)."""
    paths = []
    module_name = spec.partition(":")[0] if ":" in spec else ""
    file = getattr(sys.modules.get(module_name), "__file__", None)
    if file:
        where = Path(file).resolve()
        depth = module_name.count(".") + (2 if where.name == "__init__.py" else 1)
        paths.append(str(where.parents[depth - 1]))
    suite_root = str(Path(__file__).resolve().parents[1])
    return paths + ([suite_root] if suite_root not in paths else [])


def case_repro(test_id: str, rel: Path | str, spec: str, workdir: str) -> str:
    """The ``repro.py`` of one stored case (CONF-11)."""
    doc = (f"Replay of a conformance failure: {test_id}\n\n"
           "Needs only the eager-conformance package, numpy and the executor's module:\n"
           f"    python {rel}/repro.py [--executor=module:Class]\n"
           "Exits 1 while the executor disagrees with the reference (or raises), 0 once it "
           "agrees;\n2 when it refuses the graph, 3 on an error of the suite itself (please "
           "report those).")
    return repro_script(doc, "conformance.artifacts:replay", "here, spec", spec, workdir)


def safe_name(test_id: str) -> str:
    """A directory name for a pytest node id."""
    name = test_id.split("::", 1)[-1] if "::" in test_id else test_id
    prefix = Path(test_id.split("::", 1)[0]).stem if "::" in test_id else ""
    out = _SAFE.sub("_", f"{prefix}.{name}" if prefix else name).strip("_.")
    return out[:150] or "test"


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``np.savez`` that keeps the ML dtypes (stored as bits, dtype in the key)."""
    payload: dict[str, np.ndarray] = {}
    for key, a in arrays.items():
        a = np.asarray(a)
        try:
            d = DType.from_numpy(a.dtype)
        except TypeError:
            payload[key] = a
            continue
        if d in _BITS_ONLY:  # exact shape, rank 0 included (CONF-23)
            c = a if a.flags.c_contiguous else np.array(a, order="C")
            payload[f"{key}__{d.value}"] = c.view(f"u{a.dtype.itemsize}").reshape(a.shape)
        else:
            payload[key] = a
    with open(path, "wb") as f:
        np.savez(f, **payload)  # type: ignore[arg-type]


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Inverse of :func:`save_arrays`."""
    out: dict[str, np.ndarray] = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            a = data[key]
            name, sep, dtype = key.partition("__")
            out[name] = a.view(DType(dtype).to_numpy()) if sep else a
    return out


class ArtifactDir:
    """The artifact directory of one test (created lazily)."""

    def __init__(self, root: Path | str, test_id: str, executor_spec: str,
                 workdir: Path | str | None = None,
                 placed: Callable[[Graph], Graph] | None = None) -> None:
        self.root = Path(root)
        self.placed = placed  # a device executor's placement of a graph (CONF-76)
        self.workdir = str(Path(workdir or Path.cwd()).resolve())
        self.test_id = test_id
        self.spec = executor_spec
        self.path = self.root / safe_name(test_id)
        self._written: set[Path] = set()   # dirs whose repro.py is written
        self._results: set[Path] = set()   # dirs holding results of an earlier example
        self._staged: tuple[Graph, list[np.ndarray]] | None = None  # stage_case's

    def stage_case(self, graph: Graph, inputs: Sequence[np.ndarray]) -> Path:
        """``write_case`` deferred (CONF-11): the inputs are copied now, before the executor
        runs, and the case is written only when the test needs it (``flush``, or any
        result written); a passing example writes no file (about 3 ms a case). Returns the
        directory the case will be written to."""
        self._staged = (graph, [np.array(a, copy=True) for a in inputs])
        return self.path

    def flush(self) -> None:
        """Write the staged case, if any."""
        staged, self._staged = self._staged, None
        if staged is not None:
            self.write_case(*staged)

    def write_case(self, graph: Graph, inputs: Sequence[np.ndarray],
                   sub: str | None = None, note: str = "") -> Path:
        """graph.txt + inputs.npz + repro.py (before running the executor)."""
        if sub:
            self.flush()  # the main case first, as if it had been written before the call
        else:
            self._staged = None  # superseded by this case
        d = self.path / sub if sub else self.path
        d.mkdir(parents=True, exist_ok=True)  # also when a minimiser removed it since
        if d in self._results:
            for stale in ("expected.npz", "actual.npz", "failure.txt", "meta.json"):
                (d / stale).unlink(missing_ok=True)
            self._results.discard(d)
        try:
            text = graph.to_text()
        except Exception as e:
            text = f"# the text form of this graph is unavailable: {type(e).__name__}: {e}\n"
        (d / "graph.txt").write_text(text)
        if self.placed is not None:
            try:
                placed = self.placed(graph).to_text()
            except Exception as e:
                placed = f"# the placed graph is unavailable: {type(e).__name__}: {e}\n"
            (d / "graph.device.txt").write_text(placed)
        save_arrays(d / "inputs.npz", {f"in{i}": a for i, a in enumerate(inputs)})
        if d not in self._written or note:
            try:
                rel = d.relative_to(Path.cwd())
            except ValueError:
                rel = d
            (d / "repro.py").write_text(case_repro(
                self.test_id + (f" ({note})" if note else ""), rel, self.spec, self.workdir))
            self._written.add(d)
        return d

    def write_results(self, expected: Mapping[str, np.ndarray],
                      actual: Mapping[str, np.ndarray], message: str,
                      sub: str | None = None) -> None:
        self.flush()
        d = self.path / sub if sub else self.path
        d.mkdir(parents=True, exist_ok=True)
        self._results.add(d)
        save_arrays(d / "expected.npz", expected)
        save_arrays(d / "actual.npz", actual)
        (d / "failure.txt").write_text(message + "\n")
        meta = {"test": self.test_id, "executor": self.spec}
        (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")

    def repro(self) -> Path | None:
        """The ``repro.py`` of this test's case, else of its first stored sub-case (None:
        nothing stored)."""
        written = sorted((d for d in self._written if (d / "repro.py").exists()),
                         key=lambda d: (d != self.path, str(d)))
        return written[0] / "repro.py" if written else None

    def discard(self) -> None:
        self._staged = None
        if self.path.exists():
            shutil.rmtree(self.path, ignore_errors=True)
        self._written.clear()
        self._results.clear()


def load_case(directory: Path | str) -> tuple[Graph, list[np.ndarray]]:
    """The graph and inputs stored in a repro directory."""
    d = Path(directory)
    graph = Graph.parse((d / "graph.txt").read_text())
    arrays = load_arrays(d / "inputs.npz")
    return graph, [arrays[f"in{i}"] for i in range(len(graph.inputs))]


def replay(directory: Path | str, executor_spec: str, out: Any = None) -> int:
    """Run a stored case through the executor and the reference; print the verdict.

    Returns 0 when they agree, 1 when they disagree, the executor raises (its traceback
    is printed) or refuses after modifying an input (EXEC-3), 2 when the executor or the
    reference refuses the graph or the executor cannot be built, 3 on a suite
    error: the stored case cannot be loaded, the reference fails on it, or the suite's
    own code raises (never blamed on the executor, CONF-22).
    """
    from interpreter.errors import UnsupportedGraphError
    from interpreter.executor import InterpreterExecutor

    from .calls import ExecutorRaised, quiet, suite_error_message
    from .differential import ReferenceRefused, check_case
    from .executors import ExecutorSpecError, resolve
    from .strategies import Case

    stream = out or sys.stdout
    try:
        graph, inputs = load_case(directory)
    except Exception as e:
        print(suite_error_message(e, f"loading the stored case {directory}"), file=stream)
        return 3
    try:
        executor = resolve(executor_spec).under_test()
    except ExecutorSpecError as e:
        print(f"ERROR: {e}", file=stream)
        return 2
    try:
        with quiet():
            verdict = check_case(Case(graph, inputs), executor, InterpreterExecutor(),
                                 label=f"replay of {directory}")
            if verdict.ok and any(isinstance(r.type, BufferType) for n in graph.nodes
                                  for r in n.results):
                # a buffer made in the graph is fresh in every execution (MUT-6): run it again
                verdict = check_case(Case(graph, inputs), executor, InterpreterExecutor(),
                                     label=f"replay of {directory} (second execution)")
            problems = [] if not verdict.ok else protocol_problems(directory, executor)
    except ReferenceRefused as e:
        print(f"REFERENCE REFUSED: the reference interpreter does not run this case ({e}); "
              "nothing to compare with", file=stream)
        return 2
    except UnsupportedGraphError as e:
        touched = _refusal_side_effects(directory, executor)
        if touched:
            print(f"FAIL: {executor_spec} refused the graph ({e}) after modifying "
                  f"{touched}; a refusal must come before any side effect [EXEC-3]",
                  file=stream)
            return 1
        print(f"REFUSED: {executor_spec} raised UnsupportedGraphError: {e}", file=stream)
        return 2
    except ExecutorRaised as e:
        print(f"FAIL: {executor_spec}: {e.describe()}", file=stream)
        return 1
    except Exception as e:
        print(suite_error_message(e, f"the replay of {directory}"), file=stream)
        return 3
    if not verdict.ok:
        print(f"FAIL: {verdict.message}", file=stream)
        _print_diagnosis(graph, inputs, verdict, stream)
        return 1
    if problems:
        print("FAIL: " + "; ".join(problems), file=stream)
        return 1
    print(f"OK: {executor_spec} agrees with the reference on {directory}", file=stream)
    return 0


def _print_diagnosis(graph: Graph, inputs: Sequence[np.ndarray], verdict: Any,
                     stream: Any) -> None:
    """The failure's ``diagnosis:`` block (CONF-40), as in the test's message (CONF-135)."""
    from .diagnosis import annotate

    try:
        with np.errstate(all="ignore"):
            text, _ = annotate(graph, inputs, verdict.expected, verdict.actual)
    except Exception:
        return  # a diagnosis never hides the failure
    if text:
        print(text, file=stream)


def _refusal_side_effects(directory: Path | str, executor: Any) -> str:
    """Which inputs a refusing executor modified (empty when none, or when it now runs)."""
    from interpreter.errors import UnsupportedGraphError

    graph, inputs = load_case(directory)
    before = [a.tobytes() for a in inputs]
    try:
        executor.execute(graph, inputs)
    except UnsupportedGraphError:
        return ", ".join(f"input {i}" for i, a in enumerate(inputs) if a.tobytes() != before[i])
    except Exception:
        return ""
    return ""


def protocol_problems(directory: Path | str, executor: Any) -> list[str]:
    """What a value comparison cannot see, on the stored case: outputs sharing memory with
    an input or each other (EXEC-5), and different results from two executions of a graph
    of deterministic ops (TOL-3). Each execution gets a fresh graph and fresh inputs."""
    from .pipeline import call_executor

    problems: list[str] = []
    runs = []
    for _ in range(2):
        graph, inputs = load_case(directory)
        outs = [np.asarray(o) for o in call_executor(executor, graph, inputs)]
        runs.append((graph, outs))
        for i, o in enumerate(outs):
            for j, a in enumerate(inputs):
                if np.shares_memory(o, a):
                    problems.append(f"output {i} shares memory with input {j} [EXEC-5]")
            for k in range(i):
                if np.shares_memory(o, outs[k]):
                    problems.append(f"output {i} shares memory with output {k} [EXEC-5]")
    (graph, first), (_, second) = runs
    if all(n.op.deterministic for n in graph.nodes):
        for i, (a, b) in enumerate(zip(first, second, strict=True)):
            if a.shape != b.shape or a.tobytes() != b.tobytes():
                problems.append(f"output {i} differs between two executions of the same "
                                "graph and inputs [TOL-3]")
    return sorted(set(problems))
