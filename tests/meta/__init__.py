"""Tests of the project: lint, layering, the executed spec, REG-1 and the test layout."""
