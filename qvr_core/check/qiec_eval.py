"""QIEC computations checked by running them over the checker's values (`qiec_values.py`).

quivers 0.25.2 compiles a computation (`define f[e : Evidence](x : T) : R !{row} =`) with
its `case`/`motive` on indexed families, `if`, `traverse`/`map`/`fold` over lists, calls
of other computations, performances on the prelude's `Random` and `Score` and on a
module's own interfaces, and handlers (`handle i with h in body`, whose clauses `resume`
the rest of the body, once or many times). Every list here has a length the file fixes
and every index a value the file names, so the checker can run such a body itself:

- Checking a define alone runs its body once per choice of its static parameters (each
  constructor of their index), with each value parameter a value of its declared type
  that a run decides. Every type error is reported where it is written: an argument of
  the wrong type, a case without a branch for a constructor its scrutinee may hold, a
  performance the row does not allow, a returned value of the wrong type.
- A program's call step runs it again with the program's own values (`stage`): what the
  file knows is folded away (the constructor a `construct` chose, the branch a case
  takes, the handler's resumptions) and what a run decides stays a term over the
  program's names. Its draws and weights become the program's sites and score terms, as
  for the numbers-only computations of `computations.py`.

A handler's resumption is run by replaying the handled body with the answers given so far
(a body is deterministic given its answers): `resume(v)` runs the body again, answering its
first performances as before and the next with v, with nothing it draws or weighs during
the replayed prefix recorded twice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from qvr_core.builtins import FAMILIES
from qvr_core.builtins.effects import (
    MIXTURE,
    RANDOM,
    REAL_TYPE,
    SCORE,
    SITE,
    TRAVERSE,
    WEIGHT,
)
from qvr_core.builtins.functions import MAP
from qvr_core.check.defines import Draw, Weigh
from qvr_core.check.qiec_declarations import (
    EFFECT,
    FAMILY,
    HANDLER,
    INSTANCE,
    ONE_SHOT,
    Constructor,
    Family,
    Handler,
    Header,
    OperationClause,
    clause_reader,
)
from qvr_core.check.qiec_evaluation import (
    DefineScope,
    Evaluation,
    Failed,
    HandleFrame,
    InScope,
    Performed,
    Refused,
    is_arith,
    span_of,
    unknown_value,
)
from qvr_core.check.qiec_types import (
    BOOL,
    BaseT,
    DistT,
    FamilyT,
    QType,
    TypeSyntaxError,
    substitute,
    with_variables,
    written,
)
from qvr_core.check.qiec_values import (
    Built,
    Dist,
    Items,
    NotRun,
    Opaque,
    Scalar,
    Tagged,
    Value,
    as_real,
    describe,
    fits,
    merged,
    type_of,
    unit,
)
from qvr_core.check.terms import Ref, Stack, Term
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    pass

#: How deep computations may call each other (a define calling itself is refused first).
MOST_CALL_DEPTH = 64


class Evaluator(Evaluation):
    """Runs computations over checker values: their statements, calls and handlers."""

    # ------------------------------------------------------------ defines

    def define(
        self,
        header: Header,
        decl: ast.OtherDecl,
        statics: dict[str, str],
        args: tuple[Value, ...],
    ) -> Value:
        """Run a define's body with its parameters bound; its returned value, checked
        against its declared result."""
        if any(s.name == header.name for s in self.scopes):
            raise Refused(f"its recursion through {header.name}")
        if len(self.scopes) >= MOST_CALL_DEPTH:
            raise Refused(f"its calls deeper than {MOST_CALL_DEPTH}")
        env: dict[str, object] = {
            name: value for (name, _), value in zip(header.params, args, strict=True)
        }
        self.scopes.append(DefineScope(header.name, header.row, header.open_row))
        self.owners.append(decl)  # its result is its own text's too
        try:
            result = self.block(decl.clause.body, env)
            if result is None:
                raise self.fail(
                    rules.MISPLACED_RETURN,
                    f"define {header.name} ends without a return",
                    decl.name.span,
                )
            want = substitute(header.result, {}, statics)
            if not fits(result, want):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"define {header.name} returns {written(want)}, but its body gives "
                    f"{describe(result)}",
                    decl.name.span,
                )
        finally:
            self.scopes.pop()
            self.owners.pop()
        return result

    # ------------------------------------------------------------ statements

    def block(self, lines: tuple[ast.Clause, ...], env: dict[str, object]) -> Value | None:
        """Run a block's lines; its returned value, or None when it ends without one."""
        env = dict(env)
        i = 0
        while i < len(lines):
            self._tick()
            line = lines[i]
            kind = line.kind
            if kind == "let_value":
                local = _local(line)
                value = self._value_part(line.parts[1], env)
                env[local.text] = value
            elif kind == "let_bind":
                local = _local(line)
                env[local.text] = self._bound(line.parts[1], env)
            elif kind == "do":
                part = line.parts[0]
                value = self._bound(part, env)
                if i == len(lines) - 1 and isinstance(part, ast.Clause) and part.kind == "resume":
                    return value  # a clause's last `resume(v)` is its value
            elif kind == "return":
                if i != len(lines) - 1:
                    raise self.fail(
                        rules.MISPLACED_RETURN,
                        "return ends its block: nothing may follow it",
                        lines[i + 1].span,
                    )
                if not line.parts:
                    return unit()
                return self._value_part(line.parts[0], env)
            elif kind == "case":
                return self._case(line, env)
            elif kind == "if":
                orelse = (
                    lines[i + 1] if i + 1 < len(lines) and lines[i + 1].kind == "else" else None
                )
                found = self._if(line, orelse, env)
                if found is not None:
                    return found
                i += 2 if orelse is not None else 1
                continue
            elif kind == "with_instance":
                return self._with_instance(line, env)
            elif kind == "handle":
                return self._handle(line, env)
            else:
                word = line.keyword.text if line.keyword is not None else kind
                raise Refused(f"its `{word}` line")
            i += 1
        return None

    def _value_part(self, part: object, env: dict[str, object]) -> Value:
        if isinstance(part, ast.Clause):
            if part.kind == "construct":
                return self._construct(part, env)
            return self._bound(part, env)
        if not is_arith(part):
            raise Refused("its values")
        return self.expr(part, env)

    def _bound(self, part: object, env: dict[str, object]) -> Value:
        """What `let x <- ...` binds: a performance, a call, a resumption."""
        if not isinstance(part, ast.Clause):
            if is_arith(part):
                return self.expr(part, env)
            raise Refused("its bindings")
        if part.kind == "perform":
            return self._perform(part, env)
        if part.kind == "call":
            return self._call_clause(part, env)
        if part.kind == "resume":
            if not self.resumptions:
                raise self.fail(
                    rules.MISPLACED_RETURN,
                    "resume is written only in a handler's clause",
                    part.span,
                )
            value = self._value_part(part.parts[0], env) if part.parts else unit()
            return self.resumptions[-1](value, part.span)
        if part.kind == "construct":
            return self._construct(part, env)
        raise Refused(f"its {part.kind}")

    # ------------------------------------------------------------ case, if

    def _case(self, line: ast.Clause, env: dict[str, object]) -> Value:
        scrutinee_node = line.parts[0]
        if not is_arith(scrutinee_node):
            raise Refused("its case on a computed value")
        scrutinee = self.expr(scrutinee_node, env)
        t = type_of(scrutinee)
        if not isinstance(t, FamilyT):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"case takes a value of an indexed family, not {describe(scrutinee)}",
                span_of(scrutinee_node, line.span),
            )
        fam = self.family(t.family)
        if fam is None:
            raise Refused(f"its case on family {t.family}")
        motive = self._motive(line, fam, t)
        branches: dict[str, ast.Clause] = {}
        for branch in line.body:
            if branch.kind != "case_branch":
                continue
            head = branch.parts[0]
            assert isinstance(head, ast.Name)
            if fam.constructor(head.text) is None:
                raise self.ctx_undefined(
                    head, f"constructor of {fam.name}", [c.name for c in fam.constructors]
                )
            if head.text in branches:
                raise self.fail(
                    rules.DUPLICATE_DECLARATION,
                    f"case has two branches for {head.text}",
                    head.span,
                )
            branches[head.text] = branch
        possible = [c for c in fam.constructors if _may_hold(c, t, self.index_names(fam))]
        missing = [c.name for c in possible if c.name not in branches]
        if missing:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"case on {written(t)} has no branch for {', '.join(missing)}",
                line.span,
            )
        taken = [scrutinee.constructor] if isinstance(scrutinee, Built) else possible
        values: list[Value] = []
        for ctor in taken:
            branch = branches[ctor.name]
            names = [
                p.parts[0].text
                for p in branch.parts[1:]
                if isinstance(p, ast.Clause) and isinstance(p.parts[0], ast.Name)
            ]
            if len(names) != len(ctor.fields):
                raise self.fail(
                    rules.UNPACKING_COUNT,
                    f"{ctor.name} holds {len(ctor.fields)} values, but the branch names "
                    f"{len(names)}",
                    branch.span,
                )
            inner = dict(env)
            tvars = dict(zip(fam.type_params, t.statics, strict=False))
            for k, name in enumerate(names):
                if isinstance(scrutinee, Built):
                    inner[name] = scrutinee.fields[k]
                else:
                    ft = substitute(ctor.fields[k], tvars, {})
                    inner[name] = unknown_value(ft)
            value = self.block(branch.body, inner)
            if value is None:
                raise self.fail(
                    rules.MISPLACED_RETURN,
                    f"the branch for {ctor.name} ends without a return",
                    branch.span,
                )
            if motive is not None and not fits(value, motive):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"the case's motive gives {written(motive)}, but the branch for "
                    f"{ctor.name} returns {describe(value)}",
                    branch.span,
                )
            values.append(value)
        if not values:  # no constructor builds a value of this index: never reached
            if motive is None:
                raise Refused(f"its case on {written(t)}, which no constructor builds")
            return unknown_value(motive)
        if len(values) == 1:
            return values[0]
        if self.staging:
            raise NotRun(f"a case on {written(t)} whose constructor a run decides")
        return values[0]

    def _motive(self, line: ast.Clause, fam: Family, t: FamilyT) -> QType | None:
        """`motive (q : K) => R`: the branches' result, R with q read as the scrutinee's
        index."""
        r = clause_reader(self.ctx, self.owner, line)
        while r.peek() not in ("motive", ""):
            r.take()
        if not r.accept("motive"):
            return None
        try:
            binders = [n.text for n, _ in r.binders(")")] if r.accept("(") else []
            r.take("=>")
            result = with_variables(r.qtype(), frozenset(fam.type_params))
        except TypeSyntaxError as err:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH, f"case's motive: {err}", line.span
            ) from None
        return substitute(result, {}, dict(zip(binders, t.index, strict=False)))

    def _if(
        self, line: ast.Clause, orelse: ast.Clause | None, env: dict[str, object]
    ) -> Value | None:
        cond_node = line.parts[0]
        if not is_arith(cond_node):
            raise Refused("its if on a computed value")
        cond = self.expr(cond_node, env)
        if not isinstance(cond, Scalar) or cond.kind != BOOL:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"an if's condition is a Bool, not {describe(cond)}",
                span_of(cond_node, line.span),
            )
        other = orelse.body if orelse is not None else ()
        if cond.static is not None:
            return self.block(line.body if cond.static else other, env)
        before = len(self.lines)
        yes = self.block(line.body, env)
        no = self.block(other, env)
        if self.staging and len(self.lines) != before:
            raise NotRun("an if whose condition a run decides, around a draw or a weight")
        if yes is None or no is None:
            if yes is None and no is None:
                return None
            raise Refused("its if that returns on one side only")
        if type_of(yes) != type_of(no) and not (
            fits(yes, type_of(no) or BaseT("")) or fits(no, type_of(yes) or BaseT(""))
        ):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"the two sides of the if return {describe(yes)} and {describe(no)}",
                line.span,
            )
        if not self.staging:
            return yes
        out = merged(cond, _real_if(yes, no), _real_if(no, yes), line.span)
        if out is None:
            raise NotRun("an if whose condition a run decides, between values other than numbers")
        return out

    # ------------------------------------------------------------ constructors

    def _construct(self, clause: ast.Clause, env: dict[str, object]) -> Value:
        """`construct C[T](args) as F[T](i)`."""
        r = clause_reader(self.ctx, self.owner, clause)
        head = clause.parts[0]
        assert isinstance(head, ast.Name)
        try:
            r.take("construct")
            r.name()
            ctor_statics: list[QType] = []
            if r.accept("["):
                ctor_statics.append(r.qtype())
                while r.accept(","):
                    ctor_statics.append(r.qtype())
                r.take("]")
            while r.peek() not in ("as", ""):
                r.take()
            r.take("as")
            target = r.qtype()
        except TypeSyntaxError as err:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH, f"construct: {err}", clause.span
            ) from None
        found = self.constructor(head.text)
        if found is None:
            raise self.ctx_undefined(head, "constructor", self._constructors())
        fam, ctor = found
        if not isinstance(target, FamilyT) or target.family != fam.name:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{ctor.name} builds a {fam.name}, not a {written(target)}",
                clause.span,
            )
        statics = target.statics or tuple(ctor_statics)
        tvars = dict(zip(fam.type_params, statics, strict=False))
        want_index = substitute(ctor.result, tvars, {})
        assert isinstance(want_index, FamilyT)
        if want_index.index != target.index:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"{ctor.name} builds {written(want_index)}, not {written(target)}",
                clause.span,
            )
        values = [p for p in clause.parts[1:] if not isinstance(p, ast.Name)]
        if len(values) != len(ctor.fields):
            raise self.fail(
                rules.ARGUMENT_COUNT,
                f"{ctor.name} takes {len(ctor.fields)} values, not {len(values)}",
                clause.span,
            )
        fields: list[Value] = []
        for node, ft in zip(values, ctor.fields, strict=True):
            v = self._value_part(node, env)
            want = substitute(ft, tvars, {})
            if not fits(v, want):
                at = span_of(node, clause.span)
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{ctor.name} takes {written(want)}, but {self.ctx.source(at)} is "
                    f"{describe(v)}",
                    at,
                )
            fields.append(
                as_real(v)
                if isinstance(v, Scalar) and isinstance(want, BaseT) and want.name == REAL_TYPE
                else v
            )
        return Built(ctor, FamilyT(fam.name, tuple(statics), target.index), tuple(fields))

    def _constructors(self) -> list[str]:
        return [p.names[0].text for d in self.declared(FAMILY) for p in d.clause.body if p.names]

    # ------------------------------------------------------------ calls

    def _call_clause(self, clause: ast.Clause, env: dict[str, object]) -> Value:
        callee = clause.parts[0]
        assert isinstance(callee, ast.Name)
        statics = [p for p in clause.parts[1:] if isinstance(p, ast.Name)]
        values = [p for p in clause.parts[1:] if not isinstance(p, ast.Name)]
        if callee.text in (TRAVERSE.name, MAP.name) and not statics:
            return self.lifted(callee, tuple(values), env, clause.span)
        return self.call(callee, statics, tuple(values), env, clause.span)

    def call(
        self,
        callee: ast.Name,
        statics: list[ast.Name],
        nodes: tuple[object, ...],
        env: dict[str, object],
        span: Span,
    ) -> Value:
        """`f[S](args)` of a define: its statics checked against their index types, its
        row against the caller's, its arguments against its parameters."""
        found = self.header(callee.text)
        if found is None:
            raise Refused(f"its call of {callee.text}")
        header, decl = found
        self.ref(callee)
        if len(statics) != len(header.statics):
            raise self.fail(
                rules.ARGUMENT_COUNT,
                f"{callee.text} takes {len(header.statics)} static arguments, not {len(statics)}",
                span,
            )
        bound: dict[str, str] = {}
        for s, (pname, kind) in zip(statics, header.statics, strict=True):
            ctors = self.index_of(kind) or ()
            given = env.get(s.text)
            name = given if isinstance(given, str) else s.text
            if name not in ctors:
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{pname} of {callee.text} is one of {kind}'s constructors "
                    f"({', '.join(ctors)}), not {s.text}",
                    s.span,
                )
            bound[pname] = name
        if len(nodes) != len(header.params):
            raise self.fail(
                rules.ARGUMENT_COUNT,
                f"{callee.text} takes {len(header.params)} values "
                f"({', '.join(n for n, _ in header.params)}), not {len(nodes)}",
                span,
            )
        args: list[Value] = []
        for node, (pname, t) in zip(nodes, header.params, strict=True):
            v = self._value_part(node, env)
            want = substitute(t, {}, bound)
            if not fits(v, want):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{pname} of {callee.text} is {written(want)}, but "
                    f"{self.ctx.source(span_of(node, span))} is {describe(v)}",
                    span_of(node, span),
                )
            args.append(_as_declared(v, want))
        self._row_allows(header, callee)
        try:
            return self.define(header, decl, bound, tuple(args))
        except Failed as why:
            if why.reported:
                raise
            # an error in the callee's text (its own check reports it there), or one
            # these arguments cause: said at the call too
            raise self.fail(why.rule, f"{callee.text}: {why}", span) from None

    def _row_allows(self, header: Header, callee: ast.Name) -> None:
        """A callee's row: each instance is one the caller's row lists or a handler of the
        caller's handles (an open row lends the caller's own)."""
        scope = self.scopes[-1] if self.scopes else None
        if scope is None:
            return
        handled = {f.instance for f in self.frames}
        missing = [i for i in header.row if i not in scope.row and i not in handled]
        if missing and not self.staging:
            s = "" if len(missing) == 1 else "s"
            self.report(
                rules.EFFECT_ROW,
                f"{callee.text} performs on {', '.join(missing)}, which the row of define "
                f"{scope.name} does not list and no handler around the call handles: add "
                f"the instance{s} to the row",
                callee.span,
            )

    def lifted(
        self, fn: ast.Name, nodes: tuple[object, ...], env: dict[str, object], span: Span
    ) -> Value:
        """`traverse(xs, f)` and `map(xs, f)`: f's value at each entry, in order."""
        if len(nodes) != 2:
            raise self.fail(
                rules.ARGUMENT_COUNT, f"{fn.text} takes 2 values (xs, f), not {len(nodes)}", span
            )
        xs = self._value_part(nodes[0], env)
        f = self._value_part(nodes[1], env)
        items = self._list(xs, fn.text, nodes[0])
        return Items(tuple(self.apply(f, (x,), span) for x in items))

    # ------------------------------------------------------------ effects

    def _perform(self, clause: ast.Clause, env: dict[str, object]) -> Value:
        inst_name, op_name = clause.parts[0], clause.parts[1]
        assert isinstance(inst_name, ast.Name) and isinstance(op_name, ast.Name)
        statics = [p for p in clause.parts[2:] if isinstance(p, ast.Name)]
        nodes = [p for p in clause.parts[2:] if not isinstance(p, ast.Name)]
        inst = self.instance(inst_name.text, env)
        if inst is None:
            raise self.ctx_undefined(inst_name, "effect instance", self._instances(env))
        self.ref(inst_name)
        args = tuple(self._value_part(n, env) for n in nodes)
        frame = next((f for f in reversed(self.frames) if f.instance == inst.name), None)
        scope = self.scopes[-1] if self.scopes else None
        if frame is None and scope is not None and inst.name not in scope.row:
            self.report(
                rules.EFFECT_ROW,
                f"define {scope.name} performs on '{inst.name}', which its row does not "
                f"list and no handler around it handles: add it to the row",
                inst_name.span,
            )
        if inst.interface == RANDOM.name:
            return self._sample(op_name, statics, args, clause.span)
        if inst.interface == SCORE.name:
            return self._score(op_name, args, clause.span)
        interface = self.interface(inst.interface)
        if interface is None:
            raise Refused(f"its effect instance {inst.name}")
        sig = interface.operation(op_name.text)
        if sig is None:
            ops = ", ".join(n for n, _ in interface.operations)
            raise self.fail(
                rules.EFFECT_ROW,
                f"{interface.name} has no operation '{op_name.text}' (its operations: {ops})",
                op_name.span,
            )
        indices = dict(zip((n for n, _ in interface.statics), inst.statics, strict=False))
        if len(args) != len(sig.params):
            raise self.fail(
                rules.ARGUMENT_COUNT,
                f"{inst.name}.{op_name.text} takes {len(sig.params)} values, not {len(args)}",
                clause.span,
            )
        for node, v, t in zip(nodes, args, sig.params, strict=True):
            want = substitute(t, {}, indices)
            if not fits(v, want):
                raise self.fail(
                    rules.DECLARED_TYPE_MISMATCH,
                    f"{inst.name}.{op_name.text} takes {written(want)}, but "
                    f"{self.ctx.source(span_of(node, clause.span))} is {describe(v)}",
                    span_of(node, clause.span),
                )
        result = substitute(sig.result, {}, indices)
        if frame is None:
            if self.staging:
                raise NotRun(f"its performance on {inst.name}, which no handler handles")
            return unknown_value(result)
        if frame.cursor < len(frame.answers):
            answer = frame.answers[frame.cursor]
            frame.cursor += 1
            return answer
        raise Performed(frame, op_name.text, args)

    def _instances(self, env: dict[str, object]) -> list[str]:
        own = [k for k, v in env.items() if isinstance(v, InScope)]
        return own + [d.name.text for d in self.declared(INSTANCE)]

    def _sample(
        self, op: ast.Name, statics: list[ast.Name], args: tuple[Value, ...], span: Span
    ) -> Value:
        if op.text != RANDOM.operations[0].name or len(args) != 2:
            raise self.fail(
                rules.EFFECT_ROW,
                f"Random's operation is sample(site, distribution), not {op.text}",
                op.span,
            )
        site, dist = args
        if not isinstance(site, Tagged) or site.tag != SITE:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH, 'a draw names its site: site("label")', span
            )
        if not isinstance(dist, Dist | Opaque) or (
            isinstance(dist, Opaque) and not isinstance(dist.type, DistT)
        ):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"random.sample draws from a distribution, not {describe(dist)}",
                span,
            )
        element = dist.element if isinstance(dist, Dist) else _element(dist)
        if statics and statics[0].text != element:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"random.sample[{statics[0].text}] draws from a distribution of {element}s",
                statics[0].span,
            )
        label = site.value.static if isinstance(site.value, Scalar) else None
        if not self.staging:
            return Scalar(element)
        if not isinstance(dist, Dist) or dist.family not in FAMILIES or element != REAL_TYPE:
            family = dist.family if isinstance(dist, Dist) else "a distribution"
            raise NotRun(f"its draw from {family}: qvr puts draws of Reals from a family in place")
        drawn_from = _drawn(dist, str(label), span)
        key = self._draw_key()
        known = self.replayed.get(key)
        if known is not None:  # a draw of a replayed prefix: the one drawn then
            return known
        self.draws += 1
        local = f"#draw{self.draws}"
        self.lines.append(replace(drawn_from, local=local))
        drawn = Scalar(REAL_TYPE, term=Ref(local, span))
        if key:
            self.replayed[key] = drawn
        return drawn

    def _draw_key(self) -> tuple[tuple[int, int, tuple[int, ...], int], ...]:
        """Which draw of the handled bodies being run this is: in each, the resumptions
        answered so far and the draws before it (empty outside any handler)."""
        key = tuple(
            (i, id(f.body), tuple(f.shots[: f.cursor]), f.drawn) for i, f in enumerate(self.frames)
        )
        for f in self.frames:
            f.drawn += 1
        return key

    def _score(self, op: ast.Name, args: tuple[Value, ...], span: Span) -> Value:
        if op.text != SCORE.operations[0].name or len(args) != 1:
            raise self.fail(
                rules.EFFECT_ROW, f"Score's operation is add(weight), not {op.text}", op.span
            )
        w = args[0]
        if isinstance(w, Tagged) and w.tag == WEIGHT:
            w = w.value
        if not isinstance(w, Scalar) or not fits(w, BaseT(REAL_TYPE)):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"score.add takes a Real weight, not {describe(w)}",
                span,
            )
        if self.staging and not self.muted:
            self.lines.append(Weigh(w.as_term(span)))
        return unit()

    def _with_instance(self, line: ast.Clause, env: dict[str, object]) -> Value:
        """`with instance i : Interface[S] in body`: a fresh instance for the body."""
        name, iface = line.parts[0], line.parts[1]
        assert isinstance(name, ast.Name) and isinstance(iface, ast.Name)
        interface = self.interface(iface.text)
        if interface is None:
            raise self.ctx_undefined(
                iface,
                "effect",
                [d.name.text for d in self.declared(EFFECT)],
            )
        self.ref(iface)
        statics = tuple(p.text for p in line.parts[2:] if isinstance(p, ast.Name))
        inner = dict(env)
        inner[name.text] = InScope(name.text, interface.name, statics)
        value = self.block(line.body, inner)
        if value is None:
            raise self.fail(
                rules.MISPLACED_RETURN, "the with block ends without a return", line.span
            )
        return value

    def _handle(self, line: ast.Clause, env: dict[str, object]) -> Value:
        """`handle i with h in body`: the body run under h, its performances on i
        answered by h's clauses, its value passed through h's return clause."""
        inst_name, handler_name = line.parts[0], line.parts[1]
        assert isinstance(inst_name, ast.Name) and isinstance(handler_name, ast.Name)
        inst = self.instance(inst_name.text, env)
        if inst is None:
            raise self.ctx_undefined(inst_name, "effect instance", self._instances(env))
        handler = self.handler(handler_name.text)
        if handler is None:
            raise self.ctx_undefined(
                handler_name,
                "handler",
                [d.name.text for d in self.declared(HANDLER)],
            )
        self.ref(handler_name)
        if handler.interface != inst.interface or handler.statics != inst.statics:
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"handler {handler.name} handles {handler.interface}"
                f"{_bracketed(handler.statics)}, but {inst.name} is a "
                f"{inst.interface}{_bracketed(inst.statics)}",
                handler_name.span,
            )
        interface = self.interface(inst.interface)
        if interface is None:  # a prelude interface, or one checked names-only
            raise Refused(f"its handler of {inst.interface}")
        frame = HandleFrame(inst.name, handler, interface, inst.statics, line.body, env, self.owner)
        return self._resume_from(frame, [], [], line.span)

    def _resume_from(
        self, frame: HandleFrame, answers: list[Value], shots: list[int], span: Span
    ) -> Value:
        """The handled body run with `answers` for its first performances: its value
        through the return clause, or, at its next performance, the handler's clause."""
        frame.answers = list(answers)
        frame.shots = list(shots)
        frame.cursor = 0
        frame.drawn = 0
        self.frames.append(frame)
        self.owners.append(frame.owner)
        try:
            value = self.block(frame.body, frame.env)
        except Performed as p:
            if p.frame is not frame:
                raise
            self.frames.pop()
            self.owners.pop()
            return self._clause(frame, p, answers, shots, span)
        except BaseException:
            self.owners.pop()
            raise
        self.frames.pop()
        self.owners.pop()
        if value is None:
            raise self.fail(rules.MISPLACED_RETURN, "the handled block ends without a return", span)
        return self._return_clause(frame.handler, value, span)

    def _return_clause(self, handler: Handler, value: Value, span: Span) -> Value:
        if not fits(value, handler.input):
            raise self.fail(
                rules.DECLARED_TYPE_MISMATCH,
                f"handler {handler.name} takes a body of {written(handler.input)}, but it "
                f"returns {describe(value)}",
                span,
            )
        self.owners.append(self._decl(handler.name, HANDLER))
        try:
            out = self.block(handler.return_body, {handler.return_param: value})
        finally:
            self.owners.pop()
        if out is None:
            raise self.fail(
                rules.MISPLACED_RETURN,
                f"handler {handler.name}'s return clause gives no value",
                span,
            )
        return out

    def once(self, handler: str, clause: OperationClause, resumed: int, at: Span) -> None:
        """A clause that `resumes 1` resuming a second time is an error where it does."""
        if clause.resumes == ONE_SHOT and resumed > 1:
            raise self.fail(
                rules.EFFECT_ROW,
                f"{handler}'s clause for {clause.operation} resumes once (resumes 1), but "
                "resumes again here: write `resumes omega`",
                at,
            )

    def _clause(
        self, frame: HandleFrame, p: Performed, answers: list[Value], shots: list[int], span: Span
    ) -> Value:
        handler = frame.handler
        clause = next((c for c in handler.clauses if c.operation == p.operation), None)
        if clause is None:
            raise self.fail(
                rules.EFFECT_ROW,
                f"handler {handler.name} has no clause for {p.operation}",
                span,
            )
        env: dict[str, object] = dict(zip(clause.params, p.args, strict=False))
        used = [0]

        def resume(value: Value, at: Span) -> Value:
            used[0] += 1
            self.once(handler.name, clause, used[0], at)
            frame.resumed += 1
            shot = frame.resumed
            return self._resume_from(frame, [*answers, value], [*shots, shot], span)

        self.resumptions.append(resume)
        self.owners.append(self._decl(handler.name, HANDLER))
        try:
            value = self.block(clause.body, env)
        finally:
            self.resumptions.pop()
            self.owners.pop()
        if value is None:
            raise self.fail(
                rules.MISPLACED_RETURN,
                f"{handler.name}'s clause for {p.operation} gives no value",
                span,
            )
        return value


