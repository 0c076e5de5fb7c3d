"""A latent's `scale=` and `init=auto` start it where quivers 0.25.2 does.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/declarations.py` gives `role=latent`
the options `scale` and `init` (`_ROLE_OPTION_KEYS`); `_compile_latent_role` makes a
`LatentMorphism` whose raw parameter is `randn(shape) * scale`, and with `init=auto`
refills it from `analysis/init_spec.py`'s recipe for the file's algebra at depth 1, the
larger side's size as the cells one composition joins over, through the logit where the
latent's sigmoid maps the recipe's values. qvr draws the same from the same generator, so
each case below compares qvr's parameter with the draw written out by hand from one seed.
The programs are our own, written like the guide's examples (`dsl-programs-and-lets.md`),
and parsed by quivers' grammars.
"""

from __future__ import annotations

import math

import pytest
import torch

from qvr_core.check import check
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.morphisms import Latent
from qvr_core.runtime.relations import Relation
from tests.conformance import oracle

SOURCE = """composition RULE [level=algebra]

object Word : FinSet 3
object Tag : FinSet 5

morphism emit : Word -> Tag [role=latent, OPTIONS]

define tagger = emit >> identity(Tag)

export tagger
"""
SEED = 20260


def _source(rule: str | None, options: str) -> str:
    source = SOURCE.replace(", OPTIONS", f", {options}" if options else "")
    if rule is None:
        return source.replace("composition RULE [level=algebra]\n", "")
    return source.replace("RULE", rule)


def _raw(rule: str | None, options: str) -> torch.Tensor:
    checked = check(_source(rule, options))
    assert checked.ok, [d.message for d in checked.diagnostics]
    torch.manual_seed(SEED)  # a run seeds torch before it compiles
    let = Compiler(checked).let("tagger")
    (leaf,) = [m for m in let.modules() if isinstance(m, Relation | Latent)]
    return leaf.raw.detach() if isinstance(leaf, Relation) else leaf.logits.detach()


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def test_quivers_grammars_parse_both_options() -> None:
    oracle.require_head(_source("real", "scale=0.1, init=auto"))


@pytest.mark.parametrize("rule", [None, "real", "product_fuzzy"])
def test_without_options_qvr_starts_at_zero(rule: str | None) -> None:
    assert torch.equal(_raw(rule, ""), torch.zeros(3, 5))


@pytest.mark.parametrize("rule", [None, "real", "log_prob"])
def test_scale_draws_normal_with_that_spread(rule: str | None) -> None:
    torch.manual_seed(SEED)
    by_hand = torch.randn(3, 5) * 0.1
    torch.testing.assert_close(_raw(rule, "scale=0.1"), by_hand, rtol=0, atol=0)


def _uniform(low: float, high: float) -> torch.Tensor:
    torch.manual_seed(SEED)
    return torch.empty(3, 5).uniform_(low, high)


def _normal(mean: float, std: float) -> torch.Tensor:
    torch.manual_seed(SEED)
    return torch.empty(3, 5).normal_(mean, std)


K = 5  # the larger side, Tag: the cells one composition joins over
LN2 = math.log(2.0)
RECIPES = {
    # uniform on [p/2, 3p/2] of the values, through the logit (sigmoid-mapped rules)
    "product_fuzzy": lambda: _uniform(_logit(LN2 / K / 2), _logit(3 * LN2 / K / 2)),
    "lukasiewicz": lambda: _uniform(_logit(1 / K / 2), _logit(3 / K / 2)),
    "probability": lambda: _uniform(_logit(1 / K / 2), _logit(3 / K / 2)),
    # the counting rule's recipe is on the raw parameter itself
    "counting": lambda: _uniform(1 / K / 2, 3 / K / 2),
    "boolean": lambda: torch.zeros(3, 5),  # the mid-point 1/2: logit 0
    "godel": lambda: torch.zeros(3, 5),
    "log_prob": lambda: _normal(-math.log(K), 0.5),
    "markov": lambda: _normal(0.0, 1.0),
    "real": lambda: _normal(0.0, 1 / math.sqrt(K)),
    "tropical": lambda: _normal(0.0, 1 / math.sqrt(K)),
    "max_plus": lambda: _normal(0.0, 1 / math.sqrt(K)),
    "reichenbach": lambda: _normal(0.0, 1 / math.sqrt(K)),  # a dual: quivers' fallback
}


@pytest.mark.parametrize("rule", sorted(RECIPES))
def test_init_auto_is_the_rules_recipe(rule: str) -> None:
    torch.testing.assert_close(_raw(rule, "init=auto"), RECIPES[rule](), rtol=0, atol=0)


def test_init_auto_wins_over_scale_and_an_undeclared_rule_is_markovs() -> None:
    torch.testing.assert_close(
        _raw("real", "scale=3.0, init=auto"), RECIPES["real"](), rtol=0, atol=0
    )
    torch.testing.assert_close(_raw(None, "init=auto"), RECIPES["markov"](), rtol=0, atol=0)


def test_product_fuzzy_entries_start_near_the_noisy_or_midpoint() -> None:
    entries = torch.sigmoid(_raw("product_fuzzy", "init=auto"))
    p = LN2 / K
    assert bool(((entries >= p / 2 - 1e-9) & (entries <= 3 * p / 2 + 1e-9)).all())


def test_each_option_is_refused_where_it_does_not_apply() -> None:
    source = _source("real", "init=zeros")
    (found,) = check(source).errors
    assert found.code == "QVR304" and "must be auto" in found.message
    assert found.span.start == source.index("zeros")
    kernel = (
        "object X : Real 2\nmorphism k : X -> X [role=kernel, init=auto] ~ Normal\n"
        "let m = k\nexport m\n"
    )
    errors = check(kernel).errors
    assert [d.code for d in errors] == ["QVR306"], errors
    assert errors[0].message == (
        "option init applies to latent morphisms, not to kernel morphism k"
    )
    embed = (
        "object W : FinSet 3\nobject E : Real 2\nmorphism e : W -> E [role=embed, scale=0.5]\n"
        "let m = e\nexport m\n"
    )
    errors = check(embed).errors
    assert [d.code for d in errors] == ["QVR306"], errors
    assert "applies to kernel and latent morphisms" in errors[0].message
