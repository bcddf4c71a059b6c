"""``python -m conformance.mutants``: the suite's mutation score, measured on itself.

For each registry op, mutants of its reference kernel (``mutant_kernels``, CONF-105) are
run, one at a time, as an executor equal to the reference in every other op: the op's own
per-op tests (``PER_OP_TESTS``: cells, special-value sweeps, shape and constant reach)
under the ``ci`` profile (no shrinking, no minimisation) run in one
in-process pytest session, stopping at the first failing cell (the mutant is *killed*); a
mutant no cell fails is checked for equivalence (``mutant_equivalence``, CONF-106): equal
to the reference on a large input set -> *equivalent* (with the reason), else *survived*
(with a witness input). Score = killed / (killed + survived), per op, per op family and
in total (CONF-107). ``--target executors`` mutates ``reference_executors/compiling*.py``
and ``c_emitter.py`` instead and runs the ``--conformance-smoke`` subset against
``CompilingExecutor`` (CONF-108).

    python -m conformance.mutants [--ops add,reduce_sum] [--list] [-j N]
        [--json PATH] [--markdown PATH] [--equiv-calls N]
    python -m conformance.mutants --target executors [--sample N] [--seed S] [--ids A,B]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from _pytest.runner import runtestprotocol
from hypothesis import Phase, settings

from interpreter.errors import UnsupportedGraphError
from interpreter.evaluate import evaluate
from interpreter.executor import InterpreterExecutor, validate_inputs
from interpreter.graph.core import Graph
from interpreter.graph.lowering import lowered
from interpreter.registry import REGISTRY

from .plugin import PROFILES

__all__ = ["MutantExecutor", "MutantResult", "main", "run_mutants", "score"]

ROOT = Path(__file__).resolve().parent.parent
PROFILE = "mutants"
settings.register_profile(PROFILE, **{**PROFILES["ci"],
                                      "phases": (Phase.explicit, Phase.reuse, Phase.generate)})
#: seconds one cell may take under a mutant before the mutant counts as killed (timeout)
CELL_TIMEOUT = 30

Kernel = Callable[..., Any]


class MutantExecutor(InterpreterExecutor):
    """The reference interpreter with the kernels in ``ACTIVE`` (op name -> kernel)."""

    ACTIVE: ClassVar[dict[str, Kernel]] = {}

    def __init__(self) -> None:
        super().__init__(max_ops=None)

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[np.ndarray]:
        why = self.refusal(graph)
        if why is not None:
            raise UnsupportedGraphError(f"MutantExecutor: {why}")
        graph = lowered(graph)
        validate_inputs(type(self).__name__, graph, inputs)
        active = self.ACTIVE
        return evaluate(graph, inputs, kernel=lambda node: active.get(node.op.name))


class FreshCompiling:
    """``CompilingExecutor``, rebuilt whenever ``EPOCH`` changes (no compiled plan of an
    earlier mutant is reused)."""

    EPOCH: ClassVar[int] = 0

    def __init__(self) -> None:
        self._epoch = -1
        self._inner: Any = None

    def _get(self) -> Any:
        if self._epoch != self.EPOCH:
            from reference_executors.compiling import CompilingExecutor

            self._inner, self._epoch = CompilingExecutor(), self.EPOCH
        return self._inner

    def execute(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        return list(self._get().execute(graph, inputs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._get(), name)


@dataclass
class MutantResult:
    id: str
    op: str
    family: str
    target: str
    function: str
    operator: str
    line: int
    before: str
    after: str
    diff: str
    status: str = "not run"  # killed, survived, equivalent, not run
    killer: str = ""
    message: str = ""
    reason: str = ""
    witness: str = ""
    seconds: float = 0.0


@dataclass
class Job:
    """Mutants to run against the items ``select`` keeps; ``install(m)`` activates one."""

    name: str
    mutants: list[Any]
    select: Callable[[pytest.Item], bool]
    install: Callable[[Any], None]
    results: list[MutantResult] = field(default_factory=list)
    baseline: str = ""


class MutantTimeout(Exception):
    """A cell ran past ``CELL_TIMEOUT`` under a mutant (counted as killed)."""


def _alarm(signum: int, frame: Any) -> None:
    raise MutantTimeout(f"cell ran past {CELL_TIMEOUT} s")


class _Loop:
    """The pytest plugin: keeps the jobs' items and runs every mutant over them."""

    def __init__(self, jobs: list[Job], make: Callable[[Job, Any], MutantResult],
                 progress: bool) -> None:
        self.jobs, self.make, self.progress = jobs, make, progress
        self.items: list[pytest.Item] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        items[:] = [it for it in items if any(j.select(it) for j in self.jobs)]

    def _fails(self, item: pytest.Item) -> tuple[bool, str]:
        item._initrequest()  # type: ignore[attr-defined]  # as pytest-rerunfailures does
        item.user_properties = []
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(CELL_TIMEOUT)
        try:
            reports = runtestprotocol(item, nextitem=None, log=False)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        for r in reports:
            if r.failed:
                return True, (r.longreprtext or "").strip().splitlines()[0][:300] \
                    if r.longreprtext else "failed"
        return False, ""

    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        # the items as collection left them: other trylast hooks (the suite's smoke
        # selection, CONF-35) may run after this plugin's, so nothing is kept from it
        self.items = list(session.items)
        for job in self.jobs:
            items = [it for it in self.items if job.select(it)]
            job.install(None)
            if not items:
                job.baseline = "no cells"
                job.results = [self.make(job, m) for m in job.mutants]
                continue
            for it in items:
                bad, msg = self._fails(it)
                if bad:
                    job.baseline = f"the unmutated reference fails {it.nodeid}: {msg}"
                    break
            kills: Counter[str] = Counter()
            for m in job.mutants if not job.baseline else ():
                r = self.make(job, m)
                start = time.perf_counter()
                job.install(m)
                try:
                    for it in sorted(items, key=lambda i: -kills[i.nodeid]):  # killers first
                        bad, msg = self._fails(it)
                        if bad:
                            r.status, r.killer, r.message = "killed", it.nodeid, msg
                            kills[it.nodeid] += 1
                            break
                    else:
                        r.status = "survived"
                finally:
                    job.install(None)
                r.seconds = round(time.perf_counter() - start, 3)
                job.results.append(r)
                if self.progress:
                    print(f"  {r.id}: {r.status} ({r.seconds:.1f} s)", file=sys.stderr,
                          flush=True)
        return True


