"""An index in a let's expression that is a let bound to a number (`let i = 2` then
`mu[i]`): typed and lowered as the number written there (`mu[2]`), with the literal
index's checks located at the use and naming the let's number, so the model runs it
(no runtime gap, no QVR011). What quivers computes for it:
tests/conformance/test_bound_index.py."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.terms import Gather, Num, Ref, subterms
from qvr_core.plan.runnable import runnability
from qvr_core.text import rules
from tests.check.helpers import only


def program(lets: str) -> str:
    """A model of `mu` over K (three entries) whose observations' mean is the let `a`;
    `lets` are the let lines, each ending in a newline."""
    return (
        "object K : FinSet 3\nobject Row : FinSet 5\n\n"
        "program p : Row -> Row\n"
        "    sample mu : K <- Normal(0.0, 1.0)\n"
        f"{lets}"
        "    observe y : Row <- Normal(a, 1.0)\n"
        "    return mu\n\n"
        "export p\n"
    )


def let(module_text: str, name: str = "a") -> Let:
    module = check(module_text)
    found = [s for s in module.models["p"].steps if isinstance(s, Let) and s.name == name]
    assert len(found) == 1, module.diagnostics
    return found[0]


@pytest.mark.parametrize(
    ("lets", "entry"),
    [
        ("    let i = 2\n    let a = mu[i]\n", 2.0),
        ("    let i = 0\n    let j = i\n    let a = mu[j]\n", 0.0),  # through an alias
        ("    let i = 1\n    let a = mu[i] * i\n", 1.0),  # the let is a number too
    ],
)
def test_a_let_bound_to_a_number_indexes_as_the_number(lets: str, entry: float) -> None:
    text = program(lets)
    module = check(text)
    assert module.diagnostics == ()
    assert runnability(module, "p").kind == "model"
    assert module.models["p"].runtime_gaps == ()
    a = let(text)
    (gather,) = [t for t in subterms(a.term) if isinstance(t, Gather)]
    (index,) = gather.indices
    assert isinstance(index, Num) and index.value == entry
    assert text[index.span.start : index.span.end] in ("i", "j")  # at the use
    assert a.type is not None and a.type.plates == ()  # K's axis dropped, as by mu[2]


def test_the_index_is_still_a_read_of_the_let() -> None:
    """The diagram's edge and the unused check: the let is read where it indexes."""
    text = program("    let i = 2\n    let a = mu[i]\n")
    assert let(text).uses == ("mu", "i")
    module = check(text)
    assert rules.UNUSED_DECLARATION.code not in [d.code for d in module.diagnostics]


def test_an_index_by_a_let_of_a_latent_is_left_as_it_was() -> None:
    """A number only the run knows is no entry the checker can name: its gap stays."""
    text = program("    sample s <- Normal(1.0, 0.1)\n    let a = mu[s]\n")
    module = check(text)
    assert module.models["p"].runtime_gaps
    assert any(isinstance(t, Ref) and t.name == "s" for t in subterms(let(text).term))


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("5", "mu[i] (i = 5) is out of range: K has 3 entries, indexed 0..2"),
        ("-1", "mu[i] (i = -1): an index counts from 0 and cannot be negative"),
        ("1.0", "mu[i] (i = 1.0): an index is a whole number written without a point"),
    ],
)
def test_a_bound_number_gets_the_literal_index_error_at_the_use(value: str, says: str) -> None:
    text = program(f"    let i = {value}\n    let a = mu[i]\n")
    d = only(check(text), rules.INDEX_PLATE.code)
    assert d.message.startswith(says), d.message
    use = text.index("mu[i]") + len("mu[")
    assert (d.span.start, d.span.end) == (use, use + 1)
