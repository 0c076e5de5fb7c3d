"""quivers' QIEC computations beyond numbers: indexed families and `case`, lists and
`traverse`, module effects with static parameters and the handlers that answer them.

Read from quivers (the 0.25.2 wheel): `dsl/ast_nodes/qiec.py` (index, family,
constructor, effect, instance, handler and computation declarations), `qiec/families.py`
(a constructor builds a value at one index, so a `case` on a value of a known index has
one branch to take), `qiec/evaluator.py` (deep handlers: a clause's `resume(v)` runs the
rest of the handled body with v, through the handler again, and gives the handled
value; a clause `resumes 1` at most once, `resumes omega` any number of times) and
`qiec/checking.py` (an Int is no Real: `real(n)` converts). The programs are our own,
written like the guide's QIEC examples (a resolution semantics and a rational-speech-act
listener), and parsed by quivers' grammars. What each computes is written out here by
hand and compared with what qvr runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.run import run_program
from qvr_core.runtime.model import compile_model
from qvr_core.text import rules
from tests.conformance import oracle
from tests.conftest import EXAMPLES

#: A handler's options, as quivers' examples write them.
OPTIONS = "[coverage=total, forwards=none, implementation=authored]"

# A vague quantity ("about ten"): read exactly, or within a tolerance the hearer does not
# know, 2 or 4 with probabilities 0.7 and 0.3 (a handler that resumes twice).
ROUNDING = """index Grain = Fine | Coarse

family Reading[A : Type](g : Grain) : Type
    constructor Exactly : A -> Reading[A](Fine)
    constructor Within : A * Int -> Reading[A](Coarse)

effect Hear[g : Grain]
    reading : Int -> Reading[Int](g)

handler tolerant for Hear[Coarse] : Real -> Real OPTIONS
    return p =>
        return p
    reading(n : Int) resumes omega =>
        let narrow <- resume(construct Within[Int](n, 2) as Reading[Int](Coarse))
        let wide <- resume(construct Within[Int](n, 4) as Reading[Int](Coarse))
        return 0.7 * narrow + 0.3 * wide

handler literal for Hear[Fine] : Real -> Real OPTIONS
    return p =>
        return p
    reading(n : Int) resumes 1 =>
        resume(construct Exactly[Int](n) as Reading[Int](Fine))

define true_of[g : Grain](r : Reading[Int](g), amount : Int) : Real !{} =
    case r motive (h : Grain) => Real
        Exactly(n) =>
            if amount == n then
                return 1.0
            else
                return 0.0
        Within(n, slack) =>
            if abs(amount - n) <= slack then
                return 1.0
            else
                return 0.0

define vague(amount : Int, said : Int) : Real !{} =
    with instance heard : Hear[Coarse] in
        handle heard with tolerant in
            let r <- perform heard.reading(said)
            let t <- true_of[Coarse](r, amount)
            return t

define exact(amount : Int, said : Int) : Real !{} =
    with instance heard : Hear[Fine] in
        handle heard with literal in
            let r <- perform heard.reading(said)
            let t <- true_of[Fine](r, amount)
            return t

define either(amount : Int, said : Int) : Real !{} =
    let e <- exact(amount, said)
    let v <- vague(amount, said)
    return 0.5 * e + 0.5 * v

define scale(ws : Tensor[Real]([5])) : Tensor[Real]([5]) !{} =
    let total = fold(ws, 0.0, acc -> w -> acc + w)
    return map(ws, w -> w / total)

define hear_ten(prior : Tensor[Real]([5])) : Tensor[Real]([5]) !{} =
    let amounts = [6, 8, 10, 12, 14]
    let masses <- traverse(
        [0, 1, 2, 3, 4],
        i -> prior[i] * either(amounts[i], 10),
    )
    return scale(masses)

object One : FinSet 1
object Amounts : Real 5

program about_ten : One -> Amounts
    let posterior <- hear_ten(amount_prior)
    return posterior

export about_ten
""".replace("OPTIONS", OPTIONS)

# A listener who reasons about a speaker (two worlds, three utterances, a rationality
# alpha drawn on the log scale), a choice scored under a case on an indexed family, and
# a marginalised state.
LISTENER = """index Seen = Answered | Unseen

family Answer(s : Seen) : Type
    constructor Picked : Int -> Answer(Answered)
    constructor Missing : Answer(Unseen)

instance random : Random
instance score : Score

