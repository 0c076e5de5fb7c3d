"""QVR413: an improper flat prior that no observation or score term depends on, through
the lets, family arguments, gathers and other latents' priors between them."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from tests.check.helpers import find, only

HEAD = "object Row : FinSet 10\nobject G : FinSet 3\n\nprogram p : Row -> Row\n"
TAIL = "    return mu\n\nexport p\n"


def _program(*steps: str) -> str:
    return HEAD + "".join(f"    {s}\n" for s in steps) + TAIL


def test_a_flat_prior_nothing_observed_reads_is_one_warning_at_its_name() -> None:
    text = _program(
        "sample mu <- Flat",
        "sample drift <- HalfFlat",
        "let moved = mu + drift",  # read by a let, but the let reaches no observation
        "observe y : Row <- Normal(mu, 1.0)",
    )
    d = only(check(text), "QVR413")
    assert (d.span.start, d.span.end) == find(text, "drift")
    assert d.message.startswith("'drift' has the improper prior HalfFlat and no observation")


@pytest.mark.parametrize(
    "steps",
    [
        # through a let and a family argument
        ("sample mu <- Flat", "let m = mu * 2.0", "observe y : Row <- Normal(m, 1.0)"),
        # through another latent's prior (hierarchical): tau informs theta, which y reads
        (
            "sample mu <- Flat",
            "sample tau <- HalfFlat",
            "sample theta : G <- Normal(mu, tau)",
            "observe y : Row <- Normal(theta[group], 1.0)",
        ),
        # a score term is a likelihood too
        ("sample mu <- Flat", "score s = -(mu * mu)"),
        # through a computed family argument
        ("sample mu <- Flat", "observe y : Row <- Normal(0.0, exp(mu))"),
    ],
)
def test_a_flat_prior_an_observation_depends_on_is_silent(steps: tuple[str, ...]) -> None:
    assert "QVR413" not in [d.code for d in check(_program(*steps)).diagnostics]
