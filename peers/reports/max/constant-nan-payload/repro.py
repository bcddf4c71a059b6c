#!/usr/bin/env python
"""Replay of a conformance failure: conformance/test_constants.py::test_constant_reach[select-float32]

Needs only the eager-conformance package, numpy and the executor's module:
    python .max-cache/run2/artifacts-2/test_constants.test_constant_reach_select-float32/repro.py [--executor=module:Class]
Exits 1 while the executor disagrees with the reference (or raises), 0 once it agrees;
2 when it refuses the graph, 3 on an error of the suite itself (please report those).
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

from conformance.artifacts import replay  # noqa: E402

if __name__ == "__main__":
    spec = EXECUTOR
    for arg in sys.argv[1:]:
        if arg.startswith("--executor="):
            spec = arg.split("=", 1)[1]
    here = Path(__file__).resolve().parent
    sys.exit(replay(here, spec))