def _pytest(files: list[str], executor: str, extra: list[str], loop: _Loop) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        args = [*files, "-qq", "-p", "no:cacheprovider", "-p", "no:xdist", "-W", "ignore",
                f"--executor={executor}", f"--hypothesis-profile={PROFILE}",
                "--conformance-minimize=0", f"--conformance-artifacts={tmp}/artifacts", *extra]
        cwd = os.getcwd()
        profile = settings.get_current_profile_name()
        os.chdir(ROOT)
        try:
            with open(os.devnull, "w") as null:
                out = sys.stdout
                sys.stdout = null
                try:
                    pytest.main(args, plugins=[loop])
                finally:
                    sys.stdout = out
        finally:
            os.chdir(cwd)
            settings.load_profile(profile)


# -- registry kernels ---------------------------------------------------------------------
#: The per-op differential tests a registry mutant meets: the op's cells, its special-value
#: sweeps (CONF-98) and its shape and constant reach (CONF-86, CONF-88).
PER_OP_FILES = ["conformance/test_ops.py", "conformance/test_specials.py",
                "conformance/test_reach.py", "conformance/test_constants.py"]
PER_OP_TESTS = ("test_op", "test_special_sweep", "test_op_reach", "test_constant_reach")


def _op_item(op: str) -> Callable[[pytest.Item], bool]:
    def select(item: pytest.Item) -> bool:
        cs = getattr(item, "callspec", None)
        return (getattr(item, "originalname", "") in PER_OP_TESTS and cs is not None
                and cs.params.get("op_name") == op)

    return select


