"""`qvr_core.migrate` and `qvr_core.syntax.era`: rewrites between eras, comments kept, and the
era a file is written for."""

from __future__ import annotations

import pytest

from qvr_core.migrate import era_of, migrate_text
from qvr_core.syntax.era import era
from qvr_core.syntax.parser import parse
from qvr_core.text.edits import apply_edits

LET_FILE = """\
# a model written for quivers 0.12
object A : FinSet 3  # three states
object B : FinSet 2

let f = identity(A)  # kept comment

rule combine(X, Y) : A, B => A
export f
"""


def test_top_level_let_becomes_define_and_comments_stay() -> None:
    result = migrate_text(LET_FILE, "current")
    assert result.ok and not result.left
    assert "define f = identity(A)  # kept comment" in result.text
    assert "rule combine(X, Y) : A, B |- A" in result.text
    assert result.text.replace("define", "let").replace("|-", "=>") == LET_FILE


def test_migrating_twice_changes_nothing_more() -> None:
    once = migrate_text(LET_FILE).text
    assert migrate_text(once).text == once


def test_older_surfaces_are_rewritten_by_their_quick_fixes() -> None:
    text = "# old\nobject Term : 16\n"
    parsed = parse(text)
    (older,) = [d for d in parsed.diagnostics if d.code == "QVR010"]
    fixed = apply_edits(text, list(older.fixes[0].edits))
    assert migrate_text(text).text == fixed == "# old\nobject Term : FinSet 16\n"


def test_a_space_written_as_a_call_is_the_sized_object_it_stands_for() -> None:
    """quivers 0.3-0.9's `Euclidean(D)` is `Real D` since 0.11: typed so (a continuous
    latent is then QVR307, not names only) and rewritten so."""
    from qvr_core.check import check

    text = "object D : FinSet 3\nobject K : FinSet 4\nlatent W : Euclidean(D) -> Euclidean(K)\n"
    codes = sorted({d.code for d in check(text).diagnostics})
    assert codes == ["QVR010", "QVR103", "QVR307"], codes
    migrated = migrate_text(text).text
    assert migrated.endswith("morphism W : Real D -> Real K [role=latent]\n")


def test_forms_quivers_015_dropped_are_left_and_named() -> None:
    text = "composition log_prob as algebra\nobject A : FinSet 2\n"
    result = migrate_text(text)
    assert result.ok and result.text == text
    (left,) = result.left
    assert left.span.start_line == 0 and "composition ... as" in left.message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "object A : FinSet 2\nobject B : FinSet 3\n"
            "latent W : A -> B ~ MatrixNormal(0.0, 1.0, 1.0) over (dom, cod)\n",
            "over (dom, cod)",
        ),
        (
            "object R : FinSet 2\nobject G : FinSet 2\nprogram p : R -> R\n"
            "    observe y : R via idx <- Normal(0.0, 1.0)\n    return y\n",
            "via idx",
        ),
        (
            "object R : FinSet 2\nprogram p : R -> R\n"
            "    observe y : R <- Bernoulli(0.5)\n    marginalize y\n    return y\n",
            "marginalize y",
        ),
    ],
)
def test_older_constructs_with_no_spelling_today_are_named_once(text: str, named: str) -> None:
    """One QVR010 each, with no fix; migrate rewrites the rest and names exactly them."""
    parsed = parse(text)
    assert not [d for d in parsed.diagnostics if d.code == "QVR001"]
    unfixable = [d for d in parsed.diagnostics if d.code == "QVR010" and not d.fixes]
    assert len(unfixable) == 1 and "quivers 0." in unfixable[0].message
    result = migrate_text(text)
    assert result.ok
    (left,) = result.left
    assert result.text[left.span.start : left.span.end] == named
    assert "morphism W : A -> B [role=latent]" in result.text or "latent" not in text


def test_a_braced_scope_with_over_is_named_whole_and_its_steps_bind() -> None:
    text = (
        "object R : FinSet 4\nobject C : FinSet 2\nobject I : FinSet 2\nprogram p : R -> R\n"
        "    marginalize c : C <- Categorical(probs)\n        over I\n        in {\n"
        "            observe y : R <- Normal(0.0, 1.0)\n        }\n    return y\n"
    )
    parsed = parse(text)
    assert [d.code for d in parsed.diagnostics] == ["QVR010"]
    assert "[over=I]" in parsed.diagnostics[0].message
    (program,) = [d for d in parsed.module.decls if d.name.text == "p"]
    assert [type(s).__name__ for s in program.steps[0].steps] == ["ObserveStep"]
    (left,) = migrate_text(text).left
    assert left.span.start_line == 4 and left.span.end_line == 8


def test_a_file_that_does_not_parse_is_refused_with_its_line() -> None:
    text = "object A : FinSet 3\nmorphism f : A A\n"
    result = migrate_text(text)
    assert not result.ok and result.text == text
    assert "line 2" in (result.refused or "")


def test_unknown_target_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"0\.15"):
        migrate_text(LET_FILE, "0.9")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        (LET_FILE, "quivers 0.11-0.14 (top-level let, `rule ... =>`)"),
        ("object A : FinSet 3\ndefine f = identity(A)\n", "quivers 0.15+ (define)"),
        ("object A, B : FinSet 3\n", "quivers 0.15+ (multi-name declarations)"),
        ("object A : 8\n", "quivers 0.1-0.10 (an older surface)"),
        ("object A : FinSet 3\n", "quivers 0.11+ (nothing era-specific)"),
        (
            "object A : FinSet 3\nprogram p(x : Real) : A -> A\n    let y <- g(x)\n    return y\n",
            "quivers 0.19+ (call steps)",
        ),
    ],
)
def test_the_era_a_file_is_written_for(text: str, label: str) -> None:
    assert era_of(text).label == label


def test_constructs_of_eras_no_release_shares_are_mixed() -> None:
    text = "object A : FinSet 3\nlet f = identity(A)\ndefine g = identity(A)\n"
    found = era_of(text)
    assert found.mixed
    assert found.label == "mixed quivers eras (top-level let: 0.11-0.14; define: 0.15+)"


def test_era_reads_the_parse_it_is_given() -> None:
    parsed = parse("object A : 8\n")
    assert era(parsed.module, parsed.diagnostics, "object A : 8\n").older
    assert not era(parsed.module, [], "object A : 8\n").older
