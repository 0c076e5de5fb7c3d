"""The formatter: one canonical layout, idempotent, comments kept, never loses text."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.format.diff import format_edits
from qvr_core.format.formatter import format_source, format_text
from qvr_core.text.edits import apply_edits

ROOT = Path(__file__).resolve().parents[2]
ALL_EXAMPLES = sorted(ROOT.glob("examples/*.qvr")) + sorted(ROOT.glob("examples/errors/*.qvr"))
PARSING = [p for p in ALL_EXAMPLES if not p.name.startswith("QVR001")]


def types_of(text: str) -> list[tuple[str, str, str | None, str]]:
    module = check(text)
    return [
        (s.name, s.kind.value, s.scope, getattr(s.type, "label", str(s.type)))
        for s in module.symbols.symbols
    ]


@pytest.mark.parametrize("path", PARSING, ids=lambda p: p.name)
def test_every_example_is_already_canonical_and_formatting_is_idempotent(path: Path) -> None:
    text = path.read_text()
    once = format_source(text)
    assert format_source(once) == once
    assert once == text, "the examples are written in the canonical layout"


@pytest.mark.parametrize("path", PARSING, ids=lambda p: p.name)
def test_formatting_keeps_types_diagnostic_codes_and_comments(path: Path) -> None:
    text = path.read_text()
    messy = text.replace(" : ", ":").replace(" -> ", "->").replace(", ", ",")
    formatted = format_source(messy)
    assert types_of(formatted) == types_of(text)
    assert [d.code for d in check(formatted).diagnostics] == [
        d.code for d in check(text).diagnostics
    ]
    assert [c.text for c in check(formatted).ast.comments] == [
        c.text for c in check(messy).ast.comments
    ]


def test_canonical_spacing() -> None:
    messy = (
        "object Token:FinSet   256\n"
        "object Hidden : Real 8\n"
        "object  Pair :Hidden*Hidden\n"
        "morphism embed : Token->Hidden[role = embed ,]\n"
        "morphism cell:Hidden*Hidden->Hidden [role=kernel,scale=0.1]~Normal\n"
        "let back=embed>>scan( cell , reverse = true )\n"
        "program p( x ) :Token->Hidden\n"
        "  sample h<-back\n"
        "  let z = -( h+h )*( h-(h-h) )/2.0\n"
        "  let (a,b) = z\n"
        "  return   (a)\n"
        "export p\n"
    )
    assert format_source(messy) == (
        "object Token : FinSet 256\n"
        "object Hidden : Real 8\n"
        "object Pair : Hidden * Hidden\n"
        "\n"
        "morphism embed : Token -> Hidden [role=embed]\n"
        "morphism cell : Hidden * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal\n"
        "\n"
        "let back = embed >> scan(cell, reverse=true)\n"
        "\n"
        "program p (x) : Token -> Hidden\n"
        "    sample h <- back\n"
        "    let z = -(h + h) * (h - (h - h)) / 2.0\n"
        "    let (a, b) = z\n"
        "    return a\n"
        "\n"
        "export p\n"
    )


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("let x = ((a >> b)) >> c", "let x = a >> b >> c"),
        ("let x = a >> (b >> c)", "let x = a >> (b >> c)"),
        ("let x = (a >> b) @ c", "let x = (a >> b) @ c"),
        ("let x = a @ (b @ c)", "let x = a @ (b @ c)"),
        ("let x = a@b>>c", "let x = a @ b >> c"),
        ("let x = stack((a >> b), 2)", "let x = stack(a >> b, 2)"),
    ],
)
def test_expression_parentheses_only_where_needed(written: str, canonical: str) -> None:
    assert format_source(written + "\n") == canonical + "\n"


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("let y = (a + b) * c", "let y = (a + b) * c"),
        ("let y = a - (b - c)", "let y = a - (b - c)"),
        ("let y = (a - b) - c", "let y = a - b - c"),
        ("let y = a / (b * c)", "let y = a / (b * c)"),
        ("let y = -(a * b)", "let y = -(a * b)"),
        ("let y = (-a) * b", "let y = -a * b"),
        ("let y = a - -b", "let y = a - -b"),
        ("let y = min((a), 1 - b)", "let y = min(a, 1 - b)"),
    ],
)
def test_arithmetic_parentheses_only_where_needed(written: str, canonical: str) -> None:
    text = f"program p (a, b, c) : A * A * A -> A\n    {written}\n    return y\n"
    expected = f"program p (a, b, c) : A * A * A -> A\n    {canonical}\n    return y\n"
    assert format_source(text) == expected


def test_comments_stay_with_their_code() -> None:
    text = (
        "# header\n"
        "\n"
        "object A : Real 2   # trailing\n"
        "#! The doc of f.\n"
        "morphism f : A -> A [role=kernel] ~ Normal\n"
        "program p : A -> A\n"
        "# about the first step\n"
        "      sample x <- f   # why\n"
        "      return x\n"
        "  # end of the body\n"
        "# before the export\n"
        "export p\n"
        "# the end\n"
    )
    assert format_source(text) == (
        "# header\n"
        "\n"
        "object A : Real 2  # trailing\n"
        "\n"
        "#! The doc of f.\n"
        "morphism f : A -> A [role=kernel] ~ Normal\n"
        "\n"
        "program p : A -> A\n"
        "    # about the first step\n"
        "    sample x <- f  # why\n"
        "    return x\n"
        "    # end of the body\n"
        "\n"
        "# before the export\n"
        "export p\n"
        "# the end\n"
    )
    assert check(format_source(text)).symbols.lookup("f").doc == "The doc of f."


def test_blank_lines_collapse_and_vanish_at_the_start_of_file_and_body() -> None:
    text = (
        "\n\n\nobject A : Real 2\n\n\n\nobject B : Real 2\nprogram p : A -> A\n\n"
        "    sample x <- f\n\n\n    return x\n\n\n"
    )
    assert format_source(text) == (
        "object A : Real 2\n\nobject B : Real 2\n\nprogram p : A -> A\n"
        "    sample x <- f\n\n    return x\n"
    )


# (a `let` continued over lines is quivers 0.2-0.10's, an older surface: quivers 0.11+
# continue only an option block, one option per line)
def test_a_multi_line_declaration_is_joined() -> None:
    text = "morphism f : A -> A [\n    role=kernel,\n    scale=0.1,\n] ~ Normal\n"
    assert format_source(text) == "morphism f : A -> A [role=kernel, scale=0.1] ~ Normal\n"


def test_a_multi_line_declaration_with_comments_inside_is_kept_as_written() -> None:
    text = (
        "morphism f : A -> A [\n    role=kernel,  # the first\n    scale=0.1,\n] ~ Normal"
        "  # done\n\nlet y = f\n"
    )
    result = format_text(text)
    assert result.ok and result.text == text


def test_a_let_continued_over_lines_is_an_older_surface_fmt_names() -> None:
    result = format_text("let x = fan(\n      a,\n   b)\n")
    assert not result.ok and "older surface" in (result.refused or "")


def test_an_indented_doc_like_comment_does_not_become_a_doc_comment() -> None:
    text = "  #! not a doc\nobject A : Real 2\n"
    formatted = format_source(text)
    assert check(formatted).symbols.lookup("A").doc is None
    assert format_source(formatted) == formatted


def test_separated_doc_runs_stay_separated() -> None:
    text = "#! stale\n\n#! fresh\nobject A : Real 2\n"
    assert format_source(text) == text
    assert check(text).symbols.lookup("A").doc == "fresh"


def test_crlf_files_stay_crlf() -> None:
    text = "object A:Real 2\r\nobject B : Real 2\r\n"
    assert format_source(text) == "object A : Real 2\r\nobject B : Real 2\r\n"


def test_a_file_with_syntax_errors_is_left_unchanged_with_the_reason() -> None:
    text = "object A : Real 2\nmorphism f : A A [role=kernel]\n"
    result = format_text(text)
    assert result.text == text and not result.ok
    assert "syntax error on line 2" in (result.refused or "")
    assert format_edits(text) == []


def test_empty_and_comment_only_files() -> None:
    assert format_source("") == ""
    assert format_source("\n\n") == ""
    assert format_source("# just a note   \n\n") == "# just a note\n"


def test_format_edits_apply_to_the_formatted_text() -> None:
    text = "object A:Real 2\nobject B : Real 2\nlet x=a\n"
    assert apply_edits(text, format_edits(text)) == format_source(text)


def test_range_edits_touch_only_the_requested_lines() -> None:
    text = "object A:Real 2\nobject B : Real 2\nobject C:Real 2\n"
    edits = format_edits(text, (2, 2))
    assert apply_edits(text, edits) == "object A:Real 2\nobject B : Real 2\nobject C : Real 2\n"
