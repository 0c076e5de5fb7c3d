"""The model view of a Bayesian program: what the runtime compiles it from.

A program built from family steps (`sample tau <- HalfCauchy(5.0)`,
`observe y : School <- Normal(theta, sigma)`), `let`/`score` arithmetic,
`marginalize` scopes and data variables is checked into a `Model`: its steps
in source order, each site with its family, its arguments bound to the
family's parameters (`qvr_core.builtins.bind`), its plates, options and the
marginalised scopes it sits in; the program's typed parameters; and its data
variables, the names bound from the data when the model is fitted (observed
targets and free names the steps read, as quivers' host-data channel binds
them). Every fact here is final: the runtime, graph and editor read it and
re-derive nothing.

Shapes: a site's value is a `Plated` (types.py): one element of the family's
support per index of its plates (`theta : School -> R`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from qvr_core.builtins import FAMILIES, Constraint, Family
from qvr_core.builtins.objects import REAL_PARAMETER
from qvr_core.check.terms import Term, refs
from qvr_core.check.types import Plated, Product
from qvr_core.syntax import ast
from qvr_core.text.span import Span

SiteKind = Literal["sample", "observe", "marginalize"]
#: Step options quivers documents for sample / observe / marginalize steps, and qvr's own
#: `constraint` (Stan's `ordered[K]`: `STEP_CONSTRAINTS`), which every quivers grammar parses.
CONSTRAINT_OPTION = "constraint"
STEP_OPTIONS = ("over", "iid_over", "via", "reduction", CONSTRAINT_OPTION)
#: `reduction=` values: how a marginalised coordinate is integrated out.
REDUCTIONS = ("logsumexp", "sum", "mean", "max")
#: The default reduction: the coordinate's probabilities added, an exact sum.
EXACT_REDUCTION = REDUCTIONS[0]


@dataclass(frozen=True)
class Argument:
    """A family argument bound to its parameter.

    `literal` is the number (or list of numbers) when the argument is written
    as one; otherwise `name` is the local, program parameter or data variable
    it reads, and `index` the names of a gather `theta[cls]` (objects or values),
    `index_plates` the plate of `theta` each of them reads (empty for data, whose
    axes the checker does not know).
    """

    param: str
    span: Span
    literal: float | tuple[float, ...] | None = None
    name: str | None = None
    index: tuple[str, ...] = ()
    index_plates: tuple[str, ...] = ()
    type: Plated | None = None


@dataclass(frozen=True)
class Measure:
    """A distribution of quivers' measure algebra, as a step writes it:
    `Mixture([0.3, 0.7], [PointMass(0.0), Poisson(rate)])`.

    `family` names a registry family: a number family (a leaf, `Poisson(rate)`) or an
    operator (`Family.measure`: `Mixture`, `Restrict`, `Normalize`, `PointMass`,
    `Pushforward`). `args` are its number arguments bound to their parameters, as a
    family site's; `parts` the distributions it takes (a `Restrict`'s base, a
    `Mixture`'s components, in order); `bijector` the name a `Pushforward` pushes
    through. `support` is the set its values lie in, worked out from its parts
    (`check/measure_steps.py`); `point` says some of its mass sits on single values
    (a `PointMass` among its parts), so next to a continuous part it is no density.
    `joined` is how many of the step's innermost plates an `Independent` (only ever the
    step's whole measure) reads as one observation; 0 elsewhere.
    """

    family: str
    span: Span
    args: tuple[Argument, ...] = ()
    parts: tuple[Measure, ...] = ()
    bijector: str | None = None
    support: Constraint = field(default_factory=lambda: Constraint("real"))
    point: bool = False
    joined: int = 0

    def walk(self) -> Iterator[Measure]:
        """This measure and every one inside it, outermost first."""
        yield self
        for part in self.parts:
            yield from part.walk()

    def arguments(self) -> Iterator[tuple[str, Argument]]:
        """Every number argument at every depth with the family it is bound to,
        outermost first: what the plates, the runtime and the graph read."""
        for m in self.walk():
            for a in m.args:
                yield m.family, a

    def names(self) -> tuple[str, ...]:
        """The names its arguments read, at every depth, in order, without repeats."""
        found = [n for _, a in self.arguments() for n in (a.name, *a.index) if n]
        return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Site:
    """A random variable: a `sample`, an `observe` or a `marginalize` step.

    `family` is a builtin family's name; for a draw from another program
    (`sample v <- random_intercepts(Subject, 1.0)`) it is None and `callee`
    names what is called, with `call_args` as written.

    `plates` are the batch axes of a draw, outermost first: the finite sets of
    the `: A` annotation, then `iid_over`, then (for a family whose draw is a
    number) the `over` axes, then plates the arguments bring when the step
    writes none. For a vector family, `over` names the axes of one draw
    (`type.element.event` has their sizes). For a `marginalize`, `plates` are
    its grouping plates (`over=G`) and the annotation is the set its
    coordinate ranges over (`type.element.of`); `reduction` is how it is
    summed out. An observe inside a grouped marginalize maps its rows into the
    grouping plate through the data variable `via`.

    `scope` names the enclosing marginalised coordinates, outermost first; a
    gather by one of them (`mu[cls]`) picks the entry of the value being
    enumerated, so it adds no plate. `type.data_plates` says the value also
    runs over rows only the data sizes (a gather along a data index).

    `constraint` is the set a `sample` step's `[constraint=ordered]` (or
    `positive_ordered`) puts its value in: each row along its last plate strictly
    increasing, as Stan's `ordered[K]`. Its density stays the family's, summed over the
    row and not renormalised over the set (Stan's is not either), so it is `support`:
    what inference moves the site in, what the exports declare.

    `measure` is the whole distribution of a step of quivers' measure algebra
    (`observe y <- Mixture(...)`); `family` is then its outer operator and `args` that
    operator's own number arguments, and `support` the set the checker worked out.
    """

    name: str
    kind: SiteKind
    step: ast.SampleStep | ast.ObserveStep | ast.MarginalizeStep
    family: str | None
    args: tuple[Argument, ...]
    plates: tuple[str, ...]
    over: tuple[str, ...] = ()
    via: str | None = None
    reduction: str | None = None
    scope: tuple[str, ...] = ()
    type: Plated | None = None
    callee: str | None = None
    call_args: tuple[str, ...] = ()
    call_values: tuple[Term, ...] = ()  # the arguments as terms (an object by its name)
    annotated: bool = False  # the step writes its plates (`: A`): a value must have them
    #: A draw inside a computation a call step calls (`let c <- noisy(b)`, whose body draws
    #: at site("noise")): the call's target. The step is the call step's, for its place.
    called: str | None = None
    constraint: Constraint | None = None
    measure: Measure | None = None

    @property
    def line(self) -> int:
        """The 1-based line of its step, for messages."""
        return self.step.span.start_line + 1

    @property
    def sums_exactly(self) -> bool:
        """A `marginalize` that adds its coordinate's probabilities (`reduction=logsumexp`,
        the default): what qvr's runtime and every export compute."""
        return self.reduction in (None, EXACT_REDUCTION)

    @property
    def summable(self) -> bool:
        """A family `sample` whose family has finitely many values: without data, NUTS and
        SVI sum it out exactly (runtime/model/enumerate.py), and the exports do the same."""
        return (
            self.kind == "sample"
            and self.callee is None
            and self.family is not None
            and FAMILIES[self.family].support.finite
        )

    @property
    def support(self) -> Constraint | None:
        """The set a value of the site lies in: the step's `constraint` where it writes
        one, else its family's support from the registry (bounds named by a parameter are
        the call's arguments); None for a draw from another program, whose sites have
        their own."""
        if self.constraint is not None:
            return self.constraint
        if self.measure is not None:
            return self.measure.support
        return FAMILIES[self.family].support if self.family is not None else None

    @property
    def constraint_span(self) -> Span:
        """Where the step writes its `constraint=` (the step, where it writes none): what
        an export that cannot write the constraint points at."""
        options = getattr(self.step, "options", ())
        return next((o.span for o in options if o.key.text == CONSTRAINT_OPTION), self.step.span)

    @property
    def summed_family(self) -> Family | None:
        """The family whose values a `marginalize` sums and draws: the discrete family a
        continuous relaxation stands in for (`ContinuousBernoulli(p)` sums `Bernoulli(p)`'s
        0 and 1 under its masses, as quivers enumerates a relaxation's hard atoms), else
        the site's own family; None for a call."""
        family = FAMILIES.get(self.family or "")
        if family is not None and self.kind == "marginalize" and family.relaxes is not None:
            return FAMILIES[family.relaxes]
        return family

    def value_shape(self, sizes: Mapping[str, int]) -> tuple[int, ...] | None:
        """The shape of the site's value where the checker sizes every axis: its plates'
        axes (`axis_sizes`: a one-entry plate adds none), then one draw's axes. None where
        the data or a caller sizes an axis, or a draw has several axes (a matrix family's
        shape is the runtime's to give)."""
        t = self.type
        if t is None or t.data_plates or len(t.element.event) > 1:
            return None
        if any(p.name not in sizes for p in t.plates) or any(n < 0 for n in t.element.event):
            return None
        return (*axis_sizes((p.name for p in t.plates), sizes), *t.element.event)

    def reads(self) -> tuple[str, ...]:
        """The names this step reads (its arguments, their indices, `via`), not its body's."""
        names = [n for a in self.args for n in (a.name, *a.index) if n is not None]
        if self.measure is not None:
            names += self.measure.names()
        names += [n for t in self.call_values for n in refs(t)]
        if self.via is not None:
            names.append(self.via)
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Let:
    """A deterministic value (`let x = ...`) or a log-density term (`score s = ...`).

    A call step (`let c <- noisy(b)`) gives one for its target (the returned value) and one
    score term per weight its callee adds; `called` names the call's target then."""

    name: str
    kind: Literal["let", "score"]
    step: ast.LetStep | ast.ScoreStep
    uses: tuple[str, ...]  # the names its expression reads, in order, without repeats
    term: Term  # its expression, as the runtime evaluates it
    scope: tuple[str, ...] = ()
    type: Plated | None = None
    called: str | None = None

    @property
    def line(self) -> int:
        return self.step.span.start_line + 1

    def reads(self) -> tuple[str, ...]:
        return self.uses


