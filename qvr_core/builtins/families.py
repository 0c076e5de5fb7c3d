"""The distribution families of QVR, each described once.

A `Family` says what a family is in the language: its parameters (names,
order, constraints, defaults), the alternative parameterisations quivers
accepts, its support, the rule that gives the shape of one draw (its event
shape), a valid example call and the text hover and completion show. Whether
and how a morphism's parameter network can drive it (`~ F` on a morphism) is
its `kernel` form. The checker, the editor features and the runtime read
this table; the runtime's torch factories are keyed by these names and a
test checks that the two tables agree.

The catalogue follows quivers 0.25 (`quivers.dsl.family_schemas` and its
family registry); `Deterministic` is qvr's own Dirac kernel, and `Flat` and
`HalfFlat` are qvr's improper flat priors (Stan's parameters with no prior
statement), written bare: `sample sigma <- HalfFlat`; `BoundedFlat(low, high)` is
the same between bounds its arguments give (Stan's `real<lower=..., upper=...>`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from qvr_core.builtins.constraints import (
    BOOLEAN,
    CORR_CHOLESKY,
    LOWER_CHOLESKY,
    NONNEGATIVE,
    NONNEGATIVE_INTEGER,
    POSITIVE,
    POSITIVE_DEFINITE,
    POSITIVE_VECTOR,
    REAL,
    REAL_MATRIX,
    REAL_VECTOR,
    SIMPLEX,
    STOCHASTIC_MATRIX,
    UNIT,
    Constraint,
)
from qvr_core.builtins.quadrature import HORSESHOE_SCALES, HORSESHOE_WEIGHTS

#: An example argument: a number, a vector, a matrix, or (for the measure algebra's
#: distributions and bijections) its source text.
Value = float | str | list[float] | list[list[float]]
#: What a measure operator does with the distributions it takes (quivers' operator
#: algebra): weigh them, restrict one to an interval (keeping its mass there, or
#: rescaled to mass 1: `Truncated`), rescale one to mass 1, put all mass on one point,
#: or push one through a bijection.
MeasureOp = Literal[
    "mixture", "restrict", "truncated", "rescaled", "point", "pushforward", "independent"
]


@dataclass(frozen=True)
class Param:
    """One parameter: its keyword, the values it takes and (if any) its default."""

    name: str
    constraint: Constraint
    doc: str = ""
    default: float | None = None  # None: required (quivers' schemas are complete)
    #: A network's output for a positive parameter is softplus + this: shape parameters
    #: (degrees of freedom, concentrations) keep 0.1, as quivers does, so draws stay finite.
    network_floor: float = 1e-6
    #: Why a parameter network must not give it (`~ F(args)` must), where that is so: a
    #: value a network can reach would make the draws or their stand-in not finite, or
    #: move the support.
    given_only: str = ""

    @property
    def rank(self) -> int:
        """0: a number (broadcast over the site), 1: a vector, 2: a matrix."""
        return self.constraint.rank


@dataclass(frozen=True)
class Axis:
    """Where one axis of a draw's shape comes from: the first listed parameter that has
    that axis (`("loc", -1)`: the length of `loc`), plus `offset`; else the size of the
    object the draw lands in (for `LKJCholesky`, or a number broadcast over it)."""

    sources: tuple[tuple[str, int], ...] = ()
    offset: int = 0


class Factor(Protocol):
    """A codomain factor as the checker has it (`check.types.ObjectType`)."""

    @property
    def kind(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def width(self) -> int: ...


@dataclass(frozen=True)
class KernelOption:
    """An option of a morphism's block that its family reads itself, as quivers hands it
    to the family's constructor, rather than configuring the parameter network:
    `[rank=2] ~ LowRankMVN` is the rank of the covariance factor, `[kernel=rbf] ~ GP`
    the covariance function."""

    name: str
    doc: str
    default: float | str
    choices: tuple[str, ...] = ()  # the value is a name from these; else a number
    whole: bool = False  # a whole number >= 1; else a positive number


#: How one draw of a structured kernel fills its codomain, one Real object: a vector of
#: its numbers, a k x k matrix flattened row-major (k * k numbers), or a matrix over the
#: two finite sets `over=` names, flattened row-major.
DrawLayout = Literal["vector", "square_matrix", "axes"]


@dataclass(frozen=True)
class KernelForm:
    """How a morphism's parameter network gives the family's parameters (`~ F` on a
    morphism): what the network outputs for each codomain factor.

    `structured`: the draw is one vector or matrix filling the codomain (`draw`), and the
    network gives every parameter whole, shaped by `shapes` (one per canonical parameter,
    by the draw's axes `n`, `m` and the family's whole-number options, `rank`): as many
    outputs as its free entries (the lower triangle of a Cholesky factor or covariance).
    `hyperparameters`: no network; the family holds its own learnable numbers, one per
    canonical parameter, started at the options of the same names (a GP's length scale)."""

    outputs: Literal[
        "location",
        "logits",
        "logit",
        "concentration",
        "value",
        "parameters",
        "structured",
        "hyperparameters",
        "flow",
    ]
    doc: str
    scale_option: bool = False  # `scale=` fixes the standard deviation
    per_column: int = 1  # "parameters": every parameter, for each column
    draw: DrawLayout = "vector"
    shapes: tuple[tuple[str, ...], ...] = ()
    options: tuple[KernelOption, ...] = ()
    #: "hyperparameters": the input's features are what the family reads (a GP's
    #: locations); False where the draw does not depend on the input, which only gives
    #: the batch (quivers' horseshoe)
    reads_input: bool = True

    def option(self, name: str) -> KernelOption | None:
        return next((o for o in self.options if o.name == name), None)

    @property
    def whole_draw(self) -> bool:
        """One draw is a single vector or matrix filling the codomain, not a draw per
        coordinate."""
        return self.outputs in ("structured", "hyperparameters", "flow")

    def draw_shape(self, width: int, axes: Sequence[int] = ()) -> tuple[int, ...] | None:
        """The shape of one draw into a Real object of `width` numbers, the axes of a
        matrix over finite sets being `axes`; None when no draw fills that object."""
        if self.draw == "square_matrix":
            k = math.isqrt(width)
            return (k, k) if k * k == width else None
        if self.draw == "axes":
            return tuple(axes) if len(axes) == 2 and math.prod(axes) == width else None
        return (width,)

    def sizes(
        self, draw: Sequence[int], options: Mapping[str, float | str] | None = None
    ) -> dict[str, int]:
        """The sizes `shapes` name: the draw's axes `n` and `m` (its last), and each
        whole-number option of the family, as given or its default (a LowRankMVN's
        `rank`)."""
        sizes = {o.name: int(o.default) for o in self.options if o.whole}
        given = {k: int(v) for k, v in (options or {}).items() if isinstance(v, int | float)}
        sizes.update({k: v for k, v in given.items() if k in sizes})
        sizes["n"], sizes["m"] = draw[0], draw[-1]
        return sizes

    def param_width(self, factors: Sequence[Factor]) -> int:
        """How many numbers the network outputs for a codomain with these factors (the
        forms that draw per coordinate; `Family.network_width` covers every form)."""
        if self.outputs == "logits":
            return sum(f.size for f in factors)
        if self.outputs == "logit":
            return len(factors)
        if self.whole_draw:
            raise ValueError("a structured kernel's width needs its draw: Family.network_width")
        return self.per_column * sum(f.width for f in factors)

    @property
    def learns_scale(self) -> bool:
        """Reads a standard deviation beside the location (fixed or learned)."""
        return self.outputs == "location"

    def held_parameters(self, factors: Sequence[Factor], fixed_scale: bool) -> int:
        """Parameters the kernel holds beside its network: a learned standard deviation
        per codomain column, unless `scale=` fixes it. The runtime's kernel makes exactly
        these, and the memory estimate counts them from here."""
        if self.learns_scale and not fixed_scale:
            return sum(f.width for f in factors)
        return 0


@dataclass(frozen=True, eq=False)
class Family:
    """A distribution family as the language knows it (one object per family: compared
    and hashed by identity, so it can key tables)."""

    name: str
    schemas: tuple[tuple[Param, ...], ...]  # the first is canonical (positional order)
    support: Constraint
    doc: str
    example: Mapping[str, Value]  # a valid call by keyword (tests, docs, hover)
    event: tuple[Axis, ...] = ()  # one entry per axis of a single draw
    example_space: int | None = None  # object size the example needs (LKJCholesky)
    kernel: KernelForm | None = None  # usable as `~ F` on a morphism
    dirac: bool = False  # a point mass, not a torch distribution
    #: The discrete family a continuous relaxation stands in for (quivers' `relaxes`): a
    #: `marginalize` over it sums that family's values under its masses at the same
    #: arguments, and draws from it.
    relaxes: str | None = None
    #: Why the family has no distribution outside a morphism, where that is so (a GP's
    #: covariance is evaluated at its kernel's input locations): no step can draw it.
    kernel_only: str = ""
    #: An improper prior (`Flat`, `HalfFlat`: log density 0 on its support, which has no
    #: finite measure; `BoundedFlat`: log density 0 between bounds that may read other
    #: parameters, so not a normalised conditional): only a latent's prior, as Stan's
    #: parameter with no statement. It has no draws, so a run that draws from the prior
    #: (the prior predictive, synthetic data) is refused; a draw here is Stan's starting
    #: point (uniform on (-2, 2) in unconstrained space), where NUTS and SVI start.
    improper: bool = False
    #: Its values along the site's last plate are one chain, each reading the one before
    #: (`MarkovChain`): a `marginalize` sums it out by the forward algorithm, not value by
    #: value per entry.
    chain: bool = False
    #: An operator of quivers' measure algebra (`Mixture`, `Restrict`, ...): its
    #: parameters take distributions, so it has no torch factory of its own; the runtime
    #: builds it from the distributions it takes (`runtime/measures.py`), and the site's
    #: support is what the checker works out from them (`check/measure_steps.py`).
    measure: MeasureOp | None = None
    #: The family this name stands for, where it is another spelling quivers accepts
    #: (`Truncate` for `Restrict`, `Transformed` for `Pushforward`).
    alias_of: str | None = None
    #: Its density is a mixture of Normals at 0 with these (weight, scale relative to
    #: the `scale` parameter) pairs: the horseshoe under quivers' quadrature
    #: (`builtins/quadrature.py`). A target without the family writes that mixture.
    normal_scales: tuple[tuple[float, float], ...] | None = None
    #: The parameter its density on the real line is symmetric about (`loc`), where it
    #: is: a one-sided `Restrict` cut exactly there keeps half its mass, with no CDF
    #: asked (quivers' fold: `Restrict(StudentT(nu, 0.0, s), 0.0)` is the half-Student-t).
    #: Not the von Mises, whose density repeats along the real line (no half of it is
    #: finite) and is symmetric only on the circle.
    symmetric_about: str | None = None
    _by_name: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {p.name: p for schema in self.schemas for p in schema}
        object.__setattr__(self, "_by_name", by_name)
        if self.kernel is not None and self.kernel.outputs == "parameters":
            ok = (
                self.kernel.per_column == len(self.params)
                and all(
                    p.constraint.kind in _NETWORK_KINDS and not p.given_only for p in self.params
                )
                and not isinstance(self.support.low, str)
                and not isinstance(self.support.high, str)
            )
            if not ok:
                raise ValueError(f"{self.name}: a network can give only number parameters")
        form = self.kernel
        structured = form is not None and form.outputs == "structured"
        if structured and len(form.shapes if form else ()) != len(self.params):
            raise ValueError(f"{self.name}: a structured kernel shapes every parameter")

    @property
    def params(self) -> tuple[Param, ...]:
        """The canonical parameters, in positional order."""
        return self.schemas[0] if self.schemas else ()

    def param(self, name: str) -> Param | None:
        return self._by_name.get(name)

    @property
    def event_rank(self) -> int:
        return len(self.event)

    @property
    def discrete(self) -> bool:
        return self.support.discrete

    @property
    def stochastic(self) -> bool:
        return not self.dirac

    @property
    def has_distribution(self) -> bool:
        """A torch distribution of its own, which a step can draw (not a Dirac kernel, not a
        family only a morphism can have)."""
        return (
            not self.dirac
            and not self.kernel_only
            and self.measure is None
            and self.alias_of is None
        )

    def signature(self) -> str:
        """`Normal(loc, scale)`; alternatives joined by ` | `."""
        if not self.schemas:
            return self.name
        return " | ".join(f"{self.name}({', '.join(p.name for p in s)})" for s in self.schemas)

    def event_shape(
        self, shapes: Mapping[str, tuple[int, ...]], space: int | None = None
    ) -> tuple[int, ...]:
        """The shape of one draw, from the shapes of the arguments (numbers are `()`) and
        the size of the object the draw lands in. Raises ValueError when neither says."""
        out: list[int] = []
        for axis in self.event:
            for name, index in axis.sources:
                shape = shapes.get(name, ())
                has_axis = len(shape) >= -index if index < 0 else len(shape) > index
                if has_axis:
                    out.append(shape[index] + axis.offset)
                    break
            else:
                if space is None:
                    raise ValueError(f"{self.name}: the size of a draw needs the object")
                out.append(space)
        return tuple(out)

    def network_width(
        self,
        factors: Sequence[Factor],
        draw: Sequence[int] = (),
        options: Mapping[str, float | str] | None = None,
    ) -> int:
        """How many numbers a morphism's parameter network outputs for `~ F` into these
        factors; `draw` is the shape of one draw of a structured kernel and `options` its
        family options (`rank`). The runtime's kernels make exactly these, and the memory
        estimate counts them from here."""
        form = self.kernel
        assert form is not None, f"{self.name} has no morphism form"
        if form.outputs in ("hyperparameters", "flow"):
            return 0  # no parameter network (a flow's coupling networks are its own)
        if form.outputs != "structured":
            return form.param_width(factors)
        return sum(free_entries(p, dims) for p, dims in self.structured_layout(draw, options))

    def structured_layout(
        self, draw: Sequence[int], options: Mapping[str, float | str] | None = None
    ) -> tuple[tuple[Param, tuple[int, ...]], ...]:
        """Each parameter of a structured kernel with its shape (`KernelForm.shapes` at the
        draw's axes and the family's whole-number options), in the order its network
        gives them."""
        form = self.kernel
        assert form is not None and form.outputs == "structured", f"{self.name}: structured"
        sizes = form.sizes(draw, options)
        return tuple(
            (p, tuple(sizes[axis] for axis in shape))
            for p, shape in zip(self.params, form.shapes, strict=True)
        )

    def held_parameters(self, factors: Sequence[Factor], fixed_scale: bool) -> int:
        """Parameters a `~ F` kernel holds beside its network: a learned standard deviation
        per column (`KernelForm.held_parameters`), or a hyperparameter kernel's own."""
        form = self.kernel
        assert form is not None, f"{self.name} has no morphism form"
        if form.outputs == "hyperparameters":
            return len(self.params)
        return form.held_parameters(factors, fixed_scale)

    def fits(self, object_kind: str, size: int | None = None) -> bool:
        """Whether a draw of this family is a value of one object factor of that kind.

        A Dirac kernel takes the codomain's own space, so it fits every continuous
        object; the others fit where their support lies inside the object.
        """
        if self.dirac:
            return object_kind != "finset"
        return self.support.fits(object_kind, size)


#: Parameter kinds a structured kernel's network gives as the lower triangle of a square
#: matrix: a Cholesky factor, or the Cholesky factor of a covariance (quivers' way).
_TRIANGULAR_KINDS = ("lower_cholesky", "positive_definite")


def triangular(param: Param) -> bool:
    """Whether a structured kernel's network gives the parameter by a lower triangle."""
    return param.constraint.kind in _TRIANGULAR_KINDS


def free_entries(param: Param, dims: Sequence[int]) -> int:
    """How many numbers a structured kernel's network gives for a parameter of shape
    `dims` (`Family.structured_layout`): a lower triangle's, or every entry's."""
    return dims[0] * (dims[0] + 1) // 2 if triangular(param) else math.prod(dims)


def bind(
    family: Family,
    positional: Sequence[object],
    keywords: Mapping[str, object],
    *,
    partial: bool = False,
) -> tuple[tuple[Param, ...], dict[str, object]] | str:
    """Match a call's arguments to one of the family's schemas: positional arguments by
    order, keywords by name. Returns (the schema, {parameter: argument}) or a message.
    `partial`: a parameter may be left out (a morphism's network gives it)."""
    if not family.schemas:
        if positional or keywords:
            return (
                f"{family.name} takes no arguments: write it without parentheses, `{family.name}`"
            )
        return (), {}
    problems: list[str] = []
    for schema in family.schemas:
        names = [p.name for p in schema]
        if len(positional) > len(names):
            problems.append(f"{family.name} takes {len(names)} arguments, not {len(positional)}")
            continue
        bound = dict(zip(names, positional, strict=False))
        clash = [k for k in keywords if k in bound]
        if clash:
            return f"{family.name}: '{clash[0]}' is given twice"
        unknown = [k for k in keywords if k not in names]
        if unknown:
            problems.append(f"'{unknown[0]}' is not a parameter of {family.signature()}")
            continue
        bound.update(keywords)
        missing = [p.name for p in schema if p.name not in bound and p.default is None]
        if missing and not partial:
            problems.append(f"{family.name} is missing {', '.join(missing)}")
            continue
        return schema, bound
    return problems[0]


#: Vector parameters a network can give (softmax into a probability vector, softplus into
#: positive entries), for a family whose draw is one vector the parameter spans.
_NETWORK_VECTOR_KINDS = ("simplex", "real_vector", "positive_vector")


def network_parameters(
    family: Family, schema: Sequence[Param], given: Collection[str]
) -> tuple[Param, ...] | str:
    """The parameters of `schema` a morphism's parameter network gives when its
    declaration gives the others (`~ F(args)`), or why the network cannot give them.

    quivers reads `morphism k : A -> B ~ F(args)` so: the literal arguments are F's
    parameters, fixed when the morphism is declared (its transpilers draw
    `F(args)` at every `sample x <- k`), and an option named after a parameter
    (`[temperature=0.5]`) fixes it too; the parameters left out are what its
    conditional family learns from the input. The network can give a number
    parameter (one output per codomain coordinate, mapped into its constraint) and,
    for a family whose draw is one vector, a vector parameter spanning that draw;
    not a matrix, and not a parameter that bounds the support (a Pareto's `scale`):
    a draw's support must not move with the input, or no codomain holds it."""
    bounds = {b for b in (family.support.low, family.support.high) if isinstance(b, str)}
    out: list[Param] = []
    for p in schema:
        if p.name in given:
            continue
        if p.name in bounds:
            return (
                f"the values of {family.name} are bounded by its {p.name}, which a parameter "
                f"network cannot move: give {p.name}"
            )
        spans_draw = (
            family.event_rank == 1
            and p.rank == 1
            and p.constraint.kind in _NETWORK_VECTOR_KINDS
            and family.event[0].offset == 0
            and any(name == p.name for name, _ in family.event[0].sources)
        )
        if p.given_only:
            return f"{p.name} of {family.name} must be given: {p.given_only}"
        if not (spans_draw or (p.rank == 0 and p.constraint.kind in _NETWORK_KINDS)):
            return (
                f"{p.name} of {family.name} is {p.constraint.describe()}, which a parameter "
                f"network does not give: give {p.name}"
            )
        out.append(p)
    return tuple(out)


def given_support(family: Family, given: Mapping[str, object]) -> Constraint:
    """The family's support with each bound that names a parameter replaced by the number
    given for it (`Pareto(1.0, 2.0)`: x >= 1); a bound given one number per coordinate
    is their hull (the lowest low, the highest high)."""

    def resolve(
        bound: float | str | None, pick: Callable[[Sequence[float]], float]
    ) -> float | str | None:
        if not isinstance(bound, str):
            return bound
        value = given.get(bound)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, tuple) and value and all(isinstance(v, int | float) for v in value):
            return float(pick([float(v) for v in value]))
        return bound

    c = family.support
    return Constraint(c.kind, resolve(c.low, min), resolve(c.high, max))


