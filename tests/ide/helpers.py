"""Helpers for IDE-feature tests: check a text, find an offset by the text around it."""

from __future__ import annotations

from pathlib import Path

from qvr_core.check import check
from qvr_core.check.module import CheckedModule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.qvr"))
ERROR_EXAMPLES = sorted((ROOT / "examples" / "errors").glob("*.qvr"))


def example(name: str) -> str:
    return (ROOT / "examples" / name).read_text(encoding="utf-8")


def error_example(code: str) -> str:
    path = next(p for p in ERROR_EXAMPLES if p.name.startswith(code))
    return path.read_text(encoding="utf-8")


def at(text: str, needle: str, occurrence: int = 0, within: str | None = None) -> int:
    """The offset of the n-th `needle` (after `within` when given)."""
    start = text.index(within) if within is not None else 0
    offset = start - 1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    return offset


def checked(text: str) -> CheckedModule:
    return check(text)
