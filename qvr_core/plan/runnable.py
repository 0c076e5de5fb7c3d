"""Which programs of a checked module run, on which runtime, and why not.

Two runtimes run programs: the seeds' (`runtime/compile.py`: morphisms, kernels,
networks, a batch axis) compiles a typed `ProgramInfo`, and the model runtime
(`runtime/model/`: family steps with arguments, plates, data names,
`marginalize`) compiles the checker's `Model`. A program the checker did not
type runs on neither: it is refused with the checker's own reason (its QVR011)
and the line of the construct that binds names of its own (`own_binding`: a call
step, a `factor` comprehension, a lambda, a deduction read as a value), before
any data is read, so those names are never asked for as data; never run on a
guess. `runnability` decides once, without torch, for `qvr run`, the inference
job, the Python API and the language server's run command and code lenses.
A program with an improper prior (`Flat`, `BoundedFlat`) runs, but not what draws from
its prior (the prior predictive, synthetic data): `improper_refusal` says why, naming the
site. `bound_reads` says what the bounds of a site's support read (a latent moves them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.objects import PLATE_KINDS
from qvr_core.check.model import Model, Site
from qvr_core.check.module import CheckedModule
from qvr_core.check.unchecked import declared_names
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

RuntimeKind = Literal["model", "morphism"]
#: Program parameter kinds that make a model program a template: the caller picks them.
TEMPLATE_KINDS = PLATE_KINDS


@dataclass(frozen=True)
class Runnability:
    """Whether program `name` runs: on which runtime (`kind`), or why not (`reason`)."""

    name: str
    kind: RuntimeKind | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.kind is not None


def runnability(checked: CheckedModule, name: str) -> Runnability:
    """How program `name` of `checked` runs, or the one-line reason it does not."""
    over = posterior_of(program_decl(checked, name))
    if over is not None:
        return Runnability(
            name,
            None,
            f"program {name} is a posterior block over {over} ([over={over}]): quivers keeps "
            f"it among {over}'s posteriors, not as a program to run; run {over}",
        )
    model = checked.models.get(name)
    if model is not None:
        template = next((p for p in model.params if p.kind in TEMPLATE_KINDS), None)
        if template is not None:
            return Runnability(
                name,
                None,
                f"program {name} is a template over '{template.name}' ({template.kind}): "
                "run a program that calls it",
            )
        why = _model_gap(checked, model, set())
        return Runnability(name, "model") if why is None else Runnability(name, None, why)
    info = checked.programs.get(name)
    if info is not None:
        if info.type is not None:
            return Runnability(name, "morphism")
        return Runnability(name, None, untyped_reason(checked, info.decl))
    decl = program_decl(checked, name)
    if decl is None:
        what = "a let" if name in checked.lets else "not a program"
        return Runnability(
            name,
            None,
            f"'{name}' is {what}: inference needs a program with sample or observe steps",
        )
    return Runnability(name, None, _unchecked_reason(checked, decl))


def posterior_of(decl: ast.ProgramDecl | None) -> str | None:
    """The model a program is a posterior block of (`[over=M]`), or None."""
    if decl is None:
        return None
    for o in decl.options:
        if o.key.text == "over" and isinstance(o.value, ast.Literal):
            return o.value.raw
    return None


def runnable_programs(checked: CheckedModule) -> dict[str, ast.ProgramDecl]:
    """Every program that runs, by name, in source order."""
    out: dict[str, ast.ProgramDecl] = {}
    for decl in checked.ast.decls:
        if isinstance(decl, ast.ProgramDecl) and runnability(checked, decl.name.text).ok:
            out.setdefault(decl.name.text, decl)
    return out


def _drawn_via(model: Model) -> str | None:
    """Why an observe's `via=` map cannot be the site it names: one drawn from a
    continuous family (`sample idx : Resp <- HalfNormal(1.0)`, `[via=idx]`). A via map
    names each row's group by a whole number, so its values are data (or a discrete
    draw), never real numbers a sampler moves: quivers 0.25 refuses the program when it
    compiles it (a fibration is a `Tensor[Int]` over the rows), and its older runtime
    truncated the draw to a group, which NUTS then moved out of range."""
    drawn = {s.name: s for s in model.sites if s.callee is None and s.kind != "observe"}
    groups = {s.name: s.plates for s in model.sites if s.kind == "marginalize"}
    for step in model.sites:
        site = drawn.get(step.via) if step.via is not None else None
        if site is None or site.family is None or FAMILIES[site.family].discrete:
            continue
        group = next((p for s in step.scope for p in groups.get(s, ())), None)
        into = f" in {group}" if group else ""
        return (
            f"line {step.line}, observe {step.name}: `via={site.name}` names the {site.kind} "
            f"site {site.name} (line {site.line}, {site.family}), but a via map gives each "
            f"row's group{into} as a whole number read from the data; quivers refuses it too "
            f"(a fibration is a Tensor[Int] over the rows): remove the `{site.kind} "
            f"{site.name}` step so that {site.name} is read from the data"
        )
    return None


def _model_gap(checked: CheckedModule, model: Model, seen: set[str]) -> str | None:
    """Why a checked model cannot run: a gap of its own or of a program it calls."""
    if model.runtime_gaps:
        return f"program {model.name}: {model.runtime_gaps[0]}"
    via = _drawn_via(model)
    if via is not None:
        return f"program {model.name}: {via}"
    seen.add(model.name)
    for site in model.sites:
        if site.callee is None or site.callee in seen:
            continue
        callee = checked.models.get(site.callee)
        if callee is None:
            decl = program_decl(checked, site.callee)
            what = _unchecked_reason(checked, decl) if decl is not None else "not a program"
            return (
                f"program {model.name} calls {site.callee} (line {site.line}), which cannot "
                f"run: {what}"
            )
        inner = _model_gap(checked, callee, seen)
        if inner is not None:
            return inner
    return None


def improper_prior(
    checked: CheckedModule, name: str, seen: frozenset[str] = frozenset()
) -> tuple[Model, Site] | None:
    """The first latent of model program `name`, or of a program it calls, whose prior
    qvr cannot draw from, with the model it is drawn in: an improper one (`Flat`,
    `HalfFlat`), or one held to a `[constraint=ordered]` (the family truncated to the
    set, which no factory draws); None when every prior is a distribution qvr draws (or
    `name` is no model)."""
    model = checked.models.get(name)
    if model is None or name in seen:
        return None
    for site in model.sites:
        undrawn = site.family is not None and (
            FAMILIES[site.family].improper or site.constraint is not None
        )
        if site.kind == "sample" and undrawn:
            return model, site
        if site.callee is not None:
            inner = improper_prior(checked, site.callee, seen | {name})
            if inner is not None:
                return inner
    return None


def bound_reads(model: Model, site: Site) -> dict[str, frozenset[str]]:
    """For each bound of `site`'s support named by a parameter (a `Uniform`'s or a
    `BoundedFlat`'s `low` and `high`), the names of `model` its argument reads, directly
    or through the lets it reads: `BoundedFlat(0.0, beta_max)` with `let beta_max = 1.0 -
    alpha1` reads `alpha1`. A bound that reads a latent moves with it, which inference
    must know (`inference.sites.site_transform`)."""
    support = site.support
    if support is None:
        return {}
    out: dict[str, frozenset[str]] = {}
    for bound in (support.low, support.high):
        a = next((a for a in site.args if a.param == bound), None)
        if isinstance(bound, str) and a is not None and a.name is not None:
            out[bound] = model.through_lets((a.name, *a.index))
    return out


#: What draws from a program's prior: the prior predictive (`--method prior`), a run's
#: synthetic data (no `--data`), a data file (`qvr data`).
PriorDraw = Literal["prior", "synthetic", "file"]
_IMPROPER_ENDS: dict[PriorDraw, str] = {
    "prior": "so the prior has no draws and the prior predictive (--method prior) does not "
    "exist: fit the program to data with --method nuts or svi",
    "synthetic": "so no synthetic data can be drawn from the prior: give a data file (--data)",
    "file": "so no data can be drawn from the prior: write the file from real observations",
}


def improper_refusal(checked: CheckedModule, name: str, draw: PriorDraw) -> str | None:
    """Why `draw` from the prior of program `name` cannot be made, or None: an improper
    prior has no draws, and qvr draws none of a prior held to an ordered set, so neither
    the prior predictive nor data drawn from the prior exists. NUTS and SVI on data need
    no prior draw (a chain starts where Stan's does, a guide at its own centre): they run."""
    found = improper_prior(checked, name)
    if found is None or (draw != "prior" and not _observes(checked, name)):
        return None  # the data of a program that observes nothing hold no draw of it
    model, site = found
    where = f"line {site.line}, sample {site.name} <- {site.family}"
    if site.constraint is not None:
        where += f" [constraint={site.constraint.kind}]"
    if model.name != name:
        where += f" (in program {model.name}, which {name} calls)"
    return f"program {name}: {where} is {_undrawn(site)}, {_IMPROPER_ENDS[draw]}"


def _observes(checked: CheckedModule, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether model program `name`, or a program it calls, has an observed site: what its
    synthetic data would draw from the prior."""
    model = checked.models.get(name)
    if model is None or name in seen:
        return False
    return any(
        site.kind == "observe"
        or (site.callee is not None and _observes(checked, site.callee, seen | {name}))
        for site in model.sites
    )


def _undrawn(site: Site) -> str:
    """Why qvr has no draws of `site`'s prior, in words (`improper_prior` found it)."""
    c = site.constraint
    if c is not None:  # Stan's ordered[K] scores the family there, not renormalised
        return (
            f"{site.family} held to {c.describe()}, a prior qvr does not draw from (its "
            "family truncated to the set)"
        )
    # a flat density between its arguments integrates, but is no normalised distribution
    bounded = site.support is not None and isinstance(site.support.high, str)
    why = (
        "flat between its bounds, not a normalised distribution"
        if bounded
        else "its density does not integrate"
    )
    return f"an improper prior ({why})"


def program_decl(checked: CheckedModule, name: str) -> ast.ProgramDecl | None:
    """The declaration of program `name`, typed or not; None when it is no program."""
    return next(
        (d for d in checked.ast.decls if isinstance(d, ast.ProgramDecl) and d.name.text == name),
        None,
    )


def _unchecked_reason(checked: CheckedModule, decl: ast.ProgramDecl) -> str:
    """The checker's QVR011 on the program, which says what it does not type, with the
    line of the construct that binds names of its own where there is one (`own_binding`).
    The run stops here, before it reads data: those names are never asked for as data."""
    for d in checked.diagnostics:
        if d.code == rules.NOT_CHECKED.code and d.span == decl.name.span:
            found = own_binding(checked, decl)
            at = f": line {found[0]}, {found[1]}" if found is not None else ""
            return (
                f"{d.message} ({d.code}){at}; qvr runs only what it checks; "
                f"`qvr explain {d.code}` says more"
            )
    return f"program {decl.name.text} is not checked, so it cannot run"


def untyped_reason(checked: CheckedModule, decl: ast.ProgramDecl) -> str:
    """Why a program the checker read as a seed program has no type, naming the construct:
    the first declaration it uses that the checker does not type (its QVR011, which says
    what), else the first error inside the program, else the first error of a declaration
    it uses. A run never guesses past any of them."""
    head = f"program {decl.name.text} does not type-check"
    by_name = {n.text: d for d in checked.ast.decls for n in declared_names(d)}
    notes = {d.span: d for d in checked.diagnostics if d.code == rules.NOT_CHECKED.code}
    errors = [d for d in checked.diagnostics if d.is_error]
    used: list[tuple[ast.Name, ast.Decl]] = []
    for node in _in_order((decl.dom, decl.cod, decl.steps)):
        if isinstance(node, ast.Name) and node.text in by_name:
            target = by_name[node.text]
            if target is not decl and all(target is not t for _, t in used):
                used.append((node, target))
    for name, target in used:
        for n in declared_names(target):
            note = notes.get(n.span)
            if note is not None:
                return (
                    f"{head}: line {name.span.start_line + 1} uses '{name.text}', and "
                    f"{note.message} ({note.code}); qvr runs only what it checks"
                )
    inside = [d for d in errors if decl.span.start <= d.span.start < decl.span.end]
    if inside:
        d = inside[0]
        return f"{head}: line {d.span.start_line + 1}: {d.message} ({d.code})"
    for name, target in used:
        found = next(
            (d for d in errors if target.span.start <= d.span.start < target.span.end), None
        )
        if found is not None:
            return (
                f"{head}: line {name.span.start_line + 1} uses '{name.text}', which has an "
                f"error at line {found.span.start_line + 1}: {found.message} ({found.code})"
            )
    return head


def own_binding(checked: CheckedModule, decl: ast.ProgramDecl) -> tuple[int, str] | None:
    """The first construct of program `decl` (in source order) that binds names of its
    own, a call step's target, a `factor` comprehension's or a lambda's variables, or
    reads a declaration the checker does not model (`parse(PCFG, ..)` reads the deduction
    PCFG): its 1-based line and what it is, in words. Names bound there belong to the
    program, never to its data."""
    others = {n.text: d for d in checked.ast.decls if isinstance(d, ast.OtherDecl) for n in d.names}
    for node in _in_order(decl.steps):
        found = _binding(node, others)
        if found is not None:
            return found[0].start_line + 1, found[1]
    return None


def _binding(node: object, others: dict[str, ast.OtherDecl]) -> tuple[Span, str] | None:
    if isinstance(node, ast.CallStep):
        return node.span, f"the call step that binds '{node.target.text}'"
    if isinstance(node, ast.Factor):
        names = ", ".join(f"'{n.text}'" for n, _ in node.binders)
        return node.span, f"the `factor` comprehension over {names}"
    if isinstance(node, ast.Lambda):
        return node.span, f"the lambda of '{node.param.text}'"
    if isinstance(node, ast.Var | ast.NameRef) and node.name.text in others:
        other = others[node.name.text]
        kind = other.clause.keyword.text if other.clause.keyword else other.clause.kind
        line = other.span.start_line + 1
        return node.span, f"'{node.name.text}' is the {kind} of line {line}, not a value"
    return None


def _in_order(node: object) -> Iterator[object]:
    """Every syntax node under `node`, depth first, in source order."""
    stack: list[object] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(reversed(item))
        elif type(item) is not Span and dataclasses.is_dataclass(item):
            yield item
            stack.extend(reversed([getattr(item, f.name) for f in dataclasses.fields(item)]))