define respond[s : Seen](a : Answer(s), p0 : Real, p1 : Real) : Int !{random, score} =
    let choice = Categorical([p0, p1])
    case a motive (t : Seen) => Int
        Picked(w) =>
            perform score.add(log_prob(choice, w))
            return w
        Missing =>
            let w <- perform random.sample[Int](site("guess"), choice)
            return w

define literal(truth : Tensor[Real]([2])) : Tensor[Real]([2]) !{} =
    let total = fold(truth, 0.0, acc -> t -> acc + t)
    return map(truth, t -> t / total)

define utility(listeners : Tensor[Real]([3, 2]), u : Int, world : Int, alpha : Real) : Real !{} =
    let listener = listeners[u]
    return alpha * log(listener[world])

define heard_at(speakers : Tensor[Real]([2, 3]), w : Int) : Real !{} =
    let row = speakers[w]
    return row[1]

define speaker(ls : Tensor[Real]([3, 2]), world : Int, alpha : Real) : Tensor[Real]([3]) !{} =
    let utilities <- traverse([0, 1, 2], u -> utility(ls, u, world, alpha))
    let z = logsumexp_over(utilities, x -> x)
    return map(utilities, x -> exp(x - z))

define pragmatic(alpha : Real) : Tensor[Real]([2]) !{} =
    let truths = [[1.0, 1.0], [0.001, 1.0], [1.0, 0.001]]
    let listeners <- traverse(truths, t -> literal(t))
    let speakers <- traverse([0, 1], w -> speaker(listeners, w, alpha))
    let heard <- traverse([0, 1], w -> heard_at(speakers, w))
    let total = fold(heard, 0.0, acc -> h -> acc + h)
    return map(heard, h -> h / total)

object State : FinSet 3
object Event : FinSet 1
object Belief : Real 2

program listen : Event -> Belief
    sample raw_alpha <- Normal(0.0, 1.0)
    let alpha = exp(raw_alpha)
    let belief <- pragmatic(alpha)
    let p0 = belief[0]
    let p1 = belief[1]
    let k = int(chosen)
    let answer <- respond[Answered](construct Picked(k) as Answer(Answered), p0, p1)
    let levels = [0, 1, 2]
    let weights = map(levels, l -> 1.0 / real(length(levels)))
    let rates = [0.2, 0.5, 0.8]
    marginalize state : State <- Categorical(probs=weights) [reduction=logsumexp]
        let rate = rates[state]
        let p_heard = rate * p1
        observe heard : Event <- Bernoulli(p_heard)
    return belief

export listen
"""


def _errors(text: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check(text).diagnostics if d.is_error]


def _notes(text: str) -> list[str]:
    return [d.message for d in check(text).diagnostics if d.code == rules.NOT_CHECKED.code]


@pytest.mark.parametrize("source", [ROUNDING, LISTENER], ids=["rounding", "listener"])
def test_quivers_grammars_parse_them(source: str) -> None:
    oracle.require_head(source)


@pytest.mark.parametrize("source", [ROUNDING, LISTENER], ids=["rounding", "listener"])
def test_every_declaration_and_program_is_checked(source: str) -> None:
    assert _errors(source) == []
    assert _notes(source) == []


def _truth(amount: int, said: int) -> float:
    exact = float(amount == said)
    vague = 0.7 * float(abs(amount - said) <= 2) + 0.3 * float(abs(amount - said) <= 4)
    return 0.5 * exact + 0.5 * vague


def test_handlers_resume_as_quivers_resumes() -> None:
    """The tolerant handler runs the rest of the body twice, once per tolerance; the
    literal one once: the posterior over amounts is the prior times their mixture."""
    program = compile_model(check(ROUNDING), "about_ten")
    prior = torch.tensor([0.1, 0.2, 0.4, 0.2, 0.1], dtype=torch.float64)
    got = program.run({"amount_prior": prior}, {}).output
    masses = [float(prior[i]) * _truth(a, 10) for i, a in enumerate((6, 8, 10, 12, 14))]
    want = torch.tensor(masses, dtype=torch.float64) / sum(masses)
    torch.testing.assert_close(got.double(), want)


def _pragmatic(alpha: float) -> torch.Tensor:
    truths = torch.tensor([[1.0, 1.0], [0.001, 1.0], [1.0, 0.001]], dtype=torch.float64)
    listeners = truths / truths.sum(1, keepdim=True)
    speakers = torch.softmax(alpha * listeners.log().T, dim=1)  # [world, utterance]
    heard = speakers[:, 1]
    return heard / heard.sum()


def test_the_listener_computes_the_recursion_written_out() -> None:
    program = compile_model(check(LISTENER), "listen")
    raw = torch.tensor(0.4, dtype=torch.float64)
    run = program.run({"chosen": torch.tensor(1.0)}, {"raw_alpha": raw})
    torch.testing.assert_close(run.output.double(), _pragmatic(math.exp(0.4)))


def test_the_log_joint_scores_the_choice_and_sums_out_the_state() -> None:
    program = compile_model(check(LISTENER), "listen")
    raw = torch.tensor(-0.3, dtype=torch.float64)
    belief = _pragmatic(math.exp(-0.3))
    got = program.log_joint(
        {"chosen": torch.tensor(1.0)},
        {"raw_alpha": raw, "heard": torch.tensor(1.0)},
    )
    rates = torch.tensor([0.2, 0.5, 0.8], dtype=torch.float64)
    heard = torch.logsumexp(torch.log(rates * belief[1]) + math.log(1 / 3), 0)
    want = D.Normal(0.0, 1.0).log_prob(raw) + belief[1].log() + heard
    torch.testing.assert_close(got.double().reshape(()), want, rtol=1e-6, atol=1e-6)


# Draws inside a handled body: the one before the performance happens once, the one after
# it once per resumption (`post`, `post@1`), as a multi-shot continuation runs it again.
REPLAYED = """effect Choose
    pick : Unit -> Real

