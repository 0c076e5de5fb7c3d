"""The log-likelihood group scored in batches equals the one scored draw by draw, for
models whose runtime reads values (the mixture, the HMM) and for those that do not."""

from __future__ import annotations

import pytest
import torch

from qvr_core.runs import fit, methods
from tests.conftest import EXAMPLES

MODELS = EXAMPLES / "models"
CASES = [
    ("eight_schools_noncentered", "eight_schools"),
    ("gaussian_mixture", "gaussian_mixture"),
    ("hmm", "hmm"),
]

pytestmark = pytest.mark.timeout(240)


def _terms(name: str, data: str) -> dict[str, dict[str, torch.Tensor]]:
    source = (MODELS / f"{name}.qvr").read_text()
    run = fit(source, method="nuts", steps=60, chains=2, seed=3, data=str(MODELS / f"{data}.json"))
    return {
        group: {k: torch.from_numpy(v) for k, v in run.results.groups[group].items()}
        for group in ("log_likelihood", "log_prior")
        if group in run.results.groups
    }


@pytest.mark.parametrize(("name", "data"), CASES)
def test_batched_terms_equal_the_terms_of_each_draw(
    name: str, data: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run: its draws scored batched (what the run keeps: the log-likelihood and the
    log prior), then the same draws scored one by one, as a program that a batch cannot
    run is."""
    answers: list[object] = []
    one_by_one: dict[str, dict[str, torch.Tensor]] = {}
    original = methods._batched_terms
    original_terms = methods._draw_terms
    groups = {methods._pointwise: "log_likelihood", methods._prior_terms: "log_prior"}

    def spy(*args: object) -> object:
        answers.append(original(*args))  # type: ignore[arg-type]  # the same arguments
        return answers[-1]

    def both(*args: object) -> object:
        terms = original_terms(*args)  # type: ignore[arg-type]
        with monkeypatch.context() as m:
            m.setattr(methods, "_batched_terms", lambda *args: None)  # one by one
            alone = original_terms(*args)  # type: ignore[arg-type]
        assert isinstance(alone, dict)
        group = groups[args[-1]]  # type: ignore[index]  # the score function
        one_by_one[group] = {k: v.detach().to(torch.float64) for k, v in alone.items()}
        return terms

    monkeypatch.setattr(methods, "_batched_terms", spy)
    monkeypatch.setattr(methods, "_draw_terms", both)
    batched = _terms(name, data)
    assert answers and all(a is not None for a in answers)  # these models run batched
    assert len(answers) == len(batched)  # one batch a group; one by one did not batch
    assert one_by_one.keys() == batched.keys()
    for group, terms in batched.items():
        assert one_by_one[group].keys() == terms.keys()
        for k, v in terms.items():
            assert v.shape[:2] == (2, 30)
            torch.testing.assert_close(v, one_by_one[group][k], rtol=1e-12, atol=1e-12)
