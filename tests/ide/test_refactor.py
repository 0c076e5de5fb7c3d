"""Extract and inline keep a module's meaning; fix-all applies every preferred fix."""

from __future__ import annotations

from collections import Counter

import pytest

from qvr_core.check import check
from qvr_core.ide.actions import fix_all
from qvr_core.ide.refactor import extract, inline
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text.edits import apply_edits
from tests.ide.helpers import EXAMPLES, at, example


def _codes(text: str) -> Counter[str]:
    return Counter(d.code for d in check(text).diagnostics)


def _composites(text: str) -> list[ast.Expr]:
    module = check(text)
    return [
        n
        for d in module.ast.decls
        for n in walk(d)
        if isinstance(n, ast.Compose | ast.Tensor | ast.Call) and n in module.expr_types
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_extracting_any_typed_sub_expression_keeps_the_diagnostics(path) -> None:
    text = path.read_text()
    module = check(text)
    before = _codes(text)
    composites = list(_composites(text))
    if not composites:
        pytest.skip(f"{path.name} has no composite expression to extract")
    tried = 0
    for expr in composites:
        found = extract(module, expr.span.start, expr.span.end)
        if found is None:
            continue
        tried += 1
        after = apply_edits(text, found.edits)
        assert _codes(after) == before, (found.title, after)
        lines = after.splitlines()
        new = next(i for i, line in enumerate(lines) if line.split()[1:2] == ["extracted"])
        first_use = next(
            i for i, line in enumerate(lines) if "extracted" in line.split("=", 1)[-1] and i != new
        )
        assert new < first_use, after
    assert tried > 0


def test_a_cursor_extracts_the_smallest_expression_around_it() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    found = extract(check(text), at(text, "forward_path,"), at(text, "forward_path,"))
    assert found is not None
    assert found.title == "Extract `fan(forward_path, backward_path)` into `let extracted`"
    after = apply_edits(text, found.edits)
    assert (
        "let extracted = fan(forward_path, backward_path)\nlet backbone = extracted >> combine"
        in after
    )


def test_a_selected_name_extracts_the_expression_around_it() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    start = at(text, "forward_path,")
    found = extract(check(text), start, start + len("forward_path"))
    assert found is not None and "`fan(forward_path, backward_path)`" in found.title


def test_a_selection_with_parentheses_and_blanks_is_the_expression_inside() -> None:
    text = "object A : Real 2\nmorphism f : A -> A\nmorphism g : A -> A\nlet h = ( f >> g ) >> f\n"
    start = text.index("( f")
    found = extract(check(text), start, text.index(") >>") + 1)
    assert found is not None
    assert apply_edits(text, found.edits).endswith(
        "let extracted = f >> g\nlet h = ( extracted ) >> f\n"
    )


def test_what_cannot_be_extracted_is_not_offered() -> None:
    text = example("vanilla_rnn_lm.qvr")
    module = check(text)
    call = at(text, "lm_head(h)")
    assert extract(module, call, call + len("lm_head(h)")) is None  # uses a program's local h
    part = at(text, "embed >> scan")
    assert extract(module, part, part + 12) is None  # not one expression
    whole = at(text, "tok_embed >> scan(cell)")
    assert extract(module, whole, whole + len("tok_embed >> scan(cell)")) is None  # already a let


def test_the_new_name_does_not_collide() -> None:
    text = example("vanilla_rnn_lm.qvr") + "let extracted = tok_embed\n"
    scan = at(text, "scan(cell)")
    found = extract(check(text), scan, scan)
    assert found is not None and "let extracted_2 = scan(cell)" in apply_edits(text, found.edits)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_inlining_every_let_keeps_the_diagnostics(path) -> None:
    text = path.read_text()
    module = check(text)
    before = _codes(text)
    lets = [d for d in module.ast.decls if isinstance(d, ast.LetDecl)]
    for decl in lets:
        found = inline(module, decl.name.span.start)
        if found is None:
            continue
        after = apply_edits(text, found.edits)
        assert _codes(after) == before, (found.title, after)
        assert decl.name.text not in {s.name for s in check(after).symbols.symbols}


def test_inlining_parenthesises_only_operands() -> None:
    text = example("bidirectional_rnn_lm.qvr")
    found = inline(check(text), at(text, "forward_path"))
    assert found is not None and found.title == "Inline `let forward_path` into its use"
    after = apply_edits(text, found.edits)
    assert "let backbone = fan(tok_embed >> scan(fwd_cell), backward_path) >> combine" in after
    assert "let forward_path" not in after
    text = "object A : Real 2\nmorphism f : A -> A\nlet p = f >> f\nlet q = p >> f\nlet r = p\n"
    found = inline(check(text), at(text, "p >> f"))
    assert found is not None
    assert apply_edits(text, found.edits).splitlines()[2:] == [
        "let q = (f >> f) >> f",
        "let r = f >> f",
    ]


def test_fix_all_applies_every_preferred_fix() -> None:
    text = (
        "object A : Real 2\n"
        "morphism cell : A -> A [role=kernel, scael=0.1] ~ Normal\n"
        "let f = cel >> cell\n"
        "program p : A -> A\n    sample y <- f\n    return y\nexport p\n"
    )
    module = check(text)
    fixes = fix_all(module)
    assert sorted(q.diagnostic.code for q in fixes) == ["QVR101", "QVR303"]
    after = check(apply_edits(text, [e for q in fixes for e in q.fix.edits]))
    assert after.ok, [d.message for d in after.diagnostics]
