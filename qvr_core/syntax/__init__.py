"""Syntax: source spans, the syntax tree, and `parse(text) -> ParseResult`.

`parse` is loaded on first use so that `qvr_core.text.span` (which the
diagnostics module needs) can be imported without pulling in the parser.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qvr_core.syntax.parser import ParseResult, parse

__all__ = ["ParseResult", "parse"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from qvr_core.syntax import parser

        return getattr(parser, name)
    raise AttributeError(name)
