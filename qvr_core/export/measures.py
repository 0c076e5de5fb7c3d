"""A step of quivers' measure algebra as the probability distribution each target writes.

qvr's runtime computes any measure (`runtime/measures.py`): a restriction that keeps its
mass inside a mixture, nested mixtures, a step that rescales what it draws from. The
targets' libraries have probability distributions only: a mixture of them (PyMC's
`Mixture`, NumPyro's `MixtureGeneral`), a truncation rescaled to mass 1 (`pm.Truncated`,
`TruncatedDistribution`, Stan's `T[low, high]`), a point mass, a transformed
distribution. `written_form` rewrites the checked measure into those terms where that is
the same distribution, and says why where it is not, so every target refuses the same
constructs for the same reason and then only what its own library lacks.

The rewriting: a step rescales its measure to mass 1, so a `Restrict` the step draws from
is a truncation; `Truncated(b, ...)` and `Normalize(Restrict(b, ...))` are one anywhere.
A `Mixture` the step draws from, of components that are probability distributions, is
the mixture with its weights divided by their sum. A `Restrict` inside a `Mixture` keeps
its mass there (the mixture weighs it by w_k m_k), which no target's mixture does
directly: it is written as the rescaled truncation with its weight times its mass
(`Cut.kept`), which is the same distribution. A `Mixture` inside one keeps its mass too
and is flattened into it, each of its components weighing the product of the two
weights (`Mix.products` where they are values). An `Independent` is
written as its base: the joint density is the same, and only qvr's pointwise
log-likelihood (one term per joined vector) tells them apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Measure, Site
from qvr_core.export.plan import Unsupported
from qvr_core.text.span import Span


@dataclass(frozen=True)
class Leaf:
    """A number family of the registry at its bound arguments."""

    family: str
    args: tuple[Argument, ...]
    span: Span


@dataclass(frozen=True)
class Point:
    """All mass on `value`."""

    value: Argument
    span: Span


@dataclass(frozen=True)
class Cut:
    """`base` truncated to [low, high] (either may be missing) and rescaled to mass 1.

    `kept`: a `Restrict` written inside a `Mixture`, which keeps its mass m there, so the
    mixture weighs it by w m. A target writes it as this rescaled truncation with its
    weight w m / sum_j w_j m_j (the step rescales the whole mixture to mass 1), which is
    the same distribution: w p(x) 1[x inside] = w m (p(x) 1[x inside] / m)."""

    base: Leaf
    low: Argument | None
    high: Argument | None
    span: Span
    kept: bool = False


@dataclass(frozen=True)
class Pushed:
    """`base` pushed through the bijection named `bijector`."""

    base: Leaf | Cut
    bijector: str
    span: Span


#: One entry of a weights argument: the argument and the entry's index.
Entry = tuple[Argument, int]


@dataclass(frozen=True)
class Mix:
    """A mixture of probability distributions: component k with weight w_k / sum(w).

    `products`: where a mixture among its components was flattened into it and some
    weights are values, not numbers, component k's weight is the product of the entries
    listed for it (the outer mixture's, then the inner one's), before the weights are
    divided by their sum; None where `weights` is the weights as written."""

    weights: Argument
    parts: tuple[Leaf | Point | Cut | Pushed, ...]
    span: Span
    products: tuple[tuple[Entry, ...], ...] | None = None


Form = Leaf | Point | Cut | Pushed | Mix
Part = Leaf | Point | Cut | Pushed


def written_form(m: Measure) -> Form | Unsupported:
    """The distribution a step draws from `m` is, in the targets' terms (module doc)."""
    return _form(m, top=True)