instance chooser : Choose
instance random : Random

handler both for Choose : Real -> Real OPTIONS
    return v =>
        return v
    pick() resumes omega =>
        let a <- resume(1.0)
        let b <- resume(2.0)
        return a + b

define twice(m : Real) : Real !{random} =
    handle chooser with both in
        let pre <- perform random.sample[Real](site("pre"), Normal(m, 1.0))
        let c <- perform chooser.pick()
        let post <- perform random.sample[Real](site("post"), Normal(pre + c, 1.0))
        return pre + post

object One : FinSet 1

program replay : One -> One
    sample m <- Normal(0.0, 1.0)
    let total <- twice(m)
    observe y : One <- Normal(total, 1.0)
    return y

export replay
""".replace("OPTIONS", OPTIONS)


def test_a_resumed_continuation_draws_again_and_the_prefix_once() -> None:
    oracle.require_head(REPLAYED)
    program = compile_model(check(REPLAYED), "replay")
    assert program.site_names == ("m", "pre", "post", "post@1", "y")
    values = (0.2, 0.5, 1.1, 3.0, 7.0)
    v = {k: torch.tensor(x) for k, x in zip(program.site_names, values, strict=True)}
    got = program.log_joint({}, v)
    total = (v["pre"] + v["post"]) + (v["pre"] + v["post@1"])
    want = (
        D.Normal(0.0, 1.0).log_prob(v["m"])
        + D.Normal(v["m"], 1.0).log_prob(v["pre"])
        + D.Normal(v["pre"] + 1.0, 1.0).log_prob(v["post"])
        + D.Normal(v["pre"] + 2.0, 1.0).log_prob(v["post@1"])
        + D.Normal(total, 1.0).log_prob(v["y"])
    )
    torch.testing.assert_close(got.double().reshape(()), want.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("old", "new", "code", "words"),
    [
        (  # an Int where a Real goes: the kernel never converts
            "return 0.5 * e + 0.5 * v",
            "return amount * e",
            rules.DECLARED_TYPE_MISMATCH.code,
            "is an Int and the other side of * a Real",
        ),
        (  # a case without the branch its scrutinee may hold
            "        Within(n, slack) =>\n"
            "            if abs(amount - n) <= slack then\n"
            "                return 1.0\n"
            "            else\n"
            "                return 0.0\n",
            "",
            rules.DECLARED_TYPE_MISMATCH.code,
            "has no branch for Within",
        ),
        (  # a constructor at another index than it builds at
            "construct Exactly[Int](n) as Reading[Int](Fine)",
            "construct Exactly[Int](n) as Reading[Int](Coarse)",
            rules.DECLARED_TYPE_MISMATCH.code,
            "builds Reading[Int](Fine), not Reading[Int](Coarse)",
        ),
        (  # a one-shot clause resuming twice
            "reading(n : Int) resumes omega",
            "reading(n : Int) resumes 1",
            rules.EFFECT_ROW.code,
            "resumes once",
        ),
        (  # a performance no row lists and no handler handles
            "        handle heard with tolerant in\n"
            "            let r <- perform heard.reading(said)\n",
            "        handle heard with tolerant in\n"
            "            let q <- perform other.reading(said)\n"
            "            let r <- perform heard.reading(said)\n",
            rules.UNDEFINED_NAME.code,
            "undefined effect instance 'other'",
        ),
        (  # an entry past a list's end
            "amounts[i], 10",
            "amounts[5], 10",
            rules.INDEX_PLATE.code,
            "entry 5 of a list of 5",
        ),
        (  # a static argument that is no constructor of its index
            "true_of[Coarse](r, amount)",
            "true_of[Loose](r, amount)",
            rules.DECLARED_TYPE_MISMATCH.code,
            "is one of Grain's constructors (Fine, Coarse), not Loose",
        ),
        (  # a handler for another index than the instance's
            "handle heard with tolerant in",
            "handle heard with literal in",
            rules.DECLARED_TYPE_MISMATCH.code,
            "handles Hear[Fine], but heard is a Hear[Coarse]",
        ),
        (  # a returned value of the wrong type
            "    return scale(masses)",
            "    return masses[0]",
            rules.DECLARED_TYPE_MISMATCH.code,
            "returns Tensor[Real]([5])",
        ),
        (  # an unbound name
            "let t <- true_of[Fine](r, amount)",
            "let t <- true_of[Fine](r, amout)",
            rules.UNBOUND_VARIABLE.code,
            "unbound variable 'amout'",
        ),
    ],
)
def test_each_mistake_is_reported_where_it_is_written(
    old: str, new: str, code: str, words: str
) -> None:
    assert old in ROUNDING
    found = _errors(ROUNDING.replace(old, new, 1))
    assert any(c == code and words in m for c, m in found), found


def test_what_a_run_cannot_put_in_place_is_said_when_a_run_is_asked_for() -> None:
    """A draw of an Int from a computation (the Missing branch) has no place among a
    sampler's sites: the program checks, and a run is refused naming the call."""
    text = LISTENER.replace(
        "respond[Answered](construct Picked(k) as Answer(Answered), p0, p1)",
        "respond[Unseen](construct Missing() as Answer(Unseen), p0, p1)",
    )
    checked = check(text)
    assert [d for d in checked.diagnostics if d.is_error] == []
    model = checked.models["listen"]
    assert model.runtime_gaps, model
    assert "its call of respond" in model.runtime_gaps[0]
    assert "draw from Categorical" in model.runtime_gaps[0]


