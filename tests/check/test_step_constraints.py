"""A `sample` step's `[constraint=ordered]` and `[constraint=positive_ordered]`: Stan's
`ordered[K]` and `positive_ordered[K]`, checked into `Site.constraint` (the site's support
then), and every misuse a located diagnostic of an existing code."""

from __future__ import annotations

import re

import pytest

from qvr_core.builtins.constraints import Constraint
from qvr_core.check import check
from qvr_core.check.model import STEP_OPTIONS
from qvr_core.ide.completion import candidates
from qvr_core.ide.completion_context import Where, classify
from qvr_core.text import rules
from tests.check.helpers import find, only


def program(step: str, *, objects: str = "") -> str:
    """A program of one step `step` on the three-entry plate K (and `One`, one entry)."""
    return (
        "object K : FinSet 3\nobject One : FinSet 1\n"
        f"{objects}\n"
        "program p : K -> K\n"
        f"    {step}\n"
        "    observe y : K <- Normal(0.0, 1.0)\n"
        "    return y\n\n"
        "export p\n"
    )


def errors(text: str) -> list[tuple[str, str, str]]:
    """(code, message, the text under the span) of each error."""
    module = check(text)
    return [
        (d.code, d.message, text[d.span.start : d.span.end])
        for d in module.diagnostics
        if d.is_error
    ]


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        ("sample mu : K <- Normal(0.0, 2.0) [constraint=ordered]", "ordered"),
        ("sample mu : K <- Flat [constraint=ordered]", "ordered"),  # Stan's `ordered[K] mu;`
        ("sample mu : K <- Normal(0.0, 2.0) [constraint=positive_ordered]", "positive_ordered"),
        ("sample mu : K <- HalfNormal(2.0) [constraint=positive_ordered]", "positive_ordered"),
        ("sample mu : K <- LogNormal(0.0, 1.0) [constraint=positive_ordered]", "positive_ordered"),
        ("sample mu <- Normal(0.0, 1.0) [iid_over=K, constraint=ordered]", "ordered"),
    ],
)
def test_a_constraint_is_the_sites_support(step: str, kind: str) -> None:
    module = check(program(step))
    assert not [d for d in module.diagnostics if d.is_error], module.diagnostics
    site = module.models["p"].site("mu")
    assert site is not None and site.constraint == Constraint(kind)
    assert site.support == Constraint(kind)  # what inference moves it in, what exports declare
    assert site.plates == ("K",)


def test_each_row_along_the_last_plate_is_ordered_over_several_plates() -> None:
    text = program(
        "sample mu : G * K <- Normal(0.0, 1.0) [constraint=ordered]",
        objects="object G : FinSet 2\n",
    )
    site = check(text).models["p"].site("mu")
    assert site is not None and site.plates == ("G", "K")
    assert site.constraint == Constraint("ordered")


def test_without_the_option_the_support_is_the_familys() -> None:
    site = check(program("sample mu : K <- Normal(0.0, 1.0)")).models["p"].site("mu")
    assert site is not None and site.constraint is None and site.support == Constraint("real")


def test_constraint_is_a_step_option() -> None:
    assert "constraint" in STEP_OPTIONS
    text = program("sample mu : K <- Normal(0.0, 1.0) [constrant=ordered]")
    d = only(check(text), rules.UNKNOWN_OPTION.code)
    assert "did you mean 'constraint'" in d.message
    assert (d.span.start, d.span.end) == find(text, "constrant")


@pytest.mark.parametrize(
    ("written", "close"),
    [("orderd", "ordered"), ("positive_orderd", "positive_ordered")],
)
def test_a_misspelt_value_suggests_the_close_one(written: str, close: str) -> None:
    text = program(f"sample mu : K <- Normal(0.0, 1.0) [constraint={written}]")
    module = check(text)
    d = only(module, rules.INVALID_OPTION_VALUE.code)
    assert d.message == f"constraint={written} is not a constraint: did you mean '{close}'?"
    assert (d.span.start, d.span.end) == find(text, written)
    site = module.models["p"].site("mu")
    assert site is not None and site.constraint is None


