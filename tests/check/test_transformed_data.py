"""Observed transformed data: `let log_earn = log(earn)` then `observe log_earn ...`.

A let computed from data names and numbers only (Stan's `transformed data`) may be
observed: the observe scores the let's value, which is no key of the data file. A let
that reads anything else (a sampled value, an observed site, a parameter, a summed-out
coordinate, a call step's result) is a located QVR411 naming what it reads.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.subsample import SubsamplePlan, subsample_plan
from tests.check.helpers import find, only

EARNINGS = """\
object Coef : FinSet 4
object Row : FinSet 5

program earnings : Row -> Row
    sample beta : Coef <- Normal(0.0, 10.0)
    sample sigma <- HalfNormal(5.0)
    let log_earn = log(earn)
    let inter = height * male
    let mu = beta[0] + beta[1] * height + beta[2] * male + beta[3] * inter
    observe log_earn : Row <- Normal(mu, sigma)
    return mu

export earnings
"""


def _program(steps: str, header: str = "program p : Row -> Row") -> str:
    return (
        "object Row : FinSet 5\nobject K : FinSet 2\n\n"
        f"{header}\n"
        "    sample mu <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(1.0)\n"
        f"{steps}"
        "    return mu\n\nexport p\n"
    )


def test_an_observed_let_of_the_data_is_an_observed_site_not_a_data_name() -> None:
    module = check(EARNINGS)
    assert module.diagnostics == ()
    model = module.models["earnings"]
    assert model.observed_lets == ("log_earn",)
    site = model.site("log_earn")
    assert site is not None and site.kind == "observe" and site.plates == ("Row",)
    let = model.observed_let("log_earn")
    assert let is not None and let.uses == ("earn",)
    assert let.type is not None and let.type.label == "rows -> R"
    # the data file holds earn, height and male; log_earn is computed, inter a covariate
    assert [(d.name, d.observed) for d in model.data] == [
        ("earn", False),
        ("height", False),
        ("male", False),
    ]
    assert model.observed == ()
    assert model.observed_let("inter") is None


def test_the_observe_refers_to_the_let() -> None:
    module = check(EARNINGS)
    start, _ = find(EARNINGS, "log_earn", within="observe log_earn")
    ref = module.symbols.reference_at(start)
    assert ref is not None and ref.symbol.name == "log_earn"
    declared, _ = find(EARNINGS, "log_earn", within="let log_earn")
    assert ref.symbol.span.start == declared


@pytest.mark.parametrize(
    "let",
    [
        "let age2 = age == 2",  # a dummy: 1.0 where age is 2, else 0.0
        "let centred = x - x.mean()",
        "let scaled = (x - 3.0) / 2.0 + log1p(age)",
        "let y = 2.0",  # numbers only
    ],
)
def test_lets_of_data_names_and_numbers_may_be_observed(let: str) -> None:
    name = let.split()[1]
    text = _program(f"    {let}\n    observe {name} : Row <- Normal(mu, sigma)\n")
    module = check(text)
    assert [d.code for d in module.diagnostics if d.code != "QVR103"] == []
    assert module.models["p"].observed_lets == (name,)


def test_an_observed_let_may_read_other_lets_of_the_data() -> None:
    text = _program(
        "    let logs = log(earn)\n    let centred = logs - logs.mean()\n"
        "    observe centred : Row <- Normal(mu, sigma)\n"
    )
    module = check(text)
    assert [d.code for d in module.diagnostics if d.code != "QVR103"] == []
    model = module.models["p"]
    assert model.observed_lets == ("centred",)
    assert [d.name for d in model.data] == ["earn"]


@pytest.mark.parametrize(
    ("steps", "header", "what", "note", "made"),
    [
        (
            "    let shifted = log(earn) + mu\n",
            "",
            "'mu', a sampled value",
            "'shifted' is computed here",
            ("'mu' is made here", 5),
        ),
        (
            "    let logs = log(earn)\n    let t = logs * 2.0\n    let shifted = t + sigma\n",
            "",
            "'sigma', a sampled value",
            "'shifted' is computed here",
            ("'sigma' is made here", 6),
        ),
        (
            "    let t = sigma * 2.0\n    let shifted = log(earn) + t\n",
            "",
            "'sigma', a sampled value",
            "read by the let of 't', which 'shifted' reads",
            ("'sigma' is made here", 6),
        ),
        (
            "    observe earn : Row <- Normal(mu, sigma)\n    let shifted = log(earn)\n",
            "",
            "'earn', an observed site",
            "'shifted' is computed here",
            None,
        ),
        (
            "    let shifted = log(earn) * scale\n",
            "program p(scale : Real) : Row -> Row",
            "'scale', a parameter of program p",
            "'shifted' is computed here",
            None,
        ),
    ],
)
def test_an_observed_let_of_what_is_not_data_is_located(
    steps: str, header: str, what: str, note: str, made: tuple[str, int] | None
) -> None:
    """The value read that is not data is pointed at as related information, not by a line
    number in the words, which would go stale when an edit above moves it."""
    text = _program(
        steps + "    observe shifted : Row <- Normal(mu, sigma)\n",
        header or "program p : Row -> Row",
    )
    module = check(text)
    found = only(module, "QVR411")
    assert "'shifted' is observed, so its value must be data or computed from data only, " in (
        found.message
    )
    assert what in found.message, found.message
    start, end = find(text, "shifted", within="observe shifted")
    assert (found.span.start, found.span.end) == (start, end)
    assert [r.message for r in found.related] == [note, *([made[0]] if made else [])]
    if made:
        assert found.related[-1].span.start_line + 1 == made[1]
    assert "(line" not in found.message
    assert module.models["p"].observed_lets == ()


def test_a_let_of_a_summed_out_coordinate_is_not_data() -> None:
    text = (
        "object Row : FinSet 5\nobject K : FinSet 2\n\n"
        "program p : Row -> Row\n"
        "    sample mu <- Normal(0.0, 10.0)\n"
        "    marginalize c : K <- Categorical([0.5, 0.5])\n"
        "        let shifted = x + c\n"
        "        observe shifted : Row <- Normal(mu, 1.0)\n"
        "    return mu\n\nexport p\n"
    )
    found = only(check(text), "QVR411")
    assert "'c', a summed-out coordinate" in found.message
    assert found.related[-1].span.start_line + 1 == 6  # where `c` is summed out


def test_a_let_observed_twice_is_bound_twice() -> None:
    text = _program(
        "    let y = log(earn)\n"
        "    observe y : Row <- Normal(mu, sigma)\n"
        "    observe y : Row <- Normal(mu, 2.0)\n"
    )
    module = check(text)
    found = only(module, "QVR402")
    assert "'y' is already observed in program p" in found.message
    start, _ = find(text, "y", within="observe y : Row <- Normal(mu, 2.0)")
    assert found.span.start == start
    assert module.models["p"].observed_lets == ("y",)


def test_a_let_of_data_that_is_not_observed_is_a_covariate() -> None:
    module = check(EARNINGS)
    model = module.models["earnings"]
    inter = next(s for s in model.steps if isinstance(s, Let) and s.name == "inter")
    assert inter.uses == ("height", "male") and inter.kind == "let"
    mu = next(s for s in model.steps if isinstance(s, Let) and s.name == "mu")
    assert "inter" in mu.uses


def test_minibatches_slice_the_observed_let_with_its_data() -> None:
    plan = subsample_plan(check(EARNINGS), "earnings", "Row")
    assert isinstance(plan, SubsamplePlan)
    assert dict(plan.data_axes) == {"earn": 0, "height": 0, "male": 0, "log_earn": 0}
    assert "log_earn" in plan.scaled
