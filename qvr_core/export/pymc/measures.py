"""A step of quivers' measure algebra as a PyMC distribution (`export/measures.py`'s form).

A mixture is `pm.Mixture(w=..., comp_dists=[...])` with the weights divided by their sum
(the step rescales the mixture to mass 1), a truncation `pm.Truncated(base, lower=...,
upper=...)` (PyMC rescales by the base's CDF, as qvr does), a point mass
`pm.DiracDelta`. A family pushed through a bijection is a `pm.CustomDist` whose `dist`
applies the bijection to the family's draw: PyMC derives its density by the change of
variables (for `Exp`, `Log`, `Sigmoid` and `Softplus`), and a latent one moves on the
unconstrained scale of the bijection's image. PyMC finds no density for a draw pushed
through `Logit`, so that one is also given its `logp`: the base's density at the
inverse image plus the log of the inverse's derivative (`_INVERSES`).
"""

from __future__ import annotations

from qvr_core.check.model import Site
from qvr_core.export.measures import (
    Cut,
    Form,
    Leaf,
    Mix,
    Part,
    Point,
    Pushed,
    count_ends_written,
    divided_weights,
    kept_mass,
    weighed,
    weighed_weights,
    written_form,
)
from qvr_core.export.plan import Unsupported
from qvr_core.export.pymc.context import Context
from qvr_core.export.pymc.families import PYMC_FAMILIES, WHY_NOT, family_call, keywords
from qvr_core.export.pymc.terms import number
from qvr_core.export.pymc.tree import Call, LogP

#: What PyMC writes of each operator of the measure algebra (docs/export.md's table).
WRITES: dict[str, str] = {
    "mixture": "yes",
    "restrict": "yes",
    "truncated": "yes",
    "rescaled": "of a truncation",
    "point": "yes",
    "pushforward": "yes",
    "independent": "as its base",
}

#: Each bijection as PyMC applies it to a draw (`{}`).
_APPLIED: dict[str, str] = {
    "Identity": "{}",
    "Exp": "pm.math.exp({})",
    "Log": "pm.math.log({})",
    "Sigmoid": "pm.math.sigmoid({})",
    "Softplus": "pt.softplus({})",
    "Logit": "pm.math.logit({})",
}
#: The bijections whose image PyMC derives no density for: their `pm.CustomDist` is
#: given its `logp` (module doc).
_GIVEN_LOGP = ("Logit",)
#: Each bijection's inverse at a value `{0}`, the log of the inverse's derivative there,
#: the condition that the value lies in the bijection's image (None: everywhere) and a
#: point inside it (`_pushed_logp`).
_INVERSES: dict[str, tuple[str, str, str | None, str]] = {
    "Identity": ("{0}", "0.0", None, "0.0"),
    "Exp": ("pt.log({0})", "-pt.log({0})", "pt.gt({0}, 0)", "1.0"),
    "Log": ("pt.exp({0})", "{0}", None, "0.0"),
    "Sigmoid": (
        "(pt.log({0}) - pt.log1p(-{0}))",
        "(-pt.log({0}) - pt.log1p(-{0}))",
        "pt.and_(pt.gt({0}, 0), pt.lt({0}, 1))",
        "0.5",
    ),
    "Softplus": ("pt.log(pt.expm1({0}))", "({0} - pt.log(pt.expm1({0})))", "pt.gt({0}, 0)", "1.0"),
    "Logit": ("pm.math.sigmoid({0})", "(-pt.softplus(-{0}) - pt.softplus({0}))", None, "0.0"),
}
#: The transform a latent moves on, by the kind of values the bijection gives.
_MOVED = {
    "Exp": "pm.distributions.transforms.log",
    "Softplus": "pm.distributions.transforms.log",
    "Sigmoid": "pm.distributions.transforms.logodds",
}


def measure_problems(site: Site) -> list[Unsupported]:
    """What PyMC cannot write of the measure `site` draws from (none: it writes it)."""
    assert site.measure is not None
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        return [form]
    return [p for part in _parts(form) if (p := _part_problem(part)) is not None]


def _parts(form: Form) -> tuple[Part, ...]:
    return form.parts if isinstance(form, Mix) else (form,)


