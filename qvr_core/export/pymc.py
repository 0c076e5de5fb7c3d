"""Write a checked model program as a PyMC model (`qvr export --to pymc`).

The export is a Python module with `build_model(**data) -> pm.Model`, which takes
the keys of the same JSON data file `qvr run --data` reads (indices from 0), and a
`__main__` block that samples it. It means what qvr's runtime means:

- every plate is a coordinate of the model (`coords={"School": range(8)}`) and every
  plated value has `dims=`; a plate of one entry has no axis in qvr, so it has none
  here either;
- a family is the PyMC distribution with the runtime's parameterisation (PyMC's
  `NegativeBinomial` and `ZeroInflatedPoisson` count the other way, so their
  probability is written as one minus qvr's); a family PyMC lacks, or has with another
  support (its `VonMises` lives on [-pi, pi], qvr's on the real line), is refused by
  `unsupported` at the step, never written approximately;
- a `let` is a `pm.Deterministic` where it depends on a random variable, so its
  draws are in the trace as qvr's summaries show them; a let over the data's rows that
  the program does not return (a linear predictor) is a plain PyTensor value, since
  tracing it would keep rows x draws numbers nobody asked for; a `score` is a
  `pm.Potential`;
- a `marginalize` scope is summed out exactly, as the runtime's enumeration does: a
  scope of one observe on its groups is `pm.Mixture` (PyMC's own exact sum); any
  other is a `pm.Potential` of the scope's log-sum-exp over its values, written as a
  function per scope that runs the scope's steps once per value, nested scopes calling
  the inner function. The inner functions are cached on the enumerated values they
  read, so a chain of scopes (an HMM) costs what the forward algorithm costs, as the
  runtime's sums do;
- a discrete `sample` site with no data, which qvr's NUTS sums out, stays a discrete
  random variable: PyMC samples it with its own Gibbs steps, the same posterior.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Let, Node, Site, axis_plates, one_entry, walk
from qvr_core.check.terms import Call, Term, subterms
from qvr_core.check.types import Plated
from qvr_core.export.named import members, named
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.pymc_terms import FUNCTIONS, TermPrinter, number
from qvr_core.export.targets import PYTHON_WORDS, TARGETS


@dataclass(frozen=True)
class _Family:
    """A qvr family as PyMC writes it: its class, the keyword of each qvr parameter,
    the parameters PyMC takes as one minus qvr's, keywords it needs fixed, and keywords
    only a named variable takes (`compute_p=False`: no Deterministic of the probabilities
    beside the ordinal site)."""

    pm: str
    keywords: dict[str, str]
    flipped: frozenset[str] = frozenset()
    fixed: tuple[str, ...] = ()
    named: tuple[str, ...] = ()


def _f(
    pm: str,
    *pairs: str,
    flipped: tuple[str, ...] = (),
    fixed: tuple[str, ...] = (),
    named: tuple[str, ...] = (),
) -> _Family:
    keywords = dict(pair.split("=") for pair in pairs)
    return _Family(pm, keywords, frozenset(flipped), fixed, named)


class _PyMCFamilies:
    """The families PyMC has with the runtime's parameterisation (runtime/distributions.py),
    named after the registry's entry (`named`)."""

    Normal = _f("pm.Normal", "loc=mu", "scale=sigma")
    Cauchy = _f("pm.Cauchy", "loc=alpha", "scale=beta")
    StudentT = _f("pm.StudentT", "df=nu", "loc=mu", "scale=sigma")
    Laplace = _f("pm.Laplace", "loc=mu", "scale=b")
    Logistic = _f("pm.Logistic", "loc=mu", "scale=s")
    Gumbel = _f("pm.Gumbel", "loc=mu", "scale=beta")
    MixtureNormal = _f("pm.NormalMixture", "weights=w", "loc=mu", "scale=sigma")
    Uniform = _f("pm.Uniform", "low=lower", "high=upper")
    TruncatedNormal = _f("pm.TruncatedNormal", "mu=mu", "sigma=sigma", "low=lower", "high=upper")
    HalfNormal = _f("pm.HalfNormal", "scale=sigma")
    HalfCauchy = _f("pm.HalfCauchy", "scale=beta")
    HalfStudentT = _f("pm.HalfStudentT", "df=nu", "scale=sigma")
    LogNormal = _f("pm.LogNormal", "loc=mu", "scale=sigma")
    Exponential = _f("pm.Exponential", "rate=lam")
    Gamma = _f("pm.Gamma", "concentration=alpha", "rate=beta")
    InverseGamma = _f("pm.InverseGamma", "concentration=alpha", "rate=beta")
    Chi2 = _f("pm.ChiSquared", "df=nu")
    Weibull = _f("pm.Weibull", "concentration=alpha", "scale=beta")
    Pareto = _f("pm.Pareto", "alpha=alpha", "scale=m")
    Beta = _f("pm.Beta", "concentration1=alpha", "concentration0=beta")
    Kumaraswamy = _f("pm.Kumaraswamy", "concentration1=a", "concentration0=b")
    LogitNormal = _f("pm.LogitNormal", "mu=mu", "sigma=sigma")
    Bernoulli = _f("pm.Bernoulli", "probs=p")
    Categorical = _f("pm.Categorical", "probs=p", "logits=logit_p")
    Poisson = _f("pm.Poisson", "rate=mu")
    Binomial = _f("pm.Binomial", "total_count=n", "probs=p")
    BetaBinomial = _f(
        "pm.BetaBinomial", "total_count=n", "concentration1=alpha", "concentration0=beta"
    )
    # torch counts successes before `total_count` failures, PyMC failures before n successes
    NegativeBinomial = _f("pm.NegativeBinomial", "total_count=n", "probs=p", flipped=("probs",))
    # failures before the first success from 0, as torch's Geometric (PyMC's counts from 1)
    Geometric = _f("pm.NegativeBinomial", "probs=p", fixed=("n=1.0",))
    OrderedLogistic = _f(
        "pm.OrderedLogistic", "predictor=eta", "cutpoints=cutpoints", named=("compute_p=False",)
    )
    OrderedProbit = _f(
        "pm.OrderedProbit", "eta=eta", "cutpoints=cutpoints", named=("compute_p=False",)
    )
    # PyMC's psi is the probability of the Poisson part, qvr's zero_prob that of the zero
    ZeroInflatedPoisson = _f(
        "pm.ZeroInflatedPoisson", "zero_prob=psi", "rate=mu", flipped=("zero_prob",)
    )
    HurdlePoisson = _f("pm.HurdlePoisson", "zero_prob=psi", "rate=mu", flipped=("zero_prob",))
    Dirichlet = _f("pm.Dirichlet", "concentration=a")
    MultivariateNormal = _f("pm.MvNormal", "loc=mu", "scale_tril=chol")