# ---------------------------------------------------------------- the catalogue


def _p(name: str, constraint: Constraint, doc: str = "") -> Param:
    return Param(name, constraint, doc)


def _c(kind: str, low: float | str | None = None, high: float | str | None = None) -> Constraint:
    return Constraint(kind, low, high)


_LOC = _p("loc", REAL, "location")
_BASE = _p("base", Constraint("measure"), "the distribution it is built from")
_MEASURES = _p("components", Constraint("measures"), "the component distributions, a list")
_BIJECTOR = _p("bijector", Constraint("bijector"), "the bijection: Exp, Log, Sigmoid, ...")
_LOW = _p("low", REAL, "lower end (kept)")
_HIGH = _p("high", REAL, "upper end (kept)")
#: A restriction's parameterisations: both ends, or either (quivers' `Restrict`).
_RESTRICT = ((_BASE, _LOW, _HIGH), (_BASE, _LOW), (_BASE, _HIGH))
_SCALE = _p("scale", POSITIVE, "scale (> 0)")
_C1 = Param("concentration1", POSITIVE, "first shape, alpha (> 0)", network_floor=0.1)
_C0 = Param("concentration0", POSITIVE, "second shape, beta (> 0)", network_floor=0.1)
_PROBS = _p("probs", UNIT, "probability of 1, in [0, 1]")
_HEAVY = "where a network's output is small, the draws or their mean are not finite"
_LAST = Axis((("loc", -1),))
_TRIL = "(its diagonal through softplus)"
_WISHART = (
    "the network gives df (softplus + K, as quivers keeps it above K - 1) and the lower "
    f"triangle of scale_tril {_TRIL}"
)
_IMPROPER = (
    "qvr's own family (quivers has none). Improper: its density does not integrate, so "
    "it is only a latent's prior, whose posterior the observations must make proper; it "
    "has no draws, so no prior predictive or synthetic data"
)

