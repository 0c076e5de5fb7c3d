"""Morphisms between finite sets as tensors of an algebra: what `composition NAME` means.

A file that declares `composition NAME` (checked into `CheckedModule.algebra`)
enriches its latent finite-set morphisms over that rule, as quivers 0.25.2 does
(`core/morphisms.py`: `LatentMorphism`, `ComposedMorphism`; `core/algebras.py`): a
`role=latent` morphism `A -> B` is an |A| x |B| tensor whose entries are
`sigmoid(raw)` of a free parameter, and `f >> g` is the tensor
`join_j(f[i, j] (x) g[j, k])`, with the rule's tensor and join
(`qvr_core.builtins.algebras`). `relation(m, checked)` computes that tensor for a
morphism built from latents, identities, `>>`, `repeat`, `.dagger`, `.curry_*`,
`.change_base(phi)` and calls of a
declared `contraction`.

A side that is a product of finite sets (`(PredDim * ArgDim) -> Judgment`) is one
tensor axis per factor, as in quivers (`raw` has the shape `(*domain.shape,
*codomain.shape)`), and so is the tensor `relation` returns. Composing works on the
tensor flattened to a matrix, rows the domain's values and columns the codomain's in
row-major order: a join over a product's axes is the join over its flattened values,
so `>>`, `.dagger` and `identity` need no axis bookkeeping. A contraction
(`contract`) restores the axes its wiring names, runs quivers' einsum under its own
rule (`core/wiring.py` `EinsumWiring`: broadcast, fold the rule's tensor, join the
axes the output drops) and flattens the result again.

Such a tensor is a relation valued in the algebra, not a probability kernel (a row
need not sum to 1; under `log_prob` or `tropical` its entries are not probabilities),
so nothing draws from it: a program that samples through one is refused when it is
compiled, and a draw from an exported let raises, each naming the declaration's line.
Without a declaration a latent is qvr's row-stochastic matrix (`morphisms.Latent`) and
its tensor composes under `markov`: the law of the chain of draws qvr runs.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn

from qvr_core.builtins.algebras import ALGEBRAS, Algebra, Values
from qvr_core.builtins.algebras import UNDECLARED as UNDECLARED_RULE
from qvr_core.builtins.transformations import TRANSFORMATIONS, Entries, invert
from qvr_core.check.module import CheckedModule, ModuleAlgebra
from qvr_core.check.types import Arrow, Product
from qvr_core.check.wiring import Contraction, Wiring
from qvr_core.runtime.combinators import Compose, Definition, Repeat
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.latent_start import initial
from qvr_core.runtime.morphisms import Identity, Latent, Leaf, Morphism, value_count
from qvr_core.runtime.tensors import batch_shape, columns, core_ndim, elem, is_index

#: The rule qvr composes finite-set latents under when a file declares none.
UNDECLARED = ALGEBRAS[UNDECLARED_RULE]


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


class _Undrawn(Morphism):
    """A relation of the algebra, not a probability kernel: `rsample`, `mean` and
    `log_prob` raise with `refusal()`, which says what it is and where to get its tensor."""

    def refusal(self) -> str:
        raise NotImplementedError

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        raise QvrRuntimeError(
            f"{self.refusal()}: qvr computes its tensor "
            "(qvr_core.runtime.relations.relation), it does not draw from it"
        )

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self._rsample(x)


class Relation(_Undrawn, Leaf):
    """`role=latent` under a declared composition rule: a tensor `sigmoid(raw)` with an
    axis per factor of its domain, then of its codomain (N x M between two sets).

    The parameter is `raw` (quivers' name), 0 at first (entries 1/2), as qvr starts
    a latent's logits at 0, unless the declaration asks for quivers' starts (`scale=`,
    `init=auto`: `latent_start`). It has a tensor, not draws: `rsample`, `mean` and
    `log_prob` raise, naming the rule and its line.
    """

    def __init__(
        self,
        key: str,
        arrow: Arrow,
        declared: ModuleAlgebra,
        scale: float | None = None,
        init: str | None = None,
    ) -> None:
        super().__init__(key, arrow)
        if not (self.dom_p.discrete and self.cod_p.discrete):
            raise QvrRuntimeError(f"{key}: role=latent needs finite sets on both sides")
        self.declared = declared
        size = max(value_count(self.dom_p), value_count(self.cod_p))
        shape = axes(self.dom_p, self.cod_p)
        self.raw = nn.Parameter(initial(shape, rule_of(declared).name, size, scale, init))

    @property
    def stochastic(self) -> bool:
        return True

    @property
    def tensor(self) -> torch.Tensor:
        return torch.sigmoid(self.raw)

    @property
    def matrix(self) -> torch.Tensor:
        """The tensor with the domain's axes flattened into rows, the codomain's into
        columns (row-major), as `>>` composes it."""
        return self.tensor.reshape(value_count(self.dom_p), value_count(self.cod_p))

    def refusal(self) -> str:
        d = self.declared
        return (
            f"{self.key} is a relation valued in {d.name} (`composition {d.name}`, line "
            f"{d.line}), not a probability kernel"
        )


class Dagger(_Undrawn):
    """`f.dagger`: the relation `f` read backwards, its tensor transposed (quivers 0.25.2,
    `Morphism.dagger`, for finite sets a transpose under every rule). A transpose of a
    relation is a relation, so it has no draws either."""

    def __init__(self, arrow: Arrow, label: str, inner: Morphism) -> None:
        super().__init__(arrow, label)
        self.inner = inner

    def refusal(self) -> str:
        return f"{self.label} is a transposed relation"


class Curried(_Undrawn):
    """`f.curry_right` / `f.curry_left` (check/curry.py): the relation `f` with the last
    or first factor of its domain read as the first of its codomain. The entries are
    `f`'s (quivers' residuation is the identity on them); `curry_left` moves that
    factor's axis from the front of the domain's to the front of the codomain's."""

    def __init__(self, arrow: Arrow, label: str, inner: Morphism, direction: str) -> None:
        super().__init__(arrow, label)
        self.inner = inner
        self.direction = direction

    def refusal(self) -> str:
        return f"{self.label} is a curried relation"

    def on_axes(
        self, tensor: torch.Tensor, rule: Algebra, declared: ModuleAlgebra | None
    ) -> torch.Tensor:
        """`f`'s tensor (an axis per factor) with the axes in the curried type's order."""
        if self.direction == "right":
            return tensor
        n = len(elem(self.inner.dom).factors)
        order = [*range(1, n), 0, *range(n, tensor.ndim)]
        return tensor.permute(order)


