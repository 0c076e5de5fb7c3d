"""A checked model program written as a Stan program (`qvr export --to stan`).

The Stan program reads the same JSON data file qvr reads, unchanged: each data
variable is declared under its QVR name, with its sizes and the bounds its family
gives it; qvr counts indices (and Categorical observations) from 0, so each gets a
1-based copy in `transformed data` (`county_1`). A plate whose size the source
fixes (`object School : FinSet 8`) is a `transformed data` int named after it
(the `data` block, which is read before it, spells those sizes as numbers).

Sites become `parameters` constrained to their family's support and `~`
statements in source order (a `Flat` or `HalfFlat` prior is the parameter alone, as
Stan writes a flat prior); `let`s become `transformed data` (when they read only
data), `transformed parameters` (what the program returns, and what that reads) or
`model` locals. A `marginalize` scope sums its coordinate out exactly, as qvr's
runtime does (`runtime/model/marginal.py`): per group, `log_sum_exp` over the
coordinate's values of its log prior plus the scope's terms, nested scopes inside
the loop of the one around them (an HMM's chain of states), every term inside a
scope written as a normalised `_lpdf` so that the sum is the same number qvr's is.

`unsupported(plan)` and `emit(plan)` run the same writer, so whatever the writer
cannot say in Stan with exactly qvr's meaning is a located problem, and nothing
is written for a program that has one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Let, Node, Site, walk
from qvr_core.check.terms import Call, Gather, Num, Op, Ref, Stack, Term, Unary, refs
from qvr_core.export.named import named
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.stan_terms import (
    INT,
    REAL,
    STAN_PREFIX,
    Binding,
    Ctx,
    Printed,
    Printer,
    Value,
    at,
    declared,
    real_literal,
)
from qvr_core.export.targets import TARGETS
from qvr_core.text.span import Span


def unsupported(plan: Plan) -> list[Unsupported]:
    """What in `plan` Stan cannot say with qvr's meaning, each where it is written."""
    return _Writer(plan).write()[1]


def emit(plan: Plan) -> str:
    """The Stan program of `plan` (asked only when `unsupported(plan)` is empty)."""
    text, problems = _Writer(plan).write()
    if problems:
        raise ValueError(f"not exportable to Stan: {problems[0].message}")
    return text


# ---------------------------------------------------------------- the families


@dataclass(frozen=True)
class _Family:
    """How a QVR family is a Stan distribution of the same density.

    `params` are the QVR parameters in Stan's order (a number stands for itself: a
    half family is its symmetric family at location 0). `half`: |x| of that family,
    so the value is bounded below by 0 and its exact density has log 2 more.
    `ints`: parameters Stan takes as integers. `truncation`: the parameters of
    `T[low, high]`. `rewrite` gives the parameters Stan's parameterisation needs from
    qvr's (a NegativeBinomial's `probs` as Stan's odds). `over_ints`: Stan takes an
    array of draws with one vector parameter (a Categorical's `probs`). `flat`: an
    improper flat prior (`Flat`, `HalfFlat`), which is a Stan parameter with no
    statement: its bounds are the support, and nothing is added to `target`.
    `logits`: the distribution when the call gives `logits` (`categorical_logit`).
    """

    stan: str
    params: tuple[str, ...]
    half: bool = False
    ints: tuple[str, ...] = ()
    truncation: tuple[str, str] | None = None
    rewrite: Callable[[dict[str, Term], Span], dict[str, Term]] | None = None
    over_ints: bool = False
    flat: bool = False
    logits: _Family | None = None


def _odds_of_failure(a: dict[str, Term], s: Span) -> dict[str, Term]:
    # torch's NegativeBinomial(r, p) counts successes of probability p before r failures:
    # Stan's neg_binomial(r, beta) with beta = (1 - p) / p
    p = a["probs"]
    return {"beta": Op("/", Op("-", Num(1.0, s), p, s), p, s)}


def _odds(a: dict[str, Term], s: Span) -> dict[str, Term]:
    # torch's Geometric(p) counts failures before the first success: neg_binomial(1, p / (1 - p))
    p = a["probs"]
    return {"beta": Op("/", p, Op("-", Num(1.0, s), p, s), s)}


def _covariance(a: dict[str, Term], s: Span) -> dict[str, Term]:
    return {"sigma": Call(STAN_PREFIX + "multiply_lower_tri_self_transpose", (a["scale_tril"],), s)}


class _StanFamilies:
    """Stan's distribution of each family it has, named after the registry's entry
    (read by `named`): a family the registry adds has none until one is written here."""

    Normal = _Family("normal", ("loc", "scale"))
    Cauchy = _Family("cauchy", ("loc", "scale"))
    StudentT = _Family("student_t", ("df", "loc", "scale"))
    Laplace = _Family("double_exponential", ("loc", "scale"))
    Logistic = _Family("logistic", ("loc", "scale"))
    Gumbel = _Family("gumbel", ("loc", "scale"))
    Uniform = _Family("uniform", ("low", "high"))
    TruncatedNormal = _Family("normal", ("mu", "sigma"), truncation=("low", "high"))
    HalfNormal = _Family("normal", ("0", "scale"), half=True)
    HalfCauchy = _Family("cauchy", ("0", "scale"), half=True)
    HalfStudentT = _Family("student_t", ("df", "0", "scale"), half=True)
    LogNormal = _Family("lognormal", ("loc", "scale"))
    Exponential = _Family("exponential", ("rate",))
    Gamma = _Family("gamma", ("concentration", "rate"))
    InverseGamma = _Family("inv_gamma", ("concentration", "rate"))
    Chi2 = _Family("chi_square", ("df",))
    Weibull = _Family("weibull", ("concentration", "scale"))
    Pareto = _Family("pareto", ("scale", "alpha"))
    Beta = _Family("beta", ("concentration1", "concentration0"))
    Bernoulli = _Family("bernoulli", ("probs",))
    Categorical = _Family(
        "categorical",
        ("probs",),
        over_ints=True,
        logits=_Family("categorical_logit", ("logits",), over_ints=True),
    )
    Poisson = _Family("poisson", ("rate",))
    Binomial = _Family("binomial", ("total_count", "probs"), ints=("total_count",))
    BetaBinomial = _Family(
        "beta_binomial",
        ("total_count", "concentration1", "concentration0"),
        ints=("total_count",),
    )
    NegativeBinomial = _Family("neg_binomial", ("total_count", "beta"), rewrite=_odds_of_failure)
    Geometric = _Family("neg_binomial", ("1", "beta"), rewrite=_odds)
    OrderedLogistic = _Family("ordered_logistic", ("predictor", "cutpoints"), over_ints=True)
    OrderedProbit = _Family("ordered_probit", ("eta", "cutpoints"), over_ints=True)
    Dirichlet = _Family("dirichlet", ("concentration",))
    MultivariateNormal = _Family("multi_normal_cholesky", ("loc", "scale_tril"))
    LKJCholesky = _Family("lkj_corr_cholesky", ("concentration",))
    Wishart = _Family("wishart", ("df", "sigma"), rewrite=_covariance)
    InverseWishart = _Family("inv_wishart", ("df", "sigma"), rewrite=_covariance)


