"""Every suggested fix, applied, removes its diagnostic and adds no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.text.edits import apply_edits

ERRORS = sorted((Path(__file__).resolve().parents[2] / "examples" / "errors").glob("*.qvr"))


def fixes_of(path: Path) -> list[tuple[str, str, object]]:
    module = check(path.read_text())
    return [(d.code, f.title, f) for d in module.diagnostics for f in d.fixes]


CASES = [(p, i) for p in ERRORS for i in range(len(fixes_of(p)))]


@pytest.mark.parametrize(("path", "index"), CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_fix_removes_its_diagnostic(path: Path, index: int) -> None:
    code, title, fix = fixes_of(path)[index]
    fixed = apply_edits(path.read_text(), fix.edits)  # type: ignore[attr-defined]
    after = check(fixed)
    assert [d.code for d in after.diagnostics if d.code == code] == [], (title, fixed)
    assert after.ok, (title, [(d.code, d.message) for d in after.diagnostics])


def test_every_error_example_with_a_fix_is_covered() -> None:
    with_fixes = {p.name.split("_")[0] for p, _ in CASES}
    assert {"QVR101", "QVR201", "QVR301", "QVR302", "QVR401", "QVR501"} <= with_fixes


def test_projection_fix_inserts_a_morphism_and_its_use() -> None:
    path = next(p for p in ERRORS if p.name.startswith("QVR201"))
    titles = [t for _, t, _ in fixes_of(path)]
    assert any(t.startswith("Insert a projection morphism") for t in titles), titles
