"""The builtin registry is closed: no builtin name is written as a string outside it.

`qvr_core/builtins/` describes every builtin once; a table elsewhere keyed by
`"Normal"` or a test `name == "stack"` is a second list that a new builtin
silently misses (the memory estimate once counted a `~ StudentT` kernel at half
its parameters that way). This test reads every Python file of `qvr_core/`
(outside `qvr_core/builtins/`), `qvr_lsp/` and `qvr_cli/` with `ast` and fails on
a string constant that is exactly a builtin name:

- a family, combinator or object-constructor name (typed or not yet typed), anywhere:
  these words mean the builtin wherever they are written;
- a builtin function name (`sum`, `max`, `log`, ...) only where it picks a builtin
  by name: a key of a dict whose keys are all builtin names (a table of
  builtins, `{"sum": ..., "max": ...}`), an operand of `==`/`!=` (`name ==
  "max"`), what stands right of `in` (`name in ("sum", "mean")`) or a `case
  "sum":` pattern. Elsewhere these are ordinary words (a summary's `"mean"`
  column, `row["mean"]`, `"mean" in row`, a reduction named `sum`), so they are
  not flagged there.

Docstrings and the text of f-strings are prose, not literals, and are never
flagged. Operator symbols (`+`, `==`) are not names and are not checked.
Code reads a name from its registry entry instead (`family.name`, a namespace
looked up with `getattr(Namespace, family.name)`, a field of the entry).
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, OBJECT_CONSTRUCTORS
from qvr_core.builtins.objects import UNTYPED_CONSTRUCTORS
from tests.conftest import ROOT

PACKAGES = ("qvr_core", "qvr_lsp", "qvr_cli")
REGISTRY = ROOT / "qvr_core" / "builtins"

#: Names flagged wherever they are a string constant.
NAMES = frozenset({*FAMILIES, *COMBINATORS, *OBJECT_CONSTRUCTORS, *UNTYPED_CONSTRUCTORS})
#: Names flagged only where they select something (keys, comparisons, patterns).
FUNCTION_NAMES = frozenset(FUNCTIONS) - NAMES


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    literal: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.literal!r}"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of the module, classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                found.add(id(body[0].value))
    return found


def _selecting(tree: ast.AST) -> set[int]:
    """ids of the string constants that pick a builtin by its name: the keys of a dict
    display whose keys are all builtin names (a table of builtins), an operand of `==` or
    `!=`, what stands right of `in` (or an item of the tuple, list or set there), a `case`
    pattern. Reading a key (`"mean" in row`, `row["mean"]`) picks nothing."""
    found: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
            if keys and all(k in NAMES or k in FUNCTION_NAMES for k in keys):
                found += node.keys
        elif isinstance(node, ast.Compare):
            operands = (node.left, *node.comparators)
            for op, (left, right) in zip(node.ops, itertools.pairwise(operands), strict=True):
                if isinstance(op, ast.Eq | ast.NotEq):
                    found += [left, right]
                elif isinstance(op, ast.In | ast.NotIn):
                    found.append(right)
                    if isinstance(right, ast.Tuple | ast.List | ast.Set):
                        found += right.elts
        elif isinstance(node, ast.MatchValue):
            found.append(node.value)
    return {id(e) for e in found if e is not None}


def scan(source: str, path: str = "<source>") -> list[Finding]:
    """The builtin names written as string constants in `source`, by the rule above."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # an f-string's text parts
            prose |= {id(v) for v in node.values if isinstance(v, ast.Constant)}
    selecting = _selecting(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in prose:
            continue
        value = node.value
        if value in NAMES or (value in FUNCTION_NAMES and id(node) in selecting):
            found.append(Finding(path, node.lineno, value))
    return sorted(found)


def _findings() -> list[Finding]:
    """Every finding in the packages' Python files outside the registry."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not path.is_relative_to(REGISTRY):
                rel = path.relative_to(ROOT).as_posix()
                found += scan(path.read_text(encoding="utf-8"), rel)
    return found


def test_no_builtin_name_is_written_outside_the_registry() -> None:
    """No allow list: the export targets' tables are namespaces named after the registry's
    entries (`qvr_core.export.named`), as the runtime's torch factories are."""
    found = _findings()
    assert not found, "builtin names written outside qvr_core/builtins:\n" + "\n".join(
        map(str, found)
    )


PLANTED = '''\
"""A module that mentions Normal and stack in its docstring: prose, not flagged."""

FACTORIES = {"Normal": 1, "sum": 2}
SUMMARY = {"mean": 0.0, "sd": 1.0}  # not a table of builtins: ordinary words


def pick(name: str, row: dict[str, float]) -> float:
    """Normal"""
    label = f"Normal {name}"  # f-string text: prose
    if name == "stack" or name in ("max", "mean"):
        return 1
    match name:
        case "logsumexp":
            return 2
    reduction = "sum"  # an ordinary word here: not flagged
    if "mean" in row:  # reading a key: not flagged
        return row["mean"]
    return FACTORIES["Gamma"] + len(label) + len(reduction) + len("FinSet")
'''


def test_the_scan_finds_planted_literals_and_ignores_prose() -> None:
    found = [(f.line, f.literal) for f in scan(PLANTED)]
    assert found == [
        (3, "Normal"),
        (3, "sum"),
        (10, "max"),
        (10, "mean"),
        (10, "stack"),
        (13, "logsumexp"),
        (18, "FinSet"),
        (18, "Gamma"),
    ]
