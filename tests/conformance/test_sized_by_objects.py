"""`Real Feature`, `Real 4 8`, `FinSet N`: sizes written with finite objects or several
numbers, as quivers 0.25.2 resolves them.

Read from quivers (the 0.25.2 wheel, `dsl/compiler/resolution.py`): each size argument
is a whole number or a finite object declared before (`_eval_size_arg`: its
cardinality); `Real` multiplies its sizes (`fuses_sizes`), every other constructor takes
exactly one (`_check_ctor_arity`); a size below 1 is refused; `FinSet N` with a name
is that object itself (`_resolve_discrete_constructor`). The programs are our own,
parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.dsl import loads
from qvr_core.runtime.morphisms import Morphism
from tests.conformance import oracle

SOURCE = """object Feature : FinSet 3
object Hidden : Real Feature
object Grid : Real 2 3

morphism lift : Real Feature -> Grid [role=kernel] ~ Normal
morphism spread : Hidden -> Real 2 3 [role=kernel] ~ Normal
morphism pick : Grid -> FinSet Feature [role=kernel] ~ Categorical

define net = lift >> pick
define wide = spread

export net
"""


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_sizes_are_read_from_objects_and_multiplied() -> None:
    module = check(SOURCE)
    assert [d.code for d in module.diagnostics if d.code != "QVR103"] == []
    assert module.objects["Hidden"].size == 3
    assert module.objects["Grid"].size == 6
    spread = module.morphisms["spread"].type
    assert spread.label == "Hidden -> Real 2 3"
    assert spread.cod.width == 6
    assert module.morphisms["lift"].type.dom.width == 3
    net = module.lets["net"].type
    assert net is not None and net.label == "Real Feature -> Feature"


def test_finset_of_a_name_is_that_object() -> None:
    module = check(SOURCE)
    pick = module.morphisms["pick"].type
    assert pick.cod.factors == (module.objects["Feature"],)


def test_it_runs() -> None:
    net = loads(SOURCE)["net"]
    assert isinstance(net, Morphism)
    draws = net.rsample(torch.zeros(5, 3))
    assert draws.shape == (5,) and bool(((draws >= 0) & (draws < 3)).all())


def test_a_size_mismatch_names_both_dimensions() -> None:
    found = check(SOURCE.replace("morphism pick : Grid", "morphism pick : Real 2 2"))
    assert any(d.code == "QVR201" and "4" in d.message and "6" in d.message for d in found.errors)


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        # quivers: "size argument 'Q': not an integer literal or a previously-declared
        # finite object"
        (("Real Feature", "Real Q"), "QVR101", "'Q'"),
        # a space has no cardinality
        (("Real Feature", "Real Grid"), "QVR212", "no number of elements"),
        # "Simplex takes exactly 1 size argument(s)"
        (("Hidden -> Real 2 3", "Hidden -> Simplex 2 3"), "QVR212", "one size"),
        # "dimension must be at least 1"
        (("Hidden -> Real 2 3", "Hidden -> Real 2 0"), "QVR212", "at least 1"),
        (("FinSet Feature", "FinSet Hidden"), "QVR212", "not a finite set"),
    ],
)
def test_what_quivers_refuses_is_an_error_at_the_size(
    change: tuple[str, str], code: str, words: str
) -> None:
    text = SOURCE.replace(*change)
    assert text != SOURCE
    found = [d for d in check(text).errors if d.code == code]
    assert found and words in found[0].message
    assert all(d.code != "QVR011" for d in check(text).diagnostics)
