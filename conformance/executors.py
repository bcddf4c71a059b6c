"""Resolving ``--executor=module:attr.path`` (or a registered name, SEL-8) into an executor
object (CONF-1/2).

``module:Class`` and ``module:factory`` are called with no arguments; ``module:attr.path``
may also name a ready-made object. The result must satisfy ``interpreter.executor.Executor``
and declare valid ``devices`` (EXEC-10); the suite wraps it once, in
``pipeline.ExecutorUnderTest``.
Every problem raises :class:`ExecutorSpecError` with a one-line message (a constructor
raising ``ExecutorUnavailableError``: the executor cannot run here, and why, EXEC-13);
an exception raised by the vendor's code while its module imports or its object is built
adds that code's traceback (``file:line``, CONF-129).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any

from interpreter.errors import ExecutorUnavailableError
from interpreter.executor import Executor, InterpreterExecutor
from interpreter.selection import executor_names

from .devices import declared_device
from .pipeline import ExecutorUnderTest

__all__ = [
    "REFERENCE_SPEC",
    "ExecutorSpecError",
    "ResolvedExecutor",
    "module_version",
    "relevant_env",
    "resolve",
]

REFERENCE_SPEC = "interpreter.executor:InterpreterExecutor"
ENV_PREFIXES = ("MAX_", "EAGER_", "HYPOTHESIS_")
ENV_NAMES = ("CI", "PYTEST_XDIST_AUTO_NUM_WORKERS", "CUDA_VISIBLE_DEVICES")


class ExecutorSpecError(ValueError):
    """``--executor`` names nothing usable; the message is one line."""


@dataclass(frozen=True)
class ResolvedExecutor:
    spec: str
    executor: Any
    module: str
    version: str

    def under_test(self) -> ExecutorUnderTest:
        """A fresh wrapping of the executor in the suite's call pipeline (CONF-110)."""
        return ExecutorUnderTest(self.executor)

    def describe(self) -> str:
        device = declared_device(self.executor)
        where = ("" if device.is_cpu()
                 else f"; graphs on {device}, arrays via to_device/to_host")
        return f"{self.spec} -> {self.executor!r} ({self.module} {self.version}){where}"


def module_version(module_name: str) -> str:
    """``__version__`` of the module or its top-level package, else its distribution's."""
    top = module_name.split(".")[0]
    for name in (module_name, top):
        mod = sys.modules.get(name)
        version = getattr(mod, "__version__", None)
        if isinstance(version, str):
            return version
    try:
        dists = importlib.metadata.packages_distributions().get(top, [])
        for dist in dists:
            return importlib.metadata.version(dist)
    except Exception:
        pass
    return "version unknown"


def relevant_env(environ: Any = None) -> dict[str, str]:
    """Environment variables that can change what runs (CONF-2), sorted by name."""
    env = os.environ if environ is None else environ
    return {k: env[k] for k in sorted(env)
            if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def resolve(spec: str | None) -> ResolvedExecutor:
    """Build the executor named by ``spec`` (None: the reference interpreter)."""
    if not spec:
        return ResolvedExecutor(REFERENCE_SPEC, InterpreterExecutor(), "interpreter",
                                module_version("interpreter"))
    if ":" not in spec:  # a registered executor name (SEL-8)
        names = executor_names()
        target = names.get(spec.strip().lower())
        if target is None:
            raise ExecutorSpecError(f"--executor={spec!r}: expected 'module:Class', "
                                    "'module:factory', 'module:attr.path' or a registered "
                                    f"executor name ({', '.join(sorted(names))})")
        spec = target
    module_name, sep, path = spec.partition(":")
    if not sep or not module_name or not path:
        raise ExecutorSpecError(f"--executor={spec!r}: expected 'module:Class', "
                                "'module:factory' or 'module:attr.path'")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:
        line = (f"--executor={spec}: cannot import module {module_name!r}: "
                f"{type(e).__name__}: {_one_line(e)}")
        raise ExecutorSpecError(line if _not_found(e, module_name)
                                else _with_traceback(line, e)) from None
    walked = module_name
    for part in path.split("."):
        if not hasattr(obj, part):
            raise ExecutorSpecError(f"--executor={spec}: {walked!r} has no attribute "
                                    f"{part!r}")
        obj = getattr(obj, part)
        walked = f"{walked}.{part}"
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Executor)):
        try:
            obj = obj()
        except ExecutorUnavailableError as e:  # EXEC-13
            raise ExecutorSpecError(f"--executor={spec}: {walked} cannot run on this machine: "
                                    f"{_one_line(e)}") from None
        except Exception as e:
            raise ExecutorSpecError(_with_traceback(
                f"--executor={spec}: calling {walked}() with no arguments failed: "
                f"{type(e).__name__}: {_one_line(e)}", e)) from None
    if not isinstance(obj, Executor):
        raise ExecutorSpecError(f"--executor={spec}: {type(obj).__name__} object is not an "
                                "Executor (it needs a method execute(graph, inputs)) "
                                "[EXEC-1]")
    try:
        declared_device(obj)  # EXEC-10: a device executor's calls are handed over
    except TypeError as e:
        raise ExecutorSpecError(f"--executor={spec}: {_one_line(e)}") from None
    return ResolvedExecutor(spec, obj, module_name, module_version(module_name))


def _not_found(e: Exception, module_name: str) -> bool:
    """The named module (or a package above it) does not exist: nothing of the vendor's
    ran, so one line says it all."""
    name = getattr(e, "name", None)
    return isinstance(e, ModuleNotFoundError) and bool(name) and (
        module_name == name or module_name.startswith(f"{name}."))


def _with_traceback(line: str, e: BaseException) -> str:
    """``line``, then the traceback of ``e`` without the frames of the import machinery
    and of this module: the vendor's ``file:line`` frames (CONF-129)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if f.filename != __file__ and not f.filename.startswith("<frozen importlib")
              and not f.filename.endswith(os.path.join("importlib", "__init__.py"))]
    if not frames:
        return line
    return (f"{line}\nTraceback (most recent call last; the suite's frames left out):\n"
            + "".join(traceback.format_list(frames))
            + "".join(traceback.format_exception_only(e))).rstrip()


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else ""
