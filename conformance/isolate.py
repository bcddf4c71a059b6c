"""Crash containment: run executor calls in a child process (CONF-12..14).

With ``--conformance-isolate`` every ``execute`` of the executor under test runs in a worker
process started with ``multiprocessing`` *spawn* (a fresh interpreter: safe for CUDA and
other runtimes that do not survive ``fork``). The worker builds the executor from its
``module:attr`` spec once and then serves calls; the graph travels in its text form
(``Graph.to_text`` / ``Graph.parse``) and the arrays are pickled. The worker hands each call
over with the suite's own pipeline (``pipeline.ExecutorUnderTest.hand_over``: the device
hand-over and the unchanged-graph check of its parsed copy) and answers with what came
back; the parent settles it into the verdict of an in-process call (``pipeline.settle``,
CONF-83).

Before each call a repro directory is written (``graph.txt``, ``inputs.npz``
and a ``repro.py`` that replays the call in-process). When the call returns, the directory
is removed; when the worker dies of a signal or overruns ``--conformance-timeout``, the call
raises :class:`ExecutorCrash` naming the signal or the timeout and that directory, the
worker is restarted for the next call and the run continues.

How the tests use it: under ``--conformance-isolate`` the ``executor`` fixture's pipeline
object has ``transport(config, executor)``, an :class:`IsolatedExecutor`, as its transport;
tests simply call ``executor.execute(graph, inputs)``. Code that holds only a spec can call
``run_executor(config, spec, graph, inputs)``.
"""

from __future__ import annotations

import importlib
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

from interpreter.errors import UnsupportedGraphError
from interpreter.graph.core import Graph

from .artifacts import case_repro, save_arrays
from .calls import SuiteError
from .pipeline import ExecutorUnderTest, Handed, settle

__all__ = [
    "DEFAULT_TIMEOUT",
    "ExecutorCrash",
    "IsolatedExecutor",
    "executor_spec",
    "isolate_enabled",
    "resolve_spec",
    "run_executor",
    "transport",
]

DEFAULT_TIMEOUT = 60.0
_CALLS = itertools.count(1)
REFERENCE_SPEC = "interpreter.executor:InterpreterExecutor"


class ExecutorCrash(Exception):
    """The executor killed its process (a signal) or did not return in time."""


class IsolatedCallError(Exception):
    """An exception raised in the worker whose class cannot be rebuilt in this process."""


# -- executor specs --------------------------------------------------------------------------
def resolve_spec(spec: str) -> ExecutorUnderTest:
    """Build the executor named by ``module:attr.path`` (CONF-1: a class or factory is called
    with no arguments), in the call pipeline."""
    from conformance.executors import resolve

    return resolve(spec).under_test()


def executor_spec(config: pytest.Config | None, executor: Any = None) -> str:
    """The ``module:attr`` spec of the executor under test (``--executor`` or the reference)."""
    spec = _option(config, "executor", None)
    if isinstance(spec, str) and spec:
        return spec
    if executor is not None:
        cls = type(executor)
        return f"{cls.__module__}:{cls.__qualname__}"
    return REFERENCE_SPEC


def _option(config: pytest.Config | None, name: str, default: Any) -> Any:
    if config is None:
        return default
    try:
        value = config.getoption(name)
    except (ValueError, AttributeError):
        return default
    return default if value is None else value


# -- the worker -----------------------------------------------------------------------------
#: what the executor changed in the graph it was handed (None: nothing; EXEC-15)
Change = str | None
#: an exception: its module, qualified name, message and formatted traceback
Raised = tuple[str, str, str, str]
#: the answer to one call: the outputs and the inputs as the executor left them, or its
#: exception; both followed by the change. ("suite", *Raised): the worker's own failure.
Answer = (tuple[Literal["ok"], list[np.ndarray], list[np.ndarray], Change]
          | tuple[Literal["err"], str, str, str, str, Change])


def _raised(e: BaseException) -> Raised:
    return (type(e).__module__, type(e).__qualname__, str(e),
            "".join(traceback.format_exception(e)))


def _call(executor: ExecutorUnderTest, graph: Graph, inputs: list[np.ndarray]) -> Answer:
    """Hand one call over on the worker's parsed ``graph`` (a graph without a key is the
    suite's problem: ``hand_over`` raises, the caller answers "suite")."""
    handed = executor.hand_over(graph, inputs)
    if handed.error is not None:
        return ("err", *_raised(handed.error), handed.change)
    return ("ok", [np.asarray(o) for o in handed.outputs or ()], inputs, handed.change)