STAN_FAMILIES: dict[str, _Family] = named(_StanFamilies, FAMILIES, _Family)
#: The improper flat priors (`Flat`, `HalfFlat`): a parameter bounded by the support alone.
STAN_FAMILIES.update({f.name: _Family("", (), flat=True) for f in FAMILIES.values() if f.improper})
#: Stan parameters an export derives (their rank: a covariance is a matrix).
_DERIVED_RANK = {"beta": 0, "sigma": 2}

#: support kind -> (Stan's constrained type of one draw, or "" for its bounds alone)
_CONSTRAINED = {
    "simplex": "simplex",
    "corr_cholesky": "cholesky_factor_corr",
    "lower_cholesky": "cholesky_factor_cov",
    "positive_definite": "cov_matrix",
}
#: support kinds Stan's integer data index from 0 in qvr: read through a 1-based copy
_FROM_ZERO = ("index", "ordinal")
#: Words Stan keeps for itself (stanc3's keywords, and the words it reserves for C++:
#: `struct`, `auto`, ...): a QVR name that is one gets a trailing `_` (a data name
#: cannot: the data file names it). Names ending in `__` are Stan's too (`lp__`).
_RESERVED_WORDS = """for in while repeat until if then else true false target functions model data
    parameters quantities transformed generated profile return break continue print reject
    fatal_error int real complex vector simplex unit_vector sum_to_zero_vector ordered
    positive_ordered row_vector matrix complex_vector complex_row_vector complex_matrix
    cholesky_factor_corr cholesky_factor_cov corr_matrix cov_matrix column_stochastic_matrix
    row_stochastic_matrix sum_to_zero_matrix array tuple void lower upper offset multiplier
    jacobian struct typedef export auto extern var static"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


# ---------------------------------------------------------------- the writer


def _identifier(name: str) -> bool:
    return (
        bool(name)
        and name[0].isalpha()
        and all(c.isalnum() or c == "_" for c in name)
        and not name.endswith("__")
        and name.isascii()
    )


def _stem(name: str) -> str:
    """`name` made the start of a Stan identifier, to which `fresh` may add digits: a
    letter first (`_x` is `v_x`), one `_` at most at its end (`lp__` is `lp_`, as Stan
    keeps names ending in `__`), other characters `_`."""
    word = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    if not word[:1].isalpha():
        word = "v" + word
    return word.rstrip("_") + "_" if word.endswith("__") else word


class _Writer:
    """Writes one plan's Stan program, gathering what it cannot write as problems."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.problems: list[Unsupported] = []
        self.failed: set[str] = set()  # names refused where declared (reported once)
        self.printer = Printer(self.lookup, self.problems, self.failed)
        self.names: dict[str, Binding] = {}
        self.local: list[dict[str, Binding]] = []
        self.taken: set[str] = set()
        # every QVR name of the program: a name the export makes up (a renamed name, a
        # loop's `i`, `lp_z`) is none of them, so each QVR name that can stay does
        self.own = {*plan.plates, *(d.name for d in plan.data)}
        self.own.update(s.name for s in plan.model.steps)
        self.active: list[set[str]] = []  # loop and block variables in force
        self.data: list[str] = []
        self.tdata: list[str] = []
        self.params: list[str] = []
        self.tparams: list[str] = []
        self.model: list[str] = []
        self.via_rows: dict[str, tuple[str, str]] = {}  # via name -> (rows, start)
        self.counts: set[str] = set()  # data a family takes as a whole number (a Binomial's N)

    # -------------------------------------------------------------- names

    def lookup(self, name: str) -> Binding | None:
        for frame in reversed(self.local):
            if name in frame:
                return frame[name]
        return self.names.get(name)

    def _stan_name(self, qvr: str, span: Span, fixed: bool = False) -> str | None:
        """The Stan name of a QVR name: itself, or with `_` where Stan keeps the word.
        `fixed`: the data file names it, so it cannot change."""
        if _identifier(qvr) and qvr not in _RESERVED and qvr not in self.taken:
            self.taken.add(qvr)
            return qvr
        if fixed:
            why = "a word Stan reserves" if qvr in _RESERVED else "not a Stan identifier"
            self.problems.append(
                Unsupported(span, f"the data name `{qvr}` is {why}; rename it in the data too")
            )
            return None
        return self.fresh(qvr + "_", global_=True)

    def fresh(self, base: str, global_: bool = False, keeps: bool = False) -> str:
        """A Stan name no variable in force has (`lp_z`, `i`, `county_1`), made of
        `base` (a QVR name in it made a Stan identifier: `_stem`) and no other QVR name
        of the program. `keeps`: `base` is the QVR name being bound (a local let, a
        summed-out coordinate), which may stay as it is."""
        used = self.taken.union(self.own - {base} if keeps else self.own, *self.active)
        base = _stem(base)
        name, k = base, 1
        while name in used or name in _RESERVED:
            k += 1
            name = f"{base}{k}"
        (self.taken if global_ or not self.active else self.active[-1]).add(name)
        return name

    def size(self, axis: str, data: bool = False) -> str:
        """The size of an axis as Stan reads it: the plate's int (a number in `data`,
        which is read before `transformed data` declares the plates)."""
        if axis.startswith("#"):
            return axis[1:]
        plate = self.plan.plates.get(axis)
        if plate is not None and plate.size is None:
            b = self.names.get("#" + axis)
            return b.stan if b is not None else axis
        n = plate.size if plate is not None else self.plan.module.objects[axis].size
        if data:
            return str(n)
        b = self.names.get("#" + axis)
        return b.stan if b is not None else str(n)

    def _axis_known(self, axis: str) -> bool:
        if axis.startswith("#"):
            return axis[1:].isdigit()
        return axis in self.plan.plates or axis in self.plan.module.objects

    # -------------------------------------------------------------- the program

    def write(self) -> tuple[str, list[Unsupported]]:
        plan = self.plan
        # a discrete `sample` without data outside the scopes: qvr's NUTS sums it out
        # (`runtime/model/enumerate.py`), and so does the export
        tree = plan.model.summed_with_data(
            s.name for s in plan.model.sites if plan.datum(s.name) is not None
        )
        self._plates()
        indexing = self._indexing(tree)
        self._data(indexing)
        self._copies()
        kinds = self._let_blocks(tree)
        for node in tree:
            self._top(node, kinds)
            if self.lookup(node.step.name) is None:
                self.failed.add(node.step.name)
        unique = list({(u.span, u.message): u for u in self.problems}.values())
        return self._text(), unique

    def _text(self) -> str:
        out = [self.plan.header(TARGETS["stan"]).rstrip("\n")]
        blocks = (
            ("data", self.data),
            ("transformed data", self.tdata),
            ("parameters", self.params),
            ("transformed parameters", self.tparams),
            ("model", self.model),
        )
        for title, lines in blocks:
            if not lines and title != "model":
                continue
            out.append(title + " {")
            out.extend("  " + line if line else "" for line in lines)
            out.append("}")
        return "\n".join(out) + "\n"

    def _plates(self) -> None:
        for plate in self.plan.plates.values():
            name = self._stan_name(plate.name, _NOWHERE)
            if name is None:
                continue
            self.names["#" + plate.name] = Binding(name, INT)
            if plate.size is None:  # qvr reads it off the data's arrays; Stan is told
                self.data.append(
                    f"int<lower=0> {name};  // how many {plate.name}: add it to the data"
                )
            else:
                self.tdata.append(f"int {name} = {plate.size};")

    def _indexing(self, tree: tuple[Node, ...]) -> set[str]:
        """Data names read as indices (by a gather, a `via`, or an observation from 0)."""
        out: set[str] = set()
        for node in walk(tree):
            s = node.step
            if isinstance(s, Let):
                for t in _terms(s.term):
                    if isinstance(t, Gather):
                        out.update(i.name for i in t.indices if isinstance(i, Ref))
                continue
            for a in s.args:
                out.update(i for i in a.index if i not in self.plan.plates)
            if s.via is not None:
                out.add(s.via)
            observed = s.kind == "observe" and s.family in FAMILIES
            if observed and FAMILIES[str(s.family)].support.kind in _FROM_ZERO:
                out.add(s.name)
            spec = STAN_FAMILIES.get(str(s.family))
            for a in s.args:
                if spec is not None and a.param in spec.ints and a.name and not a.index:
                    self.counts.add(a.name)
        return {n for n in out if self.plan.datum(n) is not None}

    def _data(self, indexing: set[str]) -> None:
        for d in self.plan.data:
            self.failed.add(d.name)  # until declared
            site = self.plan.model.site(d.name) if d.observed else None
            value: Value | None
            bounds = ""
            if site is not None and site.family is not None and site.family in FAMILIES:
                value = self._site_value(site)
                bounds = self._data_bounds(site)
            else:
                value = self._covariate(d.name, d.span)
                if value is not None and d.indexes is not None:
                    bounds = f"<lower=0, upper={_minus_one(self.size(d.indexes, data=True))}>"
            if value is None:
                continue
            name = self._stan_name(d.name, d.span, fixed=True)
            if name is None:
                continue
            plates = " * ".join(value.plates)
            comment = f"  // over {plates}" if plates else ""
            self.data.append(
                f"{declared(value, lambda a: self.size(a, True), bounds)} {name};{comment}"
            )
            self.failed.discard(d.name)
            index = None
            if d.name in indexing:
                index = self.fresh(f"{name}_1", global_=True)
            self.names[d.name] = Binding(name, value, index=index, block="data")

    def _covariate(self, name: str, span: Span) -> Value | None:
        d = self.plan.datum(name)
        assert d is not None
        dv = self.plan.model.data_variable(name)
        sized = dv is None or dv.type is None or dv.type.data_plates
        if sized and d.rows is None:
            self.problems.append(
                Unsupported(
                    span,
                    f"the length of `{name}` is known only from the data (no observe over a "
                    "plate reads it), and Stan declares it",
                )
            )
            return None
        axes = d.axes
        if d.element.event:
            self.problems.append(
                Unsupported(span, f"`{name}` holds vectors; the export reads numbers")
            )
            return None
        if len(axes) > 2:
            self.problems.append(
                Unsupported(span, f"`{name}` has {len(axes)} axes; Stan's export takes two at most")
            )
            return None
        if d.integer or name in self.counts:
            return Value("ints", axes) if axes else INT
        return Value(("real", "vector", "matrix")[len(axes)], axes)

    def _copies(self) -> None:
        """The 1-based copies of the data that indexes."""
        for d in self.plan.data:
            b = self.names.get(d.name)
            if b is None or b.index is None:
                continue
            if b.value.kind == "int":
                self.tdata.append(f"int {b.index} = {b.stan} + 1;")
                continue
            if len(b.value.axes) != 1 or b.value.kind != "ints":
                self.problems.append(
                    Unsupported(
                        d.span,
                        f"`{d.name}` indexes with {len(b.value.axes)} axes; the export takes one",
                    )
                )
                continue
            n = self.size(b.value.axes[0])
            self.tdata.append(
                f"array[{n}] int {b.index};  // {d.name}, counted from 1 as Stan indexes"
            )
            self.tdata.append(f"for (i in 1:{n}) {b.index}[i] = {b.stan}[i] + 1;")

    # -------------------------------------------------------------- values

    def _site_value(self, site: Site) -> Value | None:
        """The Stan type of a site's value: its plates, then one draw's own axes."""
        assert site.family is not None
        family = FAMILIES[site.family]
        support = family.support
        plates = site.plates
        span = site.step.span
        for p in plates:
            if not self._axis_known(p):
                self.problems.append(
                    Unsupported(span, f"the plate `{p}` has no size the export knows")
                )
                return None
        element = site.type.element if site.type is not None else None
        event_sizes = element.event if element is not None else ()
        if support.rank == 0:
            if len(plates) > 2:
                self.problems.append(
                    Unsupported(
                        span, f"a value over {len(plates)} plates; the export writes two at most"
                    )
                )
                return None
            if support.discrete:
                return Value("ints", plates) if plates else INT
            return Value(("real", "vector", "matrix")[len(plates)], plates)
        if len(event_sizes) != support.rank or any(n < 0 for n in event_sizes):
            self.problems.append(Unsupported(span, "a draw whose size the export cannot tell"))
            return None
        names = tuple(self._event_axis(site, n) for n in event_sizes)
        if support.rank == 1 and not support.discrete:
            if len(plates) > 1:
                self.problems.append(
                    Unsupported(
                        span, "vector draws over more than one plate; the export writes one"
                    )
                )
                return None
            return Value("vectors" if plates else "vector", (*plates, *names), 1)
        if support.rank == 2 and not plates:
            return Value("matrix", names, 2)
        self.problems.append(
            Unsupported(span, f"draws of {site.family} over plates; the export writes one")
        )
        return None

    def _event_axis(self, site: Site, n: int) -> str:
        """The name of an axis of one draw: the plate that names it, else its size."""
        element = site.type.element if site.type is not None else None
        for name in (element.of if element is not None else None, *site.over):
            if name is not None and name in self.plan.plates and self.plan.plates[name].size == n:
                return name
        return f"#{n}"

    def _data_bounds(self, site: Site) -> str:
        """Bounds that check observed data against the family's support (numbers only: a
        simplex of rounded numbers in a data file would be refused)."""
        assert site.family is not None
        family = FAMILIES[site.family]
        c = family.support
        match c.kind:
            case "boolean":
                return "<lower=0, upper=1>"
            case "index":
                of = site.type.element.of if site.type is not None else None
                if of is not None and self._axis_known(of):
                    return f"<lower=0, upper={_minus_one(self.size(of, data=True))}>"
                return "<lower=0>"
            case (
                "nonnegative_integer" | "integer_interval" | "ordinal" | "positive" | "nonnegative"
            ):
                return "<lower=0>"
            case "unit_interval":
                return "<lower=0, upper=1>"
            case "interval":
                low, high = self._literal(site, c.low), self._literal(site, c.high)
                parts = [f"lower={low}" if low else "", f"upper={high}" if high else ""]
                inner = ", ".join(p for p in parts if p)
                return f"<{inner}>" if inner else ""
            case _:
                return ""

    def _literal(self, site: Site, param: object) -> str:
        for a in site.args:
            if a.param == param and isinstance(a.literal, float):
                return real_literal(a.literal)
        return ""

    # -------------------------------------------------------------- lets

    def _let_blocks(self, tree: tuple[Node, ...]) -> dict[str, str]:
        """Where each `let` outside the scopes lives: `tdata` (it reads data only),
        `tparam` (returned, or read by one that is), else `model`."""
        data_names = {d.name for d in self.plan.data}
        lets = {n.step.name: n.step for n in tree if isinstance(n.step, Let)}
        kinds: dict[str, str] = {}
        for name, let in lets.items():
            if let.kind == "let" and all(
                u in data_names or kinds.get(u) == "tdata" for u in let.uses
            ):
                kinds[name] = "tdata"
        wanted = [n for n in self.plan.model.returns if n in lets and kinds.get(n) != "tdata"]
        while wanted:
            name = wanted.pop()
            if kinds.get(name) in ("tparam", "tdata") or lets[name].kind != "let":
                continue
            kinds[name] = "tparam"
            wanted.extend(u for u in lets[name].uses if u in lets)
        # a transformed parameter reads data and parameters only: one that reads a `score`
        # (a model local) stays in the model, and so does what reads it
        early = ("tparam", "tdata")
        while bad := [
            n
            for n, kind in kinds.items()
            if kind == "tparam"
            and any(u in lets and kinds.get(u) not in early for u in lets[n].uses)
        ]:
            for n in bad:
                del kinds[n]
        return kinds

    def _let(self, let: Let, ctx: Ctx, block: str) -> str | None:
        """`type name = expr;`, and the name bound (in the innermost frame in force)."""
        p = self.printer.expr(let.term, ctx)
        if p is None:
            return None
        expected = tuple(a for a in self.plan.axes(let.name) if a not in ctx)
        if let.type is not None and p.value.plates != expected:
            rows = let.type.data_plates and let.name not in self.plan.rows
            why = (
                f"`{let.name}` runs over rows only the data sizes, and no observation over a "
                "plate reads it to say which"
                if rows
                else f"qvr gives `{let.name}` the plates {_words(expected)} but the export "
                f"computes it over {_words(p.value.plates)}"
            )
            self.problems.append(Unsupported(let.step.span, why))
            return None
        value = REAL if p.value.kind == "int" else p.value
        frame = self.local[-1] if self.local else self.names
        name = (
            self.fresh(let.name, keeps=True)
            if self.local
            else self._stan_name(let.name, let.step.span)
        )
        if name is None:
            return None
        frame[let.name] = Binding(name, value, block=block)
        return f"{declared(value, self.size)} {name} = {p.text};"

    def _let_by_entry(self, let: Let, mark: int) -> list[str]:
        """A let of the data over one plate that Stan cannot compute vectorised (a
        comparison: the dummy `age == 2`), computed in `transformed data` entry by entry,
        as posteriordb's programs do: `for (i in 1:Row) age2[i] = age[i] == 2.0;`. Where
        that fails too, the vectorised attempt's problems (from `mark` on) stand."""
        axes = self.plan.axes(let.name)
        if len(axes) != 1 or let.type is None or let.type.element.event:
            return []
        tried = self.problems[mark:]
        del self.problems[mark:]
        self.active.append(set())
        i = self.fresh("i")
        p = self.printer.expr(let.term, {axes[0]: i})
        self.active.pop()
        name = self._stan_name(let.name, let.step.span) if p is not None else None
        if p is None or not p.value.scalar or name is None:
            self.problems[mark:] = tried
            return []
        value = Value("vector", axes)
        self.names[let.name] = Binding(name, value, block="tdata")
        n = self.size(axes[0])
        return [
            f"{declared(value, self.size)} {name};",
            f"for ({i} in 1:{n}) {name}[{i}] = {p.text};",
        ]

    # -------------------------------------------------------------- the model

    def _top(self, node: Node, kinds: dict[str, str]) -> None:
        step = node.step
        if isinstance(step, Let):
            if step.kind == "score":
                self._score(step, {}, self.model, "target")
                return
            block = kinds.get(step.name, "model")
            mark = len(self.problems)
            line = self._let(step, {}, block)
            if line is None and block == "tdata":
                lines = self._let_by_entry(step, mark)
                self.tdata.extend(lines)
                return
            if line is not None:
                {"tdata": self.tdata, "tparam": self.tparams}.get(block, self.model).append(line)
            return
        if step.kind == "marginalize" or node.summed:
            if node.summed:
                self.model.append(
                    f"// {step.name} (discrete) summed out, as qvr's NUTS sums it: Stan has no "
                    "discrete parameters"
                )
            self.model.extend(self._scope(node, {}, None, "target"))
            return
        family = self._family(step)
        if family is None:
            return
        if step.kind == "sample":
            self._parameter(step, family)
        self.model.extend(self._draw(step, family))

    def _score(self, step: Let, ctx: Ctx, out: list[str], add: str) -> None:
        p = self.printer.expr(step.term, ctx)
        if p is None:
            return
        read = any(step.name in s.reads() for s in self.plan.model.steps if s is not step)
        if read:
            line = self._let(step, ctx, "model")
            if line is None:
                return
            out.append(line)
            b = self.lookup(step.name)
            assert b is not None
            text = b.stan
        else:
            text = p.text
        out.append(f"{add} += {text if p.value.scalar or add == 'target' else f'sum({text})'};")

    def _family(self, site: Site) -> _Family | None:
        name = site.family
        span = site.step.span
        if name is None or name not in FAMILIES:
            self.problems.append(Unsupported(span, f"`{name}` is no family the export knows"))
            return None
        family = FAMILIES[name]
        if family.discrete and site.name in self.plan.model.observed_lets:
            self.problems.append(
                Unsupported(
                    span,
                    f"{name} observes whole numbers, and `{site.name}` is a let of the data, "
                    "which Stan computes as reals in `transformed data`: observe a data name "
                    "of whole numbers",
                )
            )
            return None
        if site.kind == "sample" and family.discrete:  # not summed out (see `write`)
            why = (
                "inside `marginalize`, where qvr does not sum it either"
                if family.support.finite
                else "with infinitely many values, which no sum takes in"
            )
            self.problems.append(
                Unsupported(
                    span, f"a discrete latent ({name}) {why}: Stan has no discrete parameters"
                )
            )
            return None
        spec = STAN_FAMILIES.get(name)
        if spec is None:
            self.problems.append(
                Unsupported(span, f"{name}: Stan has no distribution of the same density")
            )
        elif spec.logits is not None and any(a.param == "logits" for a in site.args):
            return spec.logits
        return spec

    def _parameter(self, site: Site, family: _Family) -> None:
        value = self._site_value(site)
        if value is None:
            return
        assert site.family is not None
        support = FAMILIES[site.family].support
        span = site.step.span
        name = self._stan_name(site.name, span)
        if name is None:
            return
        constrained = _CONSTRAINED.get(support.kind, "")
        if support.rank == 2:
            if not constrained:
                self.problems.append(
                    Unsupported(span, f"draws of {site.family}; Stan has no such type")
                )
                return
            decl = f"{constrained}[{self.size(value.axes[0])}]"
        else:
            bounds = self._bounds(site, value)
            if bounds is None:
                return
            decl = declared(value, self.size, bounds, constrained)
        self.params.append(f"{decl} {name};")
        self.names[site.name] = Binding(name, value, block="param")

    def _bounds(self, site: Site, value: Value) -> str | None:
        assert site.family is not None
        c = FAMILIES[site.family].support
        match c.kind:
            case "real" | "simplex" | "real_vector":
                return ""
            case "positive" | "nonnegative":
                return "<lower=0>"
            case "unit_interval":
                return "<lower=0, upper=1>"
            case "interval" | "greater_than" | "greater_than_eq":
                parts = []
                for word, param in (("lower", c.low), ("upper", c.high)):
                    if param is None:
                        continue
                    if isinstance(param, float):
                        parts.append(f"{word}={real_literal(param)}")
                        continue
                    text = self._bound(site, param, value)
                    if text is None:
                        return None
                    parts.append(f"{word}={text}")
                return f"<{', '.join(parts)}>"
            case _:
                pass
        self.problems.append(
            Unsupported(
                site.step.span,
                f"values of {site.family} ({c.describe()}); Stan has no such parameter",
            )
        )
        return None

    def _bound(self, site: Site, param: str, value: Value) -> str | None:
        """A bound given by an argument: read from data or the parameters before it."""
        a = next((a for a in site.args if a.param == param), None)
        term = self._arg_term(a) if a is not None else None
        if a is None or term is None:
            self.problems.append(
                Unsupported(site.step.span, f"no `{param}` to bound the values by")
            )
            return None
        p = self.printer.expr(term, {})
        if p is None:
            return None
        late = [
            n
            for n in refs(term)
            if (b := self.lookup(n)) is not None and b.block not in ("data", "tdata", "param")
        ]
        if late:
            self.problems.append(
                Unsupported(
                    a.span,
                    f"a bound read from `{late[0]}`, which Stan computes after the parameters",
                )
            )
            return None
        if not p.value.scalar and p.value.plates != value.plates:
            self.problems.append(Unsupported(a.span, "a bound over other plates than the values"))
            return None
        return p.text

    # -------------------------------------------------------------- distributions

    def _arg_term(self, a: Argument) -> Term | None:
        if isinstance(a.literal, float):
            return Num(a.literal, a.span)
        if isinstance(a.literal, tuple):
            return Stack(tuple(Num(v, a.span) for v in a.literal), a.span)
        if a.name is None:
            self.problems.append(Unsupported(a.span, "an argument the export cannot read"))
            return None
        if not a.index:
            return Ref(a.name, a.span)
        indices: tuple[Term | None, ...] = tuple(
            None if i in self.plan.plates or i in self.plan.module.objects else Ref(i, a.span)
            for i in a.index
        )
        return Gather(a.name, indices, a.span, a.index_plates)

    def _arguments(self, site: Site, family: _Family) -> dict[str, Term] | None:
        """The site's arguments by Stan's parameters, in Stan's order."""
        assert site.family is not None
        qvr = FAMILIES[site.family]
        span = site.step.span
        given: dict[str, Term] = {}
        for a in site.args:
            t = self._arg_term(a)
            if t is None:
                return None
            given[a.param] = t
        for p in qvr.params:
            if p.name not in given and p.default is not None:
                given[p.name] = Num(p.default, span)
        probs = given.get("probs")
        if family.stan == "categorical" and isinstance(probs, Stack):
            given["probs"] = _normalised(probs)
        if family.rewrite is not None:
            given.update(family.rewrite(given, span))
        out: dict[str, Term] = {}
        for name in family.params + (family.truncation or ()):
            if name in given:
                out[name] = given[name]
            elif name.isdigit():
                out[name] = Num(float(name), span)
            else:
                self.problems.append(Unsupported(span, f"{site.family} without `{name}`"))
                return None
        return out

    def _rank(self, site: Site, name: str) -> int:
        assert site.family is not None
        p = FAMILIES[site.family].param(name)
        return p.rank if p is not None else _DERIVED_RANK.get(name, 0)

    def _dist(
        self, site: Site, family: _Family, target: Printed, ctx: Ctx
    ) -> tuple[str, str, tuple[str, str] | None] | None:
        """(distribution, its arguments, its truncation's bounds) for `target` read in `ctx`; None
        (with the problem) where an argument does not fit the values."""
        args = self._arguments(site, family)
        if args is None:
            return None
        texts: dict[str, str] = {}
        for name, term in args.items():
            text = self._arg(site, family, name, term, target, ctx)
            if text is None:
                return None
            texts[name] = text
        main = ", ".join(texts[n] for n in family.params)
        bounds = None
        if family.truncation is not None:
            bounds = (texts[family.truncation[0]], texts[family.truncation[1]])
        return family.stan, main, bounds

    def _arg(
        self, site: Site, family: _Family, name: str, term: Term, target: Printed, ctx: Ctx
    ) -> str | None:
        span = term.span
        if name in family.ints:
            return self._int_arg(term, ctx, target)
        p = self.printer.expr(term, ctx)
        if p is None:
            return None
        rank = self._rank(site, name)
        v = p.value
        if rank == 0:
            if v.scalar:
                return p.text
            if (
                v.kind in ("vector", "matrix", "row_vector")
                and not v.event
                and v.plates == target.value.plates
            ):
                return _flat(p, target.value)
            self.problems.append(
                Unsupported(
                    span,
                    f"`{name}` over {_words(v.plates)} for values over "
                    f"{_words(target.value.plates)}",
                )
            )
            return None
        if rank == 1:
            if v.scalar and target.value.event:
                return f"rep_vector({p.text}, {self.size(target.value.axes[-1])})"
            if v.kind == "vector":
                return p.text
            self.problems.append(
                Unsupported(span, f"`{name}` is not one vector where Stan takes one")
            )
            return None
        if v.kind == "matrix":
            return p.text
        self.problems.append(Unsupported(span, f"`{name}` is not a matrix where Stan takes one"))
        return None

    def _int_arg(self, term: Term, ctx: Ctx, target: Printed) -> str | None:
        if isinstance(term, Num) and float(term.value).is_integer():
            return str(int(term.value))
        if isinstance(term, Ref):
            b = self.lookup(term.name)
            if b is not None and b.value.kind in ("int", "ints") and b.offset is None:
                p = at(Printed(b.stan, b.value), ctx)
                if p.value.kind == "int" or p.value.axes == target.value.axes:
                    return p.text
        self.problems.append(
            Unsupported(
                term.span,
                "Stan takes this count as a whole number: give it as one, or as whole-number data",
            )
        )
        return None

    def _target(self, site: Site, ctx: Ctx) -> Printed | None:
        """The site's value as its distribution reads it: a 1-based copy of indices."""
        b = self.lookup(site.name)
        if b is None:
            return None
        assert site.family is not None
        name = b.index if FAMILIES[site.family].support.kind in _FROM_ZERO else b.stan
        if name is None:
            return None
        return at(Printed(name, b.value), ctx)

    def _loop_needed(self, site: Site, family: _Family, target: Printed) -> bool:
        """Whether Stan needs the draws one at a time: a vector family over plates (but
        an array of indices under one vector), or an argument that differs per draw
        and is itself a vector."""
        if not target.value.plates:
            return False
        assert site.family is not None
        if FAMILIES[site.family].event_rank and not family.over_ints:
            return True
        args = self._arguments(site, family) or {}
        quiet = Printer(self.lookup, [], self.failed)
        for name, term in args.items():
            p = quiet.expr(term, {})
            if self._rank(site, name) and p is not None and p.value.plates:
                return True
        return False

    def _draw(self, site: Site, family: _Family) -> list[str]:
        """The `~` statement of a site outside the scopes (in a loop where Stan needs)."""
        target = self._target(site, {})
        if target is None:
            return []
        if family.flat:  # the checker allows it on a `sample` only: a parameter's prior
            return [f"// {target.text}: {site.family}, an improper flat prior: no statement"]
        if not self._loop_needed(site, family, target):
            got = self._dist(site, family, target, {})
            if got is None:
                return []
            stan, args, bounds = got
            return [f"{_flat(target, target.value)} ~ {stan}({args}){_truncated(bounds)};"]
        plates = target.value.plates
        if len(plates) != 1:
            self.problems.append(
                Unsupported(
                    site.step.span,
                    "draws one at a time over more than one plate; the export loops over one",
                )
            )
            return []
        self.active.append(set())
        i = self.fresh("i")
        ctx = {plates[0]: i}
        inner = self._target(site, ctx)
        got = self._dist(site, family, inner, ctx) if inner is not None else None
        self.active.pop()
        if got is None or inner is None:
            return []
        stan, args, bounds = got
        return [
            f"for ({i} in 1:{self.size(plates[0])}) {{",
            f"  {inner.text} ~ {stan}({args}){_truncated(bounds)};",
            "}",
        ]

    def _lpdf(self, site: Site, family: _Family, ctx: Ctx) -> str | None:
        """The exact log density of a site in a scope, read in `ctx` (a sum over what is
        left of its plates), constants kept."""
        target = self._target(site, ctx)
        if target is None:
            return None
        if self._loop_needed(site, family, target):
            self.problems.append(
                Unsupported(
                    site.step.span,
                    "inside `marginalize`, the export writes draws of numbers (or indices under "
                    "one probability vector)",
                )
            )
            return None
        got = self._dist(site, family, target, ctx)
        if got is None:
            return None
        stan, args, bounds = got
        assert site.family is not None
        suffix = "lpmf" if FAMILIES[site.family].discrete else "lpdf"
        value = _flat(target, target.value)
        text = f"{stan}_{suffix}({value} | {args})"
        count = "" if target.value.scalar else f"num_elements({target.text}) * "
        if family.half:  # |x|: twice the density on x >= 0
            text += f" + {count}log2()"
        if bounds is not None:
            if not target.value.scalar:
                self.problems.append(
                    Unsupported(
                        site.step.span, "a truncated family over plates inside `marginalize`"
                    )
                )
                return None
            low, high = bounds  # the mass the truncation keeps
            text += f" - log_diff_exp({stan}_lcdf({high} | {args}), {stan}_lcdf({low} | {args}))"
        return text

    # -------------------------------------------------------------- marginalize

    def _scope(self, node: Node, ctx: Ctx, outer: str | None, add: str) -> list[str]:
        """Lines that add the scope's exact log sum to `add` (`target`, or the slot of the
        value of the scope around it): per group, log_sum_exp over the coordinate's values
        of its log prior plus the scope's terms."""
        site = node.step
        assert isinstance(site, Site)
        span = site.step.span
        if not site.sums_exactly:
            self.problems.append(
                Unsupported(
                    span,
                    f"reduction={site.reduction}: qvr sums the coordinate out exactly "
                    "(logsumexp), and so does the export",
                )
            )
            return []
        if len(site.plates) > 1:
            self.problems.append(
                Unsupported(span, "groups over more than one plate; the export groups by one")
            )
            return []
        groups = site.plates[0] if site.plates else None
        if outer is not None and groups != outer:
            self.problems.append(
                Unsupported(
                    span,
                    f"a scope grouped by {groups or 'nothing'} inside one grouped by {outer}: "
                    "qvr sums a scope's groups into the groups around it only when they are "
                    "the same",
                )
            )
            return []
        lines: list[str] = []
        self.active.append(set())
        self.local.append({})
        try:
            inner_ctx = dict(ctx)
            loop = None
            if groups is not None and outer is None:
                loop = self.fresh("n")
                inner_ctx[groups] = loop
            summed = self._summed(site, inner_ctx)
            if summed is None:
                return []
            first, last, count, prior, offset = summed
            lp = self.fresh(f"lp_{site.name}", global_=True)
            k = self.fresh(site.name, keeps=True)
            slot = f"{lp}[{k}]" if offset == 1 else f"{lp}[{k} + 1]"
            self.local[-1][site.name] = Binding(k, INT, offset=offset, block="local")
            body = self._body(node, site, inner_ctx, groups, slot, prior)
            if body is None:
                return []
            inner = [
                f"vector[{count}] {lp};",
                f"for ({k} in {first}:{last}) {{",
                *("  " + line for line in body),
                "}",
                f"{add} += log_sum_exp({lp});",
            ]
            if loop is None:
                lines = inner
            else:
                assert groups is not None
                lines = [
                    f"for ({loop} in 1:{self.size(groups)}) {{",
                    *("  " + line for line in inner),
                    "}",
                ]
        finally:
            self.local.pop()
            self.active.pop()
        return lines

    def _summed(self, site: Site, ctx: Ctx) -> tuple[str, str, str, str, int] | None:
        """The coordinate's values (first, last, how many), its log prior as a format
        string of its loop variable, and the loop variable's offset from its value."""
        span = site.step.span
        family = site.summed_family
        if family is None:
            self.problems.append(
                Unsupported(span, f"`{site.family}` is no family the export knows")
            )
            return None
        args = {a.param: a for a in site.args}
        spec = STAN_FAMILIES.get(family.name)
        stan = spec.stan if spec is not None else None
        if spec is not None and spec.logits is not None:  # a vector of probabilities
            param = "logits" if "logits" in args else "probs"
            term = self._arg_term(args[param])
            p = self.printer.expr(term, ctx) if term is not None else None
            if p is None:
                return None
            if p.value.kind != "vector":
                self.problems.append(
                    Unsupported(args[param].span, f"`{param}` is not one vector for each group")
                )
                return None
            by = (spec.logits if param == "logits" else spec).stan
            count = self.size(p.value.axes[-1])
            return "1", count, count, f"{by}_lpmf({{}} | {p.text})", 1
        if stan == "bernoulli" and "probs" in args:
            term = self._arg_term(args["probs"])
            p = self.printer.expr(term, ctx) if term is not None else None
            if p is None:
                return None
            if not p.value.scalar:
                self.problems.append(
                    Unsupported(args["probs"].span, "`probs` is not one number for each group")
                )
                return None
            return "0", "1", "2", f"bernoulli_lpmf({{}} | {p.text})", 0
        self.problems.append(
            Unsupported(
                span, f"summing out {site.family}; the export sums Categorical and Bernoulli values"
            )
        )
        return None

    def _body(
        self, node: Node, site: Site, ctx: Ctx, groups: str | None, slot: str, prior: str
    ) -> list[str] | None:
        """The lines run for one value of the coordinate: the scope's lets, its log
        prior and terms into `slot`, then the nested scopes and the rows of `via` maps."""
        k = self.lookup(site.name)
        assert k is not None
        lets: list[str] = []
        terms: list[str] = [prior.format(k.stan)]
        after: list[str] = []
        ok = True
        for child in node.body:
            step = child.step
            if isinstance(step, Let):
                if step.kind == "score":
                    self._score(step, ctx, after, slot)
                    continue
                line = self._let(step, ctx, "local")
                ok &= line is not None
                lets += [line] if line is not None else []
                continue
            if step.kind == "marginalize" or child.summed:
                after += self._scope(child, ctx, groups, slot)
                continue
            if step.kind == "sample":
                self.problems.append(
                    Unsupported(
                        step.step.span,
                        "a `sample` inside `marginalize`; qvr does not run it either",
                    )
                )
                ok = False
                continue
            family = self._family(step)
            if family is None:
                ok = False
                continue
            got = self._observe(step, family, ctx, groups, slot)
            if got is None:
                ok = False
            elif isinstance(got, str):
                terms.append(got)
            else:
                after += got
        if not ok:
            return None
        return [*lets, f"{slot} = {' + '.join(terms)};", *after]

    def _observe(
        self, site: Site, family: _Family, ctx: Ctx, groups: str | None, slot: str
    ) -> str | list[str] | None:
        """An observation inside a scope: its log density in the group (a term), or the
        lines adding each of its rows to the group its `via` map puts it in."""
        span = site.step.span
        if groups is None:
            return self._lpdf(site, family, ctx)
        if site.via is None:
            if not site.plates or site.plates[0] != groups:
                self.problems.append(
                    Unsupported(
                        span,
                        f"an observation inside a scope grouped by {groups} that is not over "
                        f"{groups}: give it that plate, or `[via=...]` mapping its rows to groups",
                    )
                )
                return None
            return self._lpdf(site, family, ctx)
        via = self.lookup(site.via)
        if via is None or via.index is None or len(site.plates) != 1:
            self.problems.append(Unsupported(span, "a `via` map the export cannot read"))
            return None
        if via.value.axes != site.plates:
            self.problems.append(
                Unsupported(span, f"`{site.via}` runs over other rows than the observation")
            )
            return None
        rows, start = self._via_rows(site.via, groups)
        self.active.append(set())
        try:
            j, r = self.fresh("j"), self.fresh("r")
            term = self._lpdf(site, family, {**ctx, site.plates[0]: r})
        finally:
            self.active.pop()
        if term is None:
            return None
        g = ctx[groups]
        return [
            f"for ({j} in {start}[{g}]:({start}[{g} + 1] - 1)) {{",
            f"  int {r} = {rows}[{j}];",
            f"  {slot} += {term};",
            "}",
        ]

    def _via_rows(self, via: str, groups: str) -> tuple[str, str]:
        """The rows of each group of a `via` map, in `transformed data`: the rows sorted
        by group, and where each group's rows start (`start[g]` to `start[g + 1] - 1`)."""
        if via in self.via_rows:
            return self.via_rows[via]
        b = self.names[via]
        assert b.index is not None
        n, m = self.size(b.value.axes[0]), self.size(groups)
        rows, start = self.fresh(f"{b.stan}_rows", True), self.fresh(f"{b.stan}_start", True)
        self.tdata += [
            f"// the rows of each {groups}: {rows}[{start}[g]:({start}[g + 1] - 1)]",
            f"array[{n}] int {rows} = sort_indices_asc({b.stan});",
            f"array[{m} + 1] int {start} = rep_array(0, {m} + 1);",
            f"{start}[1] = 1;",
            f"for (i in 1:{n}) {start}[{b.index}[i] + 1] += 1;",
            f"for (g in 1:{m}) {start}[g + 1] += {start}[g];",
        ]
        self.via_rows[via] = (rows, start)
        return rows, start


