"""A plan as the tree of its PyMC module (`tree.Module`), or what PyMC cannot say of it.

`lower(plan)` is the one place the PyMC export decides anything: it asks `problems` first
and writes nothing for a plan PyMC cannot say; otherwise it names each value, picks each
statement (a `pm.Data`, a distribution, a `pm.Deterministic` or a plain value, a
`pm.Potential`) and what the module imports. The summed-out scopes are
`lower_scopes.py`'s; the text is `printer.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import fields, is_dataclass

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.constraints import REAL
from qvr_core.check.model import Let, Site
from qvr_core.check.types import Plated
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.pymc.context import Context
from qvr_core.export.pymc.families import ORDERED_SETS, PYMC_FAMILIES, TRANSFORMS
from qvr_core.export.pymc.lower_scopes import PER_GROUP, mixture, mixture_statements, potential
from qvr_core.export.pymc.measures import measure_call
from qvr_core.export.pymc.problems import problems
from qvr_core.export.pymc.tree import (
    AddTerm,
    Assign,
    Blank,
    Call,
    Comment,
    Coords,
    For,
    FunctionDef,
    If,
    Import,
    KeywordCall,
    Module,
    Return,
    Source,
    Statement,
    With,
)
from qvr_core.export.targets import TARGETS


def lower(plan: Plan) -> Module | list[Unsupported]:
    """The plan's PyMC module, or every construct of it PyMC cannot say, at its span."""
    cx = Context(plan)
    found = problems(cx)
    if found:
        return found
    return _Lowering(cx).module()


