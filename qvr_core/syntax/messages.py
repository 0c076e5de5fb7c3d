"""Syntax error wording: what was found, what was expected and where, in the user's words.

The parser knows an error as "token k of this line, and these terminals would
have been accepted"; this module turns that into
`expected '->' after the domain of morphism cell, found '['`. It has no
knowledge of lark: only the line's tokens and terminal names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from qvr_core.syntax.layout import KEYWORD_TYPES, PUNCTUATION, SOFT_KEYWORDS, Token

_WORDS: dict[str, str] = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "OBJECT": "'object'",
    "MORPHISM": "'morphism'",
    "LET": "'let'",
    "PROGRAM": "'program'",
    "SAMPLE": "'sample'",
    "OBSERVE": "'observe'",
    "RETURN": "'return'",
    "EXPORT": "'export'",
    "COLON": "':'",
    "ARROW": "'->'",
    "LARROW": "'<-'",
    "EQUAL": "'='",
    "COMMA": "','",
    "LSQB": "'['",
    "RSQB": "']'",
    "LPAR": "'('",
    "RPAR": "')'",
    "TILDE": "'~'",
    "RSHIFT": "'>>'",
    "AT": "'@'",
    "STAR": "'*'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "SLASH": "'/'",
    "$END": "end of line",
    "STRING": "a string",
    "CTOR": "a type constructor",
}
for _text, _kind in PUNCTUATION.items():
    _WORDS.setdefault(_kind, f"'{_text}'")
for _text, _kind in SOFT_KEYWORDS.items():
    _WORDS.setdefault(_kind, f"'{_text}'")
_ORDER = {terminal: rank for rank, terminal in enumerate(_WORDS)}

#: Terminals that only continue something already complete (`A` -> `A * B`,
#: `f` -> `f(x)`); mentioning them beside the real requirement is noise.
_CONTINUATIONS = frozenset({"STAR", "RSHIFT", "AT", "PLUS", "MINUS", "SLASH", "LPAR"})
#: Rarer operators (quivers' coproducts and slash types, other compositions,
#: comparisons): never named in a message when anything else is expected.
_QUIET = frozenset(
    {
        "BACKSLASH",
        "TRANS",
        "LSHIFT",
        "KLEISLI",
        "DOT",
        "PERCENT",
        "EQEQ",
        "NOTEQ",
        "LESS",
        "LESSEQ",
        "MORE",
        "MOREEQ",
        "ANDAND",
        "OROR",
    }
)
#: After an object expression (where `\\` is possible) `+`, `/` and `(` are quiet too.
_QUIET_IN_OBJECTS = frozenset({"PLUS", "SLASH", "LPAR"})

_DECL_STARTS = frozenset({"OBJECT", "MORPHISM", "LET", "PROGRAM", "EXPORT"})
_STEP_STARTS = frozenset({"SAMPLE", "OBSERVE", "LET", "RETURN"})
_VALUE_STARTS = frozenset({"NAME", "INT", "FLOAT", "MINUS"})
#: What else can start a value or an expression; named by the phrase for those.
_MORE_STARTS = frozenset(
    {"TRUE", "FALSE", "UNIT", "STRING", "NOT", "FACTOR", "LSQB", "CTOR", "LBRACE"}
)

_MAX_SHOWN = 24


def shorten(text: str) -> str:
    """Text quoted in a message, cut so a pathological token cannot flood it."""
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def describe_found(tok: Token) -> str:
    """The token the parse could not use, as the user would name it."""
    if tok.type == "$END":
        return "end of line"
    if tok.type in KEYWORD_TYPES:
        return f"keyword '{tok.text}'"
    if tok.type == "NAME":
        return f"name '{shorten(tok.text)}'"
    if tok.type in ("INT", "FLOAT"):
        return f"number {shorten(tok.text)}"
    return f"'{tok.text}'"


def describe_expected(expected: Iterable[str]) -> str:
    """`expected` terminals as a phrase: "'->'", "an expression", "',' or ']'"."""
    exp = set(expected)
    if exp >= _DECL_STARTS:
        return "a declaration ('object', 'morphism', 'let', 'program' or 'export')"
    if exp >= _STEP_STARTS:
        return "a step ('sample', 'observe', 'let' or 'return')"
    phrases: list[str] = []
    if {"NAME", "LPAR"} <= exp:
        phrases.append("an expression")
        exp -= _VALUE_STARTS | _MORE_STARTS | {"LPAR"}
    elif exp >= _VALUE_STARTS:
        phrases.append("a value (a name, a number, true or false)")
        exp -= _VALUE_STARTS | _MORE_STARTS
    elif "NAME" in exp:
        exp.discard("CTOR")
    elif {"INT", "FLOAT"} <= exp:
        exp.discard("INT")
    if exp - _QUIET:
        if "BACKSLASH" in exp:
            exp -= _QUIET_IN_OBJECTS
        exp -= _QUIET
    essential = exp - _CONTINUATIONS
    if (phrases or essential) and essential != {"$END"}:
        exp = essential
    phrases.extend(_WORDS.get(t, t) for t in sorted(exp, key=lambda t: _ORDER.get(t, 99)))
    if not phrases:
        return "nothing more"
    if len(phrases) == 1:
        return phrases[0]
    return ", ".join(phrases[:-1]) + " or " + phrases[-1]


def describe_place(tokens: Sequence[Token], index: int) -> str:
    """Where the parse stopped, as "after ...", from the tokens before `index`."""
    if index == 0:
        return ""
    prev = tokens[index - 1]
    head = tokens[0]
    named = len(tokens) > 1 and tokens[1].type == "NAME" and head.type in _DECL_STARTS
    if named:
        what = f"{head.text} {shorten(tokens[1].text)}"
        if index == 2:
            return f" after '{what}'"
        before = {t.type for t in tokens[:index]}
        if head.type in ("MORPHISM", "PROGRAM") and prev.type == "NAME" and "COLON" in before:
            if "ARROW" not in before:
                return f" after the domain of {what}"
            if not before & {"LSQB", "TILDE"}:
                return f" after the codomain of {what}"
        if head.type == "OBJECT" and prev.type in ("INT", "FLOAT") and index >= 4:
            return f" after the size of {what}"
    return f" after '{shorten(prev.text)}'"


def unexpected_token(
    tokens: Sequence[Token], index: int, found: Token, expected: set[str], in_body: bool
) -> str:
    """The message for a token the grammar cannot accept at this point of a line.

    `in_body` says whether the line is a program step (else a declaration).
    """
    if index == 0 and found.type in KEYWORD_TYPES:
        if not in_body and found.type not in _DECL_STARTS:
            return f"'{found.text}' step outside a program body: indent it under its program"
        if in_body and found.type not in _STEP_STARTS:
            return (
                f"'{found.text}' declaration inside a program body: declarations start at column 0"
            )
    wanted = describe_expected(expected)
    place = describe_place(tokens, index)
    if found.type == "$END":
        return f"unexpected end of line: expected {wanted}{place}"
    return f"expected {wanted}{place}, found {describe_found(found)}"
