"""The outline in the core: declarations with their types, programs with their steps."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.module import SymbolKind
from qvr_core.ide.outline import RETURN, outline
from tests.ide.helpers import example

RLSTM = example("rlstm_lm.qvr")


def test_declarations_with_their_kinds_and_types() -> None:
    top = {item.name: item for item in outline(check(RLSTM))}
    assert top["Token"].kind is SymbolKind.OBJECT
    assert top["Token"].detail == "FinSet 256"
    assert top["gate_i"].kind is SymbolKind.MORPHISM
    assert top["encoder"].detail == "[Token] -> [State]"


def test_a_program_lists_its_parameters_and_steps_in_order_inside_it() -> None:
    cell = next(item for item in outline(check(RLSTM)) if item.name == "rlstm_cell")
    assert cell.kind is SymbolKind.PROGRAM and cell.children is not None
    names = [c.name for c in cell.children]
    assert names[:4] == ["x", "h_prev", "c_prev", "i_pre"]
    assert cell.children[-1].kind == RETURN
    starts = [c.name_span.start for c in cell.children]
    assert starts == sorted(starts)
    for child in cell.children:
        assert cell.span.covers(child.span)
        assert child.span.covers(child.name_span)


def test_exports_declare_nothing_and_a_duplicate_still_shows() -> None:
    text = "object A : Real 2\nobject A : Real 3\nmorphism f : A -> A\nexport f\n"
    items = outline(check(text))
    assert [(i.name, i.kind) for i in items] == [
        ("A", SymbolKind.OBJECT),
        ("A", SymbolKind.OBJECT),
        ("f", SymbolKind.MORPHISM),
    ]
