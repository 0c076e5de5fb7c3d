"""quivers' `deduction` declaration, checked as quivers' compiler checks it.

`deduction PCFG : Term -> Term [semiring=LogProb, start=S, depth=4]` with an indented
body of `atoms`, `binders`, sequent rules (`rule r : span(I, K, NP), span(K, J, VP) |-
span(I, J, S) #[learnable]`) and a `lexicon` declares a weighted deductive system: a
chart parser that a program runs with `parse(PCFG, sentence)`. What it means is read
from quivers 0.25.2's compiler (`dsl/compiler/deductions.py`, `_compile_deduction`):

- Option keys are a closed set on the declaration, on a rule's pragma and on a lexicon
  entry's pragma; `semiring`, `start` and `axioms` take a name, `depth` and
  `max_iterations` a whole number, `tolerance` a number. `axioms=` names a declared
  morphism and a rule's `parent=` another rule of the deduction, without a cycle.
- In a pattern an identifier that is a declared atom is that constant; any other
  identifier is a pattern variable (not only single capitals: quivers reads every
  undeclared name so). `atom` and `var` are the term algebra's own tags and cannot be
  atoms or binders.
- A lexicon entry's logical form is a closed term over the atoms and the binders'
  variables; a restricted category `{NP, VP}` lists declared atoms only.

What quivers accepts but computes otherwise than written is a warning (QVR802): a
semiring it does not know is read as LogProb; a `start` that no rule concludes and no
entry gives is a goal that is never derived; a pattern name close to an atom (`Np` for
`NP`) is a variable, not the atom. The checked declaration is a `Deduction`, which hover
describes. A `lexicon from "file"` is read by quivers when it compiles; qvr does not read
files a declaration names, so such a deduction keeps the names-only check (QVR011).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from itertools import count
from typing import TYPE_CHECKING, TypeGuard

from qvr_core.builtins.semirings import DEFAULT_SEMIRING, SEMIRINGS, Semiring
from qvr_core.check.context import SymbolKey, suggest
from qvr_core.check.deduction_system import ATOM, DEDUCTION, Deduction, Entry, Rule
from qvr_core.check.deduction_terms import (
    carries_forms,
    form_term,
    pattern_term,
    with_form_slots,
)
from qvr_core.check.grammar_rules import pattern_names
from qvr_core.check.unchecked import note, refer
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Related

if TYPE_CHECKING:
    from qvr_core.check.context import Context

#: quivers' closed option sets (0.25.2, `_DEDUCTION_OPTION_KEYS` and the pragma sets).
DEDUCTION_OPTIONS = (
    "semiring",
    "axioms",
    "start",
    "depth",
    "tolerance",
    "max_iterations",
    "signature",
    "encoder",
)
RULE_PRAGMAS = ("learnable", "parent", "bounded")
ENTRY_PRAGMAS = ("learnable",)
#: The term algebra's leaf tags, which no atom or binder may be named.
RESERVED_TAGS = ("atom", "var")
_NAME_OPTIONS = ("semiring", "start", "axioms", "signature", "encoder")
_WHOLE_OPTIONS = ("depth", "max_iterations")


def is_deduction(decl: ast.Decl) -> TypeGuard[ast.OtherDecl]:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind == DEDUCTION


def check_deduction(ctx: Context, decl: ast.OtherDecl) -> Deduction | None:
    """Check one deduction where it is written; its record, or None when it keeps the
    names-only check (a lexicon read from a file) or is a duplicate."""
    if ctx.top.get(decl.name.text) is not decl:
        return None  # a duplicate is reported where it is
    body = decl.clause.body
    if any(c.kind == "lexicon_file" for c in body):
        refer(ctx, decl.clause, frozenset(id(n) for n in decl.names))
        note(ctx, decl.name.span, f"deduction {decl.name.text} (its lexicon from a file)")
        return None
    refer(ctx, decl.clause.parts[1:3])  # the domain and codomain objects
    return _Checking(ctx, decl).run()


class _Checking:
    def __init__(self, ctx: Context, decl: ast.OtherDecl) -> None:
        self.ctx = ctx
        self.decl = decl
        self.atoms: dict[str, ast.Name] = {}
        self.binders: dict[str, ast.Name] = {}
        self._fresh = count(1)  # the bound variables of logical forms, renamed apart

    def run(self) -> Deduction:
        clause = self.decl.clause
        options = [p for p in clause.parts if isinstance(p, ast.Option)]
        values = self._options(options)
        for line in clause.body:
            if line.kind == "atoms":
                self._declare(line, self.atoms, "atom")
            elif line.kind == "binders":
                self._declare(line, self.binders, "binder")
        rule_lines = [c for c in clause.body if c.kind == "deduction_rule"]
        found = self._rules(rule_lines)
        entries = [
            e
            for c in clause.body
            if c.kind == "lexicon"
            for e in c.body
            if e.kind == "lexicon_entry"
        ]
        lexicon = tuple(self._entry(e) for e in entries)
        semiring = self._semiring(values.get("semiring"))
        start = values.get("start")
        self._goal(start, rule_lines, entries)
        depth = values.get("depth")
        patterns = [t for r in found for t in (*r.premise_terms, r.conclusion_term)]
        forms = carries_forms(tuple(self.binders), patterns)
        if forms:
            fresh = count(1)
            found = tuple(
                dataclasses.replace(
                    r,
                    premise_terms=tuple(with_form_slots(t, fresh) for t in r.premise_terms),
                    conclusion_term=with_form_slots(r.conclusion_term, fresh),
                )
                for r in found
            )
        tolerance = values.get("tolerance")
        iterations = values.get("max_iterations")
        return Deduction(
            self.decl.name.text,
            semiring,
            start.value if isinstance(start, ast.Literal) else None,  # type: ignore[arg-type]  # a name's value is its text
            depth.value if isinstance(depth, ast.Literal) else None,  # type: ignore[arg-type]  # checked whole above
            tuple(self.atoms),
            tuple(self.binders),
            found,
            lexicon,
            float(tolerance.value) if tolerance is not None else 0.0,
            int(iterations.value) if iterations is not None else 100_000,
            forms,
        )

    # ------------------------------------------------------------ options

    def _options(self, options: list[ast.Option]) -> dict[str, ast.Literal]:
        """The declaration's options, each checked for its key and the kind of its value."""
        values: dict[str, ast.Literal] = {}
        owner = f"deduction {self.decl.name.text}"
        for o in self._keys(options, DEDUCTION_OPTIONS, owner):
            v = o.value
            key = o.key.text
            if not isinstance(v, ast.Literal):
                self._bad_value(o, "a single value")
                continue
            if key in _NAME_OPTIONS and v.kind != "name":
                self._bad_value(o, "a name")
            elif key in _WHOLE_OPTIONS and (v.kind != "int" or int(v.value) < 1):
                self._bad_value(o, "a positive whole number")
            elif key == "tolerance" and (v.kind not in ("int", "float") or float(v.value) < 0):
                self._bad_value(o, "a number, zero or more")
            else:
                values[key] = v
        axioms = values.get("axioms")
        if axioms is not None:
            self._axioms(axioms)
        return values

    def _keys(
        self, options: list[ast.Option], allowed: tuple[str, ...], owner: str
    ) -> list[ast.Option]:
        """The options whose keys `allowed` holds; the others reported (QVR303)."""
        kept = []
        for o in options:
            if o.key.text in allowed:
                kept.append(o)
                continue
            self.ctx.unknown_option(o.key, owner, allowed)
        return kept

    def _bad_value(self, o: ast.Option, wanted: str) -> None:
        where = o.value.span if o.value is not None else o.span
        self.ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"`{o.key.text}=` of deduction {self.decl.name.text} takes {wanted}",
            where,
        )

    def _axioms(self, value: ast.Literal) -> None:
        name = str(value.value)
        target = self.ctx.top.get(name)
        if isinstance(target, ast.MorphismDecl):
            self.ctx.ref(value.span, SymbolKey(name))
            return
        morphisms = [n for n, d in self.ctx.top.items() if isinstance(d, ast.MorphismDecl)]
        self.ctx.undefined(
            ast.Name(name, value.span),
            "morphism (the axioms of a deduction)",
            morphisms,
        )

    def _semiring(self, value: ast.Literal | None) -> Semiring:
        if value is None:
            return DEFAULT_SEMIRING
        known = SEMIRINGS.get(str(value.value))
        if known is not None:
            return known
        self.ctx.did_you_mean(
            rules.GRAMMAR_READ_OTHERWISE,
            f"quivers reads the unknown semiring '{value.value}' as {DEFAULT_SEMIRING.name}",
            value.span,
            str(value.value),
            list(SEMIRINGS),
            otherwise=f" (it knows {', '.join(SEMIRINGS)})",
        )
        return DEFAULT_SEMIRING

    # ------------------------------------------------------------ atoms

    def _declare(self, line: ast.Clause, table: dict[str, ast.Name], what: str) -> None:
        for n in (p for p in line.parts if isinstance(p, ast.Name)):
            if n.text in RESERVED_TAGS:
                self.ctx.report(
                    rules.GRAMMAR_TERM,
                    f"'{n.text}' is the term algebra's own tag and cannot be a {what} "
                    f"({' and '.join(RESERVED_TAGS)} are reserved)",
                    n.span,
                )
                continue
            first = table.get(n.text)
            if first is not None:
                self.ctx.report(
                    rules.DUPLICATE_DECLARATION,
                    f"the {what} '{n.text}' is already declared",
                    n.span,
                    related=(Related(first.span, f"first declaration of '{n.text}'"),),
                )
                continue
            table[n.text] = n

    # ------------------------------------------------------------ rules

    def _rules(self, lines: list[ast.Clause]) -> tuple[Rule, ...]:
        names: dict[str, ast.Name] = {}
        parents: dict[str, ast.Literal] = {}
        found: list[Rule] = []
        for line in lines:
            name = line.parts[0]
            assert isinstance(name, ast.Name)
            if name.text in names:
                self.ctx.report(
                    rules.DUPLICATE_DECLARATION,
                    f"deduction {self.decl.name.text} already has a rule '{name.text}'",
                    name.span,
                    related=(Related(names[name.text].span, "first rule of that name"),),
                )
            names.setdefault(name.text, name)
            patterns = [p for p in line.parts[1:] if _is_pattern(p)]
            for p in patterns:
                self._pattern(p)
            flags = self._pragma(line, RULE_PRAGMAS, f"rule {name.text}")
            parent = flags.get("parent")
            if isinstance(parent, ast.Literal):
                parents[name.text] = parent
            text = [self.ctx.source(p.span) for p in patterns]
            atoms = frozenset(self.atoms)
            terms = [pattern_term(p, atoms) for p in patterns]
            found.append(
                Rule(
                    name.text,
                    tuple(text[:-1]),
                    text[-1] if text else "",
                    "learnable" in flags,
                    "bounded" in flags,
                    str(parent.value) if isinstance(parent, ast.Literal) else None,
                    tuple(terms[:-1]),
                    terms[-1] if terms else (),
                )
            )
        self._parents(parents, names)
        return tuple(found)

    def _pattern(self, node: object) -> None:
        """Warn where a pattern variable is spelt like an atom (`Np` for `NP`)."""
        heads: set[int] = set()
        stack = [node]
        while stack:
            item = stack.pop()
            if isinstance(item, ast.ObjApply):
                heads.add(id(item.func))
                stack.extend(item.args)
            elif isinstance(item, ast.ObjBinary):
                stack.extend((item.left, item.right))
            elif isinstance(item, ast.TypeRef):
                stack.extend(item.factors)
            elif isinstance(item, ast.Name) and id(item) not in heads:
                self._variable(item)

    def _variable(self, name: ast.Name) -> None:
        text = name.text
        if text in self.atoms or len(text) < 2:
            return
        close = [c for c in suggest(text, list(self.atoms)) if c.lower() == text.lower()]
        if close:
            self.ctx.did_you_mean(
                rules.GRAMMAR_READ_OTHERWISE,
                f"'{text}' is not an atom of deduction {self.decl.name.text}, so the rule "
                f"reads it as a pattern variable that matches anything",
                name.span,
                text,
                list(self.atoms),
                close=close,
            )

    def _pragma(self, line: ast.Clause, allowed: tuple[str, ...], owner: str) -> dict[str, object]:
        """The keys of a line's `#[...]` pragma, each with its value (True for a flag)."""
        entries = [c for c in line.parts if isinstance(c, ast.Clause) and c.kind == "pragma_entry"]
        found: dict[str, object] = {}
        for entry in entries:
            key = entry.parts[0]
            assert isinstance(key, ast.Name)
            value = entry.parts[1] if len(entry.parts) > 1 else True
            option = ast.Option(key, value if isinstance(value, ast.Literal) else None, entry.span)
            if self._keys([option], allowed, owner):
                found[key.text] = value
        return found

    def _parents(self, parents: dict[str, ast.Literal], names: dict[str, ast.Name]) -> None:
        """Each `parent=` names another rule of the deduction, and no chain comes back."""
        for rule, parent in parents.items():
            target = str(parent.value)
            if parent.kind != "name":
                self.ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"`parent=` of rule {rule} names another rule of the deduction",
                    parent.span,
                )
            elif target not in names:
                self.ctx.undefined(
                    ast.Name(target, parent.span),
                    f"rule (in deduction {self.decl.name.text})",
                    list(names),
                )
        for rule in parents:
            chain = [rule]
            while (step := parents.get(chain[-1])) is not None and str(step.value) in names:
                nxt = str(step.value)
                if nxt in chain:
                    if nxt == rule:
                        loop = " -> ".join([*chain, nxt])
                        self.ctx.report(
                            rules.CYCLIC_DEFINITION,
                            f"the parents of rule {rule} come back to it: {loop}",
                            parents[rule].span,
                        )
                    break
                chain.append(nxt)

    # ------------------------------------------------------------ lexicon

    def _entry(self, line: ast.Clause) -> Entry:
        words = tuple(
            str(p.value) for p in line.parts if isinstance(p, ast.Literal) and p.kind == "string"
        )
        rest = [p for p in line.parts if not (isinstance(p, ast.Literal) and p.kind == "string")]
        rest = [p for p in rest if not isinstance(p, ast.Clause)]
        listed = [p for p in rest if isinstance(p, ast.Name)]  # `{NP, VP}`
        fixed = [p for p in rest if isinstance(p, ast.TypeRef | ast.ObjApply | ast.ObjBinary)]
        form = rest[-1] if rest else None
        for atom in listed:
            if atom.text not in self.atoms:
                self.ctx.did_you_mean(
                    rules.GRAMMAR_TERM,
                    f"the category list of {', '.join(map(repr, words))} names '{atom.text}', "
                    f"which is not an atom of deduction {self.decl.name.text}",
                    atom.span,
                    atom.text,
                    list(self.atoms),
                )
        if form is not None:
            self._logical_form(form, words)
        flags = self._pragma(
            line, ENTRY_PRAGMAS, f"the lexicon entry {', '.join(map(repr, words))}"
        )
        atoms = frozenset(self.atoms)
        if listed:
            category: str | None = "{" + ", ".join(a.text for a in listed) + "}"
            terms = tuple((ATOM, a.text) for a in listed if a.text in self.atoms)
        elif fixed:
            category = self.ctx.source(fixed[0].span)
            terms = (pattern_term(fixed[0], atoms),)
        else:
            category = None
            terms = tuple((ATOM, a) for a in self.atoms)  # `*`: every atom, in order
        lf = self.ctx.source(form.span) if form is not None else ""  # type: ignore[attr-defined]  # an expression
        learned = "learnable" in flags or not fixed  # quivers: `*` and `{..}` always learn
        term = (
            form_term(form, atoms, frozenset(self.binders), self._fresh)
            if form is not None
            else None
        )
        return Entry(words, category, lf, learned, terms, term)

    def _logical_form(self, form: object, words: tuple[str, ...]) -> None:
        """A logical form is closed: each name an atom, a binder, or the variable a
        binder's first argument binds (`lam(x, the)` binds `x` in `the`)."""
        stack: list[tuple[object, frozenset[str]]] = [(form, frozenset())]
        while stack:
            item, bound = stack.pop()
            if isinstance(item, ast.Apply):
                args = item.args
                if (
                    item.func.text in self.binders
                    and len(args) >= 2
                    and isinstance(args[0], ast.Var)
                ):
                    inner = bound | {args[0].name.text}
                    stack.extend((a, inner) for a in args[1:])
                else:
                    stack.extend((a, bound) for a in args)
            elif isinstance(item, ast.Var):
                name = item.name.text
                if name not in self.atoms and name not in self.binders and name not in bound:
                    self.ctx.did_you_mean(
                        rules.GRAMMAR_TERM,
                        f"the logical form of {', '.join(map(repr, words))} uses '{name}', "
                        f"which no atom names and no binder binds",
                        item.name.span,
                        name,
                        [*self.atoms, *bound],
                    )
            elif isinstance(item, ast.Unary):
                stack.append((item.operand, bound))
            elif isinstance(item, ast.Binary):
                stack.extend(((item.left, bound), (item.right, bound)))
            elif isinstance(item, ast.ListExpr):
                stack.extend((a, bound) for a in item.items)

    # ------------------------------------------------------------ goal

    def _variable_goal(self, conclusion: ast.ObjectExpr) -> bool:
        """Whether a rule's conclusion may be a goal item through a variable, in one of
        the goal shapes quivers' `_goal` recognises: a bare variable (the atom `S`), or
        `span(I, J, X, ...)` whose category `X` is a variable."""
        if _variable(conclusion, self.atoms):
            return True
        return (
            isinstance(conclusion, ast.ObjApply)
            and conclusion.func.text == "span"
            and len(conclusion.args) >= 3
            and _variable(conclusion.args[2], self.atoms)
        )

    def _goal(
        self, start: ast.Literal | None, rule_lines: list[ast.Clause], entries: list[ast.Clause]
    ) -> None:
        """A `start` no rule concludes and no entry gives is a goal never derived: one no
        rule or entry mentions, unless a rule concludes it through a variable category."""
        if start is None:
            return
        name = str(start.value)
        for node in (*rule_lines, *entries):
            for p in node.parts:
                if any(n.text == name for n in pattern_names(p)):
                    return
        for line in rule_lines:
            patterns = [p for p in line.parts if _is_pattern(p)]
            if patterns and self._variable_goal(patterns[-1]):
                return
        self.ctx.report(
            rules.GRAMMAR_READ_OTHERWISE,
            f"no rule or lexicon entry of deduction {self.decl.name.text} mentions the start "
            f"'{name}', so its goal item is never derived (every parse weighs zero)",
            start.span,
        )


def _variable(node: object, atoms: Iterable[str]) -> bool:
    """Whether a pattern is one name that no atom declares: a variable."""
    return (
        isinstance(node, ast.TypeRef)
        and len(node.factors) == 1
        and node.factors[0].text not in atoms
    )


def _is_pattern(part: object) -> TypeGuard[ast.ObjectExpr]:
    """A rule's premise or conclusion, among its name and its pragma."""
    return isinstance(part, ast.TypeRef | ast.ObjApply | ast.ObjBinary | ast.EnumSet)