Step = Site | Let


def is_scope(step: Step) -> bool:
    """A `marginalize`: the steps after it in its scope run once per value it sums."""
    return isinstance(step, Site) and step.kind == "marginalize"


@dataclass(frozen=True, eq=False)
class Node:
    """A step in the model's scope tree, with the steps of its scope under it.

    The tree is the one structure every reader lowers (the runtime evaluates it, the
    exporters print it, sizing walks it), so what a scope reads is worked out once here.
    `body` holds a `marginalize`'s scope, or for a `summed` node (a discrete `sample`
    summed out as a scope: `summed_plan`) the steps that read it. `outside` is what the
    node and its body read from outside themselves: a sum over the scope depends on
    these names and nothing else. `binds` is every name it and its body bind.
    """

    step: Step
    body: tuple[Node, ...] = ()
    summed: bool = False
    reads: frozenset[str] = field(init=False)
    outside: frozenset[str] = field(init=False)
    binds: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        reads = frozenset(self.step.reads())
        binds = {self.step.name}.union(*(inner.binds for inner in self.body))
        outside = reads.union(*(inner.outside for inner in self.body)) - binds
        object.__setattr__(self, "reads", reads)
        object.__setattr__(self, "binds", frozenset(binds))
        object.__setattr__(self, "outside", outside)

    @property
    def scope(self) -> bool:
        """A scope of its own: a `marginalize` or a summed site."""
        return self.summed or is_scope(self.step)


