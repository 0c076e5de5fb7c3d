"""Inlay hints show the checker's inferred types, fan directions and dimension matches."""

from __future__ import annotations

import dataclasses

import pytest

from qvr_core.check import check
from qvr_core.ide.inlay import LEFT_TO_RIGHT, RIGHT_TO_LEFT, HintKind, inlay_hints
from tests.ide.helpers import at, error_example, example


def hints_by_text(text: str) -> dict[str, str]:
    """`text before the hint on its line` -> label."""
    module = check(text)
    out = {}
    for h in inlay_hints(module):
        line, col = module.lines.position(h.offset)
        out[module.lines.line_text(line)[:col].strip()] = h.label
    return out


def test_type_after_each_top_level_let() -> None:
    hints = hints_by_text(example("bidirectional_rnn_lm.qvr"))
    assert hints["let forward_path"] == ": [Token] -> FwdHidden"
    assert hints["let backward_path"] == ": [Token] -> BwdHidden"
    assert hints["let backbone"] == ": [Token] -> Combined"


def test_type_after_each_sample_site_and_program_let() -> None:
    hints = hints_by_text(example("rlstm_lm.qvr"))
    assert hints["sample i_pre"] == ": Hidden"
    assert hints["let ij"] == ": Hidden"
    assert hints["sample (h"] == ": [Hidden]"  # each name of a tuple site
    assert hints["sample (h, _c"] == ": [Hidden]"
    assert hints["define encoder"] == ": [Token] -> [State]"


def test_observe_sites_have_no_hint_since_their_type_is_written() -> None:
    text = example("vanilla_rnn_lm.qvr")
    offsets = {h.offset for h in inlay_hints(check(text))}
    assert at(text, "next_token") + len("next_token") not in offsets


def test_bidirectional_fan_shows_the_direction_of_each_branch() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    directions = [h for h in inlay_hints(check(text)) if h.kind is HintKind.PARAMETER]
    assert [(h.offset, h.label) for h in directions] == [
        (at(text, "forward_path", within="fan("), LEFT_TO_RIGHT),
        (at(text, "backward_path", within="fan("), RIGHT_TO_LEFT),
    ]
    assert "right to left" in directions[1].tooltip


def test_no_direction_hints_without_a_bidirectional_fan() -> None:
    module = check(example("encoder_decoder.qvr"))
    assert not [h for h in inlay_hints(module) if h.kind is HintKind.PARAMETER]


def test_dimension_match_hint_reads_the_facts_of_the_qvr203_diagnostic() -> None:
    text = error_example("QVR203")
    module = check(text)
    facts = (
        ("produced", "Features"),
        ("produced_dims", "R^128"),
        ("expected", "Hidden"),
        ("expected_dims", "R^128"),
    )
    diagnostics = tuple(
        dataclasses.replace(d, data=facts) if d.code == "QVR203" else d for d in module.diagnostics
    )
    module = dataclasses.replace(module, diagnostics=diagnostics)
    [hint] = [h for h in inlay_hints(module) if "as" in h.label]
    assert hint.label == "Features = R^128 as Hidden = R^128"
    assert hint.offset == at(text, "lm_head", within="let model") + len("lm_head")


def test_hints_are_limited_to_the_requested_range() -> None:
    text = example("rlstm_lm.qvr")
    module = check(text)
    start = at(text, "program rlstm_lm")
    hints = inlay_hints(module, start, len(text))
    assert hints and all(h.offset >= start for h in hints)


def test_dimension_match_hint_on_the_bidirectional_gallery_example() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    module = check(text)
    [match] = [d for d in module.diagnostics if d.code == "QVR203"]
    if "produced" not in dict(match.data):
        pytest.skip("the checker does not record QVR203 facts yet (Diagnostic.data)")
    [hint] = [h for h in inlay_hints(module) if " as " in h.label]
    assert hint.label == "FwdHidden * BwdHidden = R^(64+64) as Combined = R^128"
    assert hint.offset == at(text, "combine", within="let backbone") + len("combine")