class Transformed(_Undrawn):
    """`f.change_base(phi)` (check/change_base.py): the relation `f` with each step of
    `phi` applied to its tensor in order (`builtins.transformations`), valued in the
    last step's target rule. A prior's tensor is read without its gradient, as quivers
    reads it (`bayes_invert`: flattened, and renormalised when it does not sum to 1)."""

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        inner: Morphism,
        steps: tuple[tuple[str, int | None], ...],
        priors: dict[int, Morphism],
    ) -> None:
        super().__init__(arrow, label)
        self.inner = inner
        self.steps = steps
        self.priors = nn.ModuleDict({str(i): m for i, m in priors.items()})

    @property
    def rule(self) -> str:
        """The rule its entries are values of: the last step's target."""
        return TRANSFORMATIONS[self.steps[-1][0]].target

    def refusal(self) -> str:
        return f"{self.label} is a relation valued in {self.rule}, not a probability kernel"

    def on_axes(
        self, tensor: torch.Tensor, rule: Algebra, declared: ModuleAlgebra | None
    ) -> torch.Tensor:
        """The steps applied to `f`'s tensor (an axis per factor), under the file's `rule`
        for a prior's tensor."""
        for i, (name, axis) in enumerate(self.steps):
            found = TRANSFORMATIONS[name]
            if found.pointwise is not None:
                tensor = cast(torch.Tensor, found.pointwise(cast(Entries, tensor)))
            elif found.along is not None and axis is not None:
                tensor = cast(torch.Tensor, found.along(cast(Entries, tensor), axis))
            else:
                prior = _prior(
                    relation_under(cast(Morphism, self.priors[str(i)]), rule, declared), self.label
                )
                if prior.numel() != tensor.shape[0]:
                    raise QvrError(
                        f"{self.label}: the prior has {prior.numel()} entries, and the kernel "
                        f"{tensor.shape[0]} rows"
                    )
                kernel = cast(Entries, tensor)
                tensor = cast(torch.Tensor, invert(kernel, cast(Entries, prior[:, None]))).T
        return tensor


def _prior(tensor: torch.Tensor, label: str) -> torch.Tensor:
    """A prior's entries as quivers' `bayes_invert` reads them: flattened, without their
    gradient, clamped at 0 and renormalised unless they sum to 1 (within 1e-5)."""
    flat = tensor.detach().flatten()
    total = flat.sum()
    if float(total.abs()) < 1e-12:
        raise QvrError(f"{label}: the prior sums to zero, so it cannot be normalised")
    if abs(float(total) - 1.0) > 1e-5:
        flat = flat.clamp(min=0.0)
        flat = flat / flat.sum().clamp(min=1e-12)
    return flat