def scope_tree(steps: Iterable[Step]) -> tuple[Node, ...]:
    """Flat steps (each naming the scopes around it, a scope's body after its
    `marginalize`) as a tree."""
    built: list[list[tuple[Step, list[Node]]]] = [[]]  # open scopes' steps, innermost last
    depth: list[tuple[str, ...]] = [()]

    def close() -> None:
        done = built.pop()
        depth.pop()
        step, _ = built[-1][-1]
        built[-1][-1] = (step, [_node(s, b) for s, b in done])

    for step in steps:
        while len(depth) > 1 and depth[-1] != step.scope:
            close()
        built[-1].append((step, []))
        if is_scope(step):
            built.append([])
            depth.append((*step.scope, step.name))
    while len(depth) > 1:
        close()
    return tuple(_node(s, b) for s, b in built[0])


def _node(step: Step, body: list[Node]) -> Node:
    return Node(step, tuple(body))


def summed_plan(nodes: Iterable[Node], summable: Callable[[Step], bool]) -> tuple[Node, ...]:
    """`nodes` with each `summable` site turned into a summed scope over the nodes after
    it that read it, directly or through each other (the others move before it: nothing
    in them needs it), then the same down the rest and into each summed scope. A
    `marginalize` keeps its body. Sites that read each other nest, so an HMM's chain of
    states is a chain of scopes: its sum is the forward algorithm.

    Without recursion: a chain of thousands of states nests as deep, and the checker
    plans every model program as it is typed (QVR414)."""
    # one frame per scope being planned: what is left of it, where we are, what is planned,
    # and the summed step whose body it is (None for `nodes` themselves)
    frames: list[tuple[list[Node], list[int], list[Node], Step | None]] = [
        (list(nodes), [0], [], None)
    ]
    while True:
        todo, at, out, owner = frames[-1]
        i = at[0]
        if i == len(todo):
            frames.pop()
            planned = tuple(out)
            if not frames:
                return planned
            assert owner is not None
            _, parent_at, parent_out, _ = frames[-1]
            parent_out.append(Node(owner, planned, summed=True))
            parent_at[0] += 1
            continue
        node = todo[i]
        if node.summed:
            frames.append((list(node.body), [0], [], node.step))
        elif summable(node.step):
            bound = {node.step.name}
            readers: list[Node] = []
            others: list[Node] = []
            for later in todo[i + 1 :]:
                if later.outside & bound:
                    readers.append(later)
                    bound |= later.binds
                else:
                    others.append(later)
            todo[i:] = [*others, Node(node.step, tuple(readers), summed=True)]
        else:
            out.append(node)
            at[0] += 1


