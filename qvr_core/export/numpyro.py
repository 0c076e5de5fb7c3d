"""The NumPyro target: a checked model program written as a NumPyro model.

The export is a Python module a NumPyro user would write by hand: `model(<data>,
<observed>=None)` with one `numpyro.sample` per site, a `numpyro.plate` named after
each QVR object a site runs over, `numpyro.deterministic` for the `let`s the program
returns (what a user asks to see; the others stay plain arithmetic so the trace
holds only what qvr reports too), `numpyro.factor` for `score`, and a `load_data`
that reads the same JSON data file qvr reads (indices from 0), plus a `__main__`
block that runs NUTS on a data file given on the command line.

Every family is the numpyro.distributions call with the parameterisation of
qvr's runtime (`runtime/distributions.py`): a Categorical's probabilities are
normalised as torch normalises them, a number given for a vector parameter is
spread to the size of one draw, a HalfStudentT is the folded StudentT it is.

A `marginalize` scope, and a discrete latent qvr sums out for NUTS, are NumPyro's
parallel enumeration (`infer={"enumerate": "parallel"}`, funsor): each such site
gets dimensions of its own on the left, so gathers by it go through `Vindex` and
the plates keep one dimension each. A one-entry plate has no axis in qvr and gets
no NumPyro plate either. What NumPyro cannot say with qvr's meaning (a `via=` map,
a reduction other than logsumexp, a reduction of an enumerated value, a family it
lacks) comes back from `unsupported` at the construct, never as wrong code.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

from qvr_core.builtins import FAMILIES, Family
from qvr_core.check.model import Argument, Let, Model, Site, Step, axis_plates, one_entry, walk
from qvr_core.export.named import members, named
from qvr_core.export.numpyro_terms import Terms, number
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.targets import PYTHON_WORDS, TARGETS
from qvr_core.text.span import Span


class _NumPyroCalls:
    """The numpyro.distributions call of each family, named after the registry's entry
    (`named`): one template per parameterisation, `{param}` its argument's text
    (`{dimension}`: a draw's size). Each has qvr's runtime meaning
    (`tests/export/test_numpyro.py` scores both)."""

    Normal = ("dist.Normal({loc}, {scale})",)
    Cauchy = ("dist.Cauchy({loc}, {scale})",)
    StudentT = ("dist.StudentT({df}, {loc}, {scale})",)
    Laplace = ("dist.Laplace({loc}, {scale})",)
    Logistic = ("dist.Logistic({loc}, {scale})",)
    Gumbel = ("dist.Gumbel({loc}, {scale})",)
    VonMises = ("dist.VonMises({loc}, {concentration})",)
    MixtureNormal = (
        "dist.MixtureSameFamily(dist.Categorical(probs={weights}), dist.Normal({loc}, {scale}))",
    )
    Uniform = ("dist.Uniform({low}, {high})",)
    TruncatedNormal = ("dist.TruncatedNormal({mu}, {sigma}, low={low}, high={high})",)
    HalfNormal = ("dist.HalfNormal({scale})",)
    HalfCauchy = ("dist.HalfCauchy({scale})",)
    HalfStudentT = ("dist.FoldedDistribution(dist.StudentT({df}, 0.0, {scale}))",)
    LogNormal = ("dist.LogNormal({loc}, {scale})",)
    Exponential = ("dist.Exponential({rate})",)
    Gamma = ("dist.Gamma({concentration}, {rate})",)
    InverseGamma = ("dist.InverseGamma({concentration}, {rate})",)
    Chi2 = ("dist.Chi2({df})",)
    Weibull = ("dist.Weibull({scale}, {concentration})",)
    Pareto = ("dist.Pareto({scale}, {alpha})",)
    Beta = ("dist.Beta({concentration1}, {concentration0})",)
    Kumaraswamy = ("dist.Kumaraswamy({concentration1}, {concentration0})",)
    LogitNormal = (
        "dist.TransformedDistribution(dist.Normal({mu}, {sigma}), "
        "dist.transforms.SigmoidTransform())",
    )
    RelaxedBernoulli = ("dist.RelaxedBernoulli({temperature}, probs={probs})",)
    Bernoulli = ("dist.Bernoulli(probs={probs})",)
    Categorical = ("dist.Categorical(probs={probs})", "dist.Categorical(logits={logits})")
    Poisson = ("dist.Poisson({rate})",)
    Binomial = ("dist.Binomial({total_count}, probs={probs})",)
    BetaBinomial = ("dist.BetaBinomial({concentration1}, {concentration0}, {total_count})",)
    NegativeBinomial = ("dist.NegativeBinomialProbs({total_count}, {probs})",)
    Geometric = ("dist.Geometric(probs={probs})",)
    OrderedLogistic = ("dist.OrderedLogistic({predictor}, {cutpoints})",)
    ZeroInflatedPoisson = ("dist.ZeroInflatedPoisson({zero_prob}, {rate})",)
    HurdlePoisson = ("dist.HurdlePoisson({zero_prob}, {rate})",)
    Dirichlet = ("dist.Dirichlet({concentration})",)
    MultivariateNormal = ("dist.MultivariateNormal({loc}, scale_tril={scale_tril})",)
    LowRankMVN = ("dist.LowRankMultivariateNormal({loc}, {cov_factor}, {cov_diag})",)
    LKJCholesky = ("dist.LKJCholesky({dimension}, {concentration})",)
    Wishart = ("dist.Wishart({df}, scale_tril={scale_tril})",)
    MatrixNormal = (
        "dist.MatrixNormal({loc}, jnp.linalg.cholesky({row_covariance}), "
        "jnp.linalg.cholesky({col_covariance}))",
    )


CALLS: dict[str, tuple[str, ...]] = named(_NumPyroCalls, FAMILIES, tuple)

#: The improper flat priors (`Flat`, `HalfFlat`): NumPyro's ImproperUniform on the support,
#: one number per draw (the plates around the site batch it).
_IMPROPER = {"real": "dist.constraints.real", "positive": "dist.constraints.positive"}
CALLS.update(
    {
        f.name: (f"dist.ImproperUniform({_IMPROPER[f.support.kind]}, (), ())",)
        for f in FAMILIES.values()
        if f.improper
    }
)


class _ObservedOnly:
    """Families NumPyro has whose latent would not mean what qvr's does: why."""

    VonMises = (
        "NumPyro's VonMises moves a latent on the circle (-pi, pi], qvr's on the real line; "
        "observe it, or draw the angle from a Normal"
    )


OBSERVED_ONLY: dict[str, str] = named(_ObservedOnly, FAMILIES, str)


class _Enumerable:
    """The families NumPyro's enumeration sums out here (after a relaxation's `relaxes`)."""

    Bernoulli = True
    Categorical = True


ENUMERABLE = members(_Enumerable, FAMILIES)


class _Normalised:
    """The probability vector torch normalises (`probs / probs.sum(-1)`) and NumPyro does
    not, by family."""

    Categorical = "probs"
    MixtureNormal = "weights"


_NORMALISED = named(_Normalised, FAMILIES, str)

_ENUMERATE = 'infer={"enumerate": "parallel"}'
_IMPORTS = (
    "import jax",
    "import jax.numpy as jnp",
    "import numpyro",
    "import numpyro.distributions as dist",
)
#: Generated lines are kept to this width where a call can be split.
_WIDTH = 99

#: Python names a QVR name cannot be, and is renamed from: what the model's own code
#: uses, the words Python keeps (`__debug__` cannot be assigned), and `MCMC.run`'s own
#: parameters, since the data reach the model as its keyword arguments.
_RESERVED = (
    frozenset({"numpyro", "dist", "jnp", "jax", "Vindex", "float", "int", "model"})
    | PYTHON_WORDS
    | frozenset({"self", "rng_key", "extra_fields", "init_params"})
)
#: A source's stem the docstring's command line names as it is.
_PLAIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def unsupported(plan: Plan) -> list[Unsupported]:
    """What in `plan` the NumPyro writer cannot write with qvr's meaning, each located."""
    return _analyse(plan).problems


def emit(plan: Plan) -> str:
    """`plan` as a NumPyro module (only asked when `unsupported(plan)` is empty)."""
    model = _analyse(plan)
    if model.problems:
        raise ValueError(f"not exportable to NumPyro: {model.problems[0].message}")
    return _Writer(model).text()


def family_call(family: str, args: dict[str, str]) -> str | None:
    """The numpyro.distributions call of `family` with these argument texts by
    parameter name, or None when none of its templates takes exactly them."""
    for template in CALLS.get(family, ()):
        if set(_fields(template)) == set(args):
            return template.format(**args)
    return None


def _fields(template: str) -> list[str]:
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


# ---------------------------------------------------------------- the analysis


@dataclass
class _Model:
    """One plan with what writing it needs: Python names, enumerated sites, sizes."""

    plan: Plan
    names: dict[str, str]
    enumerated: frozenset[str]
    terms: Terms
    sizes: dict[str, str]  # plate -> its size as Python writes it
    problems: list[Unsupported] = field(default_factory=list)
    plates: dict[str, str] = field(default_factory=dict)  # plate -> its numpyro.plate name


def _analyse(plan: Plan) -> _Model:
    model = plan.model
    names = _python_names(plan)
    integer = frozenset(d.name for d in plan.data if d.integer)
    sites = model.sites
    enumerated = frozenset(s.name for s in sites if _enumerated(s))
    dependent = set(enumerated)
    for step in model.steps:
        if isinstance(step, Let) and set(step.uses) & dependent:
            dependent.add(step.name)
    objects = frozenset(n for n, o in plan.module.objects.items() if o.size > 0)
    terms = Terms(names, integer, enumerated, frozenset(dependent), objects, one_entry(plan.sizes))
    out = _Model(plan, names, enumerated, terms, {}, plates=_plate_names(plan))
    out.sizes, size_problems = _sizes(plan, names)
    out.problems += size_problems
    for step in model.steps:
        out.problems += _step_problems(out, step)
    out.problems += _early_reads(model)
    if enumerated:
        out.problems += _enumeration_problems(out)
    return out


def _early_reads(model: Model) -> list[Unsupported]:
    """A step that reads an observed let between the let and its observe: the model takes
    the observation as its keyword (computed by `load_data`, None to draw it), which is
    no value before the observe draws it."""
    out: list[Unsupported] = []
    for name in model.observed_lets:
        between = False
        for step in model.steps:
            if isinstance(step, Let) and step.name == name:
                between = True
            elif isinstance(step, Site) and step.name == name:
                break
            elif between and name in step.reads():
                out.append(
                    Unsupported(
                        step.step.span,
                        f"reads `{name}` before its observe: the NumPyro model is given the "
                        "observation (or draws it) there; read it after the observe",
                    )
                )
    return out


def _enumerated(site: Site) -> bool:
    """A `marginalize`, or a discrete latent qvr sums out for NUTS (finitely many values)."""
    return site.kind == "marginalize" or site.summable


def _python_names(plan: Plan) -> dict[str, str]:
    """Each QVR name the model binds or reads -> a Python identifier: itself, or (a
    keyword, a name the model's code uses) with trailing underscores until it is free."""
    wanted = list(dict.fromkeys([d.name for d in plan.data] + [s.name for s in plan.model.steps]))
    originals = set(wanted)
    used: set[str] = set()
    out: dict[str, str] = {}
    for name in wanted:
        py = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "_"
        if py[0].isdigit():
            py = f"_{py}"
        while py in _RESERVED or py in used or (py != name and py in originals):
            py = f"{py}_"
        used.add(py)
        out[name] = py
    return out


def _plate_names(plan: Plan) -> dict[str, str]:
    """Each plate's `numpyro.plate` name: its own, or with `_plate` after it where a
    step or a data variable has that name (a QVR site may share an object's name, but
    NumPyro's trace keeps one entry a name: the plate would hide the site from NUTS)."""
    taken = {d.name for d in plan.data} | {s.name for s in plan.model.steps}
    out: dict[str, str] = {}
    for name in plan.plates:
        label = name
        while label in taken:
            label += "_plate"
        taken.add(label)
        out[name] = label
    return out


def _sizes(plan: Plan, names: dict[str, str]) -> tuple[dict[str, str], list[Unsupported]]:
    """Each plate's size as Python writes it: its number, or a data variable's axis."""
    sizes: dict[str, str] = {}
    problems: list[Unsupported] = []
    used = {p for s in plan.model.sites for p in s.plates}  # one-entry ones are skipped
    for name in used:
        plate = plan.plates.get(name)
        obj = plan.module.objects.get(name)
        size = plate.size if plate is not None else (obj.size if obj is not None else None)
        if size is not None and size > 0:
            sizes[name] = str(size)
            continue
        holder = sorted(
            (d for d in plan.data if name in d.axes), key=lambda d: (d.observed, d.name)
        )
        if holder:
            d = holder[0]
            sizes[name] = f"{names[d.name]}.shape[{d.axes.index(name)}]"
        else:
            site = next(s for s in plan.model.sites if name in s.plates)
            problems.append(
                Unsupported(
                    site.step.span,
                    f"the size of {name} comes from the data, and no data variable of this "
                    "program runs over it to read it from",
                )
            )
    return sizes, problems


def _step_problems(m: _Model, step: Step) -> list[Unsupported]:
    if isinstance(step, Let):
        out = m.terms.problems(step.term)
        if step.kind == "score" and m.terms.depends(step.term):
            out.append(
                Unsupported(
                    step.step.span,
                    "a score that depends on a summed-out site: NumPyro's factor would "
                    "not be summed with the scope; write it as an observe",
                )
            )
        return out
    return _site_problems(m, step)


def _one_entry(span: Span, plate: str) -> Unsupported:
    return Unsupported(
        span,
        f"an index into {plate}, which has one entry: qvr gives a one-entry plate no axis "
        "and reads the index against one put back; index it with the plate itself",
    )


def _site_problems(m: _Model, site: Site) -> list[Unsupported]:
    span = site.step.span
    family = site.summed_family
    if family is None:
        return [Unsupported(span, f"`{site.family}` is no family NumPyro's export knows")]
    out: list[Unsupported] = []
    if family.name not in CALLS:
        out.append(Unsupported(span, _missing(family)))
        return out
    if site.kind == "sample" and family.name in OBSERVED_ONLY:
        out.append(Unsupported(span, OBSERVED_ONLY[family.name]))
    enumerated = site.name in m.enumerated
    if enumerated and family.name not in ENUMERABLE:
        out.append(
            Unsupported(
                span,
                f"a summed-out {family.name}: NumPyro's enumeration is exported for "
                f"{' and '.join(ENUMERABLE)} sites; observe it, or use one of those",
            )
        )
    if site.kind == "sample" and family.discrete and not family.support.finite:
        out.append(
            Unsupported(
                span,
                f"a latent {family.name} has infinitely many values, which NUTS cannot "
                "move nor enumeration sum; observe it",
            )
        )
    if site.kind == "sample" and site.scope:
        what = "discrete site" if enumerated else "latent site"
        out.append(
            Unsupported(
                span,
                f"a {what} inside `marginalize {site.scope[-1]}`: its value would depend on "
                "the summed-out site, which NUTS cannot hold; move it before the scope",
            )
        )
    if site.via is not None:
        out.append(
            Unsupported(
                span,
                f"`via={site.via}` maps rows into the groups of a summed-out site; NumPyro's "
                "enumeration has no such map: give the observe the group plate",
            )
        )
    if not site.sums_exactly:
        out.append(
            Unsupported(
                span,
                f"reduction={site.reduction}: NumPyro's enumeration sums the values out "
                "(logsumexp) only",
            )
        )
    size = _draw_size(m.plan, site, family)
    bound = {a.param for a in site.args if family.param(a.param) is not None}
    args = {p: "x" for p in bound}
    for p in family.params:
        if p.name not in bound and p.default is not None:
            args[p.name] = "x"
    if _sized(family):
        if size is None:
            out.append(Unsupported(span, "the size of this LKJCholesky draw is not known"))
        args["dimension"] = "x"
    if family_call(family.name, args) is None:
        missing = [p.name for p in family.params if p.name not in args]
        why = f"is missing {', '.join(missing)}" if missing else "is not exported with these"
        out.append(Unsupported(span, f"{family.name}({', '.join(sorted(bound))}) {why}"))
    for a in site.args:
        param = family.param(a.param)
        if param is None:
            continue
        out += _argument_problems(m, site, a, param.rank, size)
    return out


def _missing(family: Family) -> str:
    if family.dirac or family.kernel_only:
        return f"{family.name} has no distribution of its own, so no NumPyro site draws it"
    return (
        f"NumPyro has no {family.name} distribution with qvr's parameterisation "
        f"({family.signature()})"
    )


def _argument_problems(
    m: _Model, site: Site, a: Argument, rank: int, size: int | None
) -> list[Unsupported]:
    out: list[Unsupported] = []
    if rank >= 2 and a.literal is not None:
        out.append(Unsupported(a.span, f"a literal {a.param} matrix is not exported"))
    if rank == 1 and size is None and isinstance(a.literal, float):
        out.append(
            Unsupported(
                a.span,
                f"a number for the vector {a.param}: the size of one draw is not known here",
            )
        )
    if a.name is not None and a.name not in m.names:
        out.append(Unsupported(a.span, f"`{a.name}` is not a value of this program"))
    for i, plate in zip(a.index, a.index_plates, strict=False):
        if plate in m.terms.one_entry and i not in m.terms.plates:
            out.append(_one_entry(a.span, plate))
    if a.name is not None and a.index:
        if a.name in m.terms.dependent:
            out.append(
                Unsupported(
                    a.span,
                    f"a gather from `{a.name}`, which depends on a summed-out site: NumPyro "
                    "enumerates that site in dimensions on the left, which the index would "
                    "read instead",
                )
            )
        whole = False
        for i in a.index:
            if i in m.terms.plates:
                whole = True
            elif i not in m.names:
                out.append(Unsupported(a.span, f"the index `{i}` is not a value of this program"))
            elif whole and i in m.terms.dependent:
                out.append(
                    Unsupported(
                        a.span,
                        "an index by a summed-out site after a whole axis: put the "
                        "summed-out index first",
                    )
                )
    return out


def _a_number(m: _Model, a: Argument) -> bool:
    """A named argument that may be one number (spread to a vector parameter's size, as
    the runtime spreads a 0-d tensor): its type says so, or the data gives it."""
    if a.name is None or a.index or a.name in m.terms.dependent:
        return False
    t = a.type
    return t is None or not (t.plates or t.element.event or t.data_plates)


def _draw_size(plan: Plan, site: Site, family: Family) -> int | None:
    """The size of one draw of a vector family (runtime `families.event_size`)."""
    if not family.event_rank:
        return None
    if site.over and site.kind != "marginalize":
        sizes = [plan.module.objects[o].size if o in plan.module.objects else -1 for o in site.over]
        return math.prod(sizes) if all(s > 0 for s in sizes) else None
    event = site.type.element.event if site.type is not None else ()
    return event[-1] if event and event[-1] >= 0 else None


def _enumeration_problems(m: _Model) -> list[Unsupported]:
    """What NumPyro's enumeration needs of the plates: every plate at one dimension, each
    step a summed-out site reaches inside that site's plates, and no axis outside plates."""
    out: list[Unsupported] = []
    sites = m.plan.model.sites
    dims: dict[str, tuple[int, Site]] = {}
    for site in sites:
        for plate, dim in _frames(site, m.plan.sizes):
            first = dims.setdefault(plate, (dim, site))
            if first[0] != dim:
                out.append(
                    Unsupported(
                        site.step.span,
                        f"{plate} is dimension {dim} of this step but {first[0]} of "
                        f"`{first[1].name}` (line {first[1].line}): NumPyro's enumeration "
                        "needs each plate at one dimension",
                    )
                )
        if site.type is not None and site.type.data_plates:
            out.append(
                Unsupported(
                    site.step.span,
                    "this step runs over rows no plate names, and the program sums a site "
                    "out: NumPyro's enumeration needs every axis in a plate; annotate the "
                    "step with the plate of its rows",
                )
            )
    for outer in sites:
        if outer.name not in m.enumerated:
            continue
        groups = [p for p, _ in _frames(outer, m.plan.sizes)]
        for inner in _reached(m, outer):
            axes = [p for p, _ in _frames(inner, m.plan.sizes)]
            if inner.via is None and axes[: len(groups)] != groups:
                out.append(
                    Unsupported(
                        inner.step.span,
                        f"qvr sums `{outer.name}` out once per entry of {' * '.join(groups)}; "
                        "NumPyro's enumeration needs this step over those plates first",
                    )
                )
    return out


def _reached(m: _Model, outer: Site) -> Iterator[Site]:
    """The sites whose density a summed-out site enters: its scope's, or its readers' (the
    summed scope the model's plan makes of it, `Model.summed`)."""
    node = next(n for n in walk(m.plan.model.summed) if n.step is outer)
    return (n.step for n in walk(node.body) if isinstance(n.step, Site))


def _frames(site: Site, sizes: Mapping[str, int]) -> list[tuple[str, int]]:
    """The plates of a site with their NumPyro dimensions: qvr lays the plates out
    outermost first, so the last is dimension -1; a one-entry plate has no axis in qvr
    (`axis_plates`), so it has no NumPyro plate either."""
    plates = axis_plates(site.plates, sizes)
    k = len(plates)
    return [(p, i - k) for i, p in enumerate(plates)]


# ---------------------------------------------------------------- the writer


class _Writer:
    """Writes one analysed model as a NumPyro module."""

    def __init__(self, m: _Model) -> None:
        self.m = m
        self.plan = m.plan
        self.names = m.names
        self.lines: list[str] = []
        self.blocks: list[list[tuple[str, int]]] = []  # the `with` blocks around this line
        self.vindex = False

    # -- the module -----------------------------------------------------------

    def text(self) -> str:
        body = self._model()
        name = self.plan.model.name
        stem = self.plan.source.rsplit("/", 1)[-1].removesuffix(".qvr")
        # the command line to run it names the file only where the name is plain: any
        # other would need quoting for a shell, and must not reach the docstring as it is
        named = _PLAIN_FILE.fullmatch(stem) is not None
        file = f"{stem}{TARGETS['numpyro'].suffix}" if named else "THIS_FILE.py"
        if self.plan.data:
            run = f"on a data file qvr reads (JSON, indices from 0):\n\n    python {file} DATA.json"
        else:
            run = f"(it reads no data):\n\n    python {file}"
        head = [
            self.plan.header(TARGETS["numpyro"]).rstrip("\n"),
            f'"""The QVR program `{name}` as a NumPyro model.\n\nRun it with NUTS {run}\n"""',
            "import json\nimport sys",
            "\n".join(
                _IMPORTS + (("from numpyro.ops.indexing import Vindex",) if self.vindex else ())
            ),
        ]
        parts = ["\n\n".join(head), body, self._loader(), self._main()]
        return "\n\n\n".join(parts) + "\n"

    def _signature(self) -> str:
        given = [self.names[d.name] for d in self.plan.data if not d.observed]
        observed = [f"{self.names[d.name]}=None" for d in self.plan.data if d.observed]
        computed = [f"{self.names[n]}=None" for n in self.plan.model.observed_lets]
        return ", ".join(given + observed + computed)

    def _model(self) -> str:
        self.lines = [f"def model({self._signature()}):"]
        doc = self._model_doc()
        self.lines.append(f'    """{doc}"""')
        steps = self.plan.model.steps
        for i, step in enumerate(steps):
            if isinstance(step, Let):
                if step.name not in self.plan.model.observed_lets:  # load_data computes it
                    self._let(step)
            else:
                self._site(step, steps[i + 1 :])
        self._to([])
        ret = self._return()
        if ret:
            self.lines.append(f"    {ret}")
        return "\n".join(self.lines)

    def _model_doc(self) -> str:
        given = [d.name for d in self.plan.data if not d.observed]
        observed = [d.name for d in self.plan.data if d.observed]
        computed = list(self.plan.model.observed_lets)
        parts = [f"data {', '.join(given)}"] if given else []
        if observed or computed:
            made = f"; load_data computes {', '.join(computed)}" if computed else ""
            parts.append(f"observed {', '.join(observed + computed)} (None draws it{made})")
        return f"The QVR program `{self.plan.model.name}`{': ' if parts else ''}{', '.join(parts)}."

    def _return(self) -> str:
        model = self.plan.model
        names = [self.names[n] for n in model.returns if n in self.names]
        if not names or len(names) != len(model.returns):
            return ""
        if model.return_labels:
            inner = ", ".join(
                f"{_string(k)}: {v}" for k, v in zip(model.return_labels, names, strict=True)
            )
            return f"return {{{inner}}}"
        return f"return {', '.join(names)}"

    # -- plates ---------------------------------------------------------------

    def _indent(self) -> str:
        return "    " * (1 + len(self.blocks))

    def _to(self, want: Sequence[tuple[str, int]]) -> None:
        """Close and open `with numpyro.plate(...)` blocks so that `want` is around,
        keeping the open blocks that are a prefix of it."""
        kept: list[tuple[str, int]] = []
        count = 0
        for block in self.blocks:
            if list(want[len(kept) : len(kept) + len(block)]) != block:
                break
            kept += block
            count += 1
        del self.blocks[count:]
        new = list(want[len(kept) :])
        if not new:
            return
        explicit = len(want) > 1
        plates = ", ".join(
            f"numpyro.plate({_string(self.m.plates.get(p, p))}, {self.m.sizes[p]}"
            f"{f', dim={d}' if explicit else ''})"
            for p, d in new
        )
        self.lines.append(f"{self._indent()}with {plates}:")
        self.blocks.append(new)

    # -- steps ----------------------------------------------------------------

    def _let(self, step: Let) -> None:
        value = self.m.terms.text(step.term)
        self.vindex |= "Vindex(" in value
        py = self.names[step.name]
        if step.kind == "score":
            self._to([])
            self.lines.append(f"{self._indent()}numpyro.factor({_string(step.name)}, {value})")
            return
        returned = step.name in self.plan.model.returns
        if returned and not self.m.terms.depends(step.term):
            value = f"numpyro.deterministic({_string(step.name)}, {value})"
        self.lines.append(f"{self._indent()}{py} = {value}")

    def _site(self, site: Site, later: Sequence[Step]) -> None:
        family = site.summed_family
        assert family is not None
        self._to(_frames(site, self.m.plan.sizes))
        call = self._distribution(site, family)
        extra: list[str] = []
        if site.kind == "observe":
            extra.append(f"obs={self.names[site.name]}")
        elif site.name in self.m.enumerated:
            extra.append(_ENUMERATE)
        parts = [_string(site.name), call, *extra]
        read = site.name in self.plan.model.returns or any(site.name in s.reads() for s in later)
        target = f"{self.names[site.name]} = " if site.kind != "observe" or read else ""
        self._call(f"{target}numpyro.sample", parts)

    def _call(self, head: str, args: Sequence[str]) -> None:
        """`head(args)` on one line, or split over lines where it would be too wide."""
        indent = self._indent()
        line = f"{indent}{head}({', '.join(args)})"
        if len(line) <= _WIDTH:
            self.lines.append(line)
            return
        self.lines.append(f"{indent}{head}(")
        inner = f"{indent}    {', '.join(args)}"
        if len(inner) <= _WIDTH:
            self.lines.append(inner)
        else:
            self.lines += [f"{indent}    {a}," for a in args]
        self.lines.append(f"{indent})")

    def _distribution(self, site: Site, family: Family) -> str:
        size = _draw_size(self.plan, site, family)
        args: dict[str, str] = {}
        for a in site.args:
            param = family.param(a.param)
            if param is not None:
                args[a.param] = self._argument(family, a, param.rank, size)
        for p in family.params:
            if p.name not in args and p.default is not None:
                args[p.name] = number(p.default)
        if _sized(family):
            args["dimension"] = str(size)
        call = family_call(family.name, args)
        assert call is not None
        return call

    def _argument(self, family: Family, a: Argument, rank: int, size: int | None) -> str:
        normalised = _NORMALISED.get(family.name) == a.param
        if isinstance(a.literal, float):
            if rank == 1 and size is not None:
                return f"jnp.full({size}, {number(a.literal)})"
            return number(a.literal)
        if isinstance(a.literal, tuple):
            values = list(a.literal)
            total = math.fsum(values)
            if normalised and total > 0 and total != 1.0:
                values = [v / total for v in values]
            return f"jnp.array([{', '.join(number(v) for v in values)}])"
        assert a.name is not None
        if a.index:
            one = self.m.terms.one_entry
            indices = [
                None if i in self.m.terms.plates else self._index(i)
                for k, i in enumerate(a.index)
                if not (
                    i in self.m.terms.plates
                    and k < len(a.index_plates)
                    and a.index_plates[k] in one
                )
            ]
            enumerated = any(i in self.m.terms.dependent for i in a.index)
            self.vindex |= enumerated
            text = self.m.terms.gather(a.name, indices, enumerated=enumerated)
        else:
            text = self.names[a.name]
        if rank == 1 and size is not None and _a_number(self.m, a):
            return f"jnp.broadcast_to({text}, ({size},))"
        simplex = a.type is not None and a.type.element.kind == "simplex"
        if normalised and not simplex:
            return f"{text} / jnp.sum({text}, axis=-1, keepdims=True)"
        return text

    def _index(self, name: str) -> str:
        py = self.names[name]
        if name in self.m.terms.integer or name in self.m.enumerated:
            return py
        return f"jnp.asarray(jnp.round({py}), dtype=int)"

    # -- data and the command line -------------------------------------------

    def _loader(self) -> str:
        lines = [
            "def load_data(path):",
            '    """The JSON data file qvr reads (indices from 0, as qvr reads them), as the',
            '    keyword arguments of `model`."""',
            '    with open(path, encoding="utf-8") as f:',
            "        raw = json.load(f)",
            "    return {",
        ]
        computed = self.plan.model.observed_lets
        if computed:
            lines[-1] = f"    {self._data_dict()} = {{"
        for d in self.plan.data:
            kind = "int" if d.integer else "float"
            axes = f"  # {' x '.join(d.axes)}" if d.axes else ""
            lines.append(
                f"        {_string(self.names[d.name])}: "
                f"jnp.asarray(raw[{_string(d.name)}], dtype={kind}),{axes}"
            )
        lines.append("    }")
        if computed:
            lines += self._computed()
        return "\n".join(lines)

    def _data_dict(self) -> str:
        """The name of `load_data`'s dict of data: one no QVR name takes."""
        name = "data"
        while name in self.names.values():
            name += "_"
        return name

    def _computed(self) -> list[str]:
        """`load_data`'s lines computing the observed lets from the data (the lets they
        read first), as qvr computes them before a run, and returning the data. The data
        are read from the dict, the lets between are locals named `_<let>` (no name of
        `load_data`'s own, nor a module it reads, is shadowed)."""
        model = self.plan.model
        lets = {s.name: s for s in model.steps if isinstance(s, Let) and s.kind == "let"}
        needed: set[str] = set()
        todo = list(model.observed_lets)
        while todo:
            n = todo.pop()
            if n in lets and n not in needed:
                needed.add(n)
                todo.extend(lets[n].uses)
        data = self._data_dict()
        names = {d.name: f"{data}[{_string(self.names[d.name])}]" for d in self.plan.data}
        for n in needed:  # an observed let is read back from the dict, the others are locals
            observed = n in model.observed_lets
            names[n] = f"{data}[{_string(self.names[n])}]" if observed else f"_{self.names[n]}"
        terms = replace(self.m.terms, names={**self.names, **names})
        lines = [
            "    # computed from the data, as qvr computes them before a run: "
            + ", ".join(model.observed_lets)
        ]
        for step in model.steps:
            if step.name not in needed or not isinstance(step, Let):
                continue
            value = terms.text(step.term)
            if step.name not in model.observed_lets:
                lines.append(f"    {names[step.name]} = {value}")
                continue
            site = model.site(step.name)
            family = FAMILIES.get(site.family or "") if site is not None else None
            if family is not None and family.discrete:  # a count or an index: whole numbers
                value = f"jnp.asarray(jnp.round({value}), dtype=int)"
            lines.append(f"    {names[step.name]} = {value}")
        lines.append(f"    return {data}")
        return lines

    def _main(self) -> str:
        """NUTS as qvr runs it by default: 4 chains of 500 warmup + 500 draws, float64,
        one CPU device per chain (set before JAX starts its backend)."""
        given = bool(self.plan.data)
        lines = [
            'if __name__ == "__main__":',
            "    from numpyro.infer import MCMC, NUTS",
            "",
        ]
        if given:
            lines += [
                "    if len(sys.argv) != 2:",
                '        sys.exit(f"usage: python {sys.argv[0]} DATA.json")',
            ]
        lines += [
            "    numpyro.set_host_device_count(4)",
            '    jax.config.update("jax_enable_x64", True)  # float64, as qvr computes',
            "    mcmc = MCMC(NUTS(model), num_warmup=500, num_samples=500, num_chains=4)",
            "    mcmc.run(jax.random.PRNGKey(0)"
            + (", **load_data(sys.argv[1]))" if given else ")"),
            "    mcmc.print_summary()",
        ]
        return "\n".join(lines)


def _string(text: str) -> str:
    """A Python string literal (QVR names are plain, but a quote must not end it)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sized(family: Family) -> bool:
    """NumPyro's call takes the draw's size (`{dimension}`: an LKJCholesky's)."""
    return any("{dimension}" in call for call in CALLS.get(family.name, ()))


__all__ = ["CALLS", "ENUMERABLE", "OBSERVED_ONLY", "emit", "family_call", "unsupported"]
