"""`let chart = parse(D, sentence)` and `chart.goal_weight()` in a Bayesian program.

quivers 0.25.2 (`dsl/program_elaboration.py`, `_parse_call`, `_deduction_call`;
`dsl/qiec_lowering.py`, `_goal_weight_value`) reads `let x = parse(D, s)` where D names
a deduction with a lexicon and `s` is a name no step binds: `s` becomes an input of the
program, the sentence, and `x` is bound to the deduction's answer over it, which
`x.goal_weight()` reads as a real number (a Boolean deduction's answer has none). The
call is a let's whole value; it adds nothing to the log density (a `score` does).

qvr reads the sentence from the data as its words (a JSON list of strings, as quivers
takes a sentence) or as word ids: each word's place among the deduction's words in the
order its lexicon lists them (`Deduction.words`), one per data row. The value is computed from the
data alone, with the deduction's learnable weights at their start (0), as quivers'
reference machine reads weights it is not given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qvr_core.builtins.deduction_calls import GOAL_WEIGHT, PARSE
from qvr_core.builtins.schemas import PARSER
from qvr_core.builtins.semirings import BOOLEAN
from qvr_core.check.chart_grammar import is_parser_call
from qvr_core.check.context import SymbolKey
from qvr_core.check.deduction_system import DEDUCTION, Deduction
from qvr_core.check.model import DataVariable, Model
from qvr_core.check.module import SymbolKind
from qvr_core.check.terms import Call, Ref, subterms
from qvr_core.check.types import Element, Plated
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.context import Context
    from qvr_core.check.passes import ModelPass

#: A sentence's type: one vector of word ids, as long as the data makes it.
WORD_IDS = Plated((), Element("index", (-1,)))


def sentences(model: Model) -> dict[str, Deduction]:
    """Each data name a `parse(D, s)` of the model reads as its sentence, with D: what
    reads a sentence's words into ids (`runs/data.py`) and what synthesises one ask."""
    out: dict[str, Deduction] = {}
    for let in model.lets.values():
        for t in subterms(let.term):
            if isinstance(t, Call) and t.deduction is not None:
                for arg in t.args:
                    if isinstance(arg, Ref):
                        out.setdefault(arg.name, t.deduction)
    return out


def not_a_morphism(ctx: Context, name: ast.Name) -> None:
    """QVR104 where a deduction is used as a morphism or a step's kernel, as quivers
    refuses it (no family, morphism or let of that name), with the spelling that parses."""
    ctx.report(
        rules.WRONG_KIND,
        f"'{name.text}' is a deduction, not a morphism: a program parses a sentence with "
        f"`let chart = {PARSE}({name.text}, sentence)`",
        name.span,
    )


def admitted(node: object) -> bool:
    """The written shapes the model checker types: `parse(D, s)` of two names, and
    `chart.goal_weight()` with no argument."""
    if isinstance(node, ast.Apply) and node.func.text == PARSE:
        return len(node.args) == 2 and all(isinstance(a, ast.Var) for a in node.args)
    return isinstance(node, ast.MethodCall) and node.method.text == GOAL_WEIGHT and not node.args


def parse_type(mc: ModelPass, node: ast.Apply, whole: bool) -> Plated | None:
    """Type `parse(D, sentence)` (`whole`: it is a let's whole value); the deduction is
    recorded for the term (`mc.parses`)."""
    ctx = mc.ctx
    if not whole:
        ctx.report(
            rules.WRONG_KIND,
            f"{PARSE}(...) binds a chart: write it as a let's whole value "
            f"(`let chart = {PARSE}(D, sentence)`) and read `chart.{GOAL_WEIGHT}()`",
            node.span,
        )
        return None
    which, sentence = node.args
    assert isinstance(which, ast.Var) and isinstance(sentence, ast.Var)  # admitted
    deduction = _deduction(mc, which.name)
    words = _sentence(mc, sentence.name, deduction)
    if deduction is None or not words:
        return None
    mc.parses[node.span] = deduction
    return Plated(())