#: Parameter constraints a network's output is mapped into (softplus, sigmoid).
_NETWORK_KINDS = ("real", "positive", "unit_interval")


def _net(count: int) -> KernelForm:
    """The morphism form of a family whose parameters are all numbers."""
    return KernelForm(
        "parameters",
        "the network gives every parameter for each dimension (softplus into a positive "
        "one, sigmoid into one in [0, 1])",
        per_column=count,
    )


_CATALOGUE: tuple[Family, ...] = (
    # ---- real line
    Family(
        "Normal",
        ((_LOC, _SCALE),),
        REAL,
        "Gaussian with mean `loc` and standard deviation `scale`.",
        {"loc": 0.0, "scale": 1.0},
        kernel=KernelForm(
            "location",
            "the network gives the mean per dimension; the standard deviation is "
            "`scale=` or learned",
            scale_option=True,
        ),
        symmetric_about="loc",
    ),
    Family(
        "Cauchy",
        ((_LOC, _SCALE),),
        REAL,
        "Cauchy: heavy tails, no finite mean.",
        {"loc": 0.0, "scale": 1.0},
        kernel=_net(2),
        symmetric_about="loc",
    ),
    Family(
        "StudentT",
        ((Param("df", POSITIVE, "degrees of freedom (> 0)", network_floor=0.1), _LOC, _SCALE),),
        REAL,
        "Student's t with `df` degrees of freedom.",
        {"df": 3.0, "loc": 0.0, "scale": 1.0},
        kernel=_net(3),
        symmetric_about="loc",
    ),
    Family(
        "Laplace",
        ((_LOC, _SCALE),),
        REAL,
        "Laplace (double exponential).",
        {"loc": 0.0, "scale": 1.0},
        kernel=_net(2),
        symmetric_about="loc",
    ),
    Family(
        "Logistic",
        ((_LOC, _SCALE),),
        REAL,
        "Logistic: the logit of a uniform draw, shifted and scaled.",
        {"loc": 0.0, "scale": 1.0},
        kernel=_net(2),
        symmetric_about="loc",
    ),
    Family(
        "Gumbel",
        ((_LOC, _SCALE),),
        REAL,
        "Gumbel (extreme value, type I).",
        {"loc": 0.0, "scale": 1.0},
        kernel=_net(2),
    ),
    Family(
        "VonMises",
        ((_LOC, _p("concentration", POSITIVE, "concentration (> 0)")),),
        REAL,
        "Von Mises: an angle around `loc`.",
        {"loc": 0.0, "concentration": 2.0},
        kernel=_net(2),
    ),
    Family(
        "MixtureNormal",
        (
            (
                _p("weights", SIMPLEX, "mixing weights of the K components"),
                _p("loc", REAL_VECTOR, "the K component means"),
                _p("scale", POSITIVE_VECTOR, "the K component standard deviations"),
            ),
        ),
        REAL,
        "A mixture of K Normals: component k with probability weights[k].",
        {"weights": [0.2, 0.5, 0.3], "loc": [-2.0, 0.0, 3.0], "scale": [0.5, 1.0, 2.0]},
    ),
    Family(
        "Uniform",
        ((_p("low", REAL, "lower end"), _p("high", REAL, "upper end (> low)")),),
        _c("interval", "low", "high"),
        "Uniform on [low, high).",
        {"low": -1.0, "high": 2.0},
    ),
    Family(
        "TruncatedNormal",
        (
            (
                _p("mu", REAL, "location of the untruncated Normal"),
                _p("sigma", POSITIVE, "scale of the untruncated Normal (> 0)"),
                _p("low", REAL, "lower end"),
                _p("high", REAL, "upper end (> low)"),
            ),
        ),
        _c("interval", "low", "high"),
        "A Normal(mu, sigma) restricted to [low, high].",
        {"mu": 0.0, "sigma": 1.0, "low": -0.5, "high": 2.0},
    ),
    Family(
        "GeneralizedPareto",
        (
            (
                _LOC,
                _SCALE,
                Param(
                    "concentration",
                    REAL,
                    "tail shape",
                    given_only="its sign decides whether the values are bounded above",
                ),
            ),
        ),
        _c("greater_than_eq", "loc"),
        "Generalized Pareto (peaks over a threshold `loc`); bounded above when "
        "`concentration` < 0.",
        {"loc": 0.0, "scale": 1.0, "concentration": 0.2},
    ),
    Family(
        "Flat",
        (),
        REAL,
        f"An improper flat prior on the real line (log density 0), as a Stan parameter "
        f"with no prior statement; written bare, `sample b <- Flat`. {_IMPROPER}",
        {},
        improper=True,
    ),
    Family(
        "BoundedFlat",
        ((_p("low", REAL, "lower end"), _p("high", REAL, "upper end (> low)")),),
        _c("interval", "low", "high"),
        "A flat prior on (low, high): log density 0 there, not a Uniform's -log(high - "
        "low), as Stan's `real<lower=low, upper=high>` parameter with no prior statement "
        "(`let beta_max = 1.0 - alpha1`, `sample beta1 <- BoundedFlat(0.0, beta_max)`). "
        "qvr's own family (quivers has none). Improper: with bounds that read other "
        "parameters the joint density is not a product of normalised distributions, so it "
        "is only a latent's prior and has no draws (no prior predictive or synthetic "
        "data). Bounds that read another latent: NUTS moves it within each evaluation's "
        "bounds, as Stan does; SVI refuses them",
        {"low": -1.0, "high": 2.0},
        improper=True,
    ),
    # ---- positive half-line
    Family(
        "HalfNormal",
        ((_SCALE,),),
        NONNEGATIVE,
        "|x| for x ~ Normal(0, scale).",
        {"scale": 1.0},
        kernel=_net(1),
    ),
    Family(
        "HalfCauchy",
        ((_SCALE,),),
        NONNEGATIVE,
        "|x| for x ~ Cauchy(0, scale): a weakly informative prior on scales.",
        {"scale": 5.0},
        kernel=_net(1),
    ),
    Family(
        "Horseshoe",
        ((_p("scale", POSITIVE, "the global shrinkage tau (> 0)"),),),
        REAL,
        "The horseshoe prior (Carvalho, Polson and Scott): Normal(0, tau lambda) with a "
        "HalfCauchy(1) local scale lambda integrated out, so most draws shrink to 0 and a "
        "few stay large. As quivers scores it, the integral is a 16-point Gauss-Legendre "
        "rule over lambda = tan(pi t / 2).",
        {"scale": 1.0},
        normal_scales=tuple(zip(HORSESHOE_WEIGHTS, HORSESHOE_SCALES, strict=True)),
        kernel=KernelForm(
            "hyperparameters",
            "no network: the codomain's numbers are independent horseshoe draws whatever the "
            "input; the global scale is learned (softplus), started at the option scale",
            options=(KernelOption("scale", "the global scale it starts at (> 0)", 1.0),),
            reads_input=False,
        ),
    ),
    Family(
        "HalfStudentT",
        ((Param("df", POSITIVE, "degrees of freedom (> 0)", network_floor=0.1), _SCALE),),
        NONNEGATIVE,
        "|x| for x ~ StudentT(df, 0, scale).",
        {"df": 3.0, "scale": 1.0},
        kernel=_net(2),
    ),
    Family(
        "LogNormal",
        ((_LOC, _SCALE),),
        POSITIVE,
        "exp(x) for x ~ Normal(loc, scale).",
        {"loc": 0.0, "scale": 0.5},
        kernel=KernelForm(
            "location",
            "the network gives the log-scale location per dimension; the scale is learned",
        ),
    ),
    Family(
        "Exponential",
        ((_p("rate", POSITIVE, "rate (> 0), 1 / mean"),),),
        NONNEGATIVE,
        "Exponential waiting time with the given rate.",
        {"rate": 2.0},
        kernel=_net(1),
    ),
    Family(
        "Gamma",
        (
            (
                Param("concentration", POSITIVE, "shape (> 0)", network_floor=0.1),
                _p("rate", POSITIVE, "rate (> 0)"),
            ),
        ),
        NONNEGATIVE,
        "Gamma with shape `concentration` and `rate` (mean concentration / rate).",
        {"concentration": 2.0, "rate": 1.5},
        kernel=_net(2),
    ),
    Family(
        "InverseGamma",
        (
            (
                Param("concentration", POSITIVE, "shape (> 0)", network_floor=0.1),
                _p("rate", POSITIVE, "scale (> 0)"),
            ),
        ),
        POSITIVE,
        "1 / x for x ~ Gamma(concentration, rate): a conjugate prior on a variance.",
        {"concentration": 3.0, "rate": 2.0},
        kernel=_net(2),
    ),
    Family(
        "Chi2",
        ((Param("df", POSITIVE, "degrees of freedom (> 0)", network_floor=0.1),),),
        NONNEGATIVE,
        "Chi-squared with `df` degrees of freedom.",
        {"df": 4.0},
        kernel=_net(1),
    ),
    Family(
        "Weibull",
        ((_SCALE, Param("concentration", POSITIVE, "shape (> 0)", network_floor=0.1)),),
        POSITIVE,
        "Weibull with `scale` and shape `concentration`.",
        {"scale": 1.0, "concentration": 1.5},
        kernel=_net(2),
    ),
    Family(
        "Pareto",
        ((_p("scale", POSITIVE, "minimum value (> 0)"), _p("alpha", POSITIVE, "tail index")),),
        _c("greater_than_eq", "scale"),
        "Pareto: a power-law tail above `scale`.",
        {"scale": 1.0, "alpha": 3.0},
    ),
    Family(
        "FisherSnedecor",
        (
            (
                Param("df1", POSITIVE, "numerator df", given_only=_HEAVY),
                Param("df2", POSITIVE, "denominator df", given_only=_HEAVY),
            ),
        ),
        POSITIVE,
        "F distribution: a ratio of scaled chi-squared variables.",
        {"df1": 4.0, "df2": 6.0},
    ),
    Family(
        "HalfFlat",
        (),
        POSITIVE,
        f"An improper flat prior on (0, inf) (log density 0), as Stan's `real<lower=0>` "
        f"parameter with no prior statement; written bare, `sample sigma <- HalfFlat`. "
        f"{_IMPROPER}",
        {},
        improper=True,
    ),
    # ---- unit interval
    Family(
        "Beta",
        ((_C1, _C0),),
        UNIT,
        "Beta with shapes alpha = `concentration1`, beta = `concentration0`.",
        {"concentration1": 2.0, "concentration0": 3.0},
        kernel=_net(2),
    ),
    Family(
        "Kumaraswamy",
        (
            (
                Param("concentration1", POSITIVE, _C1.doc, given_only=_HEAVY),
                Param("concentration0", POSITIVE, _C0.doc, given_only=_HEAVY),
            ),
        ),
        UNIT,
        "Kumaraswamy: Beta-like on (0, 1) with a closed-form CDF.",
        {"concentration1": 2.0, "concentration0": 3.0},
    ),
    Family(
        "LogitNormal",
        (
            (
                _p("mu", REAL, "location of the Normal before the sigmoid"),
                _p("sigma", POSITIVE, "scale of the Normal before the sigmoid (> 0)"),
            ),
        ),
        UNIT,
        "sigmoid(x) for x ~ Normal(mu, sigma).",
        {"mu": 0.0, "sigma": 1.0},
        kernel=KernelForm(
            "location",
            "the network gives the location before the sigmoid per dimension; the scale is learned",
        ),
    ),
    Family(
        "ContinuousBernoulli",
        ((_p("probs", UNIT, "shape, in [0, 1]"),),),
        UNIT,
        "Continuous Bernoulli on [0, 1].",
        {"probs": 0.3},
        kernel=_net(1),
        relaxes="Bernoulli",
    ),
    Family(
        "RelaxedBernoulli",
        ((_p("temperature", POSITIVE, "relaxation temperature (> 0)"), _PROBS),),
        UNIT,
        "A Bernoulli relaxed to (0, 1) (binary Concrete / Gumbel-softmax).",
        {"temperature": 0.5, "probs": 0.3},
        relaxes="Bernoulli",
    ),
    # ---- discrete
    Family(
        "Bernoulli",
        ((_PROBS,),),
        BOOLEAN,
        "0 or 1, with P(1) = `probs`.",
        {"probs": 0.3},
        kernel=KernelForm("logit", "the network gives one logit per FinSet 2 factor"),
    ),
    Family(
        "Categorical",
        (
            (_p("probs", SIMPLEX, "the probability of each value"),),
            (_p("logits", REAL_VECTOR, "unnormalised log-probabilities"),),
        ),
        _c("index", high="probs"),
        "One of 0 .. K-1 with the given probabilities (or logits).",
        {"probs": [0.2, 0.3, 0.5]},
        kernel=KernelForm("logits", "the network gives one logit per value of each FinSet factor"),
    ),
    Family(
        "MarkovChain",
        (
            (_p("transition", STOCHASTIC_MATRIX, "row j: the probabilities of what follows j"),),
            (
                _p("transition", STOCHASTIC_MATRIX, "row j: the probabilities of what follows j"),
                _p("initial", SIMPLEX, "the probabilities of the first value"),
            ),
        ),
        _c("index", high="transition"),
        "A chain of values 0 .. K-1 along its plate (`[over=Time]`): the first from `initial` "
        "(uniform without it), each next one from the row of `transition` of the one before. "
        "Under `marginalize` the chain is summed out by the forward algorithm (a hidden "
        "Markov model, Stan's hmm_marginal), in log2(T) vectorised steps.",
        {"transition": [[0.9, 0.1], [0.2, 0.8]]},
        chain=True,
    ),
    Family(
        "Poisson",
        ((_p("rate", POSITIVE, "mean count (> 0)"),),),
        NONNEGATIVE_INTEGER,
        "Counts 0, 1, 2, ... with mean `rate`.",
        {"rate": 3.0},
    ),
    Family(
        "Binomial",
        ((_p("total_count", NONNEGATIVE_INTEGER, "number of trials"), _PROBS),),
        _c("integer_interval", 0.0, "total_count"),
        "Successes in `total_count` trials with success probability `probs`.",
        {"total_count": 10.0, "probs": 0.3},
    ),
    Family(
        "BetaBinomial",
        ((_p("total_count", NONNEGATIVE_INTEGER, "number of trials"), _C1, _C0),),
        _c("integer_interval", 0.0, "total_count"),
        "A Binomial whose success probability is Beta(concentration1, concentration0).",
        {"total_count": 10.0, "concentration1": 2.0, "concentration0": 3.0},
    ),
    Family(
        "NegativeBinomial",
        ((_p("total_count", POSITIVE, "number of failures to stop at (> 0)"), _PROBS),),
        NONNEGATIVE_INTEGER,
        "Successes before `total_count` failures, each trial a success with `probs`.",
        {"total_count": 4.0, "probs": 0.4},
    ),
    Family(
        "Geometric",
        ((_p("probs", UNIT, "success probability, in (0, 1]"),),),
        NONNEGATIVE_INTEGER,
        "Failures before the first success.",
        {"probs": 0.3},
    ),
    Family(
        "OrderedLogistic",
        (
            (
                _p("predictor", REAL, "the latent score eta"),
                _p("cutpoints", REAL_VECTOR, "K increasing cutpoints"),
            ),
        ),
        _c("ordinal", high="cutpoints"),
        "An ordered category 0 .. K: P(y <= k) = sigmoid(cutpoints[k] - predictor).",
        {"predictor": 0.3, "cutpoints": [-1.0, 0.0, 1.5]},
    ),
    Family(
        "OrderedProbit",
        (
            (
                _p("eta", REAL, "the latent score"),
                _p("cutpoints", REAL_VECTOR, "K increasing cutpoints"),
            ),
        ),
        _c("ordinal", high="cutpoints"),
        "An ordered category 0 .. K: P(y <= k) = Phi(cutpoints[k] - eta), Phi the "
        "standard Normal CDF.",
        {"eta": 0.3, "cutpoints": [-1.0, 0.0, 1.5]},
    ),
    Family(
        "ZeroInflatedPoisson",
        (
            (
                _p("zero_prob", UNIT, "probability of a structural zero"),
                _p("rate", POSITIVE, "mean of the Poisson part (> 0)"),
            ),
        ),
        NONNEGATIVE_INTEGER,
        "0 with probability `zero_prob`, else a Poisson(rate) count (which may also be 0).",
        {"zero_prob": 0.3, "rate": 2.5},
    ),
    Family(
        "HurdlePoisson",
        (
            (
                _p("zero_prob", UNIT, "probability of 0"),
                _p("rate", POSITIVE, "rate of the zero-truncated Poisson (> 0)"),
            ),
        ),
        NONNEGATIVE_INTEGER,
        "0 with probability `zero_prob`, else a Poisson(rate) count conditioned to be >= 1.",
        {"zero_prob": 0.3, "rate": 2.5},
    ),
    Family(
        "ZeroOneInflatedBeta",
        (
            (
                _p("mu", UNIT, "mean of the Beta part, in (0, 1)"),
                _p("phi", POSITIVE, "precision of the Beta part (> 0)"),
                _p("zoi", UNIT, "probability of 0 or 1"),
                _p("coi", UNIT, "probability of 1 given 0 or 1"),
            ),
        ),
        UNIT,
        "A proportion that may be exactly 0 or 1 (brms' zero-one-inflated beta): 0 with "
        "probability zoi (1 - coi), 1 with zoi coi, else a Beta(mu phi, (1 - mu) phi) draw.",
        {"mu": 0.4, "phi": 5.0, "zoi": 0.2, "coi": 0.3},
    ),
    Family(
        "OneHotCategorical",
        ((_p("probs", SIMPLEX, "the probability of each value"),),),
        Constraint("one_hot"),
        "A Categorical draw as a one-hot vector.",
        {"probs": [0.2, 0.3, 0.5]},
        event=(Axis((("probs", -1),)),),
    ),
    # ---- simplex and vectors
    Family(
        "Dirichlet",
        ((_p("concentration", POSITIVE_VECTOR, "one concentration (> 0) per component"),),),
        SIMPLEX,
        "A probability vector; mean concentration / sum(concentration).",
        {"concentration": [1.0, 2.0, 3.0]},
        event=(Axis((("concentration", -1),)),),
        kernel=KernelForm(
            "concentration",
            "the network gives the concentrations of each Simplex factor (softplus + 0.001)",
        ),
    ),
    Family(
        "RelaxedOneHotCategorical",
        (
            (
                _p("temperature", POSITIVE, "relaxation temperature (> 0)"),
                _p("probs", SIMPLEX, "the probability of each value"),
            ),
        ),
        SIMPLEX,
        "A Categorical relaxed to the simplex (Concrete / Gumbel-softmax).",
        {"temperature": 0.5, "probs": [0.2, 0.3, 0.5]},
        event=(Axis((("probs", -1),)),),
    ),
    Family(
        "LogisticNormal",
        ((_p("loc", REAL_VECTOR, "K-1 locations"), _p("scale", POSITIVE, "scale (> 0)")),),
        SIMPLEX,
        "A Normal in K-1 dimensions mapped onto the K-simplex by the stick-breaking softmax.",
        {"loc": [0.0, 0.5], "scale": 1.0},
        event=(Axis((("loc", -1),), offset=1),),
    ),
    Family(
        "MultivariateNormal",
        ((_p("loc", REAL_VECTOR, "mean vector"), _p("scale_tril", LOWER_CHOLESKY, "L, Σ = L Lᵀ")),),
        REAL_VECTOR,
        "Multivariate Gaussian with covariance scale_tril scale_trilᵀ.",
        {"loc": [0.0, 1.0], "scale_tril": [[1.0, 0.0], [0.5, 2.0]]},
        event=(Axis((("loc", -1), ("scale_tril", -1))),),
        kernel=KernelForm(
            "structured",
            "one vector fills the codomain; the network gives its mean and the lower "
            f"triangle of scale_tril {_TRIL}",
            shapes=(("n",), ("n", "n")),
        ),
    ),
    Family(
        "LowRankMVN",
        (
            (
                _p("loc", REAL_VECTOR, "mean vector"),
                _p("cov_factor", REAL_MATRIX, "W (K x r)"),
                _p("cov_diag", POSITIVE_VECTOR, "D, positive"),
            ),
        ),
        REAL_VECTOR,
        "Multivariate Gaussian with covariance W Wᵀ + diag(D).",
        {"loc": [0.0, 1.0, 2.0], "cov_factor": [[1.0], [0.5], [0.0]], "cov_diag": [1.0, 1.0, 2.0]},
        event=(Axis((("loc", -1), ("cov_diag", -1))),),
        kernel=KernelForm(
            "structured",
            "one vector fills the codomain; the network gives its mean, W (K x rank, "
            "`rank=`, 2 unless given) and D (softplus)",
            shapes=(("n",), ("n", "rank"), ("n",)),
            options=(
                KernelOption(
                    "rank",
                    "the rank of the covariance factor W (Σ = W Wᵀ + diag(D)), as quivers "
                    "reads it; not a factorisation of the network",
                    2,
                    whole=True,
                ),
            ),
        ),
    ),
    # ---- matrices
    Family(
        "LKJCholesky",
        ((_p("concentration", POSITIVE, "eta (> 0); 1 is uniform over correlations"),),),
        CORR_CHOLESKY,
        "LKJ prior on the Cholesky factor of a correlation matrix; its size is the object's.",
        {"concentration": 2.0},
        event=(Axis(), Axis()),
        example_space=3,
    ),
    Family(
        "LKJCorrelationFactor",
        ((_p("concentration", POSITIVE, "eta (> 0); 1 is uniform over correlations"),),),
        CORR_CHOLESKY,
        "Another name of `LKJCholesky` (quivers' `LKJCorrelationFactor` draws and scores "
        "the same Cholesky factors); its size is the object's.",
        {"concentration": 2.0},
        event=(Axis(), Axis()),
        example_space=3,
        alias_of="LKJCholesky",
    ),
    Family(
        "Wishart",
        (
            (
                _p("df", POSITIVE, "degrees of freedom (> K - 1)"),
                _p("scale_tril", LOWER_CHOLESKY, "Cholesky factor of the scale matrix"),
            ),
        ),
        POSITIVE_DEFINITE,
        "Wishart over positive-definite K x K matrices.",
        {"df": 4.0, "scale_tril": [[1.0, 0.0], [0.5, 1.0]]},
        event=(Axis((("scale_tril", -2),)), Axis((("scale_tril", -1),))),
        kernel=KernelForm(
            "structured",
            f"one K x K matrix fills the codomain of K * K numbers, row by row; {_WISHART}",
            draw="square_matrix",
            shapes=((), ("n", "n")),
        ),
    ),
    Family(
        "InverseWishart",
        (
            (
                _p("df", POSITIVE, "degrees of freedom (> K - 1)"),
                _p("scale_tril", LOWER_CHOLESKY, "Cholesky factor of the scale matrix Ψ"),
            ),
        ),
        POSITIVE_DEFINITE,
        "X⁻¹ for X ~ Wishart(df, Ψ⁻¹): a conjugate prior on a covariance.",
        {"df": 5.0, "scale_tril": [[1.0, 0.0], [0.5, 1.0]]},
        event=(Axis((("scale_tril", -2),)), Axis((("scale_tril", -1),))),
        kernel=KernelForm(
            "structured",
            "one K x K matrix fills the codomain of K * K numbers, row by row: the inverse "
            f"of a Wishart draw whose {_WISHART}",
            draw="square_matrix",
            shapes=((), ("n", "n")),
        ),
    ),
    Family(
        "MatrixNormal",
        (
            (
                _p("loc", REAL_MATRIX, "mean matrix M (R x C)"),
                _p("row_covariance", POSITIVE_DEFINITE, "U (R x R)"),
                _p("col_covariance", POSITIVE_DEFINITE, "V (C x C)"),
            ),
        ),
        REAL_MATRIX,
        "Matrix Gaussian: vec(X) ~ Normal(vec(M), V ⊗ U).",
        {
            "loc": [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]],
            "row_covariance": [[1.0, 0.3], [0.3, 2.0]],
            "col_covariance": [[1.0, 0.0, 0.0], [0.0, 2.0, 0.5], [0.0, 0.5, 1.0]],
        },
        event=(
            Axis((("loc", -2), ("row_covariance", -1))),
            Axis((("loc", -1), ("col_covariance", -1))),
        ),
        kernel=KernelForm(
            "structured",
            "one R x C matrix over the finite sets `over=[Row, Col]` fills the codomain of "
            "R * C numbers, row by row; the network gives M and the lower triangles of the "
            f"Cholesky factors of U and V {_TRIL}",
            draw="axes",
            shapes=(("n", "m"), ("n", "n"), ("m", "m")),
        ),
    ),
    # ---- a Gaussian process: its covariance is evaluated at the kernel's input
    Family(
        "GP",
        (
            (
                _p("length_scale", POSITIVE, "length scale of the covariance function (> 0)"),
                _p("amplitude", POSITIVE, "amplitude (> 0); it scales the covariance squared"),
            ),
        ),
        REAL_VECTOR,
        "Gaussian process prior: the N values at N input locations are jointly Normal with "
        "mean 0 and covariance amplitude² k(x_i, x_j) (+ 1e-6 on the diagonal).",
        {"length_scale": 1.0, "amplitude": 1.0},
        event=(Axis(),),
        kernel=KernelForm(
            "hyperparameters",
            "the codomain's N numbers are the process at N locations, the input's features "
            "split into N equal parts; length_scale and amplitude are learned (softplus), "
            "started at the options of those names",
            options=(
                KernelOption(
                    "kernel",
                    "the covariance function; rbf is the squared exponential",
                    "rbf",
                    choices=("rbf", "matern52", "linear"),
                ),
                KernelOption("length_scale", "the length scale it starts at (> 0)", 1.0),
                KernelOption("amplitude", "the amplitude it starts at (> 0)", 1.0),
            ),
        ),
        kernel_only="its covariance is evaluated at the locations a morphism's input gives",
    ),
    # ---- a normalizing flow: its density is the base Normal's through its layers
    Family(
        "Flow",
        (),
        REAL_VECTOR,
        "Conditional normalizing flow (quivers' `ConditionalFlow`): a standard Normal "
        "vector pushed through `n_layers` affine coupling layers (RealNVP), each "
        "conditioned on the input; its density is exact by the change of variables.",
        {},
        event=(Axis(),),
        kernel=KernelForm(
            "flow",
            "the codomain (one Real object of at least 2 numbers) is a standard Normal "
            "vector through n_layers affine coupling layers, the even and odd coordinates "
            "taking turns; each layer's shift and log-scale come from a two-hidden-layer "
            "tanh network of hidden_dim units reading the input (a finite one through a "
            "learned embedding) and the coordinates it keeps",
            options=(KernelOption("n_layers", "the number of coupling layers", 4, whole=True),),
        ),
        kernel_only="its layers are networks that only a morphism's input conditions",
    ),
    # ---- quivers' measure algebra: distributions built from distributions
    Family(
        "Mixture",
        ((_p("weights", SIMPLEX, "one weight per component"), _MEASURES),),
        REAL,
        "A mixture: component k with probability weights[k] (times its mass, where it is a "
        "restriction). Components may differ in family, and a `PointMass` among them puts "
        "mass on one value (zero inflation). Its density is log sum_k w_k p_k(x).",
        {"weights": [0.3, 0.7], "components": "[PointMass(0.0), Poisson(4.0)]"},
        measure="mixture",
    ),
    Family(
        "Restrict",
        _RESTRICT,
        REAL,
        "The base restricted to [low, high] (Stan's truncation `T[low, high]`): a step "
        "rescales it to mass 1, so its density is the base's over its mass on the interval; "
        "inside a `Mixture` it keeps its mass (a hurdle's counts above 0).",
        {"base": "Normal(0.0, 1.0)", "low": 0.0},
        measure="restrict",
    ),
    Family(
        "Truncate",
        _RESTRICT,
        REAL,
        "Another name of `Restrict`: the base restricted to [low, high].",
        {"base": "Normal(0.0, 1.0)", "low": 0.0},
        measure="restrict",
        alias_of="Restrict",
    ),
    Family(
        "Truncated",
        _RESTRICT[:1],
        REAL,
        "The base restricted to [low, high] and rescaled to mass 1 wherever it is written "
        "(`Normalize(Restrict(base, low, high))`): inside a `Mixture` too, it is a "
        "probability distribution.",
        {"base": "Gamma(2.0, 1.0)", "low": 0.5, "high": 4.0},
        measure="truncated",
    ),
    Family(
        "Normalize",
        ((_BASE,),),
        REAL,
        "The base rescaled to mass 1: a `Restrict` or a `Mixture` of restrictions divided by "
        "its mass (a step does this at its boundary; inside a `Mixture` it makes a "
        "component a probability distribution again).",
        {"base": "Restrict(Poisson(3.0), 1.0)"},
        measure="rescaled",
    ),
    Family(
        "PointMass",
        ((_p("value", REAL, "the one value"),),),
        REAL,
        "All mass on one value (a Dirac measure): inside a `Mixture`, the zero of a "
        "zero-inflated or hurdle model.",
        {"value": 0.0},
        measure="point",
    ),
    Family(
        "Pushforward",
        ((_BASE, _BIJECTOR),),
        REAL,
        "The base pushed through a bijection (`Pushforward(Normal(0.0, 1.0), Exp)` is a "
        "LogNormal): its density is the base's at the inverse image times the inverse's "
        "derivative.",
        {"base": "Normal(0.0, 1.0)", "bijector": "Exp"},
        measure="pushforward",
    ),
    Family(
        "Transformed",
        ((_BASE, _BIJECTOR),),
        REAL,
        "Another name of `Pushforward`: the base pushed through a bijection.",
        {"base": "Normal(0.0, 1.0)", "bijector": "Exp"},
        measure="pushforward",
        alias_of="Pushforward",
    ),
    Family(
        "Independent",
        (
            (
                _BASE,
                _p(
                    "reinterpreted_batch_ndims",
                    Constraint("plate_count"),
                    "how many of the step's plates, the innermost, make one observation",
                ),
            ),
        ),
        REAL,
        "The base with the step's innermost plates read as one observation (torch's and "
        "NumPyro's `Independent`): the same density, summed over those plates, so the "
        "pointwise log-likelihood (LOO, WAIC) has one term per whole vector.",
        {"base": "Normal(0.0, 1.0)", "reinterpreted_batch_ndims": 1},
        measure="independent",
    ),
    # ---- qvr's Dirac kernel
    Family(
        "Deterministic",
        (),
        REAL,
        "A Dirac kernel: the parameter network's output itself, mapped into the "
        "codomain's space (softplus, sigmoid, softmax for Positive, Unit, Simplex).",
        {},
        kernel=KernelForm("value", "the network's output is the value"),
        dirac=True,
    ),
)

