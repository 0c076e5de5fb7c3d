"""Quick fixes: the fixes the checker attached to the diagnostics under the cursor or selection.

The checker computes every fix (`Diagnostic.fixes`), so the command line,
the tests and the editor all offer the same ones; this only chooses which.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.module import CheckedModule
from qvr_core.text.diagnostics import Diagnostic, Fix


@dataclass(frozen=True)
class QuickFix:
    diagnostic: Diagnostic
    fix: Fix


def quick_fixes(module: CheckedModule, start: int, end: int) -> list[QuickFix]:
    """Fixes of the diagnostics that touch [start, end], in diagnostic order."""
    return [
        QuickFix(d, f)
        for d in module.diagnostics
        if d.span.start <= end and start <= d.span.end
        for f in d.fixes
    ]


def fix_all(module: CheckedModule) -> list[QuickFix]:
    """Every preferred fix of the module, in diagnostic order, leaving out any whose edits
    overlap an earlier one's (both could not apply; the next check offers it again)."""
    chosen: list[QuickFix] = []
    taken: list[tuple[int, int]] = []
    for d in module.diagnostics:
        fix = next((f for f in d.fixes if f.preferred), None)
        if fix is None:
            continue
        spans = [(e.span.start, e.span.end) for e in fix.edits]
        if any((s < te and ts < e) or s == e == ts == te for s, e in spans for ts, te in taken):
            continue
        chosen.append(QuickFix(d, fix))
        taken += spans
    return chosen
