"""The shared example database (CONF-128): a failure found by one run is replayed first by
the next run sharing the database, with an empty local cache, against a directory and a
real Redis server (``redis-server`` from the system packages, started here on a free local
port; ``.ci/run`` installs it and, once it is installed, sets
``CONFORMANCE_REQUIRE_REDIS=1``, so a CI run with the server fails instead of skipping)."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

from tests.suite.broken_executors import PatchedInterpreter
from tests.suite.suite_runner import ROOT, run_suite

#: The one cell the tests run; the executor is wrong on its graphs of vectors only, which
#: the derandomized search of the ``ci`` profile meets after a few matrix graphs.
CELL = "test_ops.py::test_op[add-float32-general]"
LOG = "EAGER_TEST_CALL_LOG"


class WrongOnBigAdd(PatchedInterpreter):
    """``add`` of vectors is off by one (right on any other rank); every call is
    logged to the file ``$EAGER_TEST_CALL_LOG`` as ``1`` (a call it gets wrong) or ``0``."""

    def run(self, graph: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
        outs = super().run(graph, inputs)
        wrong = bool(inputs) and all(np.ndim(x) == 1 for x in inputs) and any(
            n.op.name == "add" for n in graph.nodes)
        with open(os.environ[LOG], "a") as f:
            f.write("1\n" if wrong else "0\n")
        return [o + np.asarray(1, o.dtype) if wrong else o for o in outs]


def _calls(log: Path) -> list[bool]:
    return [line == "1" for line in log.read_text().split()] if log.exists() else []


def _run(tmp: Path, db: str | None, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[bool]]:
    """One run of the cell in a fresh directory (an empty local hypothesis cache), batching
    off (CONF-136): the executor's fault needs a graph whose inputs are all vectors, which a
    merged graph of vector and matrix cases is not, and the test is of the search."""
    tmp.mkdir()
    log = tmp / "calls.log"
    monkeypatch.setenv(LOG, str(log))
    extra = [f"--conformance-db={db}"] if db else []
    run = run_suite(tmp, f"{__name__}:WrongOnBigAdd", [CELL], None, *extra,
                    "--conformance-minimize=0", "--conformance-batch=1",
                    "-o", f"cache_dir={tmp / 'cache'}")
    return run, _calls(log)


def _replayed_first(tmp: Path, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first, calls1 = _run(tmp / "first", db, monkeypatch)
    assert first.failed() == [f"conformance/{CELL}"], first.outcomes
    assert calls1 and not calls1[0], "the first run found its failure at once: no search"
    n1 = calls1.index(True)
    second, calls2 = _run(tmp / "second", db, monkeypatch)
    assert second.failed() == [f"conformance/{CELL}"], second.outcomes
    assert calls2[0], (f"the second run did not replay the stored failure first: its first "
                       f"failing call was #{calls2.index(True) if True in calls2 else None} "
                       f"(the first run's #{n1})")
    # control: without the database the same search runs again from the start
    _, calls3 = _run(tmp / "third", None, monkeypatch)
    assert calls3[:n1 + 1] == calls1[:n1 + 1]


@pytest.mark.spec("CONF-128")
def test_directory_database_replays_failure_first(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    before = settings.get_current_profile_name(), settings.default.database
    _replayed_first(tmp_path, str(tmp_path / "shared-db"), monkeypatch)
    assert any((tmp_path / "shared-db").iterdir()), "nothing was saved in the directory"
    assert (settings.get_current_profile_name(), settings.default.database) == before


# -- Redis -----------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _missing(what: str) -> None:
    if os.environ.get("CONFORMANCE_REQUIRE_REDIS") == "1":
        pytest.fail(f"{what} (CONFORMANCE_REQUIRE_REDIS=1: .ci/run installs it)")
    pytest.skip(f"{what}: install redis-server (apt-get install redis-server) and the "
                "test extra (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``redis-server`` on a free local port, without persistence; stopped after."""
    server = shutil.which("redis-server")
    if server is None:
        _missing("redis-server is not on PATH")
    try:
        import redis
    except ImportError:
        _missing("the 'redis' package is not installed")
    port = _free_port()
    work = tmp_path_factory.mktemp("redis")
    args: Sequence[str] = [str(server), "--port", str(port), "--bind", "127.0.0.1",
                           "--save", "", "--appendonly", "no", "--dir", str(work)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail(f"redis-server on port {port} did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.spec("CONF-128")
def test_redis_database_replays_failure_first(tmp_path: Path, redis_url: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import redis

    _replayed_first(tmp_path, redis_url, monkeypatch)
    assert redis.Redis.from_url(redis_url).keys("hypothesis-example:*"), \
        "nothing was saved in Redis"


@pytest.mark.spec("CONF-128")
def test_unreachable_database_is_a_usage_error(tmp_path: Path) -> None:
    port = _free_port()  # nothing listens there
    run = run_suite(tmp_path, f"{__name__}:WrongOnBigAdd", [CELL], None,
                    f"--conformance-db=redis://127.0.0.1:{port}/0")
    assert run.code == pytest.ExitCode.USAGE_ERROR and not run.outcomes


# -- property keys (CONF-145) ----------------------------------------------------------------
def _prop_of(cell: str) -> Any:
    """A fresh closure of one function body, as each parametrized cell makes its own."""
    def prop() -> None:
        return None
    prop._hypothesis_internal_add_digest = cell.encode()  # type: ignore[attr-defined]
    return prop


@pytest.mark.spec("CONF-145")
def test_property_key_is_per_test_and_independent_of_order_and_process() -> None:
    from hypothesis.internal.reflection import function_digest

    from conformance.harness import _SOURCE_DIGESTS, property_key

    a, b = b"conformance/test_ops.py::test_op[add-float32-general]", b"x::y[z]"
    _SOURCE_DIGESTS.clear()
    first = property_key(_prop_of("an earlier cell"), a)  # per-test part left out
    assert property_key(_prop_of("another"), a) == first
    assert property_key(_prop_of("another"), b) != first
    bare = _prop_of("")
    del bare._hypothesis_internal_add_digest
    assert first == hashlib.sha384(function_digest(bare) + b"\0" + a).digest()
    # another process, another working directory: the same key
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from tests.suite.test_example_db import _prop_of; "
            "from conformance.harness import property_key; "
            f"print(property_key(_prop_of('z'), {a!r}).hex())")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], cwd="/", text=True,
                         capture_output=True, check=True).stdout.strip()
    assert out == first.hex()


@pytest.mark.spec("CONF-145")
def test_hypothesis_reads_no_source_per_cell(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import hypothesis.core
    import hypothesis.internal.reflection as reflection

    from conformance import harness

    seen: list[str] = []
    ours: list[str] = []
    real = reflection.function_digest

    def counting(into: list[str]) -> Any:
        def digest(f: Any) -> bytes:
            into.append(getattr(f, "__qualname__", "?"))
            return real(f)
        return digest

    harness._SOURCE_DIGESTS.clear()
    monkeypatch.setattr(hypothesis.core, "function_digest", counting(seen))
    monkeypatch.setattr(harness, "function_digest", counting(ours))
    cells = [f"test_ops.py::test_op[{op}-float32-general]" for op in ("add", "sub", "mul")]
    run = run_suite(tmp_path, "interpreter.executor:InterpreterExecutor", cells, None)
    assert run.code == 0, run.outcomes
    assert len(run.outcomes) == 3
    assert len(ours) == 1, ours  # one body: the key's source digest taken once
    # hypothesis reads the source only for each run's derandomized seed, not for the key
    assert len(seen) == 3, seen
