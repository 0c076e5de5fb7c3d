"""Which code lenses go above which program (`qvr_core.ide.lenses`), the server's lenses'
facts as plain values: run and the prior's lenses only where a run can load the program
and its priors have draws, a diagram wherever one is drawn, export only where asked."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.ide.lenses import LensKind, code_lenses
from tests.ide.helpers import ROOT, example

MODEL = (ROOT / "examples" / "models" / "eight_schools_centered.qvr").read_text(encoding="utf-8")


def kinds(text: str, exportable: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(lens.kind.value, lens.program) for lens in code_lenses(check(text), exportable)]


def test_an_exported_model_gets_every_lens_in_order_on_its_header() -> None:
    module = check(MODEL)
    lenses = code_lenses(module, ["eight_schools_centered"])
    assert [lens.kind for lens in lenses] == list(LensKind)
    (decl,) = (m.decl for m in module.models.values())
    assert {lens.header for lens in lenses} == {decl.header_span}


def test_no_export_lens_unless_the_target_takes_the_model() -> None:
    assert ("export", "eight_schools_centered") not in kinds(MODEL)
    assert ("export", "eight_schools_centered") not in kinds(MODEL, ("another",))


def test_a_program_of_morphisms_gets_no_prior_lens() -> None:
    found = kinds(example("vanilla_rnn_lm.qvr"), ("vanilla_rnn_lm",))
    assert found == [("run", "vanilla_rnn_lm"), ("diagram", "vanilla_rnn_lm")]


def test_a_program_not_exported_gets_a_diagram_only() -> None:
    text = MODEL.replace("export eight_schools_centered", "# no export")
    assert "export eight_schools_centered" in MODEL
    assert kinds(text) == [("diagram", "eight_schools_centered")]


def test_an_improper_prior_has_no_prior_lens() -> None:
    text = (ROOT / "examples" / "models" / "linear_regression.qvr").read_text(encoding="utf-8")
    assert ("prior", "linear_regression") in kinds(text)
    flat = kinds(text.replace("sample alpha <- Normal(0.0, 10.0)", "sample alpha <- Flat", 1))
    assert ("run", "linear_regression") in flat
    assert ("prior", "linear_regression") not in flat
    assert ("calibrate", "linear_regression") not in flat
