"""Call steps of a Bayesian program (`let c <- noisy(b)`) and the `define`s they call:
the checker types the computation, and the call puts it in place in the program's
model with quivers' meaning: the callee's draw is a site under its label, its weight
a score term of the joint."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.model import Let, Model, Site
from qvr_core.check.module import CheckedModule
from qvr_core.plan.runnable import runnability
from qvr_core.text import rules
from tests.check.helpers import find

SOURCE = """\
object Obs : FinSet 4

define shift(x : Real, k : Real) : Real !{} =
    return x + k

define noisy(x : Real) : Real !{random, score} =
    let y <- perform random.sample[Real](site("noise"), Normal(x, 0.1))
    perform score.add(weight(-0.25 * y * y))
    return y

instance random : Random
instance score : Score

program prog : Obs -> Obs
    sample a <- Normal(0.0, 1.0)
    let b <- shift(a, 2.0)
    let c <- noisy(b)
    observe y : Obs <- Normal(c, 0.5)
    return c

export prog
"""


def _problems(m: CheckedModule) -> list[tuple[str, str]]:
    return [
        (d.code, d.message) for d in m.diagnostics if d.severity.value in ("error", "information")
    ]


def _model(m: CheckedModule) -> Model:
    return m.models["prog"]


def test_the_defines_instances_and_program_are_all_typed() -> None:
    m = check(SOURCE)
    assert _problems(m) == []
    model = _model(m)
    assert [s.name for s in model.sites] == ["a", "noise", "y"]
    assert model.observed == ("y",)
    assert runnability(m, "prog").kind == "model"


def test_the_callee_s_draw_is_a_site_under_its_label() -> None:
    noise = _model(check(SOURCE)).site("noise")
    assert noise is not None and noise.family == "Normal" and noise.kind == "sample"
    assert noise.called == "c"
    assert [(a.param, a.name, a.literal) for a in noise.args] == [
        ("loc", "b", None),
        ("scale", None, 0.1),
    ]
    assert noise.plates == () and noise.type is not None and noise.type.label == "R"


def test_the_weight_is_a_score_term_and_the_target_the_returned_value() -> None:
    steps = {s.name: s for s in _model(check(SOURCE)).steps}
    score, c, b = steps["c.score"], steps["c"], steps["b"]
    assert isinstance(score, Let) and score.kind == "score" and score.uses == ("noise",)
    assert isinstance(c, Let) and c.kind == "let" and c.uses == ("noise",)
    assert isinstance(b, Let) and b.uses == ("a",)  # a pure callee: its value in place


def test_hover_gives_the_call_target_a_number() -> None:
    m = check(SOURCE)
    start, end = find(SOURCE, "c", within="let c <-")
    (t,) = [t for t in m.typed_spans if (t.span.start, t.span.end) == (start, end)]
    assert t.type.label == "R"


def test_a_label_drawn_again_is_counted() -> None:
    text = SOURCE.replace(
        "    let c <- noisy(b)\n", "    let c <- noisy(b)\n    let d <- noisy(c)\n"
    )
    text = text.replace("return c\n", "return d\n")
    model = _model(check(text))
    assert [s.name for s in model.sites] == ["a", "noise", "noise@1", "y"]
    assert {s.name for s in model.steps if isinstance(s, Let) and s.kind == "score"} == {
        "c.score",
        "d.score",
    }


def test_a_computation_calling_another_is_put_in_place_whole() -> None:
    text = SOURCE.replace(
        "define noisy(x : Real) : Real !{random, score} =\n",
        "define outer(x : Real) : Real !{random, score} =\n"
        "    let z <- noisy(x * 2.0)\n"
        "    return z + 1.0\n\n"
        "define noisy(x : Real) : Real !{random, score} =\n",
    ).replace("let c <- noisy(b)", "let c <- outer(b)")
    m = check(text)
    assert _problems(m) == []
    model = _model(m)
    noise = model.site("noise")
    assert noise is not None
    loc = next(a for a in noise.args if a.param == "loc")
    assert loc.name == "noise.loc"  # an expression: a value of its own the draw reads
    assert isinstance(next(s for s in model.steps if s.name == "noise.loc"), Let)


@pytest.mark.parametrize(
    ("old", "new", "code"),
    [
        ("!{random, score} =", "!{random} =", rules.EFFECT_ROW.code),
        ("score.add(", "score.accumulate(", rules.EFFECT_ROW.code),
        ("noisy(b)", "noisy(b, a)", rules.ARGUMENT_COUNT.code),
        ("Normal(x, 0.1)", "Normal(x, -0.1)", rules.ARGUMENT_CONSTRAINT.code),
        ("Normal(x, 0.1)", "Normal(x, w)", rules.UNBOUND_VARIABLE.code),
        ("observe y : Obs", "observe noise : Obs", rules.REBOUND_VARIABLE.code),
        ("sample a <- Normal(0.0, 1.0)", "sample a : Obs <- Normal(0.0, 1.0)", None),
    ],
)
def test_what_does_not_fit_is_an_error(old: str, new: str, code: str | None) -> None:
    m = check(SOURCE.replace(old, new, 1))
    codes = [c for c, _ in _problems(m)]
    if code is None:  # a plated argument for a Real parameter
        code = rules.ARGUMENT_PLATE.code
    assert code in codes, _problems(m)


def test_what_a_define_does_beyond_that_stays_names_only() -> None:
    text = SOURCE.replace("    return x + k\n", "    let pair = (x, k)\n    return pair[0]\n")
    notes = [msg for c, msg in _problems(check(text)) if c == rules.NOT_CHECKED.code]
    assert notes == [
        "define shift (its tuples) is not checked yet (names only)",
        "program prog (its call of shift) is not checked yet (names only)",
    ]


def test_an_instance_of_a_declared_effect_is_checked_where_its_effect_is() -> None:
    text = "effect Ask\n    get : Unit -> Int\n\ninstance ask : Ask\n"
    assert not [msg for c, msg in _problems(check(text)) if c == rules.NOT_CHECKED.code]
    untyped = text.replace("Unit -> Int", "List -> Int")  # not a base type: names only
    notes = [msg for c, msg in _problems(check(untyped)) if c == rules.NOT_CHECKED.code]
    assert "instance ask is not checked yet (names only)" in notes
    assert any(n.startswith("effect Ask (its operations' types") for n in notes), notes


def test_a_program_reading_a_site_name_of_a_call_is_refused() -> None:
    text = SOURCE.replace(
        "observe y : Obs <- Normal(c, 0.5)", "observe y : Obs <- Normal(noise, 0.5)"
    )
    codes = [c for c, _ in _problems(check(text))]
    assert rules.REBOUND_VARIABLE.code in codes


def test_sites_put_in_place_get_no_inlay_hint_of_their_own() -> None:
    from qvr_core.ide.inlay import inlay_hints

    m = check(SOURCE)
    hints = [h for h in inlay_hints(m) if h.label == ": R"]
    c_end = find(SOURCE, "c", within="let c <-")[1]
    assert sum(1 for h in hints if h.offset == c_end) == 1
    assert all(isinstance(s, Site) for s in _model(m).sites)


def test_an_edit_of_the_callee_re_checks_the_caller() -> None:
    from qvr_core.check.incremental import IncrementalChecker

    checker = IncrementalChecker(safe=False)
    assert [s.name for s in checker.check(SOURCE).models["prog"].sites] == ["a", "noise", "y"]
    edited = checker.check(SOURCE.replace('site("noise")', 'site("eps")'))
    assert [s.name for s in edited.models["prog"].sites] == ["a", "eps", "y"]
