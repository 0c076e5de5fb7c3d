"""Signature help finds the open call before the cursor, even in text that does not parse."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.signature import signature_help
from tests.ide.helpers import at, example

RLSTM = example("rlstm_lm.qvr")
MODULE = check(RLSTM)


def active(text: str, offset: int) -> tuple[str, str] | None:
    help_ = signature_help(text, offset, MODULE)
    if help_ is None:
        return None
    start, end = help_.signature.parameters[help_.active_parameter]
    return help_.signature.label, help_.signature.label[start:end]


def typing(suffix: str) -> tuple[str, int]:
    text = RLSTM + suffix
    return text, len(text)


@pytest.mark.parametrize(
    ("suffix", "label", "param"),
    [
        ("\nlet bi = fan(", "fan(f1, f2) : D -> C1 * C2", "f1"),
        ("\nlet bi = fan(encoder, encoder, ", "fan(f1, f2, f3) : D -> C1 * C2 * C3", "f3"),
        ("\nlet bi = scan(", "scan(c, reverse=false, init=zeros) : [A] -> H", "c"),
        (
            "\nlet bi = scan(rlstm_cell, reverse=",
            "scan(c, reverse=false, init=zeros) : [A] -> H",
            "reverse=false",
        ),
        (
            "\nlet bi = scanl(rlstm_cell, init=",
            "scanl(c, reverse=false, init=zeros) : [A] -> [H]",
            "init=zeros",
        ),
        (
            "\nlet bi = multihead(gate_o, ",
            "multihead(query, key, value) : [A] -> [V * ... * V]",
            "key",
        ),
        ("\nlet bi = stack(gate_o, ", "stack(b, n) : A -> A", "n"),
        ("\nlet bi = repeat(", "repeat(b, n) : A -> A", "b"),
        ("\nlet bi = stack(\n    gate_o,  # the body\n    ", "stack(b, n) : A -> A", "n"),
    ],
)
def test_combinators_while_typing(suffix: str, label: str, param: str) -> None:
    assert active(*typing(suffix)) == (label, param)


def test_morphism_call_in_a_program_has_one_parameter_per_factor() -> None:
    call = at(RLSTM, "gate_f(ij, h_prev)")
    assert active(RLSTM, call + len("gate_f(")) == ("gate_f(Hidden, Hidden) -> Hidden", "Hidden")
    help_ = signature_help(RLSTM, call + len("gate_f(ij, h"), MODULE)
    assert help_ is not None and help_.active_parameter == 1
    assert "Hidden * Hidden (R^(64+64))" in help_.signature.doc


def test_program_call_names_its_parameters_and_shows_its_doc() -> None:
    text, offset = typing(
        "\nprogram p (x, h, c) : Embedded * Hidden * Hidden -> State\n"
        "    sample y <- rlstm_cell(x, "
    )
    help_ = signature_help(text, offset, MODULE)
    assert help_ is not None
    assert help_.signature.label == (
        "rlstm_cell(x: Embedded, h_prev: Hidden, c_prev: Hidden) -> State"
    )
    assert help_.active_parameter == 1
    assert help_.signature.doc.startswith("One RLSTM step")


def test_arithmetic_builtins_in_program_lets() -> None:
    offset = at(RLSTM, "min(i, 1 - f)", within="let c =") + len("min(i, ")
    assert active(RLSTM, offset) == ("min(a, b)", "b")


@pytest.mark.parametrize(
    "where",
    [
        len(RLSTM),  # after the last line
        at(RLSTM, "min(i, 1") + 5,  # inside the header comment
        at(RLSTM, "gate_f(ij, h_prev)") + len("gate_f(ij, h_prev)"),  # after the call closed
    ],
)
def test_no_help_outside_a_call(where: int) -> None:
    assert signature_help(RLSTM, where, MODULE) is None


def test_morphism_calls_outside_programs_are_not_applications() -> None:
    text, offset = typing("\nlet bad = gate_o(")
    assert signature_help(text, offset, MODULE) is None


def test_unknown_callee_gives_no_help() -> None:
    text, offset = typing("\nprogram q : Token -> Token\n    sample y <- nowhere(")
    assert signature_help(text, offset, MODULE) is None


@pytest.mark.parametrize(
    ("suffix", "label", "param"),
    [
        ("\ndefine g = f.change_base(", "f.change_base(phi)", "phi"),
        ("\ndefine pipe = softmax(", "softmax(axis)", "axis"),
        ("\ndefine g = f.change_base(softmax(B) >>> bayes_invert(", "bayes_invert(prior)", "prior"),
    ],
)
def test_a_change_of_base_and_its_constructors(suffix: str, label: str, param: str) -> None:
    assert active(*typing(suffix)) == (label, param)


def test_an_arithmetic_softmax_in_a_program_is_the_function() -> None:
    found = active(*typing("\nprogram q : Token -> Token\n    let p = softmax("))
    assert found is not None and found[0].startswith("softmax(") and found[0] != "softmax(axis)"
