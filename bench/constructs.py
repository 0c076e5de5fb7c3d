"""Which quivers constructs a file uses, and which of those uses the checker leaves unchecked.

`bench/corpus.py` prints, for every construct of the language that the shared corpus's
0.11+ files use, how many files use it and in how many of them some use still gets the
checker's "not checked yet" (QVR011). A construct is named from the syntax tree alone
(a declaration kind, a step kind, a combinator or builtin called by name, an expression
form), so the census needs no list kept by hand beside the parser: a construct the
parser learns shows up by itself. A use is unchecked when a QVR011 lies inside it; the
checker reports one QVR011 per declaration or expression it does not type, at that
construct's name or call, so the innermost construct around the diagnostic is the one
it is about, and every construct around it that contains it is counted too (a program
that holds an unchecked expression is not wholly checked either).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator

from qvr_core.builtins.families import MEASURE_FAMILIES
from qvr_core.check.module import CheckedModule
from qvr_core.syntax import ast
from qvr_core.text.span import Span

#: Builtin names whose call is a construct of its own (not plain arithmetic).
_NAMED_CALLS = frozenset(
    {
        "map",
        "fold",
        "parse",
        "parser",
        "repeat",
        "stack",
        "scan",
        "scanl",
        "fan",
        "identity",
        "multihead",
        "causal_multihead",
        "cross_multihead",
        "ode_rk45",
        "ode_rk45_tol",
        "ode_bdf",
        "ode_bdf_tol",
    }
)

_STEPS: dict[type, str] = {
    ast.SampleStep: "step: sample",
    ast.ObserveStep: "step: observe",
    ast.MarginalizeStep: "step: marginalize",
    ast.CallStep: "step: let x <- call",
    ast.ScoreStep: "step: score",
    ast.DestructureStep: "step: destructure",
}


def uses(node: object) -> Iterator[tuple[str, Span]]:
    """Every construct under `node` with the span of that use (iteratively)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
            continue
        if type(item) is Span or not dataclasses.is_dataclass(item):
            continue
        label = _label(item)
        span = getattr(item, "span", None)
        if label is not None and isinstance(span, Span):
            yield label, span
        if isinstance(item, ast.OtherDecl):  # its clause is the declaration itself
            stack.extend((item.clause.parts, item.clause.body))
            continue
        stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


def _label(node: object) -> str | None:
    """The construct a node is, or None for plain parts (names, numbers, operators)."""
    if isinstance(node, ast.OtherDecl):
        return f"declaration: {node.clause.kind}"
    if isinstance(node, ast.LetDecl):
        return f"declaration: top-level {node.keyword}"
    if isinstance(node, ast.ProgramDecl):
        return "declaration: program"
    if isinstance(node, ast.MorphismDecl):
        return "declaration: morphism with a prior" if node.family_args else None
    step = _STEPS.get(type(node))
    if step is not None:
        return step
    if isinstance(node, ast.Call):
        name = node.callee.text
        if name in MEASURE_FAMILIES:  # quivers' operator algebra: Mixture, Restrict, ...
            return f"measure: {name}(...)"
        return f"call: {name}(...)" if name in _NAMED_CALLS else None
    if isinstance(node, ast.Apply):
        name = node.func.text
        return f"call: {name}(...)" if name in _NAMED_CALLS else None
    if isinstance(node, ast.Option) and node.value is None:
        return "option written as a flag"
    if isinstance(node, ast.Method):
        return "method of a morphism"
    if isinstance(node, ast.MethodCall):
        return "method of a value"
    if isinstance(node, ast.Lambda):
        return "lambda"
    if isinstance(node, ast.Factor):
        return "factor expression"
    if isinstance(node, ast.Index):
        return "index expression"
    return None


def _inside(inner: Span, outer: Span) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def census(module: CheckedModule) -> dict[str, bool]:
    """Each construct the file uses, with whether every use of it is checked."""
    unchecked = [d.span for d in module.diagnostics if d.code == "QVR011"]
    spans: dict[str, list[Span]] = defaultdict(list)
    for decl in module.ast.decls:
        for label, span in uses(decl):
            spans[label].append(span)
    return {
        label: not any(_inside(d, s) for s in found for d in unchecked)
        for label, found in spans.items()
    }
