"""The incremental checker gives exactly what a check from scratch gives, reusing work.

Equality is over every table of the module (diagnostics, types at positions,
symbols and references, the tables the runtime and the graph read, the
syntax tree), after each edit of a random sequence. The safety net is off
(`safe=False`), so a bug fails here instead of silently checking from scratch.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker, _Plan
from qvr_core.check.module import CheckedModule, PendingModule
from tests.check.test_check_properties import SOURCES, edited
from tests.lsp.support import example

TABLES = [f.name for f in dataclasses.fields(CheckedModule) if f.name not in ("lines", "symbols")]


def same_as_from_scratch(module: CheckedModule, text: str, strict: bool = False) -> None:
    expected = check(text, strict=strict)
    for name in TABLES:
        got, want = getattr(module, name), getattr(expected, name)
        assert got == want, name
        if isinstance(want, dict):
            assert list(got) == list(want), name  # the same order too
    assert module.symbols.symbols == expected.symbols.symbols
    assert module.symbols.references == expected.symbols.references


DECLARATION_LINES = [
    "morphism extra : Token -> Token [role=kernel]\n",
    "object Extra : Real 3\n",
    "object Hidden : Real 7\n",
    "let extra = extra\n",
    "#! a doc comment\n",
    "export extra\n",
]


@st.composite
def edit_sequences(draw: st.DrawFn) -> list[str]:
    text = draw(st.sampled_from(SOURCES))
    versions = [text]
    for _ in range(draw(st.integers(1, 6))):
        roll = draw(st.integers(0, 9))
        if roll == 1:  # a whole declaration, at the start of a line
            starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
            at = draw(st.sampled_from(starts))
            text = text[:at] + draw(st.sampled_from(DECLARATION_LINES)) + text[at:]
        elif roll == 0:  # cut a stretch and paste it elsewhere
            a, b = sorted(draw(st.integers(0, len(text))) for _ in range(2))
            piece, rest = text[a:b], text[:a] + text[b:]
            at = draw(st.integers(0, len(rest)))
            text = rest[:at] + piece + rest[at:]
        else:
            text = edited(draw, text)
        versions.append(text)
    return versions


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences(), st.booleans())
def test_every_version_checks_as_from_scratch(versions: list[str], strict: bool) -> None:
    checker = IncrementalChecker(safe=False)
    for text in versions:
        same_as_from_scratch(checker.check(text, strict=strict), text, strict)


def test_going_back_and_forth_between_versions() -> None:
    base = example("bidirectional_rnn_lm.qvr")
    broken = base.replace("Embedded * FwdHidden", "Embeded * FwdHidden", 1)
    checker = IncrementalChecker(safe=False)
    for text in (base, broken, base, broken + "\n", base, base):
        same_as_from_scratch(checker.check(text), text)


def entries(checker: IncrementalChecker) -> dict[str, object]:
    assert checker._state is not None
    return dict(checker._state.entries)


def edit_program_body(text: str) -> str:
    """A harmless edit inside the last program's body (one more blank in a step)."""
    at = text.rindex("    sample ")
    return text[:at] + "    sample  " + text[at + len("    sample ") :]


def test_an_edit_in_one_program_rechecks_only_that_program() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    checker = IncrementalChecker(safe=False)
    checker.check(text)
    before = entries(checker)
    new = edit_program_body(text)
    checker.check(new)
    after = entries(checker)
    renewed = [t for t, e in after.items() if before.get(t) is not e]
    assert len(renewed) == 1 and renewed[0] in new and renewed[0] not in text


def test_a_changed_let_rechecks_what_uses_it() -> None:
    text = (
        "object A : Real 2\nobject B : Real 3\n"
        "morphism f : A -> A [role=kernel] ~ Normal\n"
        "morphism g : A -> B [role=kernel] ~ Normal\n"
        "let body = f\n"
        "program p : A -> A\n    sample y <- body\n    return y\nexport p\n"
    )
    checker = IncrementalChecker(safe=False)
    assert checker.check(text).ok
    changed = text.replace("let body = f", "let body = g")
    module = checker.check(changed)
    assert [d.code for d in module.errors] == ["QVR404"]  # p now returns B, not A
    same_as_from_scratch(module, changed)


