"""Developer tools: ``python -m tools.spec`` (generated spec parts) and
``python -m tools.golden [--update]`` (the C emitter's golden sources)."""
