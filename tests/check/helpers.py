"""Small helpers for checker tests: locate text, check a snippet."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.text.diagnostics import Diagnostic


def find(text: str, needle: str, occurrence: int = 0, within: str | None = None) -> tuple[int, int]:
    """Offsets [start, end) of the n-th `needle`, optionally inside the line containing `within`."""
    base = 0
    if within is not None:
        base = text.index(within)
    start = base - 1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)
    return start, start + len(needle)


def only(module: CheckedModule, code: str) -> Diagnostic:
    found = [d for d in module.diagnostics if d.code == code]
    assert len(found) == 1, [(d.code, d.message) for d in module.diagnostics]
    return found[0]


def codes(text: str, strict: bool = False) -> list[str]:
    return [d.code for d in check(text, strict=strict).diagnostics]
