"""Semantic tokens (full and range): the core's classification mapped onto standard token types.

Standard types so that every theme colours them without configuration;
the QVR-specific distinctions are modifiers (`sampled`, `observed` for
sites) that themes and Neovim (`@lsp.mod.sampled`) can style.

| core | token type | modifiers |
|---|---|---|
| object | type | |
| morphism | function | |
| let | method | |
| program | class | |
| site | variable | sampled or observed |
| parameter | parameter | |
| local | variable | readonly |
| option | property | |
| value | enumMember | |
| family | enum | defaultLibrary |
| builtin type / function | type / function | defaultLibrary |

Declarations carry `declaration`; names with a doc comment carry `documentation`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import CheckedModule
from qvr_core.ide.tokens import SemanticToken, TokenModifier, TokenType, semantic_tokens
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

TOKEN_TYPES = [
    "type",
    "function",
    "method",
    "class",
    "variable",
    "parameter",
    "property",
    "enumMember",
    "enum",
]
TOKEN_MODIFIERS = [
    "declaration",
    "readonly",
    "defaultLibrary",
    "documentation",
    "sampled",
    "observed",
]
LEGEND = lsp.SemanticTokensLegend(token_types=TOKEN_TYPES, token_modifiers=TOKEN_MODIFIERS)

TYPE_OF: dict[TokenType, tuple[str, tuple[str, ...]]] = {
    TokenType.OBJECT: ("type", ()),
    TokenType.MORPHISM: ("function", ()),
    TokenType.LET: ("method", ()),
    TokenType.PROGRAM: ("class", ()),
    TokenType.SITE: ("variable", ()),
    TokenType.PARAMETER: ("parameter", ()),
    TokenType.LOCAL: ("variable", ("readonly",)),
    TokenType.OPTION: ("property", ()),
    TokenType.VALUE: ("enumMember", ()),
    TokenType.FAMILY: ("enum", ("defaultLibrary",)),
    TokenType.BUILTIN_TYPE: ("type", ("defaultLibrary",)),
    TokenType.BUILTIN_FUNCTION: ("function", ("defaultLibrary",)),
}
MODIFIER_OF = {
    TokenModifier.DECLARATION: "declaration",
    TokenModifier.DOCUMENTED: "documentation",
    TokenModifier.SAMPLED: "sampled",
    TokenModifier.OBSERVED: "observed",
}


def encode(tokens: list[SemanticToken], positions: TextPositions) -> list[int]:
    """The protocol's relative encoding: line delta, start delta, length, type, modifier bits."""
    data: list[int] = []
    last_line = last_start = 0
    at = positions.line_character
    kinds: dict[tuple[TokenType, frozenset[TokenModifier]], tuple[int, int]] = {}
    for token in tokens:
        line, start = at(token.span.start)
        end_line, end = at(token.span.end)
        length = end - start
        if end_line != line or length <= 0:
            continue
        key = (token.type, token.modifiers)
        if key not in kinds:
            kinds[key] = _kind_and_bits(*key)
        kind, bits = kinds[key]
        delta_line = line - last_line
        delta_start = start - last_start if delta_line == 0 else start
        data += [delta_line, delta_start, length, kind, bits]
        last_line, last_start = line, start
    return data


def _kind_and_bits(type_: TokenType, modifiers: frozenset[TokenModifier]) -> tuple[int, int]:
    kind, extra = TYPE_OF[type_]
    names = {*extra, *(MODIFIER_OF[m] for m in modifiers)}
    return TOKEN_TYPES.index(kind), sum(1 << TOKEN_MODIFIERS.index(n) for n in names)


def _data(
    module: CheckedModule, positions: TextPositions, start: int = 0, end: int | None = None
) -> list[int]:
    return encode(semantic_tokens(module, start, end), positions)


def nothing() -> lsp.SemanticTokens:
    return lsp.SemanticTokens(data=[])


async def full(
    session: Session, params: lsp.SemanticTokensParams, analysis: Analysis
) -> lsp.SemanticTokens:
    # off the event loop: a large file has tens of thousands of tokens
    data = await asyncio.to_thread(_data, analysis.checked, analysis.positions)
    return lsp.SemanticTokens(data=data)


async def in_range(
    session: Session, params: lsp.SemanticTokensRangeParams, analysis: Analysis
) -> lsp.SemanticTokens:
    start, end = analysis.positions.offsets(params.range)
    data = await asyncio.to_thread(_data, analysis.checked, analysis.positions, start, end)
    return lsp.SemanticTokens(data=data)