def _deduction(mc: ModelPass, name: ast.Name) -> Deduction | None:
    ctx = mc.ctx
    n = name.text
    decl = ctx.top.get(n)
    if decl is None:
        deductions = [k for k, d in ctx.top.items() if isinstance(d, ast.OtherDecl)]
        ctx.undefined(name, "deduction", deductions)
        return None
    ctx.ref(name.span, SymbolKey(n))
    found = mc.env.deduction(n)
    if found is None:
        if isinstance(decl, ast.LetDecl) and is_parser_call(ctx.top, decl.expr):
            ctx.report(
                rules.WRONG_KIND,
                f"'{n}' is a chart {PARSER}(...), not a deduction: a program parses only "
                f"with a `deduction` that has a lexicon. quivers 0.25.2 refuses this too "
                f"(its program elaboration has no {PARSE} over a chart parser); call the "
                "parser from Python or export it",
                name.span,
            )
        elif not isinstance(decl, ast.OtherDecl) or decl.clause.kind != DEDUCTION:
            kind = type(decl).__name__.removesuffix("Decl").lower()
            ctx.report(rules.WRONG_KIND, f"'{n}' is a {kind}, not a deduction", name.span)
        return None  # a deduction checked for names only says so where it is declared
    if not found.lexicon:
        ctx.report(
            rules.WRONG_KIND,
            f"deduction {n} has no lexicon: it takes its axioms and their weights, not a "
            "sentence (quivers refuses to parse with it too)",
            name.span,
        )
        return None
    if found.semiring is BOOLEAN:
        ctx.report(
            rules.WRONG_KIND,
            f"deduction {n} answers in the Boolean semiring, which has no real value to "
            f"score: give it semiring=LogProb, Viterbi or Counting",
            name.span,
        )
        return None
    return found


def _sentence(mc: ModelPass, name: ast.Name, deduction: Deduction | None) -> bool:
    """The sentence is an input of the program, a name no step binds; hover lists the
    words its ids stand for."""
    n = name.text
    pc = mc.pc
    if n in pc.locals and n not in mc.data:
        mc.ctx.report(
            rules.WRONG_KIND,
            f"{PARSE} reads '{n}', which a step binds; the sentence a deduction parses is "
            "a program input (data)",
            name.span,
        )
        return False
    if n in mc.data:
        mc.ctx.ref(name.span, SymbolKey(n, pc.scope))
        pc.use(n)
        return True
    pc.define(name, SymbolKind.DATA, name.span, WORD_IDS, is_input=True)  # type: ignore[arg-type]  # a model's locals hold Plated values
    pc.use(n)
    mc.data[n] = DataVariable(n, name.span, False, WORD_IDS)
    mc.ctx.record_type(name.span, WORD_IDS, _ids(deduction) if deduction else "")
    return True


def _ids(deduction: Deduction) -> str:
    """`word ids of PCFG: 0 = "a", 1 = "the", ...`: as the lexicon lists its words."""
    words = deduction.words
    shown = ", ".join(f'{i} = "{w}"' for i, w in enumerate(words[:8]))
    more = f", ... ({len(words)} words)" if len(words) > 8 else ""
    return f"word ids of {deduction.name}: {shown}{more}"


def goal_weight_type(mc: ModelPass, node: ast.MethodCall) -> Plated | None:
    """`chart.goal_weight()`: a real number, of a chart a parse bound."""
    n = node.receiver.name.text
    if n not in mc.charts:
        mc.arith(node.receiver)
        mc.ctx.report(
            rules.WRONG_KIND,
            f".{GOAL_WEIGHT}() is a method of a chart: `let {n} = {PARSE}(D, sentence)` binds one",
            node.span,
        )
        return None
    mc.arith(node.receiver)
    return Plated(())
