"""Running a `deduction` over a sentence, as quivers 0.25.2 runs it.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/deductions.py`
(`_compile_deduction`: the lexicon's axioms, the learnable weights, `bounded`,
`parent=`, the depth guard and the goal) and `stochastic/agenda.py` (`run_agenda`:
a first-in first-out agenda that merges an item pushed again, semi-naive firing,
`max_iterations`, `tolerance`; `match`, `instantiate`; `_full_extent_goal`). The
numbers below are what that engine computes for these grammars, worked out from its
code: the inside weight of the goal over the whole sentence, each learnable weight
starting at 0 and keyed, for a rule, by the binding of all its variables. The grammars
are our own, parsed by quivers' grammars.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch

from qvr_cli.main import main as qvr
from qvr_core.check import check
from qvr_core.check.deduction_calls import sentences
from qvr_core.dsl import loads
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.data import Vocabulary, read_data
from qvr_core.runs.synthesise import synthesise, write_data
from qvr_core.runtime.deduction import DeductionEngine
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import ModelProgram
from tests.conformance import oracle

PCFG = """object Term : FinSet 16

deduction PCFG : Term -> Term [semiring=LogProb, start=S, depth=4]
    atoms S, NP, VP, Det, N, V, span, the, a, cat, dog, sleeps, runs
    rule s_np_vp : span(I, K, NP), span(K, J, VP) |- span(I, J, S) #[learnable]
    rule np_det_n : span(I, K, Det), span(K, J, N) |- span(I, J, NP) #[learnable]
    rule vp_v : span(I, J, V) |- span(I, J, VP) #[learnable]
    lexicon
        "the"    : Det = the     #[learnable]
        "a"      : Det = a       #[learnable]
        "cat"    : N   = cat     #[learnable]
        "dog"    : N   = dog     #[learnable]
        "sleeps" : V   = sleeps  #[learnable]
        "runs"   : V   = runs    #[learnable]
"""

ATTACH = """object Term : FinSet 4

deduction Attach : Term -> Term [semiring=SEMIRING, start=S]
    atoms S, NP, VP, PP, V, P, span
    rule s : span(I, K, NP), span(K, J, VP) |- span(I, J, S) #[learnable]
    rule vp_v_np : span(I, K, V), span(K, J, NP) |- span(I, J, VP) #[learnable]
    rule vp_vp_pp : span(I, K, VP), span(K, J, PP) |- span(I, J, VP) #[learnable]
    rule np_np_pp : span(I, K, NP), span(K, J, PP) |- span(I, J, NP) #[learnable]
    rule pp : span(I, K, P), span(K, J, NP) |- span(I, J, PP) #[learnable]
    lexicon
        "I" : NP = NP
        "saw" : V = V
        "man" : NP = NP
        "with" : P = P
        "telescope" : NP = NP
