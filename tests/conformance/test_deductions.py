"""A `deduction` declaration is checked as quivers 0.25.2's compiler checks it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/compiler/deductions.py`,
`_compile_deduction`, `check_option_keys`, `_candidate_atoms` and the lexicon's
`_normalise_binders`): it refuses an option key outside the declaration's closed set
(and a rule's `learnable`/`parent`/`bounded`, an entry's `learnable`), `atom` or `var`
as an atom, an `axioms=` that is no declared morphism, a `parent=` that is no rule of
the deduction or whose chain comes back, a category list naming an undeclared atom, and
a logical form with a name that is neither an atom nor bound by a binder. It accepts,
reading them otherwise than written, an unknown semiring (LogProb), a start no item
mentions (a goal never derived) and a non-atom name in a pattern (a variable). The
programs below are our own, in quivers 0.11+ syntax (the grammar of the weighted
deduction guide, `docs/guides/deduction.md`); each is first parsed by quivers' HEAD
grammar, so what qvr checks is what quivers reads.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from tests.conformance import oracle
from tests.conformance.shared import corpus

GRAMMAR = """object Term : FinSet 16

deduction Grammar : Term -> Term [OPTIONS]
    atoms S, NP, VP, Det, N, V, span, lam, the, dog, runs
    binders lam
    rule s_np_vp : span(I, K, NP), span(K, J, VP) |- span(I, J, S) #[learnable]
    rule np_det_n : span(I, K, Det), span(K, J, N) |- span(I, J, NP) #[RULE]
    rule vp_v : span(I, J, V) |- span(I, J, VP) #[learnable, bounded]
    lexicon
        "the" : Det = the #[learnable]
        "dog" : {N, NP} = dog #[learnable]
        "runs", "ran" : V = lam(x, runs) #[ENTRY]
