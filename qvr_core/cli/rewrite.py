"""Writing a rewritten source file back in place, for `qvr fmt` and `qvr migrate`."""

from __future__ import annotations

import sys


def write_back(path: str, text: str, done: str) -> int:
    """Write `text` to `path` as it is (no newline translation) and print `done`; exit status
    0, or 2 with one line on stderr when the file cannot be written."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        print(f"qvr: cannot write {path}: {exc}", file=sys.stderr)
        return 2
    print(done)
    return 0