def _serve(requests: Connection, conn: Connection, spec: str) -> None:
    """Worker main loop: build the executor, then answer ``(graph_text, inputs)`` requests."""
    try:
        executor = resolve_spec(spec)
    except BaseException as e:
        conn.send(("err", *_raised(e)))
        return
    conn.send(("ready",))
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return
        if request is None:
            return
        text, inputs = request
        try:
            graph = Graph.parse(text)
            answer = _call(executor, graph, inputs)
        except BaseException as e:  # the suite's own text form or key failed (CONF-22)
            conn.send(("suite", *_raised(e)))
            continue
        conn.send(answer)


class _Worker:
    """A ``python -m conformance.isolate`` child serving calls over two pipes.

    A plain subprocess (not ``multiprocessing``): a fresh interpreter (safe for CUDA and other
    runtimes that do not survive ``fork``) that never re-imports the parent's main module.
    """

    def __init__(self, spec: str) -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conformance.isolate", "--serve", str(down_r), str(up_w),
             spec], pass_fds=(down_r, up_w), env=env, stdin=subprocess.DEVNULL)
        os.close(down_r)
        os.close(up_w)
        self.send_conn = Connection(down_w, readable=False)
        self.conn = Connection(up_r, writable=False)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            try:
                self.send_conn.send(None)
            except OSError:
                pass
            try:
                self.proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        if self.alive():
            self.proc.kill()
            self.proc.wait(5)
        self.send_conn.close()
        self.conn.close()

    def died(self) -> str:
        try:
            code = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name} ({-code})"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with status {code}"


# -- the isolating executor ------------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80].strip("_") or "call"


class IsolatedExecutor:
    """An ``Executor`` proxy that runs ``spec``'s executor in a spawned worker process."""

    def __init__(self, spec: str, timeout: float = DEFAULT_TIMEOUT,
                 artifacts: Path | str = ".conformance") -> None:
        self.spec = spec
        self.timeout = float(timeout)
        self.artifacts = Path(artifacts) / "isolate"
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"IsolatedExecutor({self.spec!r}, timeout={self.timeout:g})"

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.stop()
                self._worker = None

    def _start(self) -> _Worker:
        if self._worker is None or not self._worker.alive():
            w = _Worker(self.spec)
            if not w.conn.poll(self.timeout + 60):
                w.stop()
                raise ExecutorCrash(f"isolated executor {self.spec}: the worker did not start "
                                    f"within {self.timeout + 60:g} s")
            try:
                msg = w.conn.recv()
            except EOFError:
                raise ExecutorCrash(f"isolated executor {self.spec}: the worker "
                                    f"{w.died()} while building the executor") from None
            if msg[0] != "ready":
                w.stop()
                raise _rebuild(msg)
            self._worker = w
        return self._worker

    def _call_dir(self, text: str, inputs: Sequence[np.ndarray]) -> Path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "call").split(" ")[0]
        d = self.artifacts / f"{_safe(test)}-{os.getpid()}-{next(_CALLS)}"
        d.mkdir(parents=True, exist_ok=True)
        # the same layout and replay script as every other repro (CONF-11)
        (d / "graph.txt").write_text(text)
        save_arrays(d / "inputs.npz", {f"in{i}": a for i, a in enumerate(inputs)})
        (d / "repro.py").write_text(case_repro(test, d, self.spec, str(Path.cwd().resolve())))
        return d

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        """The call in the worker, settled (``pipeline.settle``)."""
        return settle(graph.name, self.hand_over(graph, inputs))

    def hand_over(self, graph: Graph, inputs: Sequence[Any]) -> Handed:
        """``ExecutorUnderTest.hand_over`` in the worker; a crash or a timeout raises
        :class:`ExecutorCrash`, the worker's own failure a ``SuiteError``."""
        try:  # the proxy's own work: a failure here is the suite's (CONF-22)
            text = graph.to_text()
            arrays = [np.asarray(a) for a in inputs]
        except Exception as e:
            raise SuiteError(f"isolation: could not serialize graph {graph.name!r}: "
                             f"{type(e).__name__}: {e}") from e
        with self._lock:
            try:
                d = self._call_dir(text, arrays)
            except Exception as e:
                raise SuiteError(f"isolation: could not write the call's repro directory: "
                                 f"{type(e).__name__}: {e}") from e
            worker = self._start()
            try:
                worker.send_conn.send((text, arrays))
            except (OSError, EOFError):
                self._worker = None
                raise ExecutorCrash(f"isolated executor {self.spec}: worker {worker.died()} "
                                    f"before the call; repro: {d}") from None
            if not worker.conn.poll(self.timeout):
                worker.proc.kill()
                worker.proc.wait(5)
                worker.stop()
                self._worker = None
                raise ExecutorCrash(
                    f"executor {self.spec} did not return within {self.timeout:g} s "
                    f"(--conformance-timeout) on graph {graph.name!r}; stopped. The call's "
                    f"repro (written before it ran): {d}/repro.py")
            try:
                msg = worker.conn.recv()
            except EOFError:
                how = worker.died()
                worker.stop()
                self._worker = None
                raise ExecutorCrash(
                    f"executor {self.spec} crashed: process {how} while executing graph "
                    f"{graph.name!r}. The call's repro (written before it ran): "
                    f"{d}/repro.py") from None
        if msg[0] == "suite":
            raise SuiteError(f"isolation: the worker could not rebuild graph {graph.name!r} "
                             f"({msg[1]}.{msg[2]}: {msg[3]})\n{msg[4]}")
        if msg[0] == "err":
            return Handed(None, _rebuild(msg), msg[5])
        shutil.rmtree(d, ignore_errors=True)
        _, outputs, after, change = msg
        for i, (mine, theirs) in enumerate(zip(inputs, after, strict=True)):
            if isinstance(mine, np.ndarray) and mine.tobytes() != np.asarray(theirs).tobytes():
                if not mine.flags.writeable:
                    raise AssertionError(f"executor {self.spec} wrote read-only input {i} "
                                         "[EXEC-6]")
                np.copyto(mine, theirs)
        return Handed(list(outputs), None, change)