def _install_kernel(op: str) -> Callable[[Any], None]:
    def install(m: Any) -> None:
        MutantExecutor.ACTIVE.clear()
        if m is not None:
            MutantExecutor.ACTIVE[op] = m.kernel

    return install


def _result(job: Job, m: Any) -> MutantResult:
    op = REGISTRY.get(m.op)
    return MutantResult(m.id, m.op, op.category if op else "executor", m.target, m.function,
                        m.operator, m.line, m.before, m.after, m.diff)


def run_mutants(ops: Sequence[str], equiv_calls: int = 2000, progress: bool = False
                ) -> list[MutantResult]:
    """Run every mutant of ``ops`` (in one process) and classify the survivors."""
    from .mutant_equivalence import check_equivalence
    from .mutant_kernels import op_mutants

    jobs = [Job(op, op_mutants(op), _op_item(op), _install_kernel(op)) for op in ops]
    by_id = {m.id: m for j in jobs for m in j.mutants}
    _pytest(PER_OP_FILES, "conformance.mutants:MutantExecutor", [],
            _Loop(jobs, _result, progress))
    out: list[MutantResult] = []
    for job in jobs:
        for r in job.results:
            if job.baseline:
                r.status, r.reason = "not run", job.baseline
            if r.status == "survived":
                m = by_id[r.id]
                eq = check_equivalence(REGISTRY[job.name], m, calls=equiv_calls)
                if eq.equivalent:
                    r.status = "equivalent"
                    reached = m.line == 0 or m.original is None or m.line in eq.executed_lines
                    r.reason = eq.reason if reached else (
                        f"the mutated line never runs for this op's valid inputs (not reached "
                        f"in the first traced calls); {eq.reason}")
                else:
                    r.witness = eq.witness or eq.reason
            out.append(r)
    return out


# -- reporting ----------------------------------------------------------------------------
def score(results: Sequence[MutantResult]) -> dict[str, Any]:
    c = Counter(r.status for r in results)
    k, s = c["killed"], c["survived"]
    tol = sum(1 for r in results if r.status == "equivalent" and "within tolerance" in r.reason)
    return {"mutants": len(results), "killed": k, "survived": s, "equivalent": c["equivalent"],
            "equivalent_within_tolerance": tol, "not_run": c["not run"],
            "score": round(k / (k + s), 4) if k + s else None}


def _group(results: Sequence[MutantResult], key: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[MutantResult]] = {}
    for r in results:
        groups.setdefault(getattr(r, key), []).append(r)
    return {g: score(rs) for g, rs in sorted(groups.items())}


def _pct(s: dict[str, Any]) -> str:
    return "-" if s["score"] is None else f"{100 * s['score']:.1f} %"


