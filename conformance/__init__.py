"""The conformance suite: differential tests of any Executor against the reference.

Run ``pytest conformance/ --executor=module:Class`` (or ``pytest --pyargs conformance``).
"""

from .version import SPEC_VERSION, __version__

__all__ = ["SPEC_VERSION", "__version__"]
