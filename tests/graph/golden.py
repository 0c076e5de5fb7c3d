"""Compare drawn text with the files checked in under `expected/`.

Run with QVR_UPDATE_GOLDEN=1 to rewrite them after a deliberate change,
then review the diff: these files are what the docs show.
"""

from __future__ import annotations

import os
from pathlib import Path

EXPECTED = Path(__file__).resolve().parent / "expected"


def assert_golden(name: str, text: str) -> None:
    path = EXPECTED / name
    if os.environ.get("QVR_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run the tests once with QVR_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from {path}"
