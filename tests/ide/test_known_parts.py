"""What the checker knows of a let that does not type-check: its typed parts and its errors."""

from __future__ import annotations

from pathlib import Path

from qvr_core.check import check
from qvr_core.check.types import Arrow
from qvr_core.ide.known import known_parts

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _let_span(module, name):
    return next(d.span for d in module.ast.decls if d.name.text == name)


def test_the_parts_of_a_failed_composition_keep_their_types() -> None:
    module = check((EXAMPLES / "errors" / "QVR201_dimension_mismatch.qvr").read_text())
    known = known_parts(module, _let_span(module, "backbone"))
    assert known is not None
    assert [p.text for p in known.parts] == ["fan(forward_path, backward_path)", "combine"]
    fan, combine = (p.type for p in known.parts)
    assert isinstance(fan, Arrow) and fan.cod.label == "FwdHidden * BwdHidden"
    assert isinstance(combine, Arrow) and combine.dom.label == "Combined"
    (problem,) = known.problems
    assert problem.startswith("QVR201: cannot compose") and "\n" not in problem


def test_a_let_that_type_checks_needs_no_parts() -> None:
    module = check((EXAMPLES / "bidirectional_rnn_lm.qvr").read_text())
    assert known_parts(module, _let_span(module, "backbone")) is None


def test_only_lets_have_parts() -> None:
    module = check((EXAMPLES / "errors" / "QVR201_dimension_mismatch.qvr").read_text())
    assert known_parts(module, _let_span(module, "combine")) is None
