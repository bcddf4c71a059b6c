"""``python -m tools.golden [--update]``: check or rewrite the goldens of
both C dialects (``cuda/*.cu``, ``host/*.c``)."""

from __future__ import annotations

import sys

from . import DIR, PATTERNS, expected_files


def main(argv: list[str]) -> int:
    files = expected_files()
    stale = sorted(n for n, text in files.items()
                   if not (DIR / n).exists() or (DIR / n).read_text() != text)
    extra = sorted(str(p.relative_to(DIR)) for pattern in PATTERNS for p in DIR.glob(pattern)
                   if str(p.relative_to(DIR)) not in files)
    if "--update" in argv:
        for n in stale:
            (DIR / n).parent.mkdir(parents=True, exist_ok=True)
            (DIR / n).write_text(files[n])
        for n in extra:
            (DIR / n).unlink()
        print(f"rewrote {len(stale)} file(s), removed {len(extra)} under {DIR}")
        return 0
    for n in stale + extra:
        print(f"stale: {n}")
    return 1 if stale or extra else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
