"""Reference executors that must pass the conformance suite.

Planned (a later issue): ``compiling.CompilingExecutor`` (a fusing CPU compiler),
``jit.JitExecutor`` (interpret while compiling in the background) and a CuPy GPU executor.
``interpreter.executor`` resolves the names ``compile``, ``jit`` and ``composite`` to these
classes lazily; until they exist, selecting them raises ``ExecutorUnavailableError``.
"""
