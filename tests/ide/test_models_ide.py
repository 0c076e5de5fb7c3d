"""Editor facts of Bayesian models, from the core: inlay hints, signature help, completion."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.ide.completion_context import Where, classify
from qvr_core.ide.inlay import inlay_hints
from qvr_core.ide.signature import signature_help
from tests.check.test_models import EIGHT_SCHOOLS, MIXTURE


def _at(text: str, probe: str) -> int:
    return text.index(probe) + len(probe)


def test_inlay_hints_give_the_types_a_model_does_not_write() -> None:
    module = check(EIGHT_SCHOOLS)
    hints = {EIGHT_SCHOOLS[: h.offset].split()[-1]: h.label for h in inlay_hints(module)}
    assert hints == {"mu": ": R", "tau": ": R>=0", "theta": ": School -> R"}


def test_signature_help_in_a_marginalize_step_names_the_family() -> None:
    help_ = signature_help(MIXTURE, _at(MIXTURE, "Categorical(probs"), check(MIXTURE))
    assert help_ is not None and help_.signature.label == "Categorical(probs)"
    help_ = signature_help(MIXTURE, _at(MIXTURE, "Normal(mu[cls], sig"), check(MIXTURE))
    assert help_ is not None and help_.active_parameter == 1


def test_completion_contexts_of_family_steps() -> None:
    assert classify(MIXTURE, _at(MIXTURE, "Categorical(pro")).callee == "Categorical"
    value = classify(MIXTURE, _at(MIXTURE, "reduction="))
    assert (value.where, value.option) == (Where.STEP_OPTION_VALUE, "reduction")
    key = classify(MIXTURE, _at(MIXTURE, "[over=Item, "))
    assert (key.where, key.present) == (Where.STEP_OPTION_KEY, ("over",))
    assert classify(MIXTURE, _at(MIXTURE, "observe r : Resp <- ")).where is Where.CALLABLE
    assert classify(MIXTURE, _at(MIXTURE, "marginalize cls : Comp")).where is Where.TYPE