FAMILIES: dict[str, Family] = {f.name: f for f in _CATALOGUE}
#: Families that can follow `~` on a morphism, in the catalogue's order.
KERNEL_FAMILIES: tuple[str, ...] = tuple(f.name for f in _CATALOGUE if f.kernel is not None)
#: The operators of quivers' measure algebra (`Family.measure`), in the catalogue's order.
MEASURE_FAMILIES: tuple[str, ...] = tuple(f.name for f in _CATALOGUE if f.measure is not None)
#: The normalizing-flow kernel, which the runtime builds apart (`runtime/flows.py`).
FLOW = next(f.name for f in _CATALOGUE if f.kernel is not None and f.kernel.outputs == "flow")


def resolved(family: Family) -> Family:
    """The family a name builds: an alias's (`LKJCorrelationFactor` builds `LKJCholesky`,
    `Truncate` builds `Restrict`), else itself. The checker records sites under this one,
    so the runtime and the exports never see an alias."""
    return FAMILIES[family.alias_of] if family.alias_of is not None else family


def codomain_words(family: Family) -> str:
    """The objects a family fits, for messages: `a Positive or Real codomain`."""
    from qvr_core.builtins.objects import OBJECT_CONSTRUCTORS

    if family.dirac:
        return "a continuous codomain"
    if family.kernel is not None and family.kernel.whole_draw:
        return _WHOLE_CODOMAINS[family.kernel.draw]
    if family.support.kind == "boolean":
        return "a FinSet 2 codomain"
    # the tightest object first: Simplex, Unit, Positive, Real
    names = [c.name for c in reversed(OBJECT_CONSTRUCTORS.values()) if family.fits(c.kind)]
    if not names:
        return "an object qvr does not have yet"
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    return f"a {listed} codomain"


#: The codomain a whole-draw kernel fills, by how its draw is laid out.
_WHOLE_CODOMAINS: dict[DrawLayout, str] = {
    "vector": "one Real codomain",
    "square_matrix": "one Real codomain of K * K numbers (a K x K matrix, row by row)",
    "axes": "one Real codomain of R * C numbers (the matrix over `over=[Row, Col]`, row by row)",
}


def family_for(factors: Sequence[Factor]) -> str | None:
    """The family to suggest for a kernel into these factors: the one whose values are
    exactly the objects' (one distribution per factor); None when no family fits them all."""
    from qvr_core.builtins.objects import BY_KIND

    kinds = {f.kind for f in factors}
    if not kinds:
        return None
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind == "finset" and all(f.size == 2 for f in factors):
            return "Bernoulli"
        return BY_KIND[kind].family
    return None if "finset" in kinds else "Deterministic"
