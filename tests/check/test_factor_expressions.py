"""quivers' `factor` expression in a model's let is typed: its plates are the binders'
objects then the body's, its binders are one entry of their object each, and its misuses
are reported where they are written (qvr_core/check/comprehensions.py)."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.subsample import Refusal, subsample_plan
from qvr_core.check.terms import Comprehension, refs
from qvr_core.check.types import Plated
from qvr_core.ide.hover import hover_at

HEAD = """object Verb : FinSet 2
object Class : FinSet 3
object Row : FinSet 4
object R : Real 2

program m : Row -> Row
    sample a <- Normal(0.0, 1.0)
    sample delta : Verb <- Normal(0.0, 1.0)
    sample mu : Class <- Normal(0.0, 1.0)
"""

TAIL = """    observe y : Row <- Normal(a, 1.0)
    return a

export m
"""


def _program(*lets: str) -> str:
    return HEAD + "".join(f"    {line}\n" for line in lets) + TAIL


def _type(source: str, name: str) -> Plated:
    model = check(source).models["m"]
    let = next(s for s in model.steps if getattr(s, "name", None) == name)
    assert isinstance(let.type, Plated)
    return let.type


def test_a_table_is_over_the_binders_objects_then_the_bodys_plates() -> None:
    source = _program("let t = factor v : Verb, c : Class in delta[v] * mu[c] + a")
    assert not check(source).errors
    t = _type(source, "t")
    assert [p.name for p in t.plates] == ["Verb", "Class"]
    assert t.element.event == ()


def test_a_body_over_another_plate_keeps_it_after_the_binders() -> None:
    t = _type(_program("let t = factor v : Verb in delta[v] + mu"), "t")
    assert [p.name for p in t.plates] == ["Verb", "Class"]


def test_the_case_form_is_over_its_one_binders_object() -> None:
    source = _program("let p = factor c : Class in { 0 -> a, 1 -> 2.0 * a, 2 -> mu[c] }")
    assert not check(source).errors
    assert [p.name for p in _type(source, "p").plates] == ["Class"]


def test_the_program_is_typed_not_left_to_the_names_only_check() -> None:
    codes = {d.code for d in check(_program("let t = factor v : Verb in delta[v]")).diagnostics}
    assert "QVR011" not in codes


def test_a_binder_shows_as_one_entry_of_its_object_on_hover() -> None:
    source = _program("let t = factor v : Verb in delta[v]")
    found = hover_at(check(source), source.index("v : Verb"))
    assert found is not None and "Verb" in found.plain


def test_the_binders_are_no_reads_of_the_let() -> None:
    source = _program("let t = factor v : Verb in delta[v] + a")
    model = check(source).models["m"]
    let = next(s for s in model.steps if getattr(s, "name", None) == "t")
    assert isinstance(let.term, Comprehension)
    assert list(refs(let.term)) == ["delta", "a"]
    assert let.uses == ("delta", "a")


def test_a_binder_shadows_a_let_bound_to_a_number() -> None:
    source = _program("let v = 1", "let t = factor v : Verb in delta[v]")
    model = check(source).models["m"]
    let = next(s for s in model.steps if getattr(s, "name", None) == "t")
    assert isinstance(let.term, Comprehension)
    assert "v" not in let.uses


@pytest.mark.parametrize(
    ("let", "code", "where", "says"),
    [
        ("let p = factor c : Class in { 0 -> a, 2 -> a, 2 -> a }", "QVR207", "2 -> a }", "second"),
        ("let p = factor c : Class in { 0 -> a, 1 -> a }", "QVR207", "factor", "no case for 2"),
        ("let p = factor c : Class in { 0 -> a, 1 -> a, 3 -> a }", "QVR207", "3 ->", "0 to 2"),
        ("let p = factor c : R in a", "QVR104", "R in", "finite object"),
        ("let p = factor c : Class in mu", "QVR207", "mu", "binder c"),
        ("let p = factor c : Class in { 0 -> a, 1 -> mu, 2 -> a }", "QVR207", "mu,", "same"),
        ("let p = factor v : Verb, c : Class in mu[v]", "QVR409", "v]", "Verb"),
        ("let p = factor v : Verb, c : Class in { 0 -> a }", "QVR207", "factor", "one binder"),
        ("let p = factor c : Class, d : Class in mu[c]", "QVR207", "Class in", "declare"),
    ],
)
def test_a_misuse_is_reported_where_it_is_written(
    let: str, code: str, where: str, says: str
) -> None:
    source = _program(let)
    errors = check(source).errors
    assert [d.code for d in errors] == [code], errors
    assert errors[0].span.start == source.index(let) + let.rindex(where)
    assert says in errors[0].message


def test_subsampling_a_plate_a_table_is_built_over_is_refused() -> None:
    source = _program("let t = factor v : Row in a", "let s = sum(t)")
    plan = subsample_plan(check(source), "m", "Row")
    assert isinstance(plan, Refusal)
    assert "factor" in plan.message
