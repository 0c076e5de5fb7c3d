"""Programs that apply morphisms and also draw from families or read data (quivers'
gru_lm and bnn pages): the seeds' checker types them, with quivers' meaning.

`sample h <- Normal(r, 0.5)` with `r : Hidden` draws one number per coordinate, so
`h : Hidden`; a free name only morphisms read (`observe y : Resp <- net(x)`) is data
of the morphism's domain, one value per example."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.check.types import Arrow, Product
from qvr_core.plan.runnable import runnability
from qvr_core.text import rules
from tests.check.helpers import find

HEAD = """\
object Token : FinSet 8
object Resp : FinSet 4
object Embedded : Real 3
object Hidden : Real 5
object Rate : Positive 5

morphism tok_embed : Token -> Embedded [role=embed]
morphism gate : Embedded * Hidden -> Hidden ~ LogitNormal
"""

CELL = """\
program cell(x_t, h_prev) : Embedded * Hidden -> Hidden
    sample z <- gate(x_t, h_prev)
    let reset = z * h_prev
    sample h_cand <- Normal(reset, 0.5)
    let h_new = (1.0 - z) * h_prev + z * h_cand
    return h_new

export cell
"""


def _check(body: str) -> tuple[str, CheckedModule]:
    text = HEAD + body
    return text, check(text)


def _codes(m: CheckedModule) -> list[str]:
    return [d.code for d in m.diagnostics if d.severity.value in ("error", "information")]


def _hover(m: CheckedModule, text: str, needle: str, within: str) -> str:
    start, end = find(text, needle, within=within)
    found = [t for t in m.typed_spans if t.span.start == start and t.span.end == end]
    assert found, needle
    return found[0].type.label


def test_a_family_step_beside_morphism_steps_is_typed() -> None:
    text, m = _check(CELL)
    assert _codes(m) == []
    info = m.programs["cell"]
    assert info.type is not None
    assert str(info.type) == "Embedded * Hidden -> Hidden"
    site = next(s for s in info.sites if s.name == "h_cand")
    assert site.family == "Normal"
    assert site.args == ("reset",)
    assert site.family_args == (("loc", "reset"), ("scale", 0.5))
    assert site.morphism_type == Arrow(info.values["reset"], info.values["h_cand"])
    assert isinstance(site.value_type, Product) and site.value_type.names == ("Hidden",)
    assert _hover(m, text, "h_cand", "sample h_cand") == "Hidden"
    assert _hover(m, text, "Normal(reset, 0.5)", "sample h_cand") == "Hidden -> Hidden"
    assert runnability(m, "cell").kind == "morphism"


def test_the_program_scanned_in_a_chain_types_too() -> None:
    _, m = _check(
        CELL.replace("export cell\n", "")
        + "define backbone = tok_embed >> scan(cell)\n"
        + "program lm : Token -> Hidden\n    sample h <- backbone\n    return h\n\nexport lm\n"
    )
    assert _codes(m) == []
    assert runnability(m, "lm").kind == "morphism"


def test_two_named_values_are_read_entry_by_entry() -> None:
    _, m = _check(
        "program p(e, h) : Embedded * Hidden -> Hidden\n"
        "    sample z <- gate(e, h)\n"
        "    sample w <- Normal(z, h)\n"
        "    return w\n\nexport p\n"
    )
    assert _codes(m) == []
    site = next(s for s in m.programs["p"].sites if s.name == "w")
    assert site.args == ("z", "h")
    assert site.morphism_type is not None
    assert site.morphism_type.dom.label == "Hidden * Hidden"


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("Normal(z, e)", rules.ARITHMETIC_DIMENSIONS.code),  # Hidden beside Embedded
        ("Normal(z, -1.0)", rules.ARGUMENT_CONSTRAINT.code),
        ("Normal(r, 1.0)", rules.FAMILY_SUPPORT.code),  # a Normal draw is no Positive value
        ("Normal(z, 1.0, 2.0)", rules.FAMILY_ARGUMENTS.code),
        ("Normal(t, 1.0)", rules.DISCRETE_CONTINUOUS.code),
    ],
)
def test_what_does_not_fit_is_an_error(source: str, code: str) -> None:
    _, m = _check(
        "program p(e, h, r, t) : Embedded * Hidden * Rate * Token -> Hidden\n"
        "    sample z <- gate(e, h)\n"
        f"    sample w <- {source}\n"
        "    return w\n\nexport p\n"
    )
    assert code in _codes(m), [(d.code, d.message) for d in m.diagnostics]


def test_a_discrete_family_beside_morphisms_stays_names_only() -> None:
    _, m = _check(
        "program p(e, h) : Embedded * Hidden -> Hidden\n"
        "    sample z <- gate(e, h)\n"
        "    sample w <- Bernoulli(z)\n"
        "    return z\n\nexport p\n"
    )
    notes = [d.message for d in m.diagnostics if d.code == rules.NOT_CHECKED.code]
    assert notes == ["program p (its family step Bernoulli(...)) is not checked yet (names only)"]


def test_a_program_of_family_steps_alone_is_still_a_model() -> None:
    _, m = _check(
        "program p : Resp -> Resp\n"
        "    sample mu <- Normal(0.0, 1.0)\n"
        "    observe y : Resp <- Normal(mu, 1.0)\n"
        "    return mu\n\nexport p\n"
    )
    assert "p" in m.models and "p" not in m.programs


BNN = """\
object Feature : Real 1
object Target : Real 1
object Obs : FinSet 20

morphism net : Feature -> Target [param_source=mlp, hidden_dim=8] ~ Normal

program bnn : Obs -> Target
    observe y : Obs <- net(x)
    return y

export bnn
"""


def test_a_name_a_morphism_reads_is_data_of_its_domain() -> None:
    m = check(BNN)
    assert _codes(m) == []
    info = m.programs["bnn"]
    assert info.type is not None
    assert info.data == ("x",)
    assert info.values["x"].label == "Feature"
    assert _hover(m, BNN, "x", "net(x)") == "Feature"
    symbol = m.symbols.lookup("x", "bnn")
    assert symbol is not None and symbol.kind is SymbolKind.DATA
    assert runnability(m, "bnn").kind == "morphism"


def test_a_name_read_by_a_morphism_of_two_inputs_takes_its_factor() -> None:
    _, m = _check(
        "program p(h) : Hidden -> Hidden\n    sample z <- gate(e, h)\n    return z\n\nexport p\n"
    )
    assert _codes(m) == []
    assert m.programs["p"].values["e"].label == "Embedded"
    assert m.programs["p"].data == ("e",)


def test_a_data_name_also_read_by_arithmetic_stays_names_only() -> None:
    m = check(BNN.replace("    return y\n", "    let z = x * 2.0\n    return z\n"))
    notes = [d.message for d in m.diagnostics if d.code == rules.NOT_CHECKED.code]
    assert notes == ["program bnn (its data variable 'x') is not checked yet (names only)"]