def test_a_value_that_is_no_word_lists_both() -> None:
    text = program("sample mu : K <- Normal(0.0, 1.0) [constraint=3.0]")
    d = only(check(text), rules.INVALID_OPTION_VALUE.code)
    assert d.message == "constraint=3.0 is not a constraint: use one of ordered, positive_ordered"
    assert (d.span.start, d.span.end) == find(text, "3.0", within="constraint")


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (
            "observe z : K <- Normal(0.0, 1.0) [constraint=ordered]",
            "the values of an observe step are data, not a latent",
        ),
        (
            "sample mu : K <- HalfNormal(1.0) [constraint=ordered]",
            "needs a continuous family over real numbers, and HalfNormal draws a number >= 0",
        ),
        (
            "sample mu : K <- Uniform(0.0, 1.0) [constraint=positive_ordered]",
            "over real or positive numbers, and Uniform draws a number in [low, high]",
        ),
        (
            "sample mu : K <- Poisson(2.0) [constraint=ordered]",
            "and Poisson draws a whole number >= 0",
        ),
        (
            "sample mu : K <- Dirichlet(1.0) [constraint=ordered]",
            "and Dirichlet draws a probability vector",
        ),
        (
            "sample mu <- Normal(0.0, 1.0) [constraint=ordered]",
            "orders 'mu' along its last plate, and it has none",
        ),
        (
            "sample mu : One <- Normal(0.0, 1.0) [constraint=ordered]",
            "and One has one entry: there is nothing to order",
        ),
    ],
)
def test_where_it_cannot_hold_it_is_qvr306_at_the_option(step: str, words: str) -> None:
    text = program(step)
    module = check(text)
    d = only(module, rules.OPTION_NOT_APPLICABLE.code)
    assert words in d.message, d.message
    option = re.search(r"constraint=\w+", text)
    assert option is not None and (d.span.start, d.span.end) == option.span()
    for site in module.models["p"].sites:
        assert site.constraint is None


def test_a_marginalize_takes_none() -> None:
    text = (
        "object K : FinSet 3\nobject Row : FinSet 4\n\n"
        "program p : Row -> Row\n"
        "    marginalize z : K <- Categorical(0.2, 0.3, 0.5) [over=Row, constraint=ordered]\n"
        "        observe y : Row <- Normal(z, 1.0)\n"
        "    return y\n\n"
        "export p\n"
    )
    d = only(check(text), rules.OPTION_NOT_APPLICABLE.code)
    assert "the values of a marginalize summed out, not a latent" in d.message
    assert text[d.span.start : d.span.end] == "constraint=ordered"


def test_a_draw_from_another_program_takes_none() -> None:
    text = (
        "object K : FinSet 3\n\n"
        "program effects(G : FinSet) : G -> G\n"
        "    sample v : G <- Normal(0.0, 1.0)\n"
        "    return v\n\n"
        "program outer : K -> K\n"
        "    sample e <- effects(K) [constraint=ordered]\n"
        "    observe y : K <- Normal(e, 1.0)\n"
        "    return e\n\n"
        "export outer\n"
    )
    d = only(check(text), rules.OPTION_NOT_APPLICABLE.code)
    assert "a draw from effects has the supports of its own sites" in d.message
    assert text[d.span.start : d.span.end] == "constraint=ordered"


def test_a_list_argument_has_one_entry_per_index_of_the_last_plate() -> None:
    """`let mu_loc = [3.0, 10.0]` (hmm_example's means) lines up with the two-state plate;
    a list of another length is QVR313 at the argument (it failed at the run's broadcast)."""
    good = (
        "object State : FinSet 2\n\n"
        "program p : State -> State\n"
        "    let mu_loc = [3.0, 10.0]\n"
        "    sample mu : State <- Normal(mu_loc, 1.0) [constraint=positive_ordered]\n"
        "    return mu\n\n"
        "export p\n"
    )
    assert check(good).ok, check(good).diagnostics
    bad = good.replace("[3.0, 10.0]", "[3.0, 10.0, 12.0]")
    d = only(check(bad), rules.ARGUMENT_PLATE.code)
    assert d.message == "loc=mu_loc has 3 entries, one per index of State, which has 2"
    assert (d.span.start, d.span.end) == find(bad, "mu_loc", occurrence=1)
    inline = good.replace("Normal(mu_loc, 1.0)", "Normal([1.0, 2.0, 3.0], 1.0)")
    d = only(check(inline), rules.ARGUMENT_PLATE.code)
    assert d.message.startswith("loc=[1.0, 2.0, 3.0] has 3 entries")


def test_completion_offers_the_two_values() -> None:
    text = program("sample mu : K <- Normal(0.0, 1.0) [constraint=")
    at = text.index("constraint=") + len("constraint=")
    context = classify(text, at)
    assert (context.where, context.option) == (Where.STEP_OPTION_VALUE, "constraint")
    found = candidates(context, [check(text)], 4)
    assert [c.label for c in found] == ["ordered", "positive_ordered"]
    assert found[1].detail == "constraint: a strictly increasing vector of positive numbers"
    key = classify(text, text.index("constraint="))
    assert "constraint" in [c.label for c in candidates(key, [check(text)], 4)]
