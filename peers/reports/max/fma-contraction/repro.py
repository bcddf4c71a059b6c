#!/usr/bin/env python
"""Replay of a conformance failure that needs earlier calls: conformance/test_state.py::test_state_sequence[lifetimes]

Runs the 1 calls stored in history/ (beside or above this file) in order on ONE fresh
executor, each judged against the reference; the last one is the call that failed.
    python .max-cache/run2/artifacts-2/test_state.test_state_sequence_lifetimes/repro.py [--executor=module:Class]
Exits 1 while a call fails, 0 once every call agrees; 2 when the executor cannot be
built, 3 on an error of the suite itself (please report those).
"""
import sys
from pathlib import Path

EXECUTOR = 'peers.max_engine:MaxCompilingExecutor'
WORKDIR = '/work/wt-maxc'  # where pytest ran: the executor's module is importable from there
# the folders the executor's module and the suite were imported from (CONF-135): no
# PYTHONPATH to set by hand
IMPORT_PATHS = ['/work/wt-maxc']
for _path in [*IMPORT_PATHS, WORKDIR]:
    if _path not in sys.path:
        sys.path.append(_path)

from conformance.history import replay_history  # noqa: E402

if __name__ == "__main__":
    spec = EXECUTOR
    for arg in sys.argv[1:]:
        if arg.startswith("--executor="):
            spec = arg.split("=", 1)[1]
    here = Path(__file__).resolve().parent
    sys.exit(replay_history(here / "history", spec))
