"""QVR412: a data name one edit from a value the program bound before it (`aa` after
`sample a`) is a warning with a "Change to" fix; data names further away are silent."""

from __future__ import annotations

from qvr_core.check import check
from tests.check.helpers import codes, find, only

GROUPS = """\
object Group : FinSet 4
object Row : FinSet 20

program groups : Row -> Row
    sample a : Group <- Normal(0.0, 1.0)
    sample sigma <- HalfNormal(1.0)
    let mu = {read}[group]
    observe y : Row <- Normal(mu, sigma)
    return mu

export groups
"""


def test_a_misspelt_value_read_as_data_is_one_warning_with_its_fix() -> None:
    text = GROUPS.format(read="aa")
    module = check(text)
    d = only(module, "QVR412")
    assert (d.span.start, d.span.end) == find(text, "aa")
    assert d.message == (
        "'aa' is read from the data file, as no step binds it (data names are allowed): "
        "did you mean 'a'?"
    )
    assert [f.title for f in d.fixes] == ["Change to 'a'"]
    assert [c for c in codes(text) if c != "QVR412"] == []  # `a` is not also unused
    assert "aa" in {v.name for v in module.models["groups"].data}  # still data


def test_the_value_itself_and_data_named_beside_values_are_silent() -> None:
    assert "QVR412" not in codes(GROUPS.format(read="a"))
    priors = """\
object Row : FinSet 5

program line : Row -> Row
    sample alpha <- Normal(pmualpha, psalpha)
    sample mu <- Normal(mu0, 1.0)
    sample sigma <- HalfNormal(1.0)
    let m = alpha + mu + x1 + x2
    observe y : Row <- Normal(m, sigma)
    return m

export line
"""
    assert "QVR412" not in codes(priors)


def test_a_name_read_before_its_look_alike_is_bound_is_silent() -> None:
    text = """\
object Row : FinSet 5

program p : Row -> Row
    sample sigma <- HalfNormal(sigmaa)
    sample sigmaa <- HalfNormal(1.0)
    observe y : Row <- Normal(0.0, sigma)
    return sigma

export p
"""
    assert "QVR412" not in codes(text)