PYMC_FAMILIES: dict[str, _Family] = named(_PyMCFamilies, FAMILIES, _Family)

#: The improper flat priors (`Flat`, `HalfFlat`), by their support.
_IMPROPER = {"real": "pm.Flat", "positive": "pm.HalfFlat"}
PYMC_FAMILIES.update(
    {f.name: _f(_IMPROPER[f.support.kind]) for f in FAMILIES.values() if f.improper}
)


class _WhyNot:
    """Why a family of qvr's is not written, where PyMC has it in some form."""

    VonMises = "PyMC's VonMises lives on [-pi, pi], qvr's on the real line"
    LKJCholesky = (
        "PyMC's LKJCorr is a density over correlation matrices, qvr's LKJCholesky one over "
        "their Cholesky factors"
    )
    Wishart = "PyMC's Wishart cannot be sampled by NUTS (PyMC itself advises against it)"
    MatrixNormal = "PyMC's MatrixNormal has no batch of matrices"


WHY_NOT = named(_WhyNot, FAMILIES, str)


class _Summed:
    """The families a `marginalize` can sum out here: their values and prior are written
    out (a Binomial's when its `total_count` is written as a number)."""

    Categorical = True
    Bernoulli = True
    Binomial = True


_SUMMED = members(_Summed, FAMILIES)


class _Mixture:
    """The family of a scope written as `pm.Mixture` (`_Writer._mixture`)."""

    Categorical = True


_MIXTURE = members(_Mixture, FAMILIES)

#: Names the module itself uses: a QVR name equal to one is written with a trailing `_`.
_TAKEN = PYTHON_WORDS | frozenset(dir(builtins))
#: Names a PyMC variable cannot have: pytensor's compiled functions take the free
#: variables as keyword arguments beside these (`Function.__call__(self, *args,
#: output_subset=None, **kwargs)`), so a variable so named stops `pm.sample`.
_PYMC_WORDS = frozenset({"self", "output_subset"})
_MODULE = frozenset(
    {"np", "pm", "pt", "functools", "json", "sys", "model", "coords", "data", "file", "idata"}
    | {"build_model", "per_group", "RENAMED", "lp", "per_value"}
)


def keywords(family: str, args: dict[str, str], *, named: bool = False) -> list[str]:
    """The keyword arguments PyMC's distribution of `family` takes for qvr's arguments
    (Python text by qvr parameter name); `named`: of a model variable, not a `.dist`."""
    spec = PYMC_FAMILIES[family]
    out = []
    for param, text in args.items():
        value = f"1.0 - {text}" if param in spec.flipped else text
        out.append(f"{spec.keywords[param]}={value}")
    return out + list(spec.fixed) + list(spec.named if named else ())