"""
ATTACHED = ["I", "saw", "man", "with", "telescope"]


def engine(source: str, name: str) -> DeductionEngine:
    module = check(source)
    assert not module.errors, [d.message for d in module.errors]
    return DeductionEngine(module.deductions[name])


@pytest.mark.parametrize(
    "source", [PCFG, ATTACH.replace("SEMIRING", "LogProb")], ids=["pcfg", "attach"]
)
def test_quivers_grammars_parse_it(source: str) -> None:
    oracle.require_head(source)


def test_one_parse_weighs_one_at_the_start() -> None:
    pcfg = engine(PCFG, "PCFG")
    chart = pcfg.parse(["the", "dog", "runs"])
    assert chart.goal_weight().item() == 0.0
    assert chart.iterations == 6  # quivers' agenda pops six items for it
    assert chart.goal_items == [("span", 0, 3, ("atom", "S"))]
    assert set(pcfg.weights.named_weights()) == {
        *(f"PCFG.lex.{i}" for i in range(6)),
        "PCFG.rule.s_np_vp:0|3|2",
        "PCFG.rule.np_det_n:0|2|1",
        "PCFG.rule.vp_v:2|3",
    }


def test_the_goal_is_the_sum_of_its_weights_and_each_gradient_one() -> None:
    pcfg = engine(PCFG, "PCFG")
    pcfg.parse(["the", "dog", "runs"])  # makes the rule weights
    weights = pcfg.weights
    with torch.no_grad():
        weights.lexicon[[0, 3, 5]] = torch.tensor([-0.3, -0.2, -0.5], dtype=torch.float64)
        weights.rule("s_np_vp", "0|3|2").fill_(-0.1)
        weights.rule("np_det_n", "0|2|1").fill_(-0.4)
        weights.rule("vp_v", "2|3").fill_(-0.6)
    goal = pcfg.parse(["the", "dog", "runs"]).goal_weight()
    assert goal.item() == pytest.approx(-2.1)
    goal.backward()
    assert weights.lexicon.grad is not None
    assert weights.lexicon.grad.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    assert all(float(p.grad) == 1.0 for p in weights.rules.values() if p.grad is not None)
    # a rule's weight is keyed by its positions, so another sentence of three words
    # reuses the three rule weights with its own words' (0)
    assert pcfg.parse(["a", "cat", "sleeps"]).goal_weight().item() == pytest.approx(-1.1)


@pytest.mark.parametrize(
    "sentence", [["dog", "the", "runs"], ["the", "unicorn", "runs"], ["the", "dog"], []]
)
def test_no_parse_weighs_zero(sentence: list[str]) -> None:
    assert float(engine(PCFG, "PCFG").parse(sentence).goal_weight()) == -math.inf


@pytest.mark.parametrize(
    ("semiring", "expected", "pops"),
    [
        ("LogProb", math.log(2), 13),
        ("Viterbi", 0.0, 12),
        ("Boolean", 1.0, 12),
        ("Counting", 2.0, 13),
    ],
)
def test_two_attachments_in_each_semiring(semiring: str, expected: float, pops: int) -> None:
    chart = engine(ATTACH.replace("SEMIRING", semiring), "Attach").parse(ATTACHED)
    assert chart.goal_weight().item() == pytest.approx(expected)
    assert chart.iterations == pops


def test_the_gradient_is_each_rules_expected_use() -> None:
    attach = engine(ATTACH.replace("SEMIRING", "LogProb"), "Attach")
    attach.parse(ATTACHED)
    with torch.no_grad():
        attach.weights.rule("vp_vp_pp", "1|5|3").fill_(-1.0)
        attach.weights.rule("np_np_pp", "2|5|3").fill_(-2.0)
    goal = attach.parse(ATTACHED).goal_weight()
    assert goal.item() == pytest.approx(math.log(math.exp(-1) + math.exp(-2)))
    goal.backward()
    verb, noun = attach.weights.rule("vp_vp_pp", "1|5|3"), attach.weights.rule("np_np_pp", "2|5|3")
    assert verb.grad is not None and noun.grad is not None
    assert float(verb.grad) == pytest.approx(1 / (1 + math.exp(-1)))
    assert float(noun.grad) == pytest.approx(1 - 1 / (1 + math.exp(-1)))


CYCLE = """object Term : FinSet 2

deduction Loop : Term -> Term [start=S, OPTIONS]
    atoms S, T, span
    rule up : span(I, J, S) |- span(I, J, T) PRAGMA
    rule down : span(I, J, T) |- span(I, J, S) PRAGMA
    lexicon
        "w" : S = S
"""


def test_a_bounded_cycle_settles_at_its_fixed_point() -> None:
    """Each bounded rule weighs -softplus(0) - log 2 = -log 4 (two bounded rules), so S
    weighs 1 + 1/16 + 1/16^2 + ... = 16/15."""
    source = CYCLE.replace("OPTIONS", "tolerance=0.000001").replace(
        "PRAGMA", "#[learnable, bounded]"
    )
    goal = engine(source, "Loop").parse(["w"]).goal_weight()
    assert goal.item() == pytest.approx(math.log(16 / 15), abs=1e-6)


def test_a_cycle_that_does_not_settle_stops_with_an_error() -> None:
    source = CYCLE.replace("OPTIONS", "max_iterations=50").replace(" PRAGMA", "")
    with pytest.raises(QvrRuntimeError, match="max_iterations=50"):
        engine(source, "Loop").parse(["w"])


def test_a_parent_adds_its_weight_at_the_same_binding() -> None:
    source = """object Term : FinSet 2