def _local(line: ast.Clause) -> ast.Name:
    local = line.parts[0]
    if (
        not isinstance(local, ast.Clause)
        or not local.parts
        or not isinstance(local.parts[0], ast.Name)
    ):
        raise Refused("its bindings")
    if len(local.parts) > 1:
        raise Refused("its typed binding")
    return local.parts[0]


def _element(v: Opaque) -> str:
    t = v.type
    return t.element.name if isinstance(t, DistT) and isinstance(t.element, BaseT) else REAL_TYPE


def _may_hold(ctor: Constructor, t: FamilyT, index_ctors: frozenset[str]) -> bool:
    """Whether a value of `t` may have been built by `ctor`: each index the type fixes
    (a constructor of the index) is the one `ctor` builds at."""
    return all(
        given not in index_ctors or built not in index_ctors or given == built
        for given, built in zip(t.index, ctor.result.index, strict=False)
    )


def _as_declared(v: Value, want: QType) -> Value:
    if isinstance(v, Scalar) and isinstance(want, BaseT) and want.name == REAL_TYPE:
        return as_real(v)
    return v


def _real_if(v: Value, other: Value) -> Value:
    if isinstance(v, Scalar) and isinstance(other, Scalar) and other.kind == REAL_TYPE:
        return as_real(v)
    return v


