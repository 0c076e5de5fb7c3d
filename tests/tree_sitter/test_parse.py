"""The tree-sitter grammar reads what qvr reads: no ERROR or MISSING node in any file qvr
parses (the examples, tests/models, the shared corpus of quivers' files of every era), an
error in what qvr rejects, and the same declarations and program steps as qvr's tree."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from qvr_core.syntax import ast, parse
from qvr_core.text.rules import UNPARSED_CODES
from tests.conformance.shared import corpus
from tests.tree_sitter.support import NO_TREE_SITTER, ROOT, describe, problems

if TYPE_CHECKING:
    import tree_sitter
else:
    tree_sitter = pytest.importorskip("tree_sitter", reason=NO_TREE_SITTER)

LOCAL = sorted([*(ROOT / "examples").glob("**/*.qvr"), *(ROOT / "tests" / "models").glob("*.qvr")])
FILES = [(str(p.relative_to(ROOT)), p) for p in LOCAL] + [
    (f"corpus/{f.name}", f.path) for f in corpus()
]

#: Lines qvr rejects (QVR001), one per kind of mistake; each must leave an ERROR or a
#: MISSING node in the tree.
HEAD = "object X : FinSet 8\nprogram p : X -> X\n"
BROKEN = {
    "unclosed bracket": HEAD + "    sample x <- Normal(0.0, 1.0\n    return x\n",
    "misspelt keyword": "progam p : A -> B\n",
    "missing colon": "object X FinSet 8\n",
    "missing codomain": "morphism f : A ->\n",
    "missing source": HEAD + "    sample x <-\n    return x\n",
    "dangling operator": HEAD + "    let y = 1.0 +\n    return y\n",
    "extra bracket": "define f = stack(b, 3))\n",
    "option without value": HEAD + "    observe y : X <- Normal(mu, sigma) [scale=]\n",
    "indented line outside a body": "object X : FinSet 8\n    object Y : FinSet 3\n",
    "indented continuation at the top": "define f = g >> h\n    k\n",
    "tab": HEAD + "\tsample x <- Normal(0.0, 1.0)\n",
    "misaligned step": HEAD + "    sample x <- Normal(0.0, 1.0)\n      sample y <- F(x)\n",
    "dedent between blocks": HEAD
    + "    marginalize z : X <- Categorical(p)\n        sample b <- Bernoulli(0.5)\n"
    + "      sample c <- Bernoulli(0.5)\n    return z\n",
    "step outside a program": "sample x <- Normal(0.0, 1.0)\n",
    "stray character": "object X : FinSet 8 $\n",
    "unterminated string": HEAD + '    observe y <- Normal(0.0, 1.0) [via="school]\n',
    "pragma with a call": "#[allow(x)]\n",
}

#: Layouts qvr accepts that a line-based reading could get wrong.
VALID = {
    "continued inside brackets and after an operator": HEAD
    + "    sample x <- Normal(0.0,\n        1.0)\n    let y = x +\n        1.0\n    return y\n",
    "a deeper line that continues a step": HEAD + "    let y = x\n        + 1.0\n    return y\n",
    "comments at any column inside a block": HEAD
    + "    sample x <- Normal(0.0, 1.0)\n# c\n    # d\n    return x\n# e\nexport p\n",
    "no line end at the end": HEAD + "    return x",
    "CRLF": (HEAD + "    sample x <- Normal(0.0, 1.0)\n    return x\n").replace("\n", "\r\n"),
    "CR": (HEAD + "    sample x <- Normal(0.0, 1.0)\n    return x\n").replace("\n", "\r"),
    "keywords as names": "morphism sample : A -> B\nobject index : FinSet 2\n",
    "pragmas and a trailing comment": "#[k = 1, v]\n#![w]\nobject X : FinSet 8  # c\n",
    "empty": "",
    "only a comment": "# hi\n",
    "nested where blocks": (
        "define f = g where\n    define g = h >> k where\n        define h = a\n"
    ),
}


def qvr_parses(text: str) -> bool:
    return not any(d.code in UNPARSED_CODES for d in parse(text).diagnostics)


def test_every_local_file_is_read() -> None:
    assert len(LOCAL) >= 80, LOCAL  # examples/**/*.qvr and tests/models/*.qvr


@pytest.mark.parametrize(("name", "path"), FILES, ids=[name for name, _ in FILES])
def test_tree_sitter_accepts_exactly_the_files_qvr_parses(
    name: str, path: Path, parser: tree_sitter.Parser
) -> None:
    text = path.read_text(encoding="utf-8")
    found = [describe(n) for n in problems(parser.parse(text.encode()).root_node)]
    if qvr_parses(text):
        assert not found, f"{name}: qvr parses it, tree-sitter has {found[:5]}"
    else:
        assert found, f"{name}: qvr rejects it (QVR001), tree-sitter finds no error"


@pytest.mark.parametrize("text", list(BROKEN.values()), ids=list(BROKEN))
def test_what_qvr_rejects_leaves_an_error_node(text: str, parser: tree_sitter.Parser) -> None:
    assert not qvr_parses(text), "the example must be one qvr rejects"
    assert list(problems(parser.parse(text.encode()).root_node))


@pytest.mark.parametrize("text", list(VALID.values()), ids=list(VALID))
def test_layouts_qvr_accepts_parse_without_error(text: str, parser: tree_sitter.Parser) -> None:
    assert qvr_parses(text), "the example must be one qvr accepts"
    found = [describe(n) for n in problems(parser.parse(text.encode()).root_node)]
    assert not found, found


STEPS = frozenset(
    {
        "sample_step",
        "observe_step",
        "marginalize_step",
        "let_step",
        "call_step",
        "score_step",
        "return_step",
        "bind_step",
        "draw_step",
        "output_step",
    }
)


def _qvr_steps(steps: tuple[object, ...]) -> int:
    return sum(
        1 + (_qvr_steps(s.steps) if isinstance(s, ast.MarginalizeStep) else 0) for s in steps
    )


def _tree_steps(node: tree_sitter.Node) -> int:
    count = 0
    for child in node.named_children:
        # a bare `marginalize y` (quivers 0.4) is read, but qvr keeps no step for it
        bare = child.type == "marginalize_step" and child.child_by_field_name("source") is None
        count += (child.type in STEPS and not bare) + _tree_steps(child)
    return count


def test_declarations_and_steps_are_those_of_qvr_s_tree(parser: tree_sitter.Parser) -> None:
    """Every file qvr parses: the same top-level declarations, starting at the same line and
    column, and each program with as many steps (nested ones included)."""
    checked = 0
    for name, path in FILES:
        text = path.read_text(encoding="utf-8")
        result = parse(text)
        if any(d.code in UNPARSED_CODES for d in result.diagnostics):
            continue
        lines = text.encode().split(b"\n")
        root = parser.parse(text.encode()).root_node
        decls = [n for n in root.named_children if n.type != "comment"]
        assert len(decls) == len(result.module.decls), name
        for decl, node in zip(result.module.decls, decls, strict=True):
            row, col = node.start_point
            start = (row, len(lines[row][:col].decode()))
            assert start == (decl.span.start_line, decl.span.start_col), (name, node.type)
            if isinstance(decl, ast.ProgramDecl):
                assert _tree_steps(node) == _qvr_steps(decl.steps), (name, decl.name.text)
        checked += 1
    assert checked >= 80