class Marginalized(Morphism):
    """`f.marginalize(A, ...)` (check/marginals.py): `f` with the codomain factors at
    `drop` summed out. Of a relation, its tensor join-reduced over those axes under the
    file's rule (`relation_under`), and no draws; of a kernel, the marginal law: a draw
    is `f`'s draw without those factors, and a value's probability is `f`'s summed over
    every value of them (at most `MAX_SUMMED` values, enumerated)."""

    #: The most values of the factors summed out that a score enumerates.
    MAX_SUMMED = 65_536

    def __init__(self, arrow: Arrow, label: str, inner: Morphism, drop: tuple[int, ...]) -> None:
        super().__init__(arrow, label)
        self.inner = inner
        self.drop = drop
        cod = elem(inner.cod)
        starts = [0]
        for f in cod.factors:
            starts.append(starts[-1] + f.width)
        keep = [i for i in range(len(cod.factors)) if i not in drop]
        self.width = starts[-1]
        self.keep_columns = [c for i in keep for c in range(starts[i], starts[i + 1])]
        self.drop_columns = [starts[i] for i in drop]  # finite sets: one column each
        self.drop_sizes = [cod.factors[i].size for i in drop]

    @property
    def stochastic(self) -> bool:
        return self.inner.stochastic

    def _kept(self, joint: torch.Tensor) -> torch.Tensor:
        """The kept factors' columns of values of the whole codomain, packed as the
        marginal's codomain packs them (a single finite set: a bare index)."""
        kept = joint[..., self.keep_columns]
        return kept.squeeze(-1) if is_index(elem(self.cod)) else kept

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self._kept(self.inner.rsample(x))

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self._kept(self.inner.mean(x))

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        count = math.prod(self.drop_sizes)
        if count > self.MAX_SUMMED:
            raise QvrRuntimeError(
                f"{self.label}: scoring sums over {count:,} values of the factors summed out, "
                f"more than {self.MAX_SUMMED:,}"
            )
        lead = batch_shape(value, self.cod)
        values = columns(value, elem(self.cod)).reshape(-1, len(self.keep_columns))
        x_core = x.shape[x.ndim - core_ndim(self.dom) :]
        xs = x.expand(*lead, *x_core).reshape(-1, *x_core)
        n = values.shape[0]
        grids = torch.cartesian_prod(
            *(torch.arange(k, device=value.device) for k in self.drop_sizes)
        ).reshape(count, len(self.drop_sizes))
        joint = torch.empty((count, n, self.width), dtype=value.dtype, device=value.device)
        joint[:, :, self.keep_columns] = values.unsqueeze(0)
        joint[:, :, self.drop_columns] = grids.unsqueeze(1).to(value.dtype)
        repeated = xs.repeat(count, *([1] * len(x_core)))
        scores = self.inner.log_prob(repeated, joint.reshape(count * n, self.width))
        return torch.logsumexp(scores.reshape(count, n), dim=0).reshape(lead)


class Contracted(_Undrawn):
    """A call of a declared `contraction` (`bilinear_score(f, g, h)`): the relation whose
    entries are its inputs' combined by the contraction's own rule along its wiring
    (quivers 0.25.2, `_compile_morphism_call`: an `ObservedMorphism` of the declared type
    whose tensor is `EinsumWiring.apply` of the arguments' tensors). It has no draws."""

    def __init__(
        self, arrow: Arrow, label: str, contraction: Contraction, inputs: list[Morphism]
    ) -> None:
        super().__init__(arrow, label)
        self.contraction = contraction
        self.inputs = nn.ModuleList(inputs)

    def refusal(self) -> str:
        return f"{self.label} is a relation computed by contraction {self.contraction.name}"


def axes(dom: Product, cod: Product) -> tuple[int, ...]:
    """A relation's tensor shape: one axis per factor of the domain, then of the codomain."""
    return tuple(f.size for f in (*dom.factors, *cod.factors))


