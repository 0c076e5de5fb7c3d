"""A plan lowered to the NumPyro module tree, or the problems that stop it.

Every decision of the export is taken here: which names the model binds, which
plates open around which steps, what each family's call is given (a number spread
to a draw's size, a probability vector normalised as torch normalises it, a gather
through `Vindex`), what `load_data` computes, which imports the module needs. The
printer only lays the tree out, so `unsupported` and `emit` ask this one function.

The plates a site runs over are `with numpyro.plate(...)` blocks; the steps between
two sites stay in the blocks open at that point (a `let` computed inside the plates
of the site before it), a site keeps the open blocks its plates begin with and opens
the rest, and a `score` closes them all (NumPyro's factor is one number).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from qvr_core.builtins import FAMILIES, Family
from qvr_core.check.model import Argument, Let, Site, Step
from qvr_core.export.numpyro.analysis import Analysis, a_number, analyse, draw_size, frames
from qvr_core.export.numpyro.families import NORMALISED, ORDERED_SETS, family_call, sized
from qvr_core.export.numpyro.measures import TRUNCATED_BY_CDF, cut_by_cdf, measure_call
from qvr_core.export.numpyro.module import (
    Assign,
    Computed,
    Datum,
    DeterministicSite,
    Factor,
    Loader,
    Main,
    ModelFunction,
    Module,
    Parameter,
    PlateBlock,
    PlateFrame,
    Return,
    Sample,
    Statement,
)
from qvr_core.export.numpyro.problems import problems
from qvr_core.export.numpyro.terms import literal, number
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.targets import TARGETS

_IMPORTS = (
    "import jax",
    "import jax.numpy as jnp",
    "import numpyro",
    "import numpyro.distributions as dist",
)
_VINDEX = "from numpyro.ops.indexing import Vindex"
#: A source's stem the docstring's command line names as it is.
_PLAIN_FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
#: NUTS as qvr runs it by default: 4 chains of 500 warmup + 500 draws.
_CHAINS, _WARMUP, _SAMPLES = 4, 500, 500


def lower(plan: Plan) -> Module | list[Unsupported]:
    """`plan` as the NumPyro module to write, or what NumPyro cannot say of it."""
    analysis = analyse(plan)
    found = problems(analysis)
    if found:
        return found
    return _Lowering(analysis).module()


@dataclass
class _Open:
    """A `with` block being filled: the (plate, dim) pairs it opened, and its body."""

    opened: list[tuple[str, int]]
    frames: tuple[PlateFrame, ...]
    body: list[Statement] = field(default_factory=list)


class _Lowering:
    """Builds the module of one analysed plan (one without problems)."""

    def __init__(self, a: Analysis) -> None:
        self.a = a
        self.plan = a.plan
        self.names = a.names
        self.top: list[Statement] = []
        self.blocks: list[_Open] = []  # the `with` blocks around the next statement
        self.vindex = False

    def module(self) -> Module:
        plan = self.plan
        model = self._model()  # first: it finds whether Vindex is used
        name = plan.model.name
        stem = plan.source.rsplit("/", 1)[-1].removesuffix(".qvr")
        # the command line to run it names the file only where the name is plain: any
        # other would need quoting for a shell, and must not reach the docstring as it is
        named = _PLAIN_FILE.fullmatch(stem) is not None
        file = f"{stem}{TARGETS['numpyro'].suffix}" if named else "THIS_FILE.py"
        if plan.data:
            run = f"on a data file qvr reads (JSON, indices from 0):\n\n    python {file} DATA.json"
        else:
            run = f"(it reads no data):\n\n    python {file}"
        imports = _IMPORTS + ((_VINDEX,) if self.vindex else ())
        return Module(
            header=plan.header(TARGETS["numpyro"]),
            doc=f"The QVR program `{name}` as a NumPyro model.\n\nRun it with NUTS {run}\n",
            imports=(("import json", "import sys"), imports),
            model=model,
            loader=self._loader(),
            main=Main(bool(plan.data), _CHAINS, _WARMUP, _SAMPLES),
            helpers=(TRUNCATED_BY_CDF,) if any(map(cut_by_cdf, plan.model.sites)) else (),
        )

    # -- the model function ---------------------------------------------------

    def _model(self) -> ModelFunction:
        data, model = self.plan.data, self.plan.model
        params = (
            [Parameter(self.names[d.name], False) for d in data if not d.observed]
            + [Parameter(self.names[d.name], True) for d in data if d.observed]
            + [Parameter(self.names[n], True) for n in model.observed_lets]
        )
        steps = model.steps
        for i, step in enumerate(steps):
            if isinstance(step, Let):
                if step.name not in model.observed_lets:  # load_data computes it
                    self._let(step)
            else:
                self._site(step, steps[i + 1 :])
        self._to([])
        return ModelFunction(tuple(params), self._model_doc(), tuple(self.top), self._return())

    def _model_doc(self) -> str:
        given = [d.name for d in self.plan.data if not d.observed]
        observed = [d.name for d in self.plan.data if d.observed]
        computed = list(self.plan.model.observed_lets)
        parts = [f"data {', '.join(given)}"] if given else []
        if observed or computed:
            made = f"; load_data computes {', '.join(computed)}" if computed else ""
            parts.append(f"observed {', '.join(observed + computed)} (None draws it{made})")
        return f"The QVR program `{self.plan.model.name}`{': ' if parts else ''}{', '.join(parts)}."

    def _return(self) -> Return | None:
        model = self.plan.model
        names = tuple(self.names[n] for n in model.returns if n in self.names)
        if not names or len(names) != len(model.returns):
            return None
        return Return(names, tuple(model.return_labels))

    # -- plates ---------------------------------------------------------------

    def _add(self, statement: Statement) -> None:
        (self.blocks[-1].body if self.blocks else self.top).append(statement)

    def _to(self, want: Sequence[tuple[str, int]]) -> None:
        """Close and open `with numpyro.plate(...)` blocks so that `want` is around,
        keeping the open blocks that are a prefix of it. A closed block becomes a node
        of the body it was opened in."""
        kept: list[tuple[str, int]] = []
        count = 0
        for block in self.blocks:
            if list(want[len(kept) : len(kept) + len(block.opened)]) != block.opened:
                break
            kept += block.opened
            count += 1
        while len(self.blocks) > count:
            done = self.blocks.pop()
            self._add(PlateBlock(done.frames, tuple(done.body)))
        new = list(want[len(kept) :])
        if not new:
            return
        # one plate takes its dimension implicitly; several name theirs
        explicit = len(want) > 1
        opened = tuple(
            PlateFrame(self.a.plates.get(p, p), self.a.sizes[p], d if explicit else None)
            for p, d in new
        )
        self.blocks.append(_Open(new, opened))

    # -- steps ----------------------------------------------------------------

    def _let(self, step: Let) -> None:
        value = self.a.terms.text(step.term)
        self.vindex |= "Vindex(" in value
        py = self.names[step.name]
        if step.kind == "score":
            self._to([])
            self._add(Factor(step.name, value))
            return
        returned = step.name in self.plan.model.returns
        if returned and not self.a.terms.depends(step.term):
            self._add(DeterministicSite(py, step.name, value))
        else:
            self._add(Assign(py, value))

    def _site(self, site: Site, later: Sequence[Step]) -> None:
        family = site.summed_family
        assert family is not None
        if site.constraint is not None:
            self._ordered(site, family)
            return
        self._to(frames(site, self.plan.sizes))
        call = self._distribution(site, family)
        observe = site.kind == "observe"
        read = site.name in self.plan.model.returns or any(site.name in s.reads() for s in later)
        self._add(
            Sample(
                target=self.names[site.name] if not observe or read else None,
                site=site.name,
                distribution=call,
                observed=self.names[site.name] if observe else None,
                enumerate=not observe and site.name in self.a.enumerated,
            )
        )

    def _ordered(self, site: Site, family: Family) -> None:
        """A latent held to `[constraint=ordered]`: NumPyro's ImproperUniform on the ordered
        set, one vector along the site's one plate (the plan refuses more), and the
        family's log density at it as a factor, summed over the vector: Stan's `ordered[K]
        mu; mu ~ normal(...)`, not renormalised over the set, as qvr scores it."""
        assert site.constraint is not None
        self._to([])  # its one plate is the vector's axis, not a batch of draws
        py = self.names[site.name]
        size = self.plan.sizes[site.plates[-1]]
        support = ORDERED_SETS[site.constraint.kind]
        uniform = f"dist.ImproperUniform({support}, (), event_shape=({size},))"
        self._add(Sample(py, site.name, uniform, observed=None, enumerate=False))
        density = f"{self._distribution(site, family)}.log_prob({py}).sum(-1)"
        self._add(Factor(f"{site.name}.{family.name}", density))

    def _distribution(self, site: Site, family: Family) -> str:
        if site.measure is not None:  # quivers' measure algebra: measures.py
            return measure_call(site, lambda a: self._argument(family, a, 0, None))
        size = draw_size(self.plan, site, family)
        args: dict[str, str] = {}
        for a in site.args:
            param = family.param(a.param)
            if param is not None:
                args[a.param] = self._argument(family, a, param.rank, size)
        for p in family.params:
            if p.name not in args and p.default is not None:
                args[p.name] = number(p.default)
        if sized(family):
            args["dimension"] = str(size)
        call = family_call(family.name, args)
        assert call is not None
        return call

    def _argument(self, family: Family, a: Argument, rank: int, size: int | None) -> str:
        normalised = NORMALISED.get(family.name) == a.param
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
        terms = self.a.terms
        if a.index:
            indices = [
                None if i in terms.plates else self._index(i)
                for k, i in enumerate(a.index)
                if not (
                    i in terms.plates
                    and k < len(a.index_plates)
                    and a.index_plates[k] in terms.one_entry
                )
            ]
            enumerated = any(i in terms.dependent for i in a.index)
            self.vindex |= enumerated
            text = terms.gather(a.name, indices, enumerated=enumerated)
        else:
            text = self.names[a.name]
        if rank == 1 and size is not None and a_number(self.a, a):
            return f"jnp.broadcast_to({text}, ({size},))"
        simplex = a.type is not None and a.type.element.kind == "simplex"
        if normalised and not simplex:
            return f"{text} / jnp.sum({text}, axis=-1, keepdims=True)"
        return text

    def _index(self, name: str) -> str:
        py = self.names[name]
        if name in self.a.terms.integer or name in self.a.enumerated:
            return py
        return f"jnp.asarray(jnp.round({py}), dtype=int)"

    # -- data -------------------------------------------------------------------

    def _loader(self) -> Loader:
        data = tuple(
            Datum(self.names[d.name], d.name, "int" if d.integer else "float", d.axes)
            for d in self.plan.data
        )
        return Loader(data, self._computed() if self.plan.model.observed_lets else None)

    def _data_dict(self) -> str:
        """The name of `load_data`'s dict of data: one no QVR name takes."""
        name = "data"
        while name in self.names.values():
            name += "_"
        return name

    def _computed(self) -> Computed:
        """How `load_data` computes the observed lets from the data (the lets they read
        first), as qvr computes them before a run. The data are read from the dict, the
        lets between are locals named `_<let>` (no name of `load_data`'s own, nor a
        module it reads, is shadowed)."""
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
        names = {d.name: f"{data}[{literal(self.names[d.name])}]" for d in self.plan.data}
        for n in needed:  # an observed let is read back from the dict, the others are locals
            observed = n in model.observed_lets
            names[n] = f"{data}[{literal(self.names[n])}]" if observed else f"_{self.names[n]}"
        terms = replace(self.a.terms, names={**self.names, **names})
        body: list[Assign] = []
        for step in model.steps:
            if step.name not in needed or not isinstance(step, Let):
                continue
            value = terms.text(step.term)
            if step.name in model.observed_lets:
                site = model.site(step.name)
                family = FAMILIES.get(site.family or "") if site is not None else None
                if family is not None and family.discrete:  # a count or an index: whole numbers
                    value = f"jnp.asarray(jnp.round({value}), dtype=int)"
            body.append(Assign(names[step.name], value))
        return Computed(data, tuple(model.observed_lets), tuple(body))


__all__ = ["lower"]
