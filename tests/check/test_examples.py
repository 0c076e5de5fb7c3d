"""Every example checks clean; each file in examples/errors shows its one diagnostic."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.cli.explain import example_target
from qvr_core.export import target_diagnostics
from qvr_core.text.diagnostics import Severity

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GOOD = sorted(p for p in EXAMPLES.glob("*.qvr"))
ERRORS = sorted((EXAMPLES / "errors").glob("*.qvr"))


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_example_has_no_error_or_warning(path: Path) -> None:
    module = check(path.read_text())
    bad = [d for d in module.diagnostics if d.severity in (Severity.ERROR, Severity.WARNING)]
    assert bad == []
    assert module.exports, "every example exports a program"


def test_seed_fan_into_combined_is_a_hint_not_an_error() -> None:
    module = check((EXAMPLES / "bidirectional_rnn_lm.qvr").read_text())
    assert [(d.code, d.severity) for d in module.diagnostics] == [("QVR203", Severity.HINT)]


def test_seed_fan_into_combined_is_an_error_under_strict() -> None:
    module = check((EXAMPLES / "bidirectional_rnn_lm.qvr").read_text(), strict=True)
    assert [(d.code, d.severity) for d in module.diagnostics] == [("QVR203", Severity.ERROR)]


@pytest.mark.parametrize("path", ERRORS, ids=lambda p: p.name)
def test_error_example_shows_exactly_its_diagnostic(path: Path) -> None:
    """An export target's example (QVR7xx) names its target on its first line
    (`qvr check --target stan`); it checks clean without one."""
    code = path.name.split("_", 1)[0]
    text = path.read_text()
    module = check(text)
    diagnostics = list(module.diagnostics)
    asked = example_target(text)
    if code.startswith("QVR7"):
        assert asked is not None, "an export example names its target on its first line"
        assert diagnostics == []
        diagnostics += target_diagnostics(module, asked)
    assert [d.code for d in diagnostics] == [code], [(d.code, d.message) for d in diagnostics]


def test_every_code_has_an_error_example() -> None:
    from qvr_core.text.rules import RULES

    shown = {p.name.split("_", 1)[0] for p in ERRORS}
    assert {r.code for r in RULES} - {"QVR000"} <= shown
