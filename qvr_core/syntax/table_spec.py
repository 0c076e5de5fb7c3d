"""What the parser's tables are made of, shared by the module that reads them from the
cache (`tables.py`) and the one that has lark make them (`lark_tables.py`), so that
neither imports the other's module for its definitions: the tables import lark's maker
lazily, and it imports only these."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The start symbol of each kind of line: a declaration's first line ("decl"), a
#: program step, and the body lines of the other declarations.
STARTS = (
    "decl",
    "step",
    "where_line",
    "deduction_line",
    "lexicon_line",
    "signature_line",
    "signature_entry",
    "encoder_line",
    "decoder_line",
    "loss_line",
    "composition_line",
    "family_line",
    "effect_line",
    "handler_line",
    "computation_line",
    "case_line",
)

#: Changes when what the cache file holds changes, so that an older file is made again.
FORMAT = 2

Callback = Callable[[list[Any]], object]
#: How a rule's callback is made: the name lark looks its callback up by, whether the
#: rule is an inlined `_rule` (its parents splice its children in), whether a single
#: child is passed up, and the children kept (index, whether it is an inlined rule),
#: None for all of them.
Spec = tuple[str, bool, bool, tuple[tuple[int, bool], ...] | None]