def _bracketed(statics: tuple[str, ...]) -> str:
    return f"[{', '.join(statics)}]" if statics else ""


def _drawn(dist: Dist, label: str, span: Span) -> Draw:
    """The draw a run puts in place for `dist` (its local set by the caller): a family's
    at its number arguments, or a `Mixture` of such families with its weights (numbers
    or values of the computation), each component a draw of its own."""
    if dist.family != MIXTURE.name:
        terms: list[tuple[str, Term]] = []
        for name, v in dist.args:
            if not isinstance(v, Scalar):
                raise NotRun(f"its draw from {dist.family} with a list argument")
            terms.append((name, v.as_term(span)))
        return Draw(None, label, dist.family, tuple(terms))
    weights, components = dist.arg("weights"), dist.arg("components")
    assert isinstance(components, Items)  # qiec_evaluation built it so
    listed = weights.items if isinstance(weights, Items) else ()
    numbers = [w for w in listed if isinstance(w, Scalar)]
    if not isinstance(weights, Items) or len(numbers) != len(listed):
        raise NotRun("its draw from a Mixture whose weights are not a list of numbers")
    parts = []
    for c in components.items:
        assert isinstance(c, Dist)
        if c.family == MIXTURE.name or c.element != REAL_TYPE:
            raise NotRun(f"its draw from a Mixture with a {c.family} component")
        parts.append(_drawn(c, label, span))
    stacked = Stack(tuple(as_real(w).as_term(span) for w in numbers), span)
    return Draw(None, label, dist.family, (("weights", stacked),), tuple(parts))


# ---------------------------------------------------------------- entry points
