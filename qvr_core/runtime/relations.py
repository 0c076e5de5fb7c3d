"""Morphisms between finite sets as tensors of an algebra: what `composition NAME` means.

A file that declares `composition NAME` (checked into `CheckedModule.algebra`)
enriches its latent finite-set morphisms over that rule, as quivers 0.25.2 does
(`core/morphisms.py`: `LatentMorphism`, `ComposedMorphism`; `core/algebras.py`): a
`role=latent` morphism `A -> B` is an |A| x |B| tensor whose entries are
`sigmoid(raw)` of a free parameter, and `f >> g` is the tensor
`join_j(f[i, j] (x) g[j, k])`, with the rule's tensor and join
(`qvr_core.builtins.algebras`). `relation(m, checked)` computes that tensor for a
morphism built from latents, identities, `>>` and `repeat`.

Such a tensor is a relation valued in the algebra, not a probability kernel (a row
need not sum to 1; under `log_prob` or `tropical` its entries are not probabilities),
so nothing draws from it: a program that samples through one is refused when it is
compiled, and a draw from an exported let raises, each naming the declaration's line.
Without a declaration a latent is qvr's row-stochastic matrix (`morphisms.Latent`) and
its tensor composes under `markov`: the law of the chain of draws qvr runs.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from qvr_core.builtins.algebras import ALGEBRAS, Algebra, Values
from qvr_core.check.module import CheckedModule, ModuleAlgebra
from qvr_core.check.types import Arrow
from qvr_core.runtime.combinators import Compose, Definition, Repeat
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.morphisms import Identity, Latent, Leaf, Morphism, value_count
from qvr_core.runtime.tensors import elem

#: The rule qvr composes finite-set latents under when a file declares none.
UNDECLARED = ALGEBRAS["markov"]


def rule_of(declared: ModuleAlgebra | None) -> Algebra:
    """The registered rule a file's declaration names (markov without one); a declaration
    with an inline body is refused: the checker types it, the runtime does not compute it."""
    if declared is None:
        return UNDECLARED
    if declared.rule is None:
        raise QvrError(
            f"composition {declared.name} (line {declared.line}) defines its rule with an "
            "inline body, which qvr checks but does not compute: name a registered rule "
            f"({', '.join(sorted(ALGEBRAS))})"
        )
    return ALGEBRAS[declared.rule]


def compose(rule: Algebra, m: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """`(m >> n)[i, k] = join_j (m[i, j] (x) n[j, k])` for an (N, K) and a (K, M) tensor
    (quivers' `CompositionRule.compose` with one contracted axis)."""
    product = rule.tensor_op(cast(Values, m[:, :, None]), cast(Values, n[None, :, :]))
    return cast(torch.Tensor, rule.join_op(product, (1,)))


def identity(rule: Algebra, n: int, like: torch.Tensor | None = None) -> torch.Tensor:
    """The identity relation on a set of n values: the unit on the diagonal, the zero
    elsewhere (`Algebra.identity_tensor`); only a rule at the algebra level has one."""
    if rule.unit is None or rule.zero is None:
        raise QvrError(
            f"identity needs a rule with a unit: {rule.name} is a {rule.level} (quivers "
            "compiles identity only under an algebra)"
        )
    dtype = like.dtype if like is not None else torch.get_default_dtype()
    out = torch.full((n, n), rule.zero, dtype=dtype)
    return out.fill_diagonal_(rule.unit)


class Relation(Leaf):
    """`role=latent` under a declared composition rule: an N x M tensor `sigmoid(raw)`.

    The parameter is `raw` (quivers' name), 0 at first (entries 1/2), as qvr starts
    a latent's logits at 0. It has a tensor, not draws: `rsample`, `mean` and
    `log_prob` raise, naming the rule and its line.
    """

    def __init__(self, key: str, arrow: Arrow, declared: ModuleAlgebra) -> None:
        super().__init__(key, arrow)
        if not (self.dom_p.discrete and len(self.cod_p.factors) == 1 and self.cod_p.discrete):
            raise QvrRuntimeError(f"{key}: role=latent needs a FinSet -> FinSet type")
        self.declared = declared
        n, m = value_count(self.dom_p), self.cod_p.factors[0].size
        self.raw = nn.Parameter(torch.zeros(n, m))

    @property
    def stochastic(self) -> bool:
        return True

    @property
    def tensor(self) -> torch.Tensor:
        return torch.sigmoid(self.raw)

    def refusal(self) -> str:
        d = self.declared
        return (
            f"{self.key} is a relation valued in {d.name} (`composition {d.name}`, line "
            f"{d.line}), not a probability kernel: qvr computes its tensor "
            "(qvr_core.runtime.relations.relation), it does not draw from it"
        )

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        raise QvrRuntimeError(self.refusal())

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        raise QvrRuntimeError(self.refusal())


class Dagger(Morphism):
    """`f.dagger`: the relation `f` read backwards, its tensor transposed (quivers 0.25.2,
    `Morphism.dagger`, for finite sets a transpose under every rule). A transpose of a
    relation is a relation, so it has no draws either."""

    def __init__(self, arrow: Arrow, label: str, inner: Morphism) -> None:
        super().__init__(arrow, label)
        self.inner = inner

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        raise QvrRuntimeError(
            f"{self.label} is a transposed relation: qvr computes its tensor "
            "(qvr_core.runtime.relations.relation), it does not draw from it"
        )

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self._rsample(x)


def relation(m: Morphism, checked: CheckedModule) -> torch.Tensor:
    """The tensor of `m` under the file's composition rule: (values of its domain, values
    of its codomain), for a morphism built from latents, `identity`, `>>`, `repeat` and
    `.dagger`."""
    return relation_under(m, rule_of(checked.algebra), checked.algebra)


def relation_under(
    m: Morphism, rule: Algebra, declared: ModuleAlgebra | None = None
) -> torch.Tensor:
    """`relation` with the rule given (`declared`: the declaration, for messages)."""
    if isinstance(m, Relation):
        return m.tensor
    if isinstance(m, Latent):
        return m.matrix
    if isinstance(m, Definition):
        return relation_under(m.body, rule, declared)
    if isinstance(m, Dagger):
        return relation_under(m.inner, rule, declared).transpose(0, 1)
    if isinstance(m, Identity):
        return identity(rule, value_count(elem(m.dom)))
    if isinstance(m, Compose | Repeat):
        parts = list(m.chain())
        # identity too: quivers composes it like any other tensor
        tensors = [relation_under(p, rule, declared) for p in parts]
        if not tensors:
            return identity(rule, value_count(elem(m.dom)))
        if len(tensors) > 1 and rule.no_composition:
            where = f" (`composition {declared.name}`, line {declared.line})" if declared else ""
            raise QvrError(
                f"{m.label}: cannot compose under {rule.name}{where}: {rule.no_composition}"
            )
        out = tensors[0]
        for t in tensors[1:]:
            out = compose(rule, out, t)
        return out
    raise QvrError(
        f"{m.label} is not a relation between finite sets (latent morphisms, identity, >>, "
        "repeat and .dagger make one)"
    )
