"""Quick fixes: the fixes the checker attached to the diagnostics under the cursor or selection.

The checker computes every fix (`Diagnostic.fixes`), so the command line,
the tests and the editor all offer the same ones; this only chooses which.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.module import CheckedModule
from qvr_core.diagnostics import Diagnostic, Fix


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
