"""Reference executors that must pass the conformance suite (spec/reference-executors.md).

* ``compiling.CompilingExecutor``: a fusing CPU compiler (COMP-n); ``MAX_EAGER_EXECUTOR=compile``.
* ``jit.JitExecutor`` (``CompositeExecutor``): interprets while the compile runs in the
  background, then serves the compiled plan (JIT-n); the default (``composite``, ``jit``).

``interpreter.selection`` resolves the names ``compile``, ``jit`` and ``composite`` to these
classes lazily, so ``interpreter`` never imports this package at module level.

* ``gpu.CupyExecutor``: GPU-placed graphs with CuPy, one generated CUDA kernel per fused
  chain (GPU-n; extra ``gpu``; untested on hardware as of 2026-12-01).
"""
