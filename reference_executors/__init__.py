"""Reference executors that must pass the conformance suite (spec/reference-executors.md).

* ``compiling.CompilingExecutor``: a fusing CPU compiler (COMP-n); ``MAX_EAGER_EXECUTOR=compile``.
* ``jit.JitExecutor`` (``CompositeExecutor``): interprets while the compile runs in the
  background, then serves the compiled plan (JIT-n); the default (``default``,
  ``composite``, ``jit``).
* ``gpu.CupyExecutor``: GPU-placed graphs with CuPy, one generated CUDA kernel per fused
  chain (GPU-n; extra ``gpu``; untested on hardware as of 2026-12-01); ``gpu``.

These names are entry points of the group ``eager_conformance.executors``, declared in
``pyproject.toml`` (SEL-8): ``interpreter.selection`` finds them in the installed metadata,
so ``interpreter`` never imports or names this package (JIT-13).
"""