def _form(m: Measure, *, top: bool) -> Form | Unsupported:
    family = FAMILIES[m.family]
    args = {a.param: a for a in m.args}
    match family.measure:
        case None:
            return Leaf(m.family, m.args, m.span)
        case "point":
            return Point(args["value"], m.span)
        case "truncated":
            return _cut(m.parts[0], args, m.span)
        case "restrict":
            if not top:  # a mixture's component is read by `_component`
                return Unsupported(
                    m.span,
                    f"a {m.family} pushed through a bijection keeps its mass there, which "
                    "no target writes: write Truncated(base, low, high) or "
                    f"Normalize({m.family}(...))",
                )
            return _cut(m.parts[0], args, m.span)
        case "rescaled":
            inner = m.parts[0]
            if FAMILIES[inner.family].measure in ("restrict", "truncated"):
                inner_args = {a.param: a for a in inner.args}
                return _cut(inner.parts[0], inner_args, m.span)
            return _form(inner, top=top)
        case "pushforward":
            base = _form(m.parts[0], top=False)
            if isinstance(base, Unsupported):
                return base
            if not isinstance(base, Leaf | Cut):
                return Unsupported(m.span, "a Pushforward of a mixture or a point is not exported")
            return Pushed(base, m.bijector or "Identity", m.span)
        case "mixture":
            if not top:
                return Unsupported(m.span, "a Mixture inside another distribution is not exported")
            return _mixed(m, args["weights"])
        case "independent":  # the same density; only qvr's pointwise terms join the plates
            return _form(m.parts[0], top=top)
    raise AssertionError(family.measure)


def leaf_site(site: Site) -> Site | None:
    """The site as a plain family site where its measure is one number family (an
    `Independent` of it): a target then writes it as any site of that family."""
    if site.measure is None:
        return None
    form = written_form(site.measure)
    if not isinstance(form, Leaf):
        return None
    return replace(site, family=form.family, args=form.args, measure=None)


def _mixed(m: Measure, weights: Argument) -> Mix | Unsupported:
    """A step's mixture, a mixture among its components flattened into it: inside a
    mixture, one keeps its mass (sum_j c_j m_j), so its component j weighs w_k c_j. Where
    every weight is a number, the products are written out as numbers; else each
    component's weight is the product of its entries (`Mix.products`)."""
    parts: list[Part] = []
    products: list[tuple[Entry, ...]] = []
    flattened = False
    for k, p in enumerate(m.parts):
        inner = FAMILIES[p.family].measure == "mixture"
        found = _mixed(p, next(a for a in p.args if a.param == "weights")) if inner else None
        if isinstance(found, Unsupported):
            return found
        if found is not None:
            flattened = True
            parts += found.parts
            inside = found.products or tuple(((found.weights, j),) for j in range(len(found.parts)))
            products += [((weights, k), *entries) for entries in inside]
            continue
        part = _component(p)
        if isinstance(part, Unsupported):
            return part
        assert not isinstance(part, Mix)  # a mixture was flattened above
        parts.append(part)
        products.append(((weights, k),))
    if not flattened:  # the weights as written
        return Mix(weights, tuple(parts), m.span)
    numbers = tuple(n for entries in products if (n := _number(entries)) is not None)
    if len(numbers) == len(products):  # every weight a number: the products written out
        return Mix(replace(weights, literal=numbers), tuple(parts), m.span)
    return Mix(weights, tuple(parts), m.span, tuple(products))


def _number(entries: tuple[Entry, ...]) -> float | None:
    """The product of entries that are all numbers written out, else None."""
    out = 1.0
    for a, k in entries:
        if not isinstance(a.literal, tuple):
            return None
        out *= a.literal[k]
    return out


def divided_weights(
    form: Mix,
    text: Callable[[Argument], str],
    number: Callable[[float], str],
    lib: str,
    as_array: str,
    array: str,
) -> str:
    """A mixture's weights divided by their sum, in the array library the written code
    calls `lib` (`as_array` makes an array of a value, `array` one of numbers): written
    out where they are numbers, each a product of entries where a mixture was flattened
    into this one (`Mix.products`); `text` writes an argument, `number` a number."""
    if form.products is not None:

        def entry(a: Argument, k: int) -> str:
            if isinstance(a.literal, tuple):
                return number(a.literal[k])
            return f"{as_array}({text(a)})[..., {k}]"

        stacked = f"{lib}.stack([{', '.join(weight_products(form, entry, ' * '))}], axis=-1)"
        return f"{stacked} / {lib}.sum({stacked}, axis=-1, keepdims=True)"
    w = form.weights
    if isinstance(w.literal, tuple):
        total = math.fsum(w.literal)
        return f"{array}([{', '.join(number(v / total) for v in w.literal)}])"
    written = text(w)
    return f"{written} / {lib}.sum({written}, axis=-1, keepdims=True)"


def weight_products(form: Mix, entry: Callable[[Argument, int], str], join: str) -> list[str]:
    """Each component's weight before the division by their sum (`Mix.products`) as a
    target writes it: `entry` writes one entry of a weights argument, `join` joins a
    product's factors (" * ", or " + " of their logs)."""
    assert form.products is not None
    return [join.join(entry(a, k) for a, k in entries) for entries in form.products]