def _summable_outside_scopes(step: Step) -> bool:
    return isinstance(step, Site) and step.summable and not step.scope


def axis_plates(plates: Iterable[str], sizes: Mapping[str, int]) -> tuple[str, ...]:
    """The plates of `plates` that lay out a tensor axis of a value over them, outermost
    first: all but those of one entry (`FinSet 1`), which add none, so a one-row model's
    values are numbers that broadcast (qvr's layout, as quivers'). A plate whose size is
    not in `sizes` (the data sizes it) has its axis."""
    return tuple(p for p in plates if sizes.get(p) != 1)


def axis_sizes(plates: Iterable[str], sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The sizes of the tensor axes `axis_plates` lays out."""
    return tuple(sizes[p] for p in axis_plates(plates, sizes))


def one_entry(sizes: Mapping[str, int]) -> frozenset[str]:
    """The plates of one entry among `sizes`: they lay out no axis (`axis_plates`)."""
    return frozenset(p for p, n in sizes.items() if n == 1)


def walk(nodes: Iterable[Node]) -> Iterator[Node]:
    """Every node of a tree, each before the nodes of its scope (without recursion: a
    chain of summed states nests thousands deep)."""
    stack = [iter(nodes)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        yield node
        if node.body:
            stack.append(iter(node.body))


@dataclass(frozen=True)
class DataVariable:
    """A name bound from the data at fit time.

    `observed`: the target of an observe step (its value is the observation);
    otherwise a free name a step reads (a covariate, or an index such as
    `group` in `alpha[group]`, then `indexes` names the plate it indexes).
    """

    name: str
    span: Span  # where it is first bound or read
    observed: bool
    type: Plated | None = None
    indexes: str | None = None


@dataclass(frozen=True)
class Parameter:
    """A program parameter: `alpha : Real` (a hyperparameter value), `G : FinSet`
    (a plate the caller chooses), or an untyped name (`kind` None)."""

    name: str
    span: Span
    kind: str | None

    @property
    def real(self) -> bool:
        """One real number the caller or the data gives (`alpha : Real`, or untyped)."""
        return self.kind is None or self.kind == REAL_PARAMETER


@dataclass(frozen=True)
class Refusal:
    """Why NUTS and SVI cannot sum out a discrete site, and the other step that makes it
    so (the call in its sum, the site a template returns), if any. The words name no
    line: a diagnostic points at `other` (as related information the editor keeps in
    place when lines move), a run's error at the site."""

    why: str
    other: Site | None = None


@dataclass(frozen=True)
class Model:
    """The checked model of one program (see the module docstring)."""

    name: str
    decl: ast.ProgramDecl
    dom: Product | None
    cod: Product | None
    params: tuple[Parameter, ...]
    steps: tuple[Step, ...]  # in source order; a marginalize's body follows its site
    data: tuple[DataVariable, ...]
    returns: tuple[str, ...]
    return_labels: tuple[str, ...] = ()  # `return {mu: m, ...}`: the output's keys
    #: What the checker types but the model runtime cannot run yet, one line each; a
    #: program with any is refused with them (`qvr_core.plan.runnable`), never run on a guess.
    runtime_gaps: tuple[str, ...] = ()
    #: Observed `let`s of the data (`let log_earn = log(earn)`, then `observe log_earn ...`),
    #: in step order: each is an observed site whose value the run computes from the data
    #: before it starts (Stan's `transformed data`), never a key of the data file.
    observed_lets: tuple[str, ...] = ()

    @property
    def line(self) -> int:
        """The 1-based line of the program's header, for messages."""
        return self.decl.span.start_line + 1

    @property
    def sites(self) -> tuple[Site, ...]:
        return tuple(s for s in self.steps if isinstance(s, Site))

    @cached_property
    def lets(self) -> dict[str, Let]:
        """The `let`s and `score`s by name."""
        return {s.name: s for s in self.steps if isinstance(s, Let)}

    def through_lets(self, names: Iterable[str]) -> frozenset[str]:
        """`names` and every name they read through lets, transitively (a let's uses, not
        a site's arguments): what a value computed from `names` depends on."""
        seen: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in self.lets:
                todo.extend(self.lets[name].uses)
        return frozenset(seen)

    def latent_reads(self, name: str) -> frozenset[str]:
        """The sampled sites the site `name` reads, directly or through the lets it reads
        (`sigma <- HalfNormal(tau)` reads `tau`): a site whose prior reads none is a
        top-level prior, the one power-scaling sensitivity scales (`qvr sensitivity`);
        the others' priors are the model's hierarchy. Empty for a name no site binds."""
        site = next((s for s in self.sites if s.name == name), None)
        if site is None:
            return frozenset()
        sampled = {s.name for s in self.sites if s.kind == "sample"}
        return self.through_lets(site.reads()) & sampled

    @cached_property
    def tree(self) -> tuple[Node, ...]:
        """The steps as a scope tree (`scope_tree`), built once for every reader."""
        return scope_tree(self.steps)

    @cached_property
    def summed(self) -> tuple[Node, ...]:
        """The tree with each summable site outside a `marginalize` a summed scope over its
        readers (`summed_plan`): what NUTS and SVI evaluate, a site given data being run
        as it is. One inside a `marginalize` keeps its place (the runtime refuses it)."""
        return summed_plan(self.tree, _summable_outside_scopes)

    def summed_with_data(self, given: Iterable[str]) -> tuple[Node, ...]:
        """The summed plan when the data gives some summable sites their values: those are
        scored as they are, not summed (an export writes them so; the runtime runs them so
        where it meets them). `summed` itself when the data gives none."""
        names = frozenset(given) & {s.name for s in self.sites if s.summable}
        if not names:
            return self.summed
        return summed_plan(self.tree, lambda s: _summable_outside_scopes(s) and s.name not in names)

    @cached_property
    def unsummable(self) -> dict[str, Refusal]:
        """Why NUTS and SVI cannot sum out a summable site of this program when it has no
        data, by the site's name: a call inside its sum (the callee's draws would be
        summed with it), or a place inside a `marginalize` (its posterior is conditional
        on the summed coordinate, so it cannot be drawn back). The checker warns of each
        (QVR414) and a run refuses the site with the same words; a template's returned
        value that depends on one is `returned_summed`'s."""
        out: dict[str, Refusal] = {}
        calls = [s for s in self.sites if s.callee is not None]
        for node in walk(self.summed) if calls else ():  # the plan only where it can matter
            # a call in the sum binds its target there (`binds`: the scope's own names)
            call = next((c for c in calls if c.name in node.binds), None) if node.summed else None
            if call is not None:
                out.setdefault(
                    node.step.name,
                    Refusal(
                        f"NUTS and SVI sum this discrete site out, and the call of "
                        f"{call.callee} reads it: a call inside such a sum is not "
                        "supported; observe it",
                        call,
                    ),
                )
        for step in self.sites:
            if step.summable and step.scope:
                out[step.name] = Refusal(
                    f"a discrete site inside `marginalize {step.scope[-1]}` with no data: NUTS "
                    "and SVI could not draw it back, its posterior being conditional on the "
                    f"summed-out '{step.scope[-1]}'; marginalize it too (summed out, not "
                    "reported) or observe it"
                )
        return out

    @cached_property
    def returned_summed(self) -> dict[str, Refusal]:
        """The summable sites this program's returned values depend on, by name, and why
        that refuses it as a template (`sample v <- this(...)`): NUTS and SVI sum the site
        out inside the template, so the caller would read a value that is never drawn."""
        returns = set(self.returns)
        return {
            node.step.name: Refusal(
                f"template {self.name} returns a value that depends on its discrete site "
                f"'{node.step.name}', which NUTS and SVI sum out inside the template: draw it "
                "in the calling program, or observe it",
                node.step,
            )
            for node in walk(self.summed)
            if node.summed and isinstance(node.step, Site) and node.binds & returns
        }

    @property
    def observed(self) -> tuple[str, ...]:
        """The observed data names (an observed let is computed, not read: see
        `observed_lets`)."""
        return tuple(d.name for d in self.data if d.observed)

    def observed_let(self, name: str) -> Let | None:
        """The `let` an observe step of this name observes, if it observes one."""
        if name not in self.observed_lets:
            return None
        return next((s for s in self.steps if isinstance(s, Let) and s.name == name), None)

    def site(self, name: str) -> Site | None:
        return next((s for s in self.sites if s.name == name), None)

    def data_variable(self, name: str) -> DataVariable | None:
        return next((d for d in self.data if d.name == name), None)
