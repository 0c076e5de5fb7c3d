"""A declared name written as a keyword argument's word in a construct checked for names
only (`parser(terminal=Token)`) is a use of it: no "declared but never used" hint, and a
rename changes it too."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.ide.rename import rename

SOURCE = """object Atoms : {N, NP, S}
object Cat : FreeResiduated(Atoms)
object Token : {the, dog}
schema fwd_app (X, Y : Cat) : (X / Y) * Y -> X
bundle lp_rules : [fwd_app]
define lp_parser = parser(rules=[lp_rules], terminal=Token, start=S, depth=1)
export lp_parser
"""


def test_a_keyword_word_naming_a_declaration_uses_it() -> None:
    module = check(SOURCE)
    assert not [d for d in module.diagnostics if d.code == "QVR103"], module.diagnostics


def test_renaming_the_declaration_renames_the_word() -> None:
    module = check(SOURCE)
    edits = rename(module, SOURCE.index("Token :") + 1, "Word")
    renamed = sorted(e.span.start for e in edits)
    assert renamed == [SOURCE.index("Token :"), SOURCE.index("Token,")]
    assert all(e.new_text == "Word" for e in edits)


def test_a_word_naming_nothing_declared_is_no_use() -> None:
    # `start=S` names a category atom, an element of Atoms, not a declaration
    module = check(SOURCE)
    assert module.symbols.reference_at(SOURCE.index("S, depth")) is None