class _Lowering:
    """The module of one plan PyMC can say. `early`: the observations a step reads before
    their own observe, bound as arrays up front."""

    def __init__(self, cx: Context) -> None:
        self.cx = cx
        self.early: set[str] = set()

    # ---------------------------------------------------------------- module

    def module(self) -> Module:
        cx = self.cx
        body = self._body()  # first: it names the coordinates of second axes (`State_2`)
        data_names = [*(p.name for p in cx.params), *(d.name for d in cx.plan.data)]
        renamed = {n: cx.py(n) for n in data_names if cx.py(n) != n}
        sections: list[tuple[Statement, ...]] = []
        if renamed:
            pairs = ", ".join(f'"{k}": "{v}"' for k, v in renamed.items())
            why = "Data names that are Python words, and the keyword each is passed by."
            sections.append((Comment(why, "#:"), Assign("RENAMED", f"{{{pairs}}}")))
        if cx.variables:
            kept = "(PyMC cannot keep the name)"
            sections.append(
                tuple(
                    Comment(f"QVR's `{k}` is the PyMC variable {cx.variable(k)} {kept}")
                    for k in cx.variables
                )
            )
        per_group = any(isinstance(s, AddTerm) for s in _walk(body))
        if per_group:
            sections.append((Source(PER_GROUP),))
        sections.append((self._build_model(data_names, body),))
        sections.append((_main(bool(renamed)),))
        return Module(
            cx.plan.header(TARGETS["pymc"]).rstrip("\n"),
            _imports(body, per_group),
            tuple(sections),
        )

    def _build_model(self, data_names: list[str], body: list[Statement]) -> FunctionDef:
        """`def build_model(*, <data>, **_unread)`: the file's other keys are ignored, as
        qvr ignores them."""
        cx = self.cx
        unread = "_unread"
        keywords = {cx.py(n) for n in data_names}
        while unread in keywords:
            unread += "_"
        rest = f"**{unread}: object"
        params = ("*", *(cx.py(n) for n in data_names), rest) if data_names else (rest,)
        doc = (
            f"The PyMC model of `{cx.model.name}` given its data: the keys of qvr's JSON data "
            "file\n(indices from 0, as qvr reads them); the keys it does not read are "
            "ignored, as qvr\nignores them."
        )
        model = With("pm.Model(coords=coords)", "model", tuple(body))
        return FunctionDef(
            "build_model", params, "pm.Model", None, doc, (self._coords(), model, Return("model"))
        )

    def _coords(self) -> Coords:
        """Every plate with an axis, then the second axes the statements named."""
        cx = self.cx
        entries = [
            (plate.name, cx.coord(plate.name))
            for plate in cx.plan.plates.values()
            if plate.name not in cx.one_entry
        ]
        return Coords((*entries, *cx.coords.items()))

    # ------------------------------------------------------------------ body

    def _body(self) -> list[Statement]:
        cx = self.cx
        out: list[Statement] = []
        # observations a Potential reads are pm.Data; one a step reads before its own is an
        # array up front (a pm.Data would take the name of the observed variable)
        scoped_data = {s.name for s in cx.model.sites if s.kind == "observe" and s.scope}
        read: set[str] = set()
        for node in cx.tree:
            if isinstance(node.step, Site) and node.step.kind == "observe":
                self.early |= {node.step.name} & read
            read |= node.outside
        mixtures = {id(n) for n in cx.tree if mixture(cx, n) is not None}
        for node in cx.tree:  # the observation of a mixture is written by pm.Mixture
            if id(node) in mixtures:
                scoped_data.discard(node.body[0].step.name)
        for p in cx.params:  # a number each, on one line
            py = cx.py(p.name)
            out.append(Assign(py, f"pm.Data({cx.variable(p.name)}, float({py}))"))
        # a datum combined with plated values carries their axes after its rows, which
        # the checker does not name: PyMC takes its shape from the array
        unnamed = self._broadcast_data()
        for d in cx.plan.data:
            if d.name in self.early:
                out.append(Assign(cx.py(d.name), cx.array(d.name, d.integer)))
            if d.observed and d.name not in scoped_data:
                continue
            dims = [] if d.name in unnamed else cx.unique(cx.dims(d.axes))
            args = (cx.variable(d.name), cx.array(d.name, d.integer))
            out.append(Assign(cx.py(d.name), Call("pm.Data", args, tuple(dims))))
        later = self._read_later()
        for i, node in enumerate(cx.tree):
            step = node.step
            if isinstance(step, Let):
                out += self._let(step, step.name in later[i])
            elif node.scope:
                if id(node) in mixtures:
                    out += mixture_statements(cx, node)
                else:
                    out += potential(cx, node)
            else:
                out += self._site(step, step.name in later[i])
        return out

    def _broadcast_data(self) -> set[str]:
        """Data of no known axis but their rows read (directly or through lets) by a
        `let` over plates they lack (`X * beta`, `beta : Coef`): the array's axes after
        the rows are those plates'."""
        data = {d.name: d for d in self.cx.plan.data if not d.plates}
        read: dict[str, set[str]] = {}  # a let -> the data it is computed from
        out: set[str] = set()
        for step in self.cx.model.steps:
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
        for node in reversed(self.cx.tree):
            out.append(set(seen))
            seen |= node.outside
        return out[::-1]

    # -- sites

    def _site(self, site: Site, read_later: bool) -> list[Statement]:
        """The site's random (or observed) variable, bound to its name where a later step
        reads it."""
        cx = self.cx
        assert site.family is not None
        args: list[str | KeywordCall] = [cx.variable(site.name)]
        if site.measure is not None:  # quivers' measure algebra: measures.py
            head, written = measure_call(cx, site)
            args += written
        else:
            head = PYMC_FAMILIES[site.family].pm
            args += cx.family_args(site, named=True)
        observed = site.kind == "observe"
        datum = cx.plan.datum(site.name)
        support = site.support
        if observed:
            integer = datum.integer if datum is not None else bool(support and support.discrete)
            early = site.name in self.early
            args.append(f"observed={cx.py(site.name) if early else cx.array(site.name, integer)}")
        dims = cx.site_dims(site) if (site.annotated or not observed) else []
        size = cx.event_size(site)
        named: tuple[str, ...] = ()
        if dims is None and size is not None:  # an axis without a name: the shape by sizes
            args.append(f"shape={cx.shape(site.plates, size)}")
        elif dims is not None:
            named = tuple(dims)
        if site.constraint is not None:  # one vector along its one plate (the plan's rule)
            real = FAMILIES[site.family].support == REAL
            args += _ordered(site.constraint.kind, cx.sizes[site.plates[-1]], real)
        out: list[Statement] = []
        if site.kind == "sample" and FAMILIES[site.family].discrete:
            out.append(Comment("discrete: PyMC samples it by Gibbs steps (qvr's NUTS sums it out)"))
        target = cx.py(site.name) if read_later else None
        out.append(Assign(target, Call(head, tuple(args), named)))
        return out

    # -- lets

    def _let(self, let: Let, read_later: bool) -> list[Statement]:
        cx = self.cx
        value = cx.printer(let.term)
        name = cx.py(let.name)
        if let.kind == "score":
            return [Assign(None, Call("pm.Potential", (cx.variable(let.name), f"pt.sum({value})")))]
        if not self._traced(let):
            return [Assign(name, value)]
        dims = self._let_dims(let)
        call = Call("pm.Deterministic", (cx.variable(let.name), value), tuple(dims or []))
        return [Assign(name if read_later else None, call)]

    def _traced(self, let: Let) -> bool:
        """A `pm.Deterministic`: it depends on a random variable, and it does not run over
        the data's rows unless the program returns it."""
        model = self.cx.model
        random = {s.name for s in model.sites if s.kind != "observe"}
        if not model.through_lets(let.uses) & random:
            return False
        rows = (let.type is not None and let.type.data_plates) or let.name in self.cx.plan.rows
        return not rows or let.name in model.returns

    def _let_dims(self, let: Let) -> list[str] | None:
        """A let's dims where its type names every axis (no event axes)."""
        cx = self.cx
        if let.type is None or let.type.element.event:
            return None
        if let.type.data_plates and let.name not in cx.plan.rows:
            return None
        return cx.unique(cx.dims(cx.plan.axes(let.name)))