def contract(rule: Algebra, wiring: Wiring, tensors: list[torch.Tensor]) -> torch.Tensor:
    """The einsum `wiring` under `rule`, as quivers' `EinsumWiring.apply` computes it: each
    input's axes put in the order of first mention across the inputs (a missing axis of
    size 1), the inputs folded left to right with the rule's tensor, the axes the output
    does not keep joined, the rest put in the output's order."""
    universe = tuple(dict.fromkeys("".join(wiring.inputs)))
    index = {ch: i for i, ch in enumerate(universe)}
    broadcast: list[torch.Tensor] = []
    for t, spec in zip(tensors, wiring.inputs, strict=True):
        order = sorted(range(len(spec)), key=lambda i: index[spec[i]])
        permuted = t.permute(*order)
        sizes = dict(zip(sorted(spec, key=index.__getitem__), permuted.shape, strict=True))
        broadcast.append(permuted.reshape([sizes.get(ch, 1) for ch in universe]))
    if rule.no_composition and len({b.shape for b in broadcast}) > 1:
        raise QvrError(f"cannot contract under {rule.name}: {rule.no_composition}")
    acc = broadcast[0]
    for nxt in broadcast[1:]:
        acc = cast(torch.Tensor, rule.tensor_op(cast(Values, acc), cast(Values, nxt)))
    dropped = tuple(i for i, ch in enumerate(universe) if ch not in wiring.output)
    if dropped:
        acc = cast(torch.Tensor, rule.join_op(cast(Values, acc), dropped))
    kept = [ch for ch in universe if ch in wiring.output]
    if kept != list(wiring.output):
        acc = acc.permute(*[kept.index(ch) for ch in wiring.output])
    return acc


def relation(m: Morphism, checked: CheckedModule) -> torch.Tensor:
    """The tensor of `m` under the file's composition rule, one axis per factor of its
    domain and then of its codomain (quivers' `Morphism.tensor`), for a morphism built
    from latents, `identity`, `>>`, `repeat`, `.dagger` and contraction calls."""
    flat = relation_under(m, rule_of(checked.algebra), checked.algebra)
    return flat.reshape(axes(elem(m.dom), elem(m.cod)))


def _contracted(m: Contracted, rule: Algebra, declared: ModuleAlgebra | None) -> torch.Tensor:
    """A contraction call as a matrix: each input's relation (under the file's rule) with
    its parameter's axes, contracted under the contraction's rule, flattened."""
    found = m.contraction
    tensors = []
    for part, param in zip(cast(list[Morphism], m.inputs), found.params, strict=True):
        dom, cod = elem(param.type.dom), elem(param.type.cod)
        tensors.append(relation_under(part, rule, declared).reshape(axes(dom, cod)))
    out = contract(ALGEBRAS[found.rule], found.wiring, tensors)
    return out.reshape(value_count(elem(m.dom)), value_count(elem(m.cod)))


def _own_rule(m: Morphism) -> str | None:
    """The rule a contraction call's or a change of base's relation is enriched over
    (through `define`s): quivers refuses `>>` between morphisms of two rules."""
    while isinstance(m, Definition):
        m = m.body
    if isinstance(m, Transformed):
        return m.rule
    return m.contraction.rule if isinstance(m, Contracted) else None


def relation_under(
    m: Morphism, rule: Algebra, declared: ModuleAlgebra | None = None
) -> torch.Tensor:
    """`relation` with the rule given (`declared`: the declaration, for messages)."""
    if isinstance(m, Relation):
        return m.matrix
    if isinstance(m, Contracted):
        return _contracted(m, rule, declared)
    if isinstance(m, Latent):
        return m.matrix
    if isinstance(m, Definition):
        return relation_under(m.body, rule, declared)
    if isinstance(m, Dagger):
        return relation_under(m.inner, rule, declared).transpose(0, 1)
    if isinstance(m, Curried | Transformed):  # each acts on f's tensor, an axis a factor
        dom, cod = elem(m.inner.dom), elem(m.inner.cod)
        inner = relation_under(m.inner, rule, declared).reshape(axes(dom, cod))
        tensor = m.on_axes(inner, rule, declared)
        return tensor.reshape(value_count(elem(m.dom)), value_count(elem(m.cod)))
    if isinstance(m, Marginalized):
        dom, cod = elem(m.inner.dom), elem(m.inner.cod)
        tensor = relation_under(m.inner, rule, declared).reshape(axes(dom, cod))
        reduced = rule.join_op(cast(Values, tensor), tuple(len(dom.factors) + i for i in m.drop))
        return cast(torch.Tensor, reduced).reshape(value_count(dom), value_count(elem(m.cod)))
    if isinstance(m, Identity):
        return identity(rule, value_count(elem(m.dom)))
    if isinstance(m, Compose | Repeat):
        parts = list(m.chain())
        # identity too: quivers composes it like any other tensor
        tensors = [relation_under(p, rule, declared) for p in parts]
        if not tensors:
            return identity(rule, value_count(elem(m.dom)))
        other = next((r for p in parts if (r := _own_rule(p)) not in (None, rule.name)), None)
        if len(tensors) > 1 and other is not None:
            raise QvrError(
                f"{m.label}: cannot compose a relation of {other} (a contraction's rule) with "
                f"morphisms of the file's rule {rule.name}: quivers refuses `>>` between "
                "morphisms of two rules"
            )
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
        "repeat, .dagger and contractions make one)"
    )
