"""Tests of the graph IR (interpreter/graph/, types, dtypes, promotion, validators, fp)."""