deduction Two : Term -> Term [start=S]
    atoms S, NP, span
    rule base : span(I, J, NP) |- span(I, J, S) #[learnable]
    rule special : span(I, J, NP) |- span(I, J, S) #[parent=base]
    lexicon
        "x" : NP = NP
"""
    two = engine(source, "Two")
    two.parse(["x"])
    with torch.no_grad():
        two.weights.rule("base", "0|1").fill_(0.3)
    assert two.parse(["x"]).goal_weight().item() == pytest.approx(math.log(2 * math.exp(0.3)))


def test_depth_bounds_how_deep_a_conclusion_nests() -> None:
    source = """object Term : FinSet 2

deduction Modal : Term -> Term [semiring=Counting, depth=2]
    atoms S, Dia, span
    rule dia : span(I, J, A) |- span(I, J, Dia(A))
    lexicon
        "p" : S = S
"""
    chart = engine(source, "Modal").parse(["p"])
    assert set(chart.items) == {
        ("span", 0, 1, ("atom", "S")),
        ("span", 0, 1, ("Dia", ("atom", "S"))),
        ("span", 0, 1, ("Dia", ("Dia", ("atom", "S")))),
    }
    assert chart.goal_weight().item() == 3.0  # no start: every whole-sentence item


def test_a_program_gives_its_deductions() -> None:
    program = loads(
        PCFG + "\nobject R : FinSet 1\nprogram p : R -> R\n"
        "    sample z : R <- Normal(0.0, 1.0)\n    return z\nexport p\n"
    )
    assert program.deduction("PCFG").parse(["a", "cat", "sleeps"]).goal_weight().item() == 0.0
    with pytest.raises(KeyError, match="PCFG"):
        program.deduction("CFG")


STEP_OVER_A_DEDUCTION = """object Term : FinSet 4
object Sentence : FinSet 4

deduction CCG : Term -> Term [start=S]
    atoms S, NP, span
    rule s : span(I, K, NP), span(K, J, NP) |- span(I, J, S)
    lexicon
        "a" : NP = NP

program p : Sentence -> Sentence
    sample chart <- CCG(x)
STEP    return chart

export p
"""


@pytest.mark.parametrize("step", ["", "    let w = chart.goal_weight()\n"])
def test_a_step_drawing_from_a_deduction_is_refused(step: str) -> None:
    """quivers refuses `sample chart <- CCG(x)` in both its engines: CCG is neither a
    family, a morphism nor a let."""
    source = STEP_OVER_A_DEDUCTION.replace("STEP", step)
    oracle.require_head(source)
    module = check(source)
    [error] = module.errors
    assert error.code == "QVR104" and "parse(CCG, sentence)" in error.message
    assert all(d.code != "QVR011" for d in module.diagnostics)


PROGRAM = (
    ATTACH.replace("SEMIRING", "LogProb")
    + """
program fit : Term -> Term
    let chart = parse(Attach, sentence)
    score log_Z = chart.goal_weight()
    return log_Z

export fit
"""
)
#: "I saw man with telescope" as word ids: the words in the order the lexicon lists them.
ATTACHED_IDS = [0, 1, 2, 3, 4]


def test_a_program_parses_its_sentence_and_scores_the_goal() -> None:
    """quivers' `let chart = parse(D, sentence)`, `chart.goal_weight()` and `score`: the
    sentence is a program input, the chart its goal's weight (two parses: log 2)."""
    oracle.require_head(PROGRAM)
    module = check(PROGRAM)
    assert [d for d in module.diagnostics if d.is_error or d.code == "QVR011"] == []
    assert "fit" in module.models
    program = loads(PROGRAM)["fit"]
    assert isinstance(program, ModelProgram)
    data = {"sentence": torch.tensor(ATTACHED_IDS)}
    assert float(torch.as_tensor(program.rsample(data))) == pytest.approx(math.log(2))
    assert float(program.log_joint(data, {}).sum()) == pytest.approx(math.log(2))


