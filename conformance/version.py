"""The suite's and the spec's version (CONF-134).

The spec (``spec/``) and the suite are released together: ``SPEC_VERSION`` is the release
whose rules (``CHANGELOG.md``) the suite checks. ``__version__`` is the suite's; every
report carries both.
"""

from __future__ import annotations

__all__ = ["SPEC_VERSION", "__version__", "version_tuple"]

#: the suite's version (the ``eager-conformance`` distribution's, pyproject.toml)
__version__ = "0.1.0"
#: the spec release the suite checks; the rules added or changed per release are listed in
#: CHANGELOG.md
SPEC_VERSION = __version__


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.2.0"`` -> ``(0, 2, 0)``; a suffix after the numbers (``.dev0``) is ignored."""
    out: list[int] = []
    for part in version.split("."):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)
