"""QVR601 while typing: a program too large to run is a warning at what makes it large."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.text.diagnostics import Severity

from .hostile import HUGE, REPEAT, SMALL


def qvr601(module) -> list:
    return [d for d in module.diagnostics if d.code == "QVR601"]


def test_a_huge_dimension_is_a_warning_at_the_morphism() -> None:
    (d,) = qvr601(check(HUGE))
    assert d.severity is Severity.WARNING
    assert HUGE[d.span.start : d.span.end] == "head"
    assert "program lm would need about 888 TB" in d.message
    assert d.related[0].message == "program lm"


def test_the_budget_decides() -> None:
    assert qvr601(check(SMALL)) == []
    assert qvr601(check(SMALL, memory_budget=1 << 20)) != []  # 1 MB: even this one is too large
    assert qvr601(check(REPEAT, memory_budget=1 << 50)) == []  # 1 PB: a billion fits


def test_typing_a_size_in_and_out_again_while_reusing_the_last_check() -> None:
    checker = IncrementalChecker(safe=False)
    texts = [SMALL, SMALL.replace("Real 16", "Real 99999999999"), SMALL, REPEAT, SMALL]
    for text in texts:
        again = checker.check(text)
        scratch = check(text)
        assert [(d.code, d.span, d.message) for d in again.diagnostics] == [
            (d.code, d.span, d.message) for d in scratch.diagnostics
        ]
    assert [bool(qvr601(check(t))) for t in texts] == [False, True, False, True, False]


def test_no_warning_while_the_file_has_errors() -> None:
    broken = HUGE.replace("observe next : Tok <- head(h)", "observe next : Tok <- nope(h)")
    assert qvr601(check(broken)) == []