def test_a_word_id_outside_the_lexicon_is_refused() -> None:
    program = loads(PROGRAM)["fit"]
    assert isinstance(program, ModelProgram)
    with pytest.raises(QvrRuntimeError, match="word id 7 is not one of the 5 words"):
        program.rsample({"sentence": torch.tensor([0, 7])})


def test_synthesised_data_is_a_sentence_that_parses() -> None:
    data = synthesise(check(PROGRAM), "fit", seed=3)
    [column] = data.columns
    ids = torch.as_tensor(column.value)
    program = loads(PROGRAM)["fit"]
    assert isinstance(program, ModelProgram)
    assert float(torch.as_tensor(program.rsample({"sentence": ids}))) > -math.inf


@pytest.mark.parametrize(
    ("step", "says"),
    [
        ("    let w = parse(Attach, sentence) + 1.0\n", "a let's whole value"),
        (
            "    sample sentence <- Normal(0.0, 1.0)\n    let c = parse(Attach, sentence)\n",
            "a step binds",
        ),
        ("    let c = parse(Term, sentence)\n", "not a deduction"),
        ("    let v = 1.0\n    let w = v.goal_weight()\n", "a method of a chart"),
    ],
)
def test_what_quivers_refuses_in_a_program_is_an_error(step: str, says: str) -> None:
    source = ATTACH.replace("SEMIRING", "LogProb") + (
        "\nprogram p : Term -> Term\n" + step + "    return 1.0\n\nexport p\n"
    )
    found = [d for d in check(source).errors if d.code == "QVR104"]
    assert found and says in found[0].message, [d.message for d in check(source).errors]


CHART_PARSER = """object Atoms : {NP, S}
object Cat : FreeResiduated(Atoms)
object Word : {ann, sleeps}

schema fwd (X, Y : Cat) : (X / Y) * Y -> X
schema bwd (X, Y : Cat) : Y * (X \\ Y) -> X

define g = parser(rules=[fwd, bwd], terminal=Word, start=S)

program p : Word -> Word
    let chart = parse(g, sentence)
    score evidence = chart.goal_weight()
    return evidence

export p
"""


def test_parse_over_a_chart_parser_in_a_program_is_refused_as_quivers_refuses_it() -> None:
    """quivers 0.25.2's program elaboration reads `parse(D, s)` only for a deduction; over
    a `parser(...)` let it fails ("the builtin `parse(...)` has no elaboration yet").
    qvr says what the name is and that quivers refuses it, where it is written."""
    oracle.require_head(CHART_PARSER)
    module = check(CHART_PARSER)
    [found] = module.errors
    assert found.code == "QVR104"
    assert "'g' is a chart parser(...), not a deduction" in found.message
    assert "quivers 0.25.2 refuses this too" in found.message
    line = CHART_PARSER.splitlines().index("    let chart = parse(g, sentence)")
    assert (found.span.start_line, found.span.start_col) == (line, 22)


def test_a_deduction_without_a_lexicon_parses_no_sentence() -> None:
    """quivers: such a deduction "takes its axioms and their weights, not a sentence"."""
    without = PROGRAM.replace('        "I" : NP = NP\n', "")
    for line in ('"saw" : V = V', '"man" : NP = NP', '"with" : P = P', '"telescope" : NP = NP'):
        without = without.replace(f"        {line}\n", "")
    without = without.replace("    lexicon\n", "")
    assert "lexicon" not in without
    found = [d for d in check(without).errors if d.code == "QVR104"]
    assert found and "has no lexicon" in found[0].message


def test_a_boolean_deduction_has_no_real_weight_to_score() -> None:
    source = PROGRAM.replace("semiring=LogProb", "semiring=Boolean")
    assert any("Boolean" in d.message for d in check(source).errors)


