"""Quick fixes offered for a range are the checker's fixes of the diagnostics there."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.actions import quick_fixes
from qvr_core.text.edits import apply_edits
from tests.ide.helpers import ERROR_EXAMPLES, at, error_example

FIXABLE = [p for p in ERROR_EXAMPLES if any(d.fixes for d in check(p.read_text()).diagnostics)]


@pytest.mark.parametrize("path", FIXABLE, ids=lambda p: p.name)
def test_every_fix_at_its_diagnostic_clears_it(path) -> None:
    text = path.read_text()
    module = check(text)
    for d in module.diagnostics:
        offered = quick_fixes(module, d.span.start, d.span.start)
        assert [q.fix for q in offered if q.diagnostic == d] == list(d.fixes)
        for q in offered:
            after = check(apply_edits(text, q.fix.edits))
            assert q.diagnostic.code not in [x.code for x in after.diagnostics], q.fix.title
            assert after.ok, q.fix.title


def test_no_fixes_away_from_diagnostics() -> None:
    text = error_example("QVR101")
    assert quick_fixes(check(text), 0, 5) == []


@pytest.mark.parametrize(
    ("text", "needle", "title"),
    [
        (
            "object A : Real 2\nmorphism f : A -> A [role=kernel, scael=0.1] ~ Normal\n"
            "let g = f\nexport g\n",
            "scael",
            "Change to 'scale'",
        ),
        (
            "object A : FinSet 3\nobject B : Real 2\nmorphism f : A -> B\nlet g = f\nexport g\n",
            "f",
            "Add role=embed",
        ),
    ],
)
def test_option_spelling_and_missing_role(text: str, needle: str, title: str) -> None:
    module = check(text)
    offset = at(text, needle, within="morphism")
    [fix] = [q.fix for q in quick_fixes(module, offset, offset) if q.fix.title == title]
    assert check(apply_edits(text, fix.edits)).ok


def test_dimension_mismatch_offers_both_kinds_of_fix() -> None:
    text = error_example("QVR201")
    module = check(text)
    offset = at(text, "combine", within="let backbone")
    titles = [q.fix.title for q in quick_fixes(module, offset, offset)]
    assert any(t.startswith("Change Combined to Real 128") for t in titles)
    assert any(t.startswith("Insert a projection morphism") for t in titles)
