"""Inferred types by position: what hover and inlay hints read."""

from __future__ import annotations

from pathlib import Path

from qvr_core.check import check
from qvr_core.check.types import Arrow, Seq, dims_text
from tests.check.helpers import find

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def type_label_at(text: str, offset: int) -> str:
    found = check(text).type_at(offset)
    assert found is not None
    return found.type.label


def test_backbone_is_a_sequence_to_combined() -> None:
    text = (EXAMPLES / "bidirectional_rnn_lm.qvr").read_text()
    start, _ = find(text, "backbone", within="let backbone")
    assert type_label_at(text, start + 2) == "[Token] -> Combined"


def test_fan_produces_both_hidden_states_with_dimensions() -> None:
    text = (EXAMPLES / "bidirectional_rnn_lm.qvr").read_text()
    start, _ = find(text, "fan(")
    found = check(text).type_at(start + 1)
    assert found is not None and isinstance(found.type, Arrow)
    assert found.label == "fan(forward_path, backward_path)"
    assert found.type.label == "[Token] -> FwdHidden * BwdHidden"
    assert dims_text(found.type.cod) == "R^(64+64)"


def test_sequence_lifting_of_embed_then_scan() -> None:
    text = (EXAMPLES / "vanilla_rnn_lm.qvr").read_text()
    module = check(text)
    assert module.lets["backbone"].type is not None
    assert module.lets["backbone"].type.label == "[Token] -> Hidden"
    start, _ = find(text, "scan(cell)")
    assert type_label_at(text, start) == "[Embedded] -> Hidden"


def test_program_header_is_satisfied_by_a_sequence_body() -> None:
    module = check((EXAMPLES / "vanilla_rnn_lm.qvr").read_text())
    program = module.programs["vanilla_rnn_lm"]
    assert program.header.label == "Token -> Token"
    assert program.type is not None and program.type.label == "[Token] -> Token"
    assert isinstance(program.type.dom, Seq)


def test_backward_branch_of_bidirectional_fan_reads_right_to_left() -> None:
    module = check((EXAMPLES / "bidirectional_rnn_lm.qvr").read_text())
    assert list(module.reversed_branches.values()) == [frozenset({1})]
    text = module.source
    start, _ = find(text, "backward_path", within="fan(")
    found = module.type_at(start)
    assert found is not None and "right to left" in found.note


def test_explicit_reverse_is_not_overridden_by_the_convention() -> None:
    text = (
        (EXAMPLES / "bidirectional_rnn_lm.qvr")
        .read_text()
        .replace("scan(bwd_cell)", "scan(bwd_cell, reverse=true)")
    )
    module = check(text)
    assert module.reversed_branches == {}
    assert len(module.reversed_scans) == 1


def test_program_cell_in_scan_splits_input_from_state() -> None:
    module = check((EXAMPLES / "rlstm_lm.qvr").read_text())
    assert module.lets["encoder"].type is not None
    assert module.lets["encoder"].type.label == "[Token] -> [State]"  # scanl: every state
    cell = module.programs["rlstm_cell"]
    assert cell.type is not None and cell.type.label == "Embedded * Hidden * Hidden -> State"
    assert dict(cell.values)["c"].label == "Hidden"


def test_encoder_decoder_types() -> None:
    module = check((EXAMPLES / "encoder_decoder.qvr").read_text())
    assert module.lets["embed_pair"].type.label == "Source * Target -> SrcEmbedded * TgtEmbedded"
    assert module.lets["attend"].type.label == "Latent -> Context"
    assert module.programs["encoder_decoder"].type.label == "Source * Target -> Target"


def test_let_arithmetic_takes_the_left_operand_type() -> None:
    module = check((EXAMPLES / "rlstm_lm.qvr").read_text())
    values = module.programs["rlstm_cell"].values
    assert values["ij"].label == "Hidden"
    assert values["h"].label == "Hidden"