def test_the_sentence_may_be_given_as_its_words(tmp_path: Path) -> None:
    """A JSON data file may hold the sentence as quivers takes it, its words; they are
    read as their ids, and a word the lexicon lacks is refused, naming it."""
    module = check(PROGRAM)
    parsed = sentences(module.models["fit"])
    words = {k: Vocabulary(d.name, d.words) for k, d in parsed.items()}
    given = tmp_path / "words.json"
    given.write_text(json.dumps({"sentence": ["I", "saw", "man", "with", "telescope"]}))
    assert read_data(given, words=words)["sentence"].tolist() == ATTACHED_IDS
    given.write_text(json.dumps({"sentence": ["I", "sees", "man"]}))
    with pytest.raises(InferenceError, match="word 2, 'sees', is not in the lexicon of Attach"):
        read_data(given, words=words)
    source = tmp_path / "fit.qvr"
    source.write_text(PROGRAM)
    given.write_text(json.dumps({"sentence": ["I", "saw", "man", "with", "telescope"]}))
    assert qvr(["run", str(source), "--data", str(given), "--method", "prior", "--steps", "5"]) == 0


PATHS = """object Node : FinSet 4

deduction Paths : Node -> Node [semiring=SEMIRING, start=path]
    atoms a, b, c, d
    rule step : edge(X, Y) |- path(X, Y)
    rule extend : path(X, Y), edge(Y, Z) |- path(X, Z)
"""
#: a -> b -> c -> d and a -> c: two paths from a to c and two from a to d.
EDGES = ["edge(a, b)", "edge(b, c)", "edge(a, c)", "edge(c, d)"]


@pytest.mark.parametrize(
    ("semiring", "one", "goal"),
    [("Counting", 1.0, 8.0), ("LogProb", 0.0, math.log(8)), ("Viterbi", 0.0, 0.0)],
)
def test_a_deduction_without_a_lexicon_derives_from_its_axioms(
    semiring: str, one: float, goal: float
) -> None:
    """quivers runs a deduction without a lexicon on `(item, weight)` pairs; every item
    headed by the start is a goal. Six paths follow the four edges, two of them doubly."""
    source = PATHS.replace("SEMIRING", semiring)
    oracle.require_head(source)
    assert check(source).errors == []
    engine = loads(source).deduction("Paths")
    chart = engine.derive([(e, one) for e in EDGES])
    assert float(chart.goal_weight()) == pytest.approx(goal)
    if semiring == "Counting":
        assert float(chart.weight("path(a, d)")) == 2.0
        assert float(chart.weight("path(b, d)")) == 1.0
        with pytest.raises(QvrRuntimeError, match=r"path\(d,a\) is not in the chart"):
            chart.weight("path(d, a)")


def test_the_goal_is_differentiable_in_the_axioms_weights() -> None:
    """Under LogProb the gradient in an axiom's weight is the share of the goal's
    derivations that use it: edge(a, b) is in 3 of the 8."""
    engine = loads(PATHS.replace("SEMIRING", "LogProb")).deduction("Paths")
    weights = {e: torch.zeros((), dtype=torch.float64, requires_grad=True) for e in EDGES}
    chart = engine.derive(list(weights.items()))
    chart.goal_weight().backward()
    grad = weights["edge(a, b)"].grad
    assert grad is not None and float(grad) == pytest.approx(3 / 8)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("edge(a, b", "expected ')' at character 10"),
        ("edge(a; b)", "unexpected ';' at character 7"),
        ("", "expected a name, a number or '('"),
        ("(" * 500 + "a" + ")" * 500, "nested more than 200 deep"),
    ],
)
def test_a_malformed_item_is_refused_where_it_goes_wrong(text: str, says: str) -> None:
    engine = loads(PATHS.replace("SEMIRING", "Counting")).deduction("Paths")
    with pytest.raises(QvrRuntimeError, match=re.escape(says)):
        engine.derive([(text, 1.0)])


def test_qvr_data_writes_a_sentence_as_its_words(tmp_path: Path) -> None:
    module = check(PROGRAM)
    data = synthesise(module, "fit", seed=3)
    [column] = data.columns
    target = write_data(data, tmp_path / "data.json")
    written = json.loads(target.read_text())["sentence"]
    assert all(isinstance(w, str) for w in written) and len(written) == column.value.size
    parsed = sentences(module.models["fit"])
    words = {k: Vocabulary(d.name, d.words) for k, d in parsed.items()}
    assert read_data(target, words=words)["sentence"].tolist() == column.value.tolist()