def _part_problem(part: Part) -> Unsupported | None:
    match part:
        case Cut(kept=True) if not count_ends_written(part):
            return Unsupported(
                part.span, "a count's Restrict in a mixture at ends not written as whole numbers"
            )
        case (
            Cut(base=base)
            | (Leaf() as base)
            | Pushed(base=(Leaf() as base))
            | Pushed(base=Cut(base=base))
        ) if base.family not in PYMC_FAMILIES:
            why = WHY_NOT.get(base.family, f"PyMC has no {base.family} distribution")
            return Unsupported(base.span, f"{base.family}: {why}")
    return None


def measure_call(cx: Context, site: Site) -> tuple[str, list[str]]:
    """The PyMC class of the step's distribution and its arguments (beside the name,
    `observed` and `dims`, which the site's writer adds)."""
    assert site.measure is not None
    form = written_form(site.measure)
    assert not isinstance(form, Unsupported)  # measure_problems said so first
    match form:
        case Mix(parts=parts):
            whole = bool(site.support and site.support.discrete)
            comps = ", ".join(_dist(cx, p, whole) for p in parts)
            return "pm.Mixture", [f"w={_mix_weights(cx, form)}", f"comp_dists=[{comps}]"]
        case Cut():
            return "pm.Truncated", [_dist(cx, form.base), *_bounds(cx, form)]
        case Point(value=value):
            return "pm.DiracDelta", [f"c={cx.argument(value)}"]
        case Leaf(family=family, args=args):
            texts = {a.param: cx.argument(a) for a in args}
            return PYMC_FAMILIES[family].pm, keywords(family, texts, named=True)
        case Pushed(bijector=bijector):
            moved = _MOVED.get(bijector) if site.kind == "sample" else None
            return "pm.CustomDist", [*_pushed(cx, form), *([f"transform={moved}"] if moved else [])]


def _mix_weights(cx: Context, form: Mix) -> str:
    """A mixture's weights divided by their sum; w_k m_k / sum_j w_j m_j where a
    component keeps its mass m_k (export/measures.py, `Cut.kept`)."""
    w = divided_weights(form, cx.argument, number, "pt", "pt.as_tensor", "np.array")
    if weighed(form):
        w = weighed_weights(form, w, "pt", "pt.as_tensor", lambda cut: _mass(cx, cut))
    return w


def scoped_term(cx: Context, site: Site) -> LogP | str:
    """The log density of an observation drawn from a measure inside a `marginalize`
    scope, which its scope function adds for each value it sums out (`lower_scopes`):
    `pm.logp` of the step's distribution, but for a pushforward, alone or in a mixture.
    PyMC derives a `pm.CustomDist`'s density only for a variable of the model: `pm.logp`
    of one built in place (`.dist`) keeps a random draw in its graph, so each
    evaluation gave another number. A pushforward is written as its base's density at
    the inverse image plus the log of the inverse's derivative, -inf outside the image
    (as Stan's export writes it); a mixture with one as the log-sum-exp of its weighted
    components."""
    assert site.measure is not None
    form = written_form(site.measure)
    assert not isinstance(form, Unsupported)  # measure_problems said so first
    value = cx.py(site.name)
    if not any(isinstance(p, Pushed) for p in _parts(form)):
        head, args = measure_call(cx, site)
        return LogP(Call(f"{head}.dist", tuple(args)), value)
    if isinstance(form, Pushed):
        return _pushed_logp(cx, form, value)
    assert isinstance(form, Mix)
    whole = bool(site.support and site.support.discrete)
    w = _mix_weights(cx, form)
    terms = []
    for k, part in enumerate(form.parts):
        if isinstance(part, Pushed):
            density = _pushed_logp(cx, part, value)
        else:
            density = _logp(_dist(cx, part, whole), value)
        terms.append(f"pt.log(pt.as_tensor({w})[..., {k}]) + {density}")
    return f"pm.math.logsumexp(pt.stack(pt.broadcast_arrays({', '.join(terms)})), axis=0)"


def _logp(dist: str, value: str) -> str:
    return f"pm.logp({dist}, {value})"