def _ordered(kind: str, size: int, real: bool) -> list[str | KeywordCall]:
    """`transform=` and `initval=` of a variable held to the set `kind` names, a vector of
    `size`: its density stays the family's (Stan's `ordered[K]`), and PyMC's transforms
    move it in the set from an ordered start. A family over fewer numbers than the reals
    (`real` false) has a default transform (log for a positive one), which PyMC (5.14 on)
    would apply before `transform=`: `default_transform=None` leaves the chain written
    here the whole map, and an older PyMC refuses the keyword rather than mean another."""
    chain, start = ORDERED_SETS[kind]
    transform: str | KeywordCall = f"transform={chain[0]}"
    if len(chain) > 1:
        transform = KeywordCall(
            "transform", Call(f"{TRANSFORMS}.Chain", (f"[{', '.join(chain)}]",))
        )
    default = [] if real else ["default_transform=None"]
    return [*default, transform, f"initval={start.format(size=size)}"]


def _main(renamed: bool) -> If:
    """`python this_file.py data.json`: samples the model on the data file qvr reads."""
    read = "json.load(file)"
    if renamed:
        read = "{RENAMED.get(k, k): v for k, v in json.load(file).items()}"
    return If(
        '__name__ == "__main__"',
        (
            Import("json"),
            Import("sys"),
            Blank(),
            Comment("python this_file.py data.json: the data file qvr reads"),
            With('open(sys.argv[1], encoding="utf-8")', "file", (Assign("data", read),)),
            With("build_model(**data)", None, (Assign("idata", "pm.sample()"),)),
            Assign(None, "print(pm.summary(idata))"),
        ),
    )


def _imports(body: list[Statement], per_group: bool) -> tuple[tuple[Import, ...], ...]:
    """The modules the model's statements name, read off their text (a term's `np.pi`, an
    array, a scope's function alike): the standard library's, then numpy, PyMC and
    PyTensor, which `per_group` is written in."""
    text = "\n".join(_texts(body))
    standard = (Import("functools"),) if re.search(r"\bfunctools\.", text) else ()
    third: list[Import] = []
    if re.search(r"\bnp\.", text):
        third.append(Import("numpy", "np"))
    third.append(Import("pymc", "pm"))
    if re.search(r"\bpt\.", text) or per_group:
        third.append(Import("pytensor.tensor", "pt"))
    return tuple(group for group in (standard, tuple(third)) if group)


def _texts(node: object) -> Iterator[str]:
    """Every piece of Python text in a tree's nodes (names, expressions, comments)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, tuple | list):
        for item in node:
            yield from _texts(item)
    elif is_dataclass(node):
        for field in fields(node):
            yield from _texts(getattr(node, field.name))


def _walk(body: list[Statement] | tuple[Statement, ...]) -> Iterator[Statement]:
    """Every statement of `body`, those in a body of a body too."""
    for s in body:
        yield s
        if isinstance(s, FunctionDef | For | With | If):
            yield from _walk(s.body)


__all__ = ["lower"]
