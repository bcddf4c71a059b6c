"""The conformance suite: differential tests of any Executor against the reference.

Run ``pytest conformance/ --executor=module:Class`` (or ``pytest --pyargs conformance``).
"""
