"""Benchmarks are collected only when named explicitly (``pytest benchmarks/``)."""