def _rebuild(msg: tuple[Any, ...]) -> Exception:
    """The worker's exception, rebuilt as its own class when possible (CONF-14)."""
    _, module, qualname, text, tb = msg[:5]
    exc: Exception | None = None
    try:
        cls: Any = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if isinstance(cls, type) and issubclass(cls, Exception):
            exc = cls(text)
    except Exception:
        exc = None
    if exc is None:
        exc = IsolatedCallError(f"{module}.{qualname}: {text}")
    exc.add_note(f"raised in the isolated executor process:\n{tb}")
    return exc


# -- pytest integration ------------------------------------------------------------------------
_EXECUTORS: list[IsolatedExecutor] = []


def isolate_enabled(config: pytest.Config | None) -> bool:
    return bool(_option(config, "conformance_isolate", False))


def transport(config: pytest.Config | None, executor: Any) -> IsolatedExecutor | None:
    """The :class:`IsolatedExecutor` of the run's executor under ``--conformance-isolate``,
    else None (the call runs in this process)."""
    if not isolate_enabled(config):
        return None
    assert config is not None
    for e in _EXECUTORS:
        if e.spec == executor_spec(config, executor):
            return e
    iso = IsolatedExecutor(executor_spec(config, executor),
                           float(_option(config, "conformance_timeout", DEFAULT_TIMEOUT)),
                           _option(config, "conformance_artifacts", ".conformance"))
    _EXECUTORS.append(iso)
    return iso


def run_executor(config: pytest.Config | None, spec: str, graph: Graph,
                 inputs: Sequence[Any]) -> list[np.ndarray]:
    """Run ``spec``'s executor on ``graph`` in a worker process (whatever the options say)."""
    for e in _EXECUTORS:
        if e.spec == spec:
            return e.execute(graph, inputs)
    iso = IsolatedExecutor(spec, float(_option(config, "conformance_timeout", DEFAULT_TIMEOUT)),
                           _option(config, "conformance_artifacts", ".conformance"))
    _EXECUTORS.append(iso)
    return iso.execute(graph, inputs)


def header(config: pytest.Config) -> str | None:
    """The pytest header line of an isolated run."""
    if not isolate_enabled(config):
        return None
    timeout = float(_option(config, "conformance_timeout", DEFAULT_TIMEOUT))
    return f"conformance isolate: each executor call in a spawned worker, timeout {timeout:g} s"


def close_all() -> None:
    """Stop every worker (at the end of the run)."""
    while _EXECUTORS:
        _EXECUTORS.pop().close()


def _main(argv: list[str]) -> int:
    """``python -m conformance.isolate --serve READ_FD WRITE_FD SPEC`` (the worker)."""
    if len(argv) != 4 or argv[0] != "--serve":
        print("usage: python -m conformance.isolate --serve READ_FD WRITE_FD SPEC",
              file=sys.stderr)
        return 2
    _serve(Connection(int(argv[1]), writable=False), Connection(int(argv[2]), readable=False),
           argv[3])
    return 0


_ = UnsupportedGraphError  # rebuilt by _rebuild from its module/qualname

if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