def test_a_new_declaration_fixes_an_undefined_name_elsewhere() -> None:
    text = "object A : Real 2\nprogram p : A -> A\n    sample y <- cell\n    return y\nexport p\n"
    checker = IncrementalChecker(safe=False)
    assert [d.code for d in checker.check(text).errors] == ["QVR101"]
    added = text + "morphism cell : A -> A [role=kernel] ~ Normal\n"
    assert checker.check(added).ok


def test_suggestions_follow_the_names_declared_now() -> None:
    text = "object A : Real 2\nlet x = celll\nexport x\n"
    checker = IncrementalChecker(safe=False)
    assert "did you mean" not in checker.check(text).errors[0].message
    added = "morphism cell : A -> A [role=kernel] ~ Normal\n" + text
    assert "did you mean 'cell'" in checker.check(added).errors[0].message


def test_a_cycle_is_reported_the_same_after_edits_around_it() -> None:
    text = "let a = b\nlet b = a\nlet c = a\nexport c\n"
    checker = IncrementalChecker(safe=False)
    for version in (text, "\n" + text, "let d = b\n" + text, text):
        same_as_from_scratch(checker.check(version), version)


def test_diagnostics_come_before_the_tables() -> None:
    text = example("vanilla_rnn_lm.qvr")
    checker = IncrementalChecker(safe=False)
    checker.check(text)
    module = checker.check(edit_program_body(text))
    assert isinstance(module, PendingModule)
    assert "diagnostics" in module.__dict__ and "typed_spans" not in module.__dict__
    assert module.typed_spans  # built on first use
    module.materialize()  # again: nothing to do
    same_as_from_scratch(module, module.source)


def test_tables_built_from_two_threads_at_once_are_built_once() -> None:
    text = example("vanilla_rnn_lm.qvr")
    checker = IncrementalChecker(safe=False)
    checker.check(text)
    module = checker.check(edit_program_body(text))
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(module.symbols)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 4 and all(s is seen[0] for s in seen)


def test_a_pending_module_can_be_replaced_like_any_module() -> None:
    module = IncrementalChecker().check(example("vanilla_rnn_lm.qvr"))
    copy = dataclasses.replace(module, diagnostics=())
    assert copy.diagnostics == () and copy.typed_spans == module.typed_spans


def test_a_bug_in_the_reuse_costs_the_reuse_not_the_diagnostics(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    text = example("bidirectional_rnn_lm.qvr")
    checker = IncrementalChecker()
    checker.check(text)

    def broken(self: _Plan) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_Plan, "decls_in_place", broken)
    with caplog.at_level(logging.ERROR):
        module = checker.check(text.replace("Hidden", "Hiden", 1))
    assert "checking from scratch" in caplog.text
    assert module.diagnostics == check(text.replace("Hidden", "Hiden", 1)).diagnostics


def test_checks_leave_no_reference_cycles() -> None:
    """The language server turns cycle collection off (qvr_lsp/analysis/memory.py): a finished
    check must be freed by reference counting alone.

    What existed before is frozen (`gc.freeze`), so each collection walks only what the
    checks made, not the whole heap of the worker that runs this test (a full walk of
    that, once per source, took minutes): a cycle among the checks' objects is still
    found, whatever else it points to."""
    import gc

    check(SOURCES[0])  # lark builds its tables once, with a cycle of its own
    gc.collect()
    gc.disable()
    gc.freeze()
    try:
        for text in SOURCES:
            checker = IncrementalChecker(safe=False)
            for version in (text, "\n" + text, text.replace("\n\n", "\n", 1)):
                checker.check(version).materialize()
            check(text)
            assert gc.collect() == 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_fix_that_inserts_after_the_declarations_follows_a_new_declaration() -> None:
    """The projection fix inserts after the last object or morphism: a morphism added
    below that point (and above the let with the mismatch) moves it."""
    path = Path(__file__).resolve().parents[2] / "examples" / "errors"
    text = (path / "QVR201_dimension_mismatch.qvr").read_text(encoding="utf-8")
    checker = IncrementalChecker(safe=False)
    checker.check(text)
    added = text.replace(
        "\nlet forward_path", "\nmorphism extra : Token -> Token [role=kernel]\n\nlet forward_path"
    )
    same_as_from_scratch(checker.check(added), added)


def test_from_empty_to_a_file_and_back() -> None:
    text = example("vanilla_rnn_lm.qvr")
    checker = IncrementalChecker(safe=False)
    for version in ("", text, "", "\n", text, text + "\n# end", "#", text):
        same_as_from_scratch(checker.check(version), version)