def family_call(family: str, args: dict[str, str]) -> str | None:
    """`pm.Normal.dist(mu=.., sigma=..)`: qvr's `family` at the given arguments as a PyMC
    distribution, or None where PyMC has none with qvr's parameterisation."""
    if family not in PYMC_FAMILIES:
        return None
    return f"{PYMC_FAMILIES[family].pm}.dist({', '.join(keywords(family, args))})"


def unsupported(plan: Plan) -> list[Unsupported]:
    """Every construct of the plan PyMC cannot be written for, at its span."""
    return _Writer(plan).problems()


def emit(plan: Plan) -> str:
    """The PyMC module of the plan's program (the plan has no `unsupported` problems)."""
    return _Writer(plan).module()


def _summed_name(site: Site) -> str:
    family = site.summed_family
    assert family is not None  # a marginalize is of a family
    return family.name


class _Writer:
    """The PyMC module of one plan, line by line."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.model = plan.model
        self.tree = plan.model.tree
        objects = plan.module.objects
        self.sizes = {n: o.size for n, o in objects.items()}
        self.sizes.update({n: p.size for n, p in plan.plates.items() if p.size is not None})
        self.one_entry = one_entry(self.sizes)
        self.params = [p for p in self.model.params if p.real]
        self.names = self._python_names()
        self.variables = self._variable_names()
        integers = {d.name for d in plan.data if d.integer}
        for site in self.model.sites:
            discrete = site.family in FAMILIES and FAMILIES[site.family].discrete
            if discrete or site.kind == "marginalize":
                integers.add(site.name)
        self.printer = TermPrinter(self.names, set(objects), self.one_entry, integers)
        self.coords: dict[str, str] = {}  # dim -> its coordinate values (Python text)
        self.early: set[str] = set()  # observations read before their observe

    # ------------------------------------------------------------------ names

    def _python_names(self) -> dict[str, str]:
        """Each QVR name as a Python name: a Python word or a name the module uses gets a
        trailing `_` (the PyMC variable keeps the QVR name)."""
        qvr = [*(p.name for p in self.params), *(d.name for d in self.plan.data)]
        qvr += [s.name for s in self.model.steps]
        taken = set(qvr)
        out: dict[str, str] = {}
        for name in dict.fromkeys(qvr):
            py = name
            while py in _TAKEN or py in _MODULE or (py != name and py in taken):
                py += "_"
            taken.add(py)
            out[name] = py
        return out

    def _variable_names(self) -> dict[str, str]:
        """Each QVR name as the name of its PyMC variable: itself, except where PyMC
        would not keep it: a word of `_PYMC_WORDS`, a name ending in `__` (PyMC's own
        transformed variables: `sigma_log__`), a coordinate's (ArviZ's trace would keep
        the coordinate and drop the variable). Those end in one `_`, then a number
        where that is taken (`self_`, `lp_`, `School_2`)."""
        qvr = [*(p.name for p in self.params), *(d.name for d in self.plan.data)]
        qvr += [s.name for s in self.model.steps]
        coords = set(self.plan.plates)
        taken = set(qvr) | coords | _PYMC_WORDS
        out: dict[str, str] = {}
        for name in dict.fromkeys(qvr):
            if name not in _PYMC_WORDS and name not in coords and not name.endswith("__"):
                continue
            stem = name.rstrip("_") + "_"
            label, k = stem, 1
            while label in taken:
                k += 1
                label = f"{stem}{k}"
            taken.add(label)
            out[name] = label
        return out

    def py(self, name: str) -> str:
        return self.names.get(name, name)

    def variable(self, name: str) -> str:
        """The PyMC variable's name of a QVR name, as a Python string literal."""
        return f'"{self.variables.get(name, name)}"'

    # --------------------------------------------------------------- problems

    def problems(self) -> list[Unsupported]:
        out: list[Unsupported] = []
        for plate in self.plan.plates.values():
            if plate.size is None and self._data_axis(plate.name) is None:
                out.append(
                    Unsupported(
                        self.model.decl.name.span,
                        f"the size of {plate.name} is known only at fit time, and no data "
                        "variable runs over it to give it",
                    )
                )
        for node in walk(self.tree):
            step = node.step
            if isinstance(step, Let):
                out.extend(self._term_problems(step.term))
            elif step.kind == "marginalize":
                out.extend(self._scope_problems(step))
            else:
                out.extend(self._site_problems(step))
        return out

    def _term_problems(self, term: Term) -> list[Unsupported]:
        return [
            Unsupported(t.span, f"PyTensor has no `{t.fn}`")
            for t in subterms(term)
            if isinstance(t, Call) and t.fn not in FUNCTIONS
        ]

    def _site_problems(self, site: Site) -> list[Unsupported]:
        assert site.family is not None
        if site.family not in PYMC_FAMILIES:
            why = WHY_NOT.get(site.family, f"PyMC has no {site.family} distribution")
            return [Unsupported(site.step.span, f"{site.family}: {why}")]
        if site.kind == "sample" and site.scope:
            return [
                Unsupported(
                    site.step.span,
                    f"a random variable inside `marginalize {site.scope[-1]}` takes a value "
                    "for each value summed out, which a PyMC model cannot hold; observe it, "
                    "or draw it outside the scope",
                )
            ]
        out = []
        family = FAMILIES[site.family]
        for a in site.args:
            param = family.param(a.param)
            vector = param is not None and param.rank == 1
            if vector and self._scalar(a) and self._event_size(site) is None:
                out.append(
                    Unsupported(
                        a.span,
                        f"a number for the vector {a.param} of {site.family} needs the "
                        "size of one draw: give `over=` or the annotation",
                    )
                )
        return out

    def _scope_problems(self, site: Site) -> list[Unsupported]:
        assert site.family is not None
        out = []
        summed = _summed_name(site)
        if summed not in _SUMMED:
            out.append(
                Unsupported(
                    site.step.span,
                    f"summing out a {site.family} is written here for Categorical, "
                    "Bernoulli and Binomial scopes only",
                )
            )
        elif self._values(site) is None:
            out.append(
                Unsupported(site.step.span, f"the number of values of {site.name} is not known")
            )
        if not site.sums_exactly:
            out.append(
                Unsupported(
                    site.step.span,
                    f"reduction={site.reduction}: qvr's runtime sums every scope out by "
                    "logsumexp, and an export would not say what this says",
                )
            )
        for inner in self.model.sites:
            mapped = inner.via is not None and inner.scope and inner.scope[-1] == site.name
            if mapped and len(self._dims(site.plates)) != 1:
                out.append(
                    Unsupported(
                        inner.step.span,
                        "`via` maps rows into the groups of a marginalize over one plate",
                    )
                )
        return out

    # ------------------------------------------------------------ shapes

    def _dims(self, names: tuple[str, ...]) -> list[str]:
        """The dims of plates (a one-entry plate has no axis)."""
        return list(axis_plates(names, self.sizes))

    def _shape(self, plates: tuple[str, ...], *event: int) -> str:
        """The shape of plated values as a Python tuple (a size only the data fixes read
        from the coordinates), then the `event` sizes."""
        sizes = [
            str(self.sizes[p]) if p in self.sizes else f'len(coords["{p}"])'
            for p in self._dims(plates)
        ]
        sizes += [str(n) for n in event]
        return f"({', '.join(sizes)},)" if sizes else "()"

    def _data_axis(self, plate: str) -> tuple[str, int] | None:
        """A data variable with an axis along `plate`, and which axis (sizes it at fit time)."""
        for d in self.plan.data:
            axes = self._dims(d.axes)
            if plate in axes:
                return d.name, axes.index(plate)
        return None

    def _event_size(self, site: Site) -> int | None:
        """The size of one draw of a vector family, as the runtime's `event_size` reads it."""
        if site.over and site.kind != "marginalize":
            n = 1
            for o in site.over:
                if self.sizes.get(o) is None:
                    return None
                n *= self.sizes[o]
            return n
        event = site.type.element.event if site.type is not None else ()
        return event[-1] if event and event[-1] >= 0 else None

    def _event_dims(self, site: Site) -> list[str] | None:
        """The names of the axes of one draw of a vector family; None where they have none
        (a draw over a product of plates, flattened)."""
        assert site.family is not None
        if not FAMILIES[site.family].event_rank:
            return []
        if FAMILIES[site.family].event_rank != 1:
            return None
        size = self._event_size(site)
        if len(site.over) == 1:
            name: str | None = site.over[0]
        else:
            name = site.type.element.of if site.type is not None and not site.over else None
        if name is None or self.sizes.get(name) != size:
            return None
        return [name]

    def _site_dims(self, site: Site) -> list[str] | None:
        """The dims of a site's value (batch, then event), each name once (a second use of
        a plate is `State_2`), or None where an axis has no name."""
        event = self._event_dims(site)
        if event is None:
            return None
        return self._unique([*self._dims(site.plates), *event])

    def _unique(self, names: list[str]) -> list[str]:
        """Dims named once each: a plate's second axis is `State_2` (a coordinate too)."""
        dims: list[str] = []
        for name in names:
            dim, k = name, 1
            while dim in dims:
                k += 1
                dim = f"{name}_{k}"
            if dim != name:
                self.coords[dim] = self._coord(name)
            dims.append(dim)
        return dims

    def _values(self, site: Site) -> int | None:
        """How many values a marginalized coordinate takes."""
        assert site.family is not None
        family = site.summed_family
        assert family is not None
        if family.support.kind == "boolean":
            return 2
        if family.support.kind == "integer_interval":  # 0 .. its total_count
            count = next((a.literal for a in site.args if a.param == family.support.high), None)
            if isinstance(count, float) and count.is_integer() and count >= 0:
                return int(count) + 1
            return None
        of = site.type.element.of if site.type is not None else None
        if of is not None and self.sizes.get(of):
            return self.sizes[of]
        for a in site.args:
            event = a.type.element.event if a.type is not None else ()
            if event and event[-1] > 0:
                return event[-1]
            if isinstance(a.literal, tuple):
                return len(a.literal)
        return None

    def _scalar(self, a: Argument, *, known: bool = True) -> bool:
        """The argument is one number (a vector parameter given so is spread); `known`
        False: or may be one (data the checker does not size)."""
        if a.literal is not None:
            return isinstance(a.literal, float)
        if a.index:
            return False
        t = a.type
        if t is None:
            return not known
        return not t.plates and not t.element.event and not (known and t.data_plates)

    # ---------------------------------------------------------------- module

    def module(self) -> str:
        plan = self.plan
        body = self._body()
        data_names = [*(p.name for p in self.params), *(d.name for d in plan.data)]
        signature = ", ".join(self.py(n) for n in data_names)
        renamed = {n: self.py(n) for n in data_names if self.py(n) != n}
        uses = "\n".join(body)
        head = [plan.header(TARGETS["pymc"]).rstrip("\n"), ""]
        if re.search(r"\bfunctools\.", uses):
            head.append("import functools")
            head.append("")
        if re.search(r"\bnp\.", uses):
            head.append("import numpy as np")
        head.append("import pymc as pm")
        if re.search(r"\bpt\.", uses) or "per_group(" in uses:
            head.append("import pytensor.tensor as pt")
        out = [*head, "", ""]
        if renamed:
            pairs = ", ".join(f'"{k}": "{v}"' for k, v in renamed.items())
            out += [
                "#: Data names that are Python words, and the keyword each is passed by.",
                f"RENAMED = {{{pairs}}}",
                "",
                "",
            ]
        if self.variables:
            out += [
                f"# QVR's `{k}` is the PyMC variable {self.variable(k)} (PyMC cannot keep the name)"
                for k in self.variables
            ] + ["", ""]
        if "per_group(" in uses:
            out += [*_PER_GROUP, "", ""]
        unread = "_unread"  # the file's other keys, ignored as qvr ignores them
        keywords = {self.py(n) for n in data_names}
        while unread in keywords:
            unread += "_"
        doc = (
            f'    """The PyMC model of `{self.model.name}` given its data: the keys of qvr\'s '
            "JSON data file\n    (indices from 0, as qvr reads them); the keys it does not "
            'read are ignored, as qvr\n    ignores them."""'
        )
        out.append(
            f"def build_model(*, {signature}, **{unread}: object) -> pm.Model:"
            if signature
            else f"def build_model(**{unread}: object) -> pm.Model:"
        )
        out.append(doc)
        out += self._coords()
        out.append("    with pm.Model(coords=coords) as model:")
        out += body
        out.append("    return model")
        out += ["", "", *self._main(bool(renamed))]
        return "\n".join(out) + "\n"

    def _coords(self) -> list[str]:
        entries = []
        for plate in self.plan.plates.values():
            if plate.name in self.one_entry:
                continue
            entries.append(f'"{plate.name}": {self._coord(plate.name)}')
        entries += [f'"{dim}": {values}' for dim, values in self.coords.items()]
        if not entries:
            return ["    coords: dict[str, range] = {}"]
        one = "    coords = {" + ", ".join(entries) + "}"
        if len(one) <= 100:
            return [one]
        return ["    coords = {", *(f"        {e}," for e in entries), "    }"]

    def _coord(self, plate: str) -> str:
        """A plate's coordinate values: its entries, counted by the data when only the
        data fixes its size."""
        size = self.sizes.get(plate)
        if size is not None:
            return f"range({size})"
        found = self._data_axis(plate)
        assert found is not None  # `unsupported` refused the plan otherwise
        name, axis = found
        return f"range(np.shape({self.py(name)})[{axis}])"

    def _main(self, renamed: bool) -> list[str]:
        read = "json.load(file)"
        if renamed:
            read = "{RENAMED.get(k, k): v for k, v in json.load(file).items()}"
        return [
            'if __name__ == "__main__":',
            "    import json",
            "    import sys",
            "",
            "    # python this_file.py data.json: the data file qvr reads",
            '    with open(sys.argv[1], encoding="utf-8") as file:',
            f"        data = {read}",
            "    with build_model(**data):",
            "        idata = pm.sample()",
            "    print(pm.summary(idata))",
        ]

    # ------------------------------------------------------------------ body

    def _body(self) -> list[str]:
        lines: list[str] = []
        ind = " " * 8
        # observations a Potential reads are pm.Data; one a step reads before its own is an
        # array up front (a pm.Data would take the name of the observed variable)
        scoped_data = {s.name for s in self.model.sites if s.kind == "observe" and s.scope}
        read: set[str] = set()
        for node in self.tree:
            if isinstance(node.step, Site) and node.step.kind == "observe":
                self.early |= {node.step.name} & read
            read |= node.outside
        mixtures = {id(n) for n in self.tree if self._mixture(n) is not None}
        for node in self.tree:  # the observation of a mixture is written by pm.Mixture
            if id(node) in mixtures:
                scoped_data.discard(node.body[0].step.name)
        for p in self.params:
            py = self.py(p.name)
            lines.append(f"{ind}{py} = pm.Data({self.variable(p.name)}, float({py}))")
        # a datum combined with plated values carries their axes after its rows, which
        # the checker does not name: PyMC takes its shape from the array
        unnamed = self._broadcast_data()
        for d in self.plan.data:
            if d.name in self.early:
                lines.append(f"{ind}{self.py(d.name)} = {self._array(d.name, d.integer)}")
            if d.observed and d.name not in scoped_data:
                continue
            dims = [] if d.name in unnamed else self._unique(self._dims(d.axes))
            lines.append(
                _call(
                    f"{ind}{self.py(d.name)} = pm.Data",
                    [self.variable(d.name), self._array(d.name, d.integer), *_dims_kw(dims)],
                    ind,
                )
            )
        later = self._read_later()
        for i, node in enumerate(self.tree):
            step = node.step
            if isinstance(step, Let):
                lines += self._let(step, ind, step.name in later[i])
            elif node.scope:
                if id(node) in mixtures:
                    lines += self._mixture_lines(node, ind)
                else:
                    lines += self._potential(node, ind)
            else:
                lines += self._site(step, ind, step.name in later[i])
        return lines

    def _broadcast_data(self) -> set[str]:
        """Data of no known axis but their rows read (directly or through lets) by a
        `let` over plates they lack (`X * beta`, `beta : Coef`): the array's axes after
        the rows are those plates'."""
        data = {d.name: d for d in self.plan.data if not d.plates}
        read: dict[str, set[str]] = {}  # a let -> the data it is computed from
        out: set[str] = set()
        for step in self.model.steps:
            if not isinstance(step, Let):
                continue
            found = {n for n in step.uses if n in data}
            found |= {d for n in step.uses for d in read.get(n, ())}
            read[step.name] = found
            t = step.type
            plates = {p.name for p in t.plates} if isinstance(t, Plated) else set()
            out |= {n for n in found if plates - {data[n].rows}}
        return out

    def _read_later(self) -> list[set[str]]:
        """For each top-level node, the names read by the nodes after it."""
        out: list[set[str]] = []
        seen: set[str] = set()
        for node in reversed(self.tree):
            out.append(set(seen))
            seen |= node.outside
        return out[::-1]

    def _array(self, name: str, integer: bool) -> str:
        if name in self.model.observed_lets:  # computed from the data by its let, above
            return self.py(name)
        dtype = "int64" if integer else "float64"
        return f'np.asarray({self.py(name)}, dtype="{dtype}")'

    # -- sites

    def _family_args(
        self, site: Site, family_name: str | None = None, *, named: bool = False
    ) -> list[str]:
        """`mu=..., sigma=...` of a site's family call (`family_name`: the family a
        marginalize sums), a number for a vector parameter spread to one draw's size."""
        name = family_name or site.family
        assert name is not None
        family = FAMILIES[name]
        size = self._event_size(site)
        texts = {}
        for a in site.args:
            param = family.param(a.param)
            if param is None:
                continue
            value = self._argument(a)
            if param.rank == 1 and self._scalar(a, known=False) and size is not None:
                spread = f"np.full({size}, {value})" if a.literal is not None else None
                value = spread or f"{value} * np.ones({size})"
            texts[a.param] = value
        return keywords(name, texts, named=named)

    def _argument(self, a: Argument) -> str:
        if isinstance(a.literal, float):
            return number(a.literal)
        if isinstance(a.literal, tuple):
            return f"np.array([{', '.join(number(v) for v in a.literal)}])"
        assert a.name is not None
        if not a.index:
            return self.py(a.name)
        return self.printer.gather(a.name, a.index, a.index_plates)

    def _site(self, site: Site, ind: str, read_later: bool) -> list[str]:
        assert site.family is not None
        spec = PYMC_FAMILIES[site.family]
        args = [self.variable(site.name), *self._family_args(site, named=True)]
        observed = site.kind == "observe"
        datum = self.plan.datum(site.name)
        if observed:
            integer = datum.integer if datum is not None else FAMILIES[site.family].discrete
            early = site.name in self.early
            args.append(
                f"observed={self.py(site.name) if early else self._array(site.name, integer)}"
            )
        dims = self._site_dims(site) if (site.annotated or not observed) else []
        size = self._event_size(site)
        if dims is None and size is not None:  # an axis without a name: the shape by sizes
            args.append(f"shape={self._shape(site.plates, size)}")
        elif dims is not None:
            args += _dims_kw(dims)
        target = f"{self.py(site.name)} = " if read_later else ""
        lines = []
        if site.kind == "sample" and FAMILIES[site.family].discrete:
            lines.append(
                f"{ind}# discrete: PyMC samples it by Gibbs steps (qvr's NUTS sums it out)"
            )
        lines.append(_call(f"{ind}{target}{spec.pm}", args, ind))
        return lines

    # -- lets

    def _let(self, let: Let, ind: str, read_later: bool) -> list[str]:
        value = self.printer(let.term)
        name = self.py(let.name)
        if let.kind == "score":
            return [_call(f"{ind}pm.Potential", [self.variable(let.name), f"pt.sum({value})"], ind)]
        if not self._traced(let):
            return [f"{ind}{name} = {value}"]
        dims = self._let_dims(let)
        args = [self.variable(let.name), value, *_dims_kw(dims or [])]
        target = f"{name} = " if read_later else ""
        return [_call(f"{ind}{target}pm.Deterministic", args, ind)]

    def _traced(self, let: Let) -> bool:
        """A `pm.Deterministic`: it depends on a random variable, and it does not run over
        the data's rows unless the program returns it."""
        random = {s.name for s in self.model.sites if s.kind != "observe"}
        if not self.model.through_lets(let.uses) & random:
            return False
        rows = (let.type is not None and let.type.data_plates) or let.name in self.plan.rows
        return not rows or let.name in self.model.returns

    def _let_dims(self, let: Let) -> list[str] | None:
        """A let's dims where its type names every axis (no event axes)."""
        if let.type is None or let.type.element.event:
            return None
        if let.type.data_plates and let.name not in self.plan.rows:
            return None
        return self._unique(self._dims(self.plan.axes(let.name)))

    # -- marginalize

    def _mixture(self, node: Node) -> Site | None:
        """The observe of a scope PyMC writes as `pm.Mixture`: a Categorical over its
        groups whose one step is an observe on exactly those groups, reading the summed
        coordinate only as the whole index of a value over its values."""
        site = node.step
        if not isinstance(site, Site) or site.family not in _MIXTURE or not site.over:
            return None
        if len(node.body) != 1 or node.body[0].body:
            return None
        inner = node.body[0].step
        if not isinstance(inner, Site) or inner.kind != "observe" or inner.via is not None:
            return None
        if inner.family not in PYMC_FAMILIES or FAMILIES[inner.family].event_rank:
            return None
        if not inner.annotated or inner.plates != site.plates or site.plates != site.over:
            return None
        if not self._dims(site.plates):
            return None
        of = site.type.element.of if site.type is not None else None
        for a in inner.args:
            if a.name == site.name:
                return None
            if a.index == (site.name,):
                if a.name is None or self.plan.axes(a.name) != (of,):
                    return None
                t = a.type
                if t is not None and t.element.event:
                    return None
            elif a.index or isinstance(a.literal, tuple) or not self._scalar(a):
                return None
        prior = site.args[0] if site.args else None
        if prior is None or prior.index or prior.literal is not None or prior.type is None:
            return None
        plates = tuple(p.name for p in prior.type.plates)
        if prior.type.data_plates or plates not in ((), site.plates):
            return None
        return inner

    def _mixture_lines(self, node: Node, ind: str) -> list[str]:
        site = node.step
        assert isinstance(site, Site)
        inner = self._mixture(node)
        assert inner is not None and inner.family is not None
        prior = site.args[0]
        assert prior.name is not None
        w = self.py(prior.name)
        if prior.param == "logits":
            w = f"pt.special.softmax({w}, axis=-1)"
        elif prior.type is None or prior.type.element.kind != "simplex":
            w = f"{w} / pt.sum({w}, axis=-1, keepdims=True)"
        spec = PYMC_FAMILIES[inner.family]
        # each component's arguments: `mu[z]` is `mu`, its components on the last axis
        texts = {
            a.param: self.py(a.name) if a.index and a.name else self._argument(a)
            for a in inner.args
            if FAMILIES[inner.family].param(a.param) is not None
        }
        comps = keywords(inner.family, texts)
        datum = self.plan.datum(inner.name)
        integer = datum.integer if datum is not None else FAMILIES[inner.family].discrete
        dist = _call(f"comp_dists={spec.pm}.dist", comps, ind + "    ")
        args = [
            self.variable(inner.name),
            f"w={w}",
            dist,
            f"observed={self._array(inner.name, integer)}",
            *_dims_kw(self._dims(inner.plates)),
        ]
        groups = " * ".join(self._dims(site.plates))
        return [
            f"{ind}# marginalize {site.name}: one per {groups}, summed out by the mixture",
            _call(f"{ind}pm.Mixture", args, ind),
        ]

    def _potential(self, node: Node, ind: str) -> list[str]:
        site = node.step
        assert isinstance(site, Site)
        lines: list[str] = [""]
        self._scope_function(node, [], ind, lines)
        lines.append(
            f"{ind}pm.Potential({self.variable(site.name)}, pt.sum({self._fn(site.name)}()))"
        )
        return lines

    def _fn(self, name: str) -> str:
        fn = f"sum_out_{name}"
        while fn in self.names.values():
            fn += "_"
        return fn

    def _scope_function(self, node: Node, enclosing: list[str], ind: str, lines: list[str]) -> None:
        """`def sum_out_z(...)`: the scope's log-sum-exp over the values of `z`, one per
        group; its parameters are the names bound in enclosing scopes it reads."""
        site = node.step
        assert isinstance(site, Site) and site.family is not None
        reads = node.outside
        params = [self.py(n) for n in enclosing if n in reads]
        groups = self._shape(site.plates)
        k = self._values(site)
        summed = _summed_name(site)
        prior_args = self._family_args(site, summed)
        z = self.py(site.name)
        plates = self._dims(site.plates)
        where = f"one per {' * '.join(plates)}" if plates else "in all"
        given = f" given {', '.join(params)}" if params else ""
        if enclosing:  # a nested scope: its sum once for each values of what it reads
            lines.append(f"{ind}@functools.cache  # the same sum for the same values it reads")
        lines.append(f"{ind}def {self._fn(site.name)}({', '.join(params)}):")
        lines.append(
            f'{ind}    """Sum out {site.name}{given}: its scope\'s log density, {where}."""'
        )
        lines.append(f"{ind}    per_value = []")
        lines.append(f"{ind}    for {z} in range({k}):")
        inner = ind + " " * 8
        prior = _call(f"{PYMC_FAMILIES[summed].pm}.dist", prior_args, inner)
        lines.append(f"{inner}lp = pm.logp({prior}, {z})")
        bound = [*enclosing, site.name]
        nested: list[tuple[Node, list[str]]] = []
        for child in node.body:
            step = child.step
            if isinstance(step, Let):
                value = self.printer(step.term)
                if step.kind == "score":
                    lines.append(_call(f"{inner}lp = lp + per_group", [value, groups], inner))
                else:
                    lines.append(f"{inner}{self.py(step.name)} = {value}")
            elif child.scope:
                nested.append((child, list(bound)))
                call_params = [self.py(n) for n in bound if n in child.outside]
                call = f"{self._fn(step.name)}({', '.join(call_params)})"
                lines.append(_call(f"{inner}lp = lp + per_group", [call, groups], inner))
            else:
                assert step.family is not None
                spec = PYMC_FAMILIES[step.family]
                dist = _call(f"{spec.pm}.dist", self._family_args(step), inner)
                term = f"pm.logp({dist}, {self.py(step.name)})"
                via = [f"via={self.py(step.via)}"] if step.via is not None else []
                lines.append(_call(f"{inner}lp = lp + per_group", [term, groups, *via], inner))
            bound.append(step.name)
        lines.append(f"{inner}per_value.append(lp)")
        lines.append(
            f"{ind}    return pm.math.logsumexp(pt.stack(pt.broadcast_arrays(*per_value)), axis=0)"
        )
        lines.append("")
        for child, outside in nested:
            self._scope_function(child, outside, ind, lines)