def markdown(results: Sequence[MutantResult], wall: float, title: str) -> str:
    total = score(results)
    lines = [f"# {title}", "", f"wall time {wall:.0f} s; score = killed / (killed + survived); "
             f"equivalent: {total['equivalent']} ({total['equivalent_within_tolerance']} of them "
             "equal only within the op's tolerance, the rest bit-identical)", "",
             "| | mutants | killed | survived | equivalent | not run | score |",
             "|---|---:|---:|---:|---:|---:|---:|"]

    def row(name: str, s: dict[str, Any]) -> str:
        return (f"| {name} | {s['mutants']} | {s['killed']} | {s['survived']} | "
                f"{s['equivalent']} | {s['not_run']} | {_pct(s)} |")

    lines.append(row("**total**", total))
    for fam, s in _group(results, "family").items():
        lines.append(row(f"family {fam}", s))
    lines += ["", "| op | mutants | killed | survived | equivalent | not run | score |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [row(op, s) for op, s in _group(results, "op").items()]
    for status in ("survived", "equivalent"):
        chosen = [r for r in results if r.status == status]
        lines += ["", f"## {status} ({len(chosen)})", ""]
        for r in chosen:
            why = r.witness if status == "survived" else r.reason
            lines += [f"- `{r.id}` [{r.operator}] `{r.function}`:{r.line} "
                      f"`{r.before}` -> `{r.after}`: {why}"]
            if status == "survived" and r.diff:
                lines += ["", "  ```diff", *("  " + d for d in r.diff.splitlines()), "  ```"]
    return "\n".join(lines) + "\n"


def _table(results: Sequence[MutantResult]) -> str:
    rows = [f"{'op / family':28} {'mut':>5} {'kill':>5} {'surv':>5} {'equiv':>5} {'score':>8}"]
    for name, s in [*_group(results, "family").items(), ("", None),
                    *_group(results, "op").items(), ("TOTAL", score(results))]:
        if s is None:
            rows.append("")
            continue
        rows.append(f"{name:28} {s['mutants']:5} {s['killed']:5} {s['survived']:5} "
                    f"{s['equivalent']:5} {_pct(s):>8}")
    return "\n".join(rows)


# -- the compiling executor (mutmut's job, with this module's mutator) --------------------
EXECUTOR_MODULES = ("reference_executors.c_emitter", "reference_executors.compiling_plan",
                    "reference_executors.compiling_native", "reference_executors.compiling")


def executor_mutants() -> list[Any]:
    """Mutants of every function and method defined in ``EXECUTOR_MODULES``."""
    import importlib
    import types

    from .mutant_kernels import MutantKernel
    from .mutation_ops import compile_mutant, function_mutations, original_source

    out: list[Any] = []
    for modname in EXECUTOR_MODULES:
        mod = importlib.import_module(modname)
        owners: list[tuple[Any, str, types.FunctionType]] = []
        for name, obj in vars(mod).items():
            if isinstance(obj, types.FunctionType) and obj.__module__ == modname:
                owners.append((mod, name, obj))
            elif isinstance(obj, type) and obj.__module__ == modname:
                owners += [(obj, n, f) for n, f in vars(obj).items()
                           if isinstance(f, types.FunctionType)]
        for owner, name, fn in owners:
            original = original_source(fn)
            for m in function_mutations(fn):
                try:
                    mutated = compile_mutant(fn, m)
                except Exception:
                    continue
                mk = MutantKernel(modname.split(".")[-1], len(out), "executor", fn.__qualname__,
                                  m.operator, m.line, m.before, m.after, m.diff(original),
                                  mutated, mutated, fn)
                mk.owner, mk.attr = owner, name  # type: ignore[attr-defined]
                out.append(mk)
    return out


def _install_executor(m: Any) -> None:
    import sys as _sys

    FreshCompiling.EPOCH += 1
    for restore in _INSTALLED:
        restore()
    _INSTALLED.clear()
    if m is None:
        return
    targets: list[tuple[Any, str]] = [(m.owner, m.attr)]
    if isinstance(m.owner, type(_sys)):  # also where other modules imported the name
        for mod in list(_sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            if name.startswith("reference_executors") and getattr(mod, m.attr, None) is m.original:
                targets.append((mod, m.attr))
    for owner, attr in set(targets):
        _INSTALLED.append(_restorer(owner, attr, getattr(owner, attr)))
        setattr(owner, attr, m.kernel)
    _INSTALLED.append(_rebuild_tables)
    _rebuild_tables()


def _rebuild_tables() -> None:
    """Re-run the module-level assignments and ``from`` imports of the executor modules, in
    import order, so tables built at import from a mutated function (the C emitter's
    ``ENTRIES`` of factory-made closures, dialects, caches) and names imported from another
    executor module see the mutant (and, after a restore, the original again)."""
    import __future__

    import ast as _ast
    import importlib

    for modname in EXECUTOR_MODULES:
        mod = importlib.import_module(modname)
        code = _TABLE_CODE.get(modname)
        if code is None:
            tree = _ast.parse(Path(mod.__file__ or "").read_text())
            tree.body = [s for s in tree.body
                         if isinstance(s, _ast.Assign | _ast.AnnAssign | _ast.ImportFrom)
                         and not (isinstance(s, _ast.ImportFrom) and s.module == "__future__")]
            code = _TABLE_CODE[modname] = compile(
                tree, mod.__file__ or modname, "exec",
                flags=__future__.annotations.compiler_flag, dont_inherit=True)
        exec(code, mod.__dict__)  # the module's own statements, on its own namespace


_TABLE_CODE: dict[str, Any] = {}


def _restorer(owner: Any, attr: str, old: Any) -> Callable[[], None]:
    def restore() -> None:
        setattr(owner, attr, old)

    return restore


_INSTALLED: list[Callable[[], None]] = []


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def executor_sample(sample: int, seed: int) -> list[str]:
    """The ids of a seeded sample of ``sample`` executor mutants, in source order."""
    every = executor_mutants()
    chosen = sorted(random.Random(seed).sample(range(len(every)), min(sample, len(every))))
    return [every[i].id for i in chosen]


def run_executor_mutants(sample: int, seed: int, progress: bool,
                         ids: Sequence[str] = ()) -> list[MutantResult]:
    """A seeded sample of the executor mutants, or the mutants named by ``ids``."""
    every = executor_mutants()
    by_id = {m.id: m for m in every}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise SystemExit(f"unknown executor mutants: {', '.join(unknown)} (see --list)")
    mutants = [by_id[i] for i in (ids or executor_sample(sample, seed))]
    job = Job("executors", mutants, lambda item: True, _install_executor)
    _pytest(["conformance/"], "conformance.mutants:FreshCompiling", ["--conformance-smoke"],
            _Loop([job], _result, progress))
    for r in job.results:
        r.family = "executor"
        if job.baseline:
            r.status, r.reason = "not run", job.baseline
    how = "named" if ids else f"sampled (seed {seed})"
    print(f"{len(every)} executor mutants, {len(mutants)} {how}", file=sys.stderr)
    return job.results


def _recheck(results: Sequence[MutantResult], calls: int) -> None:
    """The equivalence check again on each survivor (its mutant found by id and site)."""
    from .mutant_equivalence import check_equivalence
    from .mutant_kernels import op_mutants

    for r in results:
        if r.status != "survived" or r.op not in REGISTRY:
            continue
        m = next((m for m in op_mutants(r.op) if m.id == r.id and m.after == r.after), None)
        if m is None:
            continue
        eq = check_equivalence(REGISTRY[r.op], m, calls=calls)
        if eq.equivalent:
            r.status, r.reason, r.witness = "equivalent", eq.reason, ""
        else:
            r.witness = eq.witness or eq.reason


# -- command line -------------------------------------------------------------------------
def _parallel(ops: list[str], jobs: int, equiv_calls: int) -> list[MutantResult]:
    from .mutant_kernels import op_mutants

    sizes = sorted(((len(op_mutants(o)), o) for o in ops), reverse=True)
    groups: list[list[str]] = [[] for _ in range(jobs)]
    load = [0] * jobs
    for n, o in sizes:
        i = load.index(min(load))
        groups[i].append(o)
        load[i] += max(n, 1)
    return _in_processes([["--ops", ",".join(g), "--equiv-calls", str(equiv_calls)]
                          for g in groups if g])


def _in_processes(argvs: list[list[str]]) -> list[MutantResult]:
    """Each argument list run as its own ``python -m conformance.mutants``; results merged."""
    with tempfile.TemporaryDirectory() as tmp:
        procs = []
        for i, argv in enumerate(argvs):
            path = Path(tmp) / f"{i}.json"
            procs.append((path, subprocess.Popen(
                [sys.executable, "-m", "conformance.mutants", *argv, "--json", str(path),
                 "--quiet"], cwd=ROOT)))
        out: list[MutantResult] = []
        for path, p in procs:
            p.wait()
            out += [MutantResult(**r) for r in json.loads(path.read_text())["mutants"]]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.mutants", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", help="comma-separated op names (default: every op)")
    ap.add_argument("--target", choices=("registry", "executors"), default="registry")
    ap.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="processes")
    ap.add_argument("--json", type=Path, help="write every mutant's result as JSON")
    ap.add_argument("--markdown", type=Path, help="write the markdown summary")
    ap.add_argument("--equiv-calls", type=int, default=2000,
                    help="sampled calls per survivor in the equivalence check")
    ap.add_argument("--sample", type=int, default=40, help="executor mutants sampled")
    ap.add_argument("--seed", type=int, default=0, help="seed of the executor sample")
    ap.add_argument("--ids", help="comma-separated executor mutant ids (e.g. compiling#310) "
                                  "to run instead of a sample")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="JSON",
                    help="report the union of earlier --json results instead of running")
    ap.add_argument("--recheck", action="store_true",
                    help="with --merge: run the equivalence check again on the survivors")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    from .mutant_kernels import op_mutants

    if a.merge:
        start = time.perf_counter()
        loaded = [json.loads(p.read_text()) for p in a.merge]
        results = [MutantResult(**r) for d in loaded for r in d["mutants"]]
        title = loaded[0]["title"] if loaded else "Mutation score"
        start -= sum(d["wall_s"] for d in loaded)  # the runs' own wall time, summed
        if a.recheck:
            _recheck(results, a.equiv_calls)
    elif a.target == "executors":
        if a.list:
            for m in executor_mutants():
                print(m.describe())
            return 0
        start = time.perf_counter()
        ids = [i.strip() for i in a.ids.split(",")] if a.ids else []
        if a.jobs > 1:
            ids = ids or executor_sample(a.sample, a.seed)
            results = _in_processes([["--target", "executors", "--ids", ",".join(ids[i::a.jobs])]
                                     for i in range(min(a.jobs, len(ids)))])
        else:
            results = run_executor_mutants(a.sample, a.seed, not a.quiet, ids)
        title = "Mutation score of the compiling executor (smoke subset)"
    else:
        ops = sorted(REGISTRY) if not a.ops else [o.strip() for o in a.ops.split(",")]
        unknown = [o for o in ops if o not in REGISTRY]
        if unknown:
            ap.error(f"unknown ops: {', '.join(unknown)}")
        if a.list:
            for op in ops:
                for m in op_mutants(op):
                    print(m.describe())
            return 0
        start = time.perf_counter()
        results = (_parallel(ops, a.jobs, a.equiv_calls) if a.jobs > 1
                   else run_mutants(ops, a.equiv_calls, progress=not a.quiet))
        title = "Mutation score of the registry kernels (ci profile)"
    wall = time.perf_counter() - start
    s = score(results)
    if a.target == "executors" and s["killed"] + s["survived"]:
        lo, hi = wilson(s["killed"], s["killed"] + s["survived"])
        title += f"; 95 % Wilson interval {100 * lo:.1f} - {100 * hi:.1f} %"
    if a.json:
        a.json.write_text(json.dumps({"title": title, "wall_s": round(wall, 1), "total": s,
                                      "families": _group(results, "family"),
                                      "ops": _group(results, "op"),
                                      "mutants": [asdict(r) for r in results]}, indent=1))
    if a.markdown:
        a.markdown.write_text(markdown(results, wall, title))
    if not a.quiet:
        print(_table(results))
        print(f"{title}: {_pct(s)} ({s['killed']} killed, {s['survived']} survived, "
              f"{s['equivalent']} equivalent) in {wall:.0f} s")
        for r in results:
            if r.status == "survived":
                print(f"SURVIVED {r.id} [{r.operator}] {r.function}:{r.line} {r.before!r} -> "
                      f"{r.after!r}: {r.witness}")
    return 0


if __name__ == "__main__":  # run as the importable module: the executor reads its state
    from conformance.mutants import main as _main

    sys.exit(_main())