@pytest.mark.sampling
def test_prior_svi_and_nuts_finish(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"chosen": 1, "heard": 1}))
    for method, steps in (("prior", 20), ("svi", 30), ("nuts", 20)):
        summary = run_program(LISTENER, method=method, steps=steps, chains=1, data=str(data))
        drawn = summary.sites if method == "prior" else summary.posterior.sites
        assert drawn is not None and "raw_alpha" in drawn, method


def test_an_error_a_call_s_arguments_cause_in_the_callee_is_said_at_the_call() -> None:
    """`pick` checks alone (its index is a run's); called with 5, past its list's end,
    the error is reported at the call, naming the callee, and the callee stays clean."""
    source = (
        "define pick(xs : Tensor[Real]([3]), k : Int) : Real !{} =\n"
        "    return xs[k]\n\n"
        "define third(xs : Tensor[Real]([3])) : Real !{} =\n"
        "    let v <- pick(xs, 5)\n"
        "    return v\n"
    )
    oracle.require_head(source)
    found = [d for d in check(source).diagnostics if d.is_error]
    assert [(d.code, d.span.start_line) for d in found] == [(rules.INDEX_PLATE.code, 4)]
    assert found[0].message.startswith("pick: entry 5 of a list of 3")


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_target_writes_the_computations_folded_draws_and_weights(target: str) -> None:
    """What a computation folds to (handlers and lists: the example), its weights (the
    listener's `respond` scores the choice) and its draws (one per resumption: `post`,
    `post@1`) are written in every target, under names the target allows; that each
    export scores as qvr does is tests/export/test_every_model_scores.py's, over the
    examples (`missing_readings` draws and scores through a computation)."""
    example = (EXAMPLES / "computations" / "about_ten.qvr").read_text(encoding="utf-8")
    for source, program in ((example, "about_ten"), (LISTENER, "listen"), (REPLAYED, "replay")):
        written = export_program(check(source), TARGETS[target], program)
        assert written.text is not None and written.diagnostics == (), program
    text = export_program(check(REPLAYED), TARGETS[target], "replay").text
    assert text is not None
    declared = {
        "stan": "real post_1_;",
        "numpyro": 'post_1 = numpyro.sample("post@1", ',
        "pymc": 'post_1 = pm.Normal("post@1", ',
    }[target]
    assert declared in text
