"""Tests of the conformance suite itself (conformance/), with the executors it must judge."""