def _pushed_logp(cx: Context, part: Pushed, value: str) -> str:
    """A pushforward's log density at `value` (`scoped_term`): a value outside the
    bijection's image is read at a point inside it, so that neither the density nor its
    gradient is NaN there, and scored -inf."""
    inverse, jacobian, image, inside = _INVERSES[part.bijector]
    dist = _dist(cx, part.base)  # the family, or its truncation
    if image is None:
        return f"({_logp(dist, inverse.format(value))} + {jacobian.format(value)})"
    safe = f"pt.switch({image.format(value)}, {value}, {inside})"
    density = f"{_logp(dist, inverse.format(safe))} + {jacobian.format(safe)}"
    return f"pt.switch({image.format(value)}, {density}, -np.inf)"


def _dist(cx: Context, part: Part, whole: bool = False) -> str:
    """`part` as a PyMC distribution; `whole`: in a mixture of counts, where PyMC wants
    its point mass of an integer type (it refuses to mix discrete and continuous ones)."""
    match part:
        case Leaf(family=family, args=args):
            call = family_call(family, {a.param: cx.argument(a) for a in args})
            assert call is not None  # measure_problems refused the others
            return call
        case Point(value=value) if whole and isinstance(value.literal, float):
            return f"pm.DiracDelta.dist({int(value.literal)})"
        case Point(value=value) if whole:
            return f"pm.DiracDelta.dist(pt.round({cx.argument(value)}).astype('int64'))"
        case Point(value=value):
            return f"pm.DiracDelta.dist({cx.argument(value)})"
        case Cut():
            return f"pm.Truncated.dist({_dist(cx, part.base)}, {', '.join(_bounds(cx, part))})"
        case Pushed():
            return f"pm.CustomDist.dist({', '.join(_pushed(cx, part))})"


def _pushed(cx: Context, part: Pushed) -> list[str]:
    """A `pm.CustomDist`'s arguments for a family (or a truncation of one) pushed through
    a bijection: the family's arguments and the truncation's ends, then `dist`, which
    draws the family (its arguments are the lambda's, as PyMC requires), truncates it and
    applies the bijection; for a bijection in `_GIVEN_LOGP`, `logp` too."""
    cut = part.base if isinstance(part.base, Cut) else None
    leaf = part.base.base if isinstance(part.base, Cut) else part.base
    ends = [(k, a) for k, a in (("lower", cut.low), ("upper", cut.high)) if a] if cut else []
    given = [*leaf.args, *(a for _, a in ends)]
    params = [f"_a{i}" for i in range(len(given))]
    texts = {a.param: p for a, p in zip(leaf.args, params, strict=False)}
    family = PYMC_FAMILIES[leaf.family].pm
    bounds = [f"{k}={p}" for (k, _), p in zip(ends, params[len(leaf.args) :], strict=True)]
    base = f"{family}.dist({', '.join(keywords(leaf.family, texts))})"
    if cut is None:
        draw = f"{family}.dist({', '.join([*keywords(leaf.family, texts), 'size=size'])})"
    else:
        draw = f"pm.Truncated.dist({', '.join([base, *bounds, 'size=size'])})"
        base = f"pm.Truncated.dist({', '.join([base, *bounds])})"
    applied = _APPLIED[part.bijector].format(draw)
    out = [
        *(cx.argument(a) for a in given),
        f"dist=lambda {', '.join([*params, 'size'])}: {applied}",
    ]
    if part.bijector in _GIVEN_LOGP:  # its image is the real line: no condition
        inverse, jacobian, _, _ = _INVERSES[part.bijector]
        density = f"{_logp(base, inverse.format('value'))} + {jacobian.format('value')}"
        out.append(f"logp=lambda {', '.join(['value', *params])}: {density}")
    return out


def _mass(cx: Context, cut: Cut) -> str:
    """The mass a truncation keeps, from PyMC's log CDF of its base."""
    return kept_mass(
        cut, f"pm.math.exp(pm.logcdf({_dist(cx, cut.base)}, {{}}))".format, cx.argument
    )


def _bounds(cx: Context, cut: Cut) -> list[str]:
    out = []
    if cut.low is not None:
        out.append(f"lower={cx.argument(cut.low)}")
    if cut.high is not None:
        out.append(f"upper={cx.argument(cut.high)}")
    return out


__all__ = ["WRITES", "measure_call", "measure_problems", "scoped_term"]