def _component(m: Measure) -> Form | Unsupported:
    """A mixture's component: a `Restrict` keeps its mass (`Cut.kept`)."""
    if FAMILIES[m.family].measure == "restrict":
        return _cut(m.parts[0], {a.param: a for a in m.args}, m.span, kept=True)
    return _form(m, top=False)


def _cut(
    base: Measure, args: dict[str, Argument], span: Span, kept: bool = False
) -> Cut | Unsupported:
    if FAMILIES[base.family].measure is not None:
        return Unsupported(span, f"a truncation of a {base.family} is not exported")
    leaf = Leaf(base.family, base.args, base.span)
    return Cut(leaf, args.get("low"), args.get("high"), span, kept)


def count_ends_written(cut: Cut) -> bool:
    """A truncation of a count family has its ends written as whole numbers (a target
    reads its CDF there); any other truncation's ends may be values."""
    if not FAMILIES[cut.base.family].discrete:
        return True
    return all(
        isinstance(a.literal, float) and a.literal.is_integer()
        for a in (cut.low, cut.high)
        if a is not None
    )


def cdf_ends(
    cut: Cut, text: Callable[[Argument], str | None]
) -> tuple[str | None, str | None] | None:
    """Where the base's CDF F is read for the mass a truncation keeps, P(low <= X <= high)
    = F(high) - F(low'): low' is the lower end, a count's less 1 (F includes it), a count's
    ends as whole numbers (`count_ends_written` first); `text` writes a value's end (None
    where it cannot, and then this is None)."""
    discrete = FAMILIES[cut.base.family].discrete
    ends: list[str | None] = []
    for a, shift in ((cut.low, -1), (cut.high, 0)):
        if a is None:
            ends.append(None)
            continue
        if discrete:
            assert isinstance(a.literal, float)  # count_ends_written said so
            ends.append(str(int(a.literal) + shift))
            continue
        end = text(a)
        if end is None:
            return None
        ends.append(end)
    return ends[0], ends[1]


def kept_mass(cut: Cut, cdf: Callable[[str], str], text: Callable[[Argument], str]) -> str:
    """The mass a truncation keeps as a target writes it: `cdf` of an end's text (see
    `cdf_ends`), `text` writes an argument."""
    ends = cdf_ends(cut, text)
    assert ends is not None  # `text` writes every argument
    low, high = ends
    if low is not None and high is not None:
        return f"({cdf(high)} - {cdf(low)})"
    if low is not None:
        return f"(1.0 - {cdf(low)})"
    return cdf(high) if high is not None else "1.0"


def weighed(form: Mix) -> bool:
    """Some component keeps its mass (`Cut.kept`): the weights are w_k m_k, rescaled."""
    return any(isinstance(p, Cut) and p.kept for p in form.parts)


def weighed_weights(form: Mix, w: str, lib: str, as_array: str, mass: Callable[[Cut], str]) -> str:
    """The weights (`w`, the text of the rescaled weights) times each kept component's
    mass (`mass` writes it), rescaled to sum to 1, in the array library the written code
    calls `lib` (`jnp`, `pt`; `as_array` makes an array of a value)."""
    each = []
    for k, part in enumerate(form.parts):
        entry = f"{as_array}({w})[..., {k}]"
        if isinstance(part, Cut) and part.kept:
            entry = f"{entry} * {mass(part)}"
        each.append(entry)
    stacked = f"{lib}.stack([{', '.join(each)}], axis=-1)"
    return f"{stacked} / {lib}.sum({stacked}, axis=-1, keepdims=True)"


def leaves(form: Form) -> tuple[Leaf, ...]:
    """The number families a form draws from, outermost first."""
    match form:
        case Leaf():
            return (form,)
        case Point():
            return ()
        case Cut(base=base) | Pushed(base=base):
            return leaves(base)
        case Mix(parts=parts):
            return tuple(leaf for p in parts for leaf in leaves(p))


__all__ = [
    "Cut",
    "Entry",
    "Form",
    "Leaf",
    "Mix",
    "Part",
    "Point",
    "Pushed",
    "cdf_ends",
    "count_ends_written",
    "divided_weights",
    "kept_mass",
    "leaf_site",
    "leaves",
    "weighed",
    "weighed_weights",
    "weight_products",
    "written_form",
]