"""

OPTIONS = "semiring=LogProb, start=S, depth=4"


def _source(
    options: str = OPTIONS, rule: str = "learnable", entry: str = "learnable", **swap: str
) -> str:
    text = GRAMMAR.replace("OPTIONS", options).replace("RULE", rule).replace("ENTRY", entry)
    for old, new in swap.items():
        text = text.replace(old.replace("_", " "), new)
    return text


AXIOMS = "morphism axiom_source : Term -> Term [role=latent]\n"


def _codes(source: str) -> list[tuple[str, str]]:
    """(code, the text under it) of each error and warning."""
    return [
        (d.code, source[d.span.start : d.span.end])
        for d in check(source).diagnostics
        if d.severity.value in ("error", "warning")
    ]


def _quivers_parses(source: str) -> None:
    oracle.require_head(source)


def test_quivers_grammars_parse_the_programs() -> None:
    _quivers_parses(_source())
    _quivers_parses(
        AXIOMS + _source("semiring=Logprob, start=S, axioms=axiom_source, tolerance=1e-5")
    )
    _quivers_parses(_source(rule="learnable, parent=vp_v"))


def test_a_well_formed_deduction_is_checked_whole() -> None:
    module = check(_source())
    assert not module.diagnostics, module.diagnostics
    with_axioms = check(AXIOMS + _source(OPTIONS + ", axioms=axiom_source"))
    assert not with_axioms.diagnostics, with_axioms.diagnostics  # the morphism is used
    found = module.deductions["Grammar"]
    assert found.semiring.name == "LogProb" and found.start == "S" and found.depth == 4
    assert found.atoms[:3] == ("S", "NP", "VP") and found.binders == ("lam",)
    assert [r.name for r in found.rules] == ["s_np_vp", "np_det_n", "vp_v"]
    first = found.rules[0]
    assert first.premises == ("span(I, K, NP)", "span(K, J, VP)")
    assert first.conclusion == "span(I, J, S)" and first.learnable and not first.bounded
    assert found.rules[2].bounded
    assert [e.words for e in found.lexicon] == [("the",), ("dog",), ("runs", "ran")]
    assert [e.category for e in found.lexicon] == ["Det", "{N, NP}", "V"]
    assert found.lexicon[2].logical_form == "lam(x, runs)"


@pytest.mark.parametrize(
    ("options", "rule", "entry", "want"),
    [
        ("semiring=LogProb, start=S, depht=4", "learnable", "learnable", ("QVR303", "depht")),
        (OPTIONS, "learnable, weight=2", "learnable", ("QVR303", "weight")),
        (OPTIONS, "learnable", "learnable, bounded", ("QVR303", "bounded")),
        ("semiring=LogProb, start=S, depth=0", "learnable", "learnable", ("QVR304", "0")),
        ("semiring=LogProb, start=S, depth=2.5", "learnable", "learnable", ("QVR304", "2.5")),
        ("semiring=LogProb, start=S, tolerance=-1", "learnable", "learnable", ("QVR304", "-1")),
        ("semiring=LogProb, start=3", "learnable", "learnable", ("QVR304", "3")),
        (OPTIONS + ", axioms=axiom_sorce", "learnable", "learnable", ("QVR101", "axiom_sorce")),
        (OPTIONS, "parent=vp_w", "learnable", ("QVR101", "vp_w")),
    ],
)
def test_what_quivers_refuses_is_an_error_where_it_is_written(
    options: str, rule: str, entry: str, want: tuple[str, str]
) -> None:
    source = AXIOMS + _source(options, rule, entry)
    assert _codes(source) == [want]


def test_a_close_option_name_is_suggested_with_a_fix() -> None:
    (found,) = check(_source("semiring=LogProb, start=S, depht=4")).errors
    assert "did you mean 'depth'" in found.message
    assert found.fixes[0].title == "Change to 'depth'"


def test_a_parent_chain_that_comes_back_is_a_cycle() -> None:
    source = _source(rule="parent=vp_v").replace("#[learnable, bounded]", "#[parent=np_det_n]")
    codes = _codes(source)
    assert sorted(c for c, _ in codes) == ["QVR105", "QVR105"], codes
    assert "np_det_n -> vp_v -> np_det_n" in " ".join(d.message for d in check(source).errors)


def test_the_reserved_tags_cannot_be_atoms() -> None:
    source = _source().replace("atoms S,", "atoms var, S,")
    assert _codes(source) == [("QVR801", "var")]


def test_a_category_list_names_declared_atoms_only() -> None:
    source = _source().replace("{N, NP}", "{N, Np}")
    assert _codes(source) == [("QVR801", "Np")]
    assert "did you mean 'NP'" in check(source).errors[0].message


def test_a_logical_form_is_closed_over_the_atoms_and_the_binders_variables() -> None:
    unbound = _source().replace("lam(x, runs)", "lam(x, y)")
    assert _codes(unbound) == [("QVR801", "y")]
    # `x` is bound only inside the binder's application
    outside = _source().replace("lam(x, runs)", "x")
    assert _codes(outside) == [("QVR801", "x")]
    # without `binders lam`, `lam(x, runs)` binds nothing
    unbinding = _source().replace("    binders lam\n", "")
    assert _codes(unbinding) == [("QVR801", "x")]


def test_a_duplicate_atom_and_a_duplicate_rule_are_reported() -> None:
    atom = _source().replace("atoms S,", "atoms S, S,")
    assert [c for c, _ in _codes(atom)] == ["QVR102"]
    rule = _source().replace("rule vp_v :", "rule s_np_vp :")
    assert _codes(rule) == [("QVR102", "s_np_vp")]


def test_an_unknown_semiring_is_read_as_logprob_with_a_warning() -> None:
    source = _source("semiring=Logprob, start=S, depth=4")
    module = check(source)
    assert _codes(source) == [("QVR802", "Logprob")]
    assert module.ok and module.deductions["Grammar"].semiring.name == "LogProb"
    assert "did you mean 'LogProb'" in module.diagnostics[0].message


def test_a_start_nothing_mentions_is_a_goal_never_derived() -> None:
    source = _source("semiring=Viterbi, start=Sentence, depth=4")
    assert _codes(source) == [("QVR802", "Sentence")]
    assert check(source).deductions["Grammar"].semiring.name == "Viterbi"


def test_a_rule_concluding_a_variable_category_may_derive_any_start() -> None:
    # quivers' `_goal` matches `span(0, n, S)`: a rule concluding `span(I, J, X)` with a
    # variable X derives it (the guide's CCG), so no warning; one concluding the
    # category in another argument does not
    ccg = _source("semiring=LogProb, start=Sentence, depth=4").replace(
        "rule vp_v : span(I, J, V) |- span(I, J, VP)", "rule lift : span(I, J, V) |- span(I, J, X)"
    )
    assert _codes(ccg) == []
    elsewhere = ccg.replace("|- span(I, J, X)", "|- span(X, J, VP)")
    assert _codes(elsewhere) == [("QVR802", "Sentence")]


def test_a_pattern_name_spelt_like_an_atom_is_a_variable_with_a_warning() -> None:
    source = _source().replace("span(I, K, NP), span(K, J, VP)", "span(I, K, Np), span(K, J, VP)")
    assert _codes(source) == [("QVR802", "Np")]
    # pattern variables proper (single capitals, other names) are not warned about
    assert not _codes(_source().replace("span(I, J, V) |-", "span(I, J, Verb) |-"))


def test_hover_on_the_deduction_says_what_it_computes() -> None:
    source = _source()
    found = hover_at(check(source), source.index("Grammar :") + 1)
    assert found is not None
    assert "weighted deduction in LogProb" in found.plain
    assert "goal S" in found.plain and "3 rules, 3 lexicon entries" in found.plain


def test_a_lexicon_read_from_a_file_keeps_the_names_only_check() -> None:
    source = _source().replace("    lexicon\n", '    lexicon from "lexicon.tsv"\n    lexicon\n')
    module = check(source)
    assert [d.code for d in module.diagnostics] == ["QVR011"]
    assert "its lexicon from a file" in module.diagnostics[0].message
    assert "Grammar" not in module.deductions


def test_no_deduction_of_the_shared_corpus_is_left_unchecked() -> None:
    files = [f for f in corpus() if "\ndeduction " in "\n" + f.text()]
    if not files:
        pytest.skip("no shared corpus (../shared/corpus)")
    modern = []
    for f in files:
        text = f.text()
        if "deduction " not in text or "{\n" in text.split("deduction ", 1)[1].split("\n", 1)[0]:
            continue  # quivers 0.4's braced deductions (an older surface, QVR010)
        modern.append(f.name)
        module = check(text)
        assert not module.errors, (f.name, module.errors)
        unchecked = [d for d in module.diagnostics if d.code == "QVR011"]
        assert not [d for d in unchecked if "deduction" in d.message], (f.name, unchecked)
        assert module.deductions, f.name
    assert len(modern) >= 8, modern
