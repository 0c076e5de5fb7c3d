"""Rename is scope-aware, round-trips, and refuses what would break the file."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.rename import RenameError, prepare_rename, rename
from qvr_core.text.edits import apply_edits
from tests.ide.helpers import EXAMPLES, at, error_example, example


def renamed(text: str, offset: int, new: str) -> str:
    return apply_edits(text, rename(check(text), offset, new))


def test_renames_a_morphism_at_its_declaration_and_every_use() -> None:
    text = example("vanilla_rnn_lm.qvr")
    after = renamed(text, at(text, "cell", within="morphism cell"), "rnn_cell")
    assert "morphism rnn_cell :" in after
    assert "scan(rnn_cell)" in after
    assert check(after).ok


def test_rename_from_a_use_equals_rename_from_the_definition() -> None:
    text = example("vanilla_rnn_lm.qvr")
    from_use = renamed(text, at(text, "backbone", within="sample"), "trunk")
    from_def = renamed(text, at(text, "backbone"), "trunk")
    assert from_use == from_def


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_symbol_renames_round_trip(path) -> None:
    text = path.read_text()
    module = check(text)
    for symbol in module.symbols.symbols:
        defs = [r for r in module.symbols.references_to(symbol) if r.is_definition]
        if not defs:
            continue  # the copies of a replicated morphism are renamed with it
        start = defs[0].span.start
        # each text checked once: the original's check serves every symbol's rename
        there = apply_edits(text, rename(module, start, f"zz_{symbol.name}"))
        checked = check(there)
        assert checked.ok, symbol.name
        assert apply_edits(there, rename(checked, start, symbol.name)) == text, symbol.name


def test_program_local_rename_stays_in_its_program() -> None:
    text = example("rlstm_lm.qvr")
    cell_h = at(text, "h", within="let h = sigmoid")
    after = renamed(text, cell_h, "hidden")
    cell, lm = after.split("define encoder")
    assert "let hidden = sigmoid(o_pre) * tanh(c)" in cell
    assert "return (hidden, c)" in cell
    assert "sample (h, _c) <- encoder" in lm and "lm_head(h)" in lm


def test_renaming_a_replicated_morphism_renames_its_copies() -> None:
    text = (
        "object L : Real 4\nobject O : Real 2\nobject P : O * O\n"
        "morphism head : L -> O [role=kernel, replicate=2, scale=0.1] ~ Normal\n"
        "morphism mix : P -> L [role=kernel, scale=0.1] ~ Normal\n"
        "let a = fan(head) >> mix\nlet b = head_0\nexport a\nexport b\n"
    )
    after = renamed(text, at(text, "head"), "reader")
    assert "morphism reader :" in after and "fan(reader)" in after and "let b = reader_0" in after
    assert check(after).ok


def test_a_copy_of_a_replicated_morphism_is_not_renamed_alone() -> None:
    text = (
        "object L : Real 4\nobject O : Real 2\n"
        "morphism head : L -> O [role=kernel, replicate=2, scale=0.1] ~ Normal\n"
        "let b = head_1\nexport b\n"
    )
    with pytest.raises(RenameError, match="rename 'head' instead"):
        prepare_rename(check(text), at(text, "head_1"))


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ("2cell", "not an identifier"),
        ("my-cell", "not an identifier"),
        ("", "not an identifier"),
        ("program", "keyword"),
        ("sample", "keyword"),
        ("Real", "type constructor"),
        ("scan", "combinator"),
        ("Normal", "family"),
        ("tanh", "builtin function"),
        ("true", "boolean"),
    ],
)
def test_refuses_names_that_cannot_be_declared(new: str, reason: str) -> None:
    text = example("vanilla_rnn_lm.qvr")
    with pytest.raises(RenameError, match=reason):
        rename(check(text), at(text, "cell"), new)


def test_refuses_a_top_level_collision() -> None:
    text = example("vanilla_rnn_lm.qvr")
    with pytest.raises(RenameError, match="'lm_head' is already declared"):
        rename(check(text), at(text, "cell"), "lm_head")


def test_refuses_a_local_collision_in_the_same_program() -> None:
    text = example("rlstm_lm.qvr")
    with pytest.raises(RenameError, match="already bound in program rlstm_cell"):
        rename(check(text), at(text, "ij", within="let ij"), "f")


def test_a_local_may_take_a_name_used_in_another_program_or_at_top_level() -> None:
    text = example("rlstm_lm.qvr")
    module = check(text)
    after = apply_edits(text, rename(module, at(text, "ij", within="let ij"), "next_token"))
    assert check(after).ok
    after = apply_edits(text, rename(module, at(text, "ij", within="let ij"), "encoder"))
    assert check(after).ok


def test_refuses_where_there_is_no_symbol() -> None:
    text = example("vanilla_rnn_lm.qvr")
    with pytest.raises(RenameError, match="nothing to rename"):
        prepare_rename(check(text), at(text, "FinSet"))
    with pytest.raises(RenameError, match="nothing to rename"):
        prepare_rename(check(text), at(text, "role"))


def test_refuses_while_the_file_has_syntax_errors() -> None:
    text = error_example("QVR001")
    with pytest.raises(RenameError, match="syntax errors"):
        prepare_rename(check(text), at(text, "Token", within="object Token"))


def test_prepare_rename_gives_the_name_span_and_placeholder() -> None:
    text = example("vanilla_rnn_lm.qvr")
    offset = at(text, "lm_head", within="observe")
    target = prepare_rename(check(text), offset + 3)
    assert (target.span.start, target.span.end) == (offset, offset + len("lm_head"))
    assert target.placeholder == "lm_head"


def test_renaming_to_the_same_name_changes_nothing() -> None:
    text = example("vanilla_rnn_lm.qvr")
    assert rename(check(text), at(text, "cell"), "cell") == []


def test_a_top_level_name_may_take_the_name_of_a_local() -> None:
    text = example("rlstm_lm.qvr")
    module = check(text)
    after = apply_edits(text, rename(module, at(text, "gate_o"), "o_pre"))
    assert "sample o_pre <- o_pre(c)" in after
    assert check(after).ok
    assert renamed(after, at(after, "o_pre", within="morphism"), "gate_o") == text
