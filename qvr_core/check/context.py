"""What the checker passes share while they run: findings, references, types.

References are recorded against a `SymbolKey` because symbols are frozen
values built only at the end, once every type is known.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple, TypeVar

from qvr_core import builtins
from qvr_core.check.frames import Current, Frame, Names
from qvr_core.check.spelling import close_matches
from qvr_core.check.types import Arrow, Group, ObjectType, Product, ValueType
from qvr_core.syntax import ast
from qvr_core.syntax.layout import without_comments
from qvr_core.syntax.shift import Shifter
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, Fix, Related, Rule, Severity, TextEdit, make
from qvr_core.text.span import LineIndex, Span

T = TypeVar("T")

ROLES = ("discretize", "embed", "kernel", "latent")
#: Builtin names, from the one registry (`qvr_core.builtins`).
COMBINATORS = tuple(builtins.COMBINATORS)
FAMILIES = tuple(builtins.FAMILIES)
KERNEL_FAMILIES = builtins.KERNEL_FAMILIES  # those that can follow `~` on a morphism
OPTION_KEYS = (
    "role",
    "scale",
    "init",
    "replicate",
    "param_source",
    "hidden_dim",
    "rank",
    "bins",
)
#: The roles an option applies to, where not to all: `scale` is a kernel's fixed standard
#: deviation and, as quivers 0.25.2 reads it, a latent's initial spread; `init=auto` is a
#: latent's algebra-guided start, `bins` a discretize morphism's count (quivers'
#: `_ROLE_OPTION_KEYS`).
OPTION_ROLES: dict[str, tuple[str, ...]] = {
    "scale": ("kernel", "latent"),
    "init": ("latent",),
    "param_source": ("kernel",),
    "hidden_dim": ("kernel",),
    "rank": ("kernel",),
    "bins": ("discretize",),
}
PARAM_SOURCES = tuple(builtins.PARAM_SOURCES)
#: Options whose values are names from a fixed set (the others are numbers).
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "role": ROLES,
    "param_source": PARAM_SOURCES,
    "init": ("auto",),
}
#: Keyword arguments each combinator accepts, with their literal values.
COMBINATOR_KWARGS: dict[str, dict[str, tuple[str, ...]]] = {
    c.name: {key: values for key, values, _ in c.keywords}
    for c in builtins.COMBINATORS.values()
    if c.keywords
}
#: The functions a morphism program's `let` may call (elementwise: its values have a batch axis).
UNARY_FUNCS = tuple(f.name for f in builtins.FUNCTIONS.values() if f.arity == 1 and f.in_morphisms)
BINARY_FUNCS = tuple(f.name for f in builtins.FUNCTIONS.values() if f.arity == 2 and f.in_morphisms)
KEYWORDS = builtins.RESERVED  # reserved words: never a new name (rename refuses them)


class SymbolKey(NamedTuple):
    """Identifies a definition: a top-level name, or a name local to a program."""

    name: str
    scope: str | None = None


@dataclass
class Context:
    """Shared state of one check. Findings go to the current `frame` (see frames.py)."""

    text: str
    module: ast.Module
    strict: bool
    lines: LineIndex
    frame: Frame = field(default_factory=Frame)
    # top-level tables, filled by the declaration passes
    objects: dict[str, ObjectType] = field(default_factory=dict)
    aliases: dict[str, Product] = field(default_factory=dict)
    object_decls: dict[str, ast.ObjectDecl] = field(default_factory=dict)
    top: dict[str, ast.Decl] = field(init=False)  # every top-level name -> decl
    # declarations whose frames are reused from an earlier text, by id: how they moved
    moved: dict[int, Shifter] = field(default_factory=dict)
    # record the names each frame looks up (for IncrementalChecker), or not
    recording: bool = False
    # bytes a program may need before QVR601 (None: the default budget, see sizing/too_large.py)
    memory_budget: int | None = None

    def __post_init__(self) -> None:
        self.current = Current(self.frame)
        self.top = Names(self.current) if self.recording else {}
        if self.recording:  # objects too: an edited object re-checks only what uses it
            self.objects = Names(self.current)
            self.aliases = Names(self.current)
            self.object_decls = Names(self.current)

    def enter(self, frame: Frame) -> Frame:
        """Record into `frame` from now on; returns the frame to go back to."""
        previous = self.frame
        self.frame = self.current.frame = frame
        return previous

    def real(self, decl: object, span: Span) -> Span:
        """Where `span` of `decl` is in this text (`decl` may sit where an earlier text had it)."""
        shift = self.moved.get(id(decl))
        return span if shift is None else shift.span(span)

    def placed(self, decl: object, values: list[T]) -> list[T]:
        """Facts recorded about `decl` (diagnostics, say), moved to where it is in this text."""
        shift = self.moved.get(id(decl))
        return values if shift is None else [shift(v) for v in values]

    # the current frame's records, under the names the passes use
    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.frame.diagnostics

    @property
    def references(self) -> list[tuple[Span, SymbolKey, bool]]:
        return self.frame.references

    @property
    def typed(self) -> dict[Span, tuple[object, str, str]]:
        return self.frame.typed

    @property
    def expr_types(self) -> dict[ast.Expr, Arrow | Group]:
        return self.frame.expr_types

    @property
    def reversed_scans(self) -> set[ast.Call]:
        return self.frame.reversed_scans

    @property
    def reversed_branches(self) -> dict[ast.Call, frozenset[int]]:
        return self.frame.reversed_branches

    @property
    def used(self) -> set[SymbolKey]:
        return self.frame.used

    # ------------------------------------------------------------ reporting

    def report(self, rule: Rule, message: str, span: Span, **kwargs: object) -> None:
        self.diagnostics.append(make(rule, message, span, **kwargs))

    def hint_or_error(self, rule: Rule, message: str, span: Span, **kwargs: object) -> None:
        """A hint normally, an error under the strict setting (matching by dimension)."""
        severity = Severity.ERROR if self.strict else Severity.HINT
        self.diagnostics.append(make(rule, message, span, severity=severity, **kwargs))

    def once_each(self, names: list[ast.Name], twice: str) -> dict[str, ast.Name]:
        """The first of each name in `names`, by text; each later one is reported
        (QVR102: `twice` with `{name}` for the name, pointing at the first)."""
        first: dict[str, ast.Name] = {}
        for n in names:
            seen = first.get(n.text)
            if seen is None:
                first[n.text] = n
                continue
            self.report(
                rules.DUPLICATE_DECLARATION,
                twice.format(name=n.text),
                n.span,
                related=(Related(seen.span, f"first '{n.text}'"),),
            )
        return first

    def undefined(
        self, name: ast.Name, what: str, candidates: list[str] | tuple[str, ...], extra: str = ""
    ) -> None:
        """An undefined name, with a did-you-mean suggestion and its quick fix."""
        close = self.did_you_mean(
            rules.UNDEFINED_NAME,
            f"undefined {what} '{name.text}'",
            name.span,
            name.text,
            candidates,
            otherwise=f": {extra}" if extra else "",
        )
        if close:
            # the user most likely meant to use it: do not also call it unused
            self.used.add(SymbolKey(close[0]))

    def did_you_mean(
        self,
        rule: Rule,
        message: str,
        span: Span,
        written: str,
        candidates: list[str] | tuple[str, ...],
        otherwise: str = "",
        close: list[str] | None = None,
    ) -> list[str]:
        """Report a misspelling with the closest names, one "Change to" fix each.

        `otherwise` is appended when nothing is close. `close`, when given, are the close
        names, found by the caller's own measure (`candidates` is then not read). Returns
        the close names.
        """
        close = suggest(written, candidates) if close is None else close
        fixes: tuple[Fix, ...] = ()
        if close:
            message += f": did you mean '{close[0]}'?"
            fixes = tuple(
                Fix(f"Change to '{c}'", (TextEdit(span, c),), preferred=i == 0)
                for i, c in enumerate(close)
            )
        else:
            message += otherwise
        self.report(rule, message, span, fixes=fixes)
        return close

    def unknown_option(self, key: ast.Name, owner: str, allowed: Sequence[str]) -> None:
        """An option (or keyword) `owner` does not take: QVR303 with the close key, or
        the keys it takes."""
        self.did_you_mean(
            rules.UNKNOWN_OPTION,
            f"{owner} has no option '{key.text}'",
            key.span,
            key.text,
            list(allowed),
            otherwise=f" (it takes {', '.join(allowed)})",
        )

    # ------------------------------------------------------------ recording

    def ref(self, span: Span, key: SymbolKey, definition: bool = False) -> None:
        self.references.append((span, key, definition))
        if not definition:
            self.used.add(key)

    def record_type(self, span: Span, type_: object, note: str = "") -> None:
        self.typed[span] = (type_, self.source(span), note)

    def source(self, span: Span) -> str:
        """The source under `span` as quoted in a message or a hover: on one line, its
        runs of whitespace (line breaks and indentation included) one space, so a
        wrapped expression never breaks a diagnostic's single line, and without the
        comments at the ends of its lines (`return (b,  # first` quotes `return (b,`)."""
        return " ".join(without_comments(self.text[span.start : span.end]).split())

    def related_decl(self, span: Span | None, message: str) -> tuple[Related, ...]:
        return (Related(span, message),) if span is not None else ()


def suggest(name: str, candidates: list[str] | tuple[str, ...]) -> list[str]:
    """Close spellings, best first (case differences count as close)."""
    return list(_suggest(name, tuple(candidates)))


@lru_cache(maxsize=16)
def _suggest(name: str, candidates: tuple[str, ...]) -> tuple[str, ...]:
    """`suggest`, remembered: a declaration checked again at every keystroke while it
    holds a misspelt name asks again with the same name and the same (thousands of)
    top-level names."""
    return tuple(_close(name, candidates))


def _close(name: str, candidates: tuple[str, ...]) -> list[str]:
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return [lowered[name.lower()]]
    close = close_matches(name, list(candidates), n=3, cutoff=0.6)
    if not close:  # `hidden` for `h`, `emb` for `embedding`
        close = [c for c in candidates if c and (name.startswith(c) or c.startswith(name))][:3]
    return close


def describe(t: ValueType | ObjectType | Arrow | Group | None) -> str:
    return "?" if t is None else t.label if hasattr(t, "label") else str(t)