# ---------------------------------------------------------------- helpers

_NOWHERE = Span(0, 0, 0, 0, 0, 0)


def _terms(term: Term) -> Iterator[Term]:
    yield term
    match term:
        case Unary(operand=o):
            yield from _terms(o)
        case Op(left=left, right=right):
            yield from _terms(left)
            yield from _terms(right)
        case Call(args=args) | Stack(items=args):
            for a in args:
                yield from _terms(a)
        case Gather(indices=indices):
            for i in indices:
                if i is not None:
                    yield from _terms(i)
        case _:
            pass


def _normalised(probs: Stack) -> Stack:
    """Literal probabilities divided by their sum, as torch's Categorical reads them (Stan's
    refuses a vector that is not a simplex)."""
    values = [i.value for i in probs.items if isinstance(i, Num)]
    total = sum(values)
    if len(values) != len(probs.items) or total <= 0 or total == 1.0:
        return probs
    return Stack(
        tuple(Num(v / total, i.span) for v, i in zip(values, probs.items, strict=True)), probs.span
    )


def _truncated(bounds: tuple[str, str] | None) -> str:
    return "" if bounds is None else f" T[{bounds[0]}, {bounds[1]}]"


def _flat(p: Printed, target: Value) -> str:
    """A value over two plates as one vector, in the order its target is flattened
    (a matrix column by column, an array of integers row by row)."""
    if len(p.value.plates) < 2:
        return p.text
    if target.kind == "ints":
        return f"to_array_1d({p.text})" if p.value.kind == "ints" else f"to_vector({p.text}')"
    return f"to_vector({p.text})"


def _minus_one(size: str) -> str:
    return str(int(size) - 1) if size.isdigit() else f"{size} - 1"


def _words(axes: tuple[str, ...]) -> str:
    return " * ".join(a.lstrip("#") for a in axes) or "nothing"
