"""A Pygments lexer for QVR, so Sphinx, MkDocs, Jupyter and any Pygments user highlight it.

Pygments can only see characters, not the checked module the editor's semantic
tokens come from, so this lexer gives each word the kind those tokens would give
it where a word alone says enough, and stays a plain name elsewhere. Every word
and symbol comes from the tables the checker itself reads: the tokenizer's
keywords and punctuation (`qvr_core.syntax.layout`, the grammar's tokens) and the
builtins registry (`qvr_core.builtins`), so a new family or keyword is
highlighted without touching this file.

A soft keyword (`define`, `score`, `index`, `in`, ...) may also name things, so
it is a keyword only where it is not used as a name: where a word, a number, a
string, `(`, `|->` or `=>` follows it, or where it ends a line after a value
(`... then`, `... in`). Characters that start no QVR token are `Error` tokens,
which is how `scripts/build_docs.py` tells that a code block is not QVR.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from pygments.lexer import RegexLexer  # type: ignore[import-untyped, unused-ignore]
from pygments.token import (  # type: ignore[import-untyped, unused-ignore]
    Comment,
    Error,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Whitespace,
    _TokenType,
)

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, OBJECT_CONSTRUCTORS
from qvr_core.builtins.effects import EFFECTS
from qvr_core.builtins.objects import LEGACY_CONSTRUCTORS, PARAMETER_KINDS
from qvr_core.syntax import layout


def _keyword(word: str) -> _TokenType:
    return Keyword.Declaration if word in layout.DECLARATION_KEYWORDS else Keyword


#: The grammar's literal words (`true`, `false`, `unit`).
_LITERAL_TYPES = ("TRUE", "FALSE", "UNIT")
#: Word kinds that hold for a word wherever it stands.
_WORDS: dict[str, _TokenType] = {
    **dict.fromkeys(PARAMETER_KINDS, Keyword.Type),
    **dict.fromkeys(LEGACY_CONSTRUCTORS, Keyword.Type),
    **{w: Keyword.Type for w, t in layout.SOFT_KEYWORDS.items() if t == "CTOR"},
    **dict.fromkeys(OBJECT_CONSTRUCTORS, Keyword.Type),
    **dict.fromkeys((*FAMILIES, *COMBINATORS, *FUNCTIONS, *EFFECTS), Name.Builtin),
    **{w: Keyword.Constant for w, t in layout.SOFT_KEYWORDS.items() if t in _LITERAL_TYPES},
    **{w: _keyword(w) for w in layout.KEYWORDS},
}
_SOFT = frozenset(
    w for w, t in layout.SOFT_KEYWORDS.items() if t not in ("CTOR", "ROLE", *_LITERAL_TYPES)
)
#: After these a soft keyword is a name (`return loss`, `FinSet body`).
_BEFORE_NAMES = frozenset(w for w, k in _WORDS.items() if k in Keyword)
#: Words that start a declaration at column 0 (the 0.1 - 0.10 role words included).
_STARTERS = (
    *layout.DECLARATION_KEYWORDS,
    *layout.DECLARATION_KINDS,
    *(w for w, t in layout.SOFT_KEYWORDS.items() if t == "ROLE"),
)
#: The name a declaration introduces, by the semantic token it gets (object: type,
#: program: class, morphism: function, let: method); other kinds have none yet.
_DECLARED = {
    "object": Name.Class,
    "program": Name.Class,
    "morphism": Name.Function,
    "let": Name.Function,
    "define": Name.Function,
}
_BRACKETS = frozenset({"LPAR", "RPAR", "LSQB", "RSQB", "LBRACE", "RBRACE", "COMMA", "COLON", "DOT"})
_NAME = r"[^\W\d]\w*"
_BLANKS = re.compile(r"[ \t]*")
#: The last word of a text, when it is one of `_BEFORE_NAMES` or longer than all of them
#: (then it is none of them): the text it is searched in is `_LONGEST_BEFORE` + 1 long.
_LONGEST_BEFORE = max(map(len, _BEFORE_NAMES))
_LAST_WORD = re.compile(r"\w+\Z")

_Tokens = Iterator[tuple[int, _TokenType, str]]


def _word_kind(text: str, start: int, end: int) -> _TokenType:
    word = text[start:end]
    if start and text[start - 1] == ".":  # a method or field: `theta.sum()`
        return Name.Builtin if word in FUNCTIONS else Name
    if word in _SOFT:
        if _is_keyword_here(text, start, end):
            return _keyword(word)
    elif word in _WORDS:
        return _WORDS[word]
    return Name.Class if word[0].isupper() else Name


def _is_keyword_here(text: str, start: int, end: int) -> bool:
    """Whether a soft keyword is used as one: see the module's docstring.

    It reads only the blanks around the word and a bounded stretch beyond them,
    never the rest of its line, so a line of many soft keywords is lexed in
    linear time.
    """
    blanks = _BLANKS.match(text, end)
    at = blanks.end() if blanks is not None else end  # `[ \t]*` always matches
    if text.startswith(("|->", "=>"), at):
        return True
    following = text[at : at + 1]
    if following not in ("", "\n", "#"):  # something follows on its line
        return at > end and (following in '"{(' or following.isalnum() or following == "_")
    blank = start  # the whitespace before it on its line
    while blank and text[blank - 1] != "\n" and text[blank - 1].isspace():
        blank -= 1
    if not blank or text[blank - 1] == "\n":
        return True  # alone on its line: `else`
    word_end = start  # the blanks just before it
    while text[word_end - 1] in " \t":
        word_end -= 1
    previous = _LAST_WORD.search(text, max(0, word_end - _LONGEST_BEFORE - 1), word_end)
    if previous is None:
        return text[word_end - 1] in ")]"
    return len(previous.group()) > _LONGEST_BEFORE or previous.group() not in _BEFORE_NAMES


def _name(lexer: RegexLexer, match: re.Match[str]) -> _Tokens:
    yield match.start(), _word_kind(match.string, match.start(), match.end()), match.group()


def _declaration(lexer: RegexLexer, match: re.Match[str]) -> _Tokens:
    word, blank, name = match.groups()
    yield match.start(1), Keyword.Declaration, word
    yield match.start(2), Whitespace, blank
    yield match.start(3), _DECLARED.get(word, Name), name


def _symbol(lexer: RegexLexer, match: re.Match[str]) -> _Tokens:
    kind = Punctuation if layout.PUNCTUATION[match.group()] in _BRACKETS else Operator
    yield match.start(), kind, match.group()


_PUNCTUATION = sorted(
    (p for p, t in layout.PUNCTUATION.items() if t not in ("PRAGMA", "IPRAGMA")),
    key=len,
    reverse=True,
)


#: The rules before and after a string's, shared by the state after an unterminated string.
_BEFORE_STRINGS: list[tuple[str, Any]] = [
    (r"[ \t\r\f\v\ufeff]+", Whitespace),
    (r"^#!(?!\[).*", Comment.Special),  # a doc comment: `#!` at column 0
    (r"#!?\[", Comment.Preproc),  # a pragma, `#[...]` or `#![...]`
    (r"#.*", Comment.Single),
]
#: A string; its loop is possessive: on failing (no closing quote) it gives back nothing.
_STRING = r'"(?:[^"\\\n]|\\.)*+"'
_AFTER_STRINGS: list[tuple[str, Any]] = [
    (rf"^({'|'.join(_STARTERS)})([ \t]+)({_NAME})", _declaration),
    (_NAME, _name),
    (
        r"(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+",
        Number.Float,
    ),
    (r"[0-9]+", Number.Integer),
    ("|".join(re.escape(p) for p in _PUNCTUATION), _symbol),
    (r".", Error),
]


class QvrLexer(RegexLexer):  # type: ignore[misc, unused-ignore]
    """QVR, the language of quivers' `.qvr` files."""

    name = "QVR"
    aliases = ("qvr",)
    filenames = ("*.qvr",)
    mimetypes = ("text/x-qvr",)
    url = "https://github.com/FACTSlab/quivers"

    tokens: ClassVar[dict[str, list[tuple[str, Any] | tuple[str, Any, str]]]] = {
        "root": [
            (r"\n", Whitespace),
            *_BEFORE_STRINGS,
            (_STRING, String.Double),
            # An unterminated string: its quote is an error, and no string starts after it
            # on its line (each later quote is escaped in its scan, which goes on from just
            # after it as a scan from it would), so the rest of the line is lexed without
            # looking for strings, rather than scanned again to its end from every quote
            # (quadratic on a line of `"\"\"\"...`).
            ('"', Error, "unterminated"),
            *_AFTER_STRINGS,
        ],
        "unterminated": [
            (r"\n", Whitespace, "#pop"),
            ('"', Error),  # what `.` would give it, without trying the other rules first
            *_BEFORE_STRINGS,
            *_AFTER_STRINGS,
        ],
    }