def _dims_kw(dims: list[str]) -> list[str]:
    if not dims:
        return []
    if len(dims) == 1:
        return [f'dims="{dims[0]}"']
    return [f"dims=({', '.join(repr(d).replace(chr(39), chr(34)) for d in dims)})"]


def _call(head: str, args: list[str], ind: str) -> str:
    """`head(a, b)` on one line when it fits in 100 columns, else one argument a line."""
    one = f"{head}({', '.join(args)})"
    if len(one) <= 100 and "\n" not in one:
        return one
    inner = ind + "    "
    parts = "".join(f"{inner}{a.strip() if chr(10) not in a else a.lstrip()},\n" for a in args)
    return f"{head}(\n{parts}{ind})"


_PER_GROUP = [
    "def per_group(term, groups, via=None):",
    '    """One log-density term of a `marginalize` scope summed down to the scope\'s groups,',
    "    as qvr's runtime does: over every axis when there are none, each row into the group",
    '    `via` names, else over the axes after the groups\'."""',
    "    term = pt.as_tensor(term)",
    "    if not groups:",
    "        return pt.sum(term)",
    "    if via is not None:",
    "        rows = pt.sum(term.reshape((term.shape[0], -1)), axis=-1) if term.ndim > 1 else term",
    "        return pt.inc_subtensor(pt.zeros(groups)[via], pt.broadcast_to(rows, via.shape))",
    "    return pt.sum(term, axis=tuple(range(len(groups), term.ndim)))",
]
