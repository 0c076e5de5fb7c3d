"""Where the cursor is, for completion: read from the core's tokens of the text before it.

Completion runs on text that usually does not parse (the user is in the
middle of a line), so the context comes from `qvr_core.syntax.layout`, the
core's lexer and line grouper, applied to the declaration the cursor is in.
The answer is a small value (`Context`) that `completion.py` turns into
candidates from the symbol table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

from qvr_core.builtins import COMBINATORS, STEP_KEYWORDS
from qvr_core.builtins.schemas import PARSER
from qvr_core.builtins.transformations import CHANGE_BASE, TRANSFORMATIONS
from qvr_core.check.algebras import COMPOSITION
from qvr_core.syntax.ast import CONSTRUCT, HANDLE, PERFORM, WITH
from qvr_core.syntax.layout import (
    DECLARATION_KEYWORDS,
    KEYWORDS,
    Chunk,
    LogicalLine,
    Token,
    split,
)
from qvr_core.text.span import unify_line_ends

#: How far back to look for the line that starts the cursor's declaration.
MAX_LOOKBACK_LINES = 400

#: The characters of an identifier (its first is not a digit).
_IDENT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789"
_DECL_START = re.compile(
    r"(?:" + "|".join(dict.fromkeys((*KEYWORDS, *DECLARATION_KEYWORDS))) + r")\b"
)
#: Step words the lexer leaves as names (soft keywords), read here by their text.
_SOFT_STEP_WORDS = frozenset(k.word for k in STEP_KEYWORDS if not k.reserved)
#: Declaration words the lexer leaves as names (`define`), read here by their text.
_SOFT_DECLARATION_WORDS = frozenset(w for w in DECLARATION_KEYWORDS if w not in KEYWORDS)


class Where(StrEnum):
    NOTHING = "nothing"
    TOP_KEYWORD = "top-keyword"  # start of a declaration line
    STEP_KEYWORD = "step-keyword"  # start of a program step
    TYPE = "type"  # object names: after `:`, `->`, `*` in a header or observe
    OBJECT_BODY = "object-body"  # after `object X :`: constructors and objects
    OPTION_KEY = "option-key"  # inside `[...]` after `[` or `,`
    OPTION_VALUE = "option-value"  # inside `[...]` after `key=`
    FAMILY = "family"  # after `~`
    CALLABLE = "callable"  # after `<-` in a step: families, morphisms, lets, programs
    STEP_OPTION_KEY = "step-option-key"  # inside a step's `[...]` after `[` or `,`
    STEP_OPTION_VALUE = "step-option-value"  # inside a step's `[...]` after `key=`
    LET_EXPR = "let-expr"  # in a top-level let's expression: combinators and morphisms
    PARSER_KEY = "parser-key"  # in `parser(` after `(` or `,`: its keywords
    PARSER_RULE = "parser-rule"  # in `parser(rules=[`: rules, schemas and bundles
    BOUND = "bound"  # a program's bound names (call arguments, return)
    ARITH = "arith"  # a step's `let` arithmetic: bound names and builtin functions
    EXPORT = "export"  # after `export`
    ALGEBRA = "algebra"  # after `composition`: the registered composition rules
    TRANSFORMATION = "transformation"  # in `f.change_base(` or after `>>>`: transformations
    CONSTRUCTOR = "constructor"  # after `construct`: the constructors of the families
    HANDLER = "handler"  # after `handle i with`: the handlers
    INSTANCE = "instance"  # after `perform`: the effect instances


@dataclass(frozen=True)
class Context:
    where: Where
    prefix: str = ""  # the identifier typed so far
    program: str | None = None  # the enclosing program, for scope-aware names
    option: str | None = None  # the option key whose value is being typed
    declaring: str | None = None  # the name the current declaration defines
    present: tuple[str, ...] = ()  # option keys already given in the block
    callee: str | None = None  # the name whose call's arguments are being typed
    whole: bool = False  # a let's whole expression starts here (right after its `=`)


def classify(text: str, offset: int) -> Context:
    """The completion context at `offset` (code points) of `text`."""
    text = unify_line_ends(text)  # a lone \r ends a line too
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line = text[line_start:offset]
    if "#" in line:
        return Context(Where.NOTHING)
    prefix = _identifier_at_end(line)
    at = len(line) - len(prefix)
    if prefix and line[at - 1 : at].isdigit():
        return Context(Where.NOTHING)  # inside a number such as 1e5
    start = _declaration_start(text, line_start)
    layout = split(text[start:offset])
    chunk = layout.chunks[-1] if layout.chunks else None
    cursor_line = text.count("\n", start, offset)
    indented = line[:1] in (" ", "\t")
    logical = _current_line(chunk, cursor_line)
    tokens = list(logical.tokens) if logical is not None else []
    if prefix and tokens and tokens[-1].text == prefix and tokens[-1].end == offset - start:
        tokens.pop()
    program = _program_name(chunk) if chunk is not None and indented else None
    qiec = _qiec_word(tokens)
    if qiec is not None:
        return Context(qiec, prefix, program)
    if not tokens:
        if indented and chunk is not None and chunk.keyword == "PROGRAM":
            return Context(Where.STEP_KEYWORD, prefix, program)
        return Context(Where.NOTHING if indented else Where.TOP_KEYWORD, prefix)
    head = chunk.head if chunk is not None else None
    if program is not None and logical is not None and logical is not head:
        return _step(tokens, prefix, program)
    return _declaration(tokens, prefix)


def _qiec_word(tokens: list[Token]) -> Where | None:
    """After a QIEC keyword that names a declaration of the module: `construct ` (a
    constructor), `handle i with ` (a handler), `perform ` (an instance)."""
    if not tokens:
        return None
    last = tokens[-1].text
    if last == CONSTRUCT:
        return Where.CONSTRUCTOR
    if last == PERFORM:
        return Where.INSTANCE
    if last == WITH and any(t.text == HANDLE for t in tokens):
        return Where.HANDLER
    return None


def _identifier_at_end(line: str) -> str:
    """The identifier that ends `line` ("" for none).

    Read from the end: a search for an identifier anchored at the end of the
    line would scan to the end again from every letter of a long word that
    does not end it (quadratic, a completion request frozen on a long line).
    """
    run = line[len(line.rstrip(_IDENT_CHARS)) :]  # the identifier characters at the end
    return run.lstrip("0123456789")


def _declaration_start(text: str, line_start: int) -> int:
    """Offset of the line that starts the declaration containing `line_start`."""
    pos = line_start
    for _ in range(MAX_LOOKBACK_LINES):
        if _DECL_START.match(text, pos):
            return pos
        if pos == 0:
            return 0
        pos = text.rfind("\n", 0, pos - 1) + 1
    return pos


def _current_line(chunk: Chunk | None, cursor_line: int) -> LogicalLine | None:
    """The logical line the cursor continues: its last token is on the cursor's line,
    or it still has a bracket open."""
    if chunk is None:
        return None
    logical = chunk.body[-1] if chunk.body else chunk.head
    last = logical.tokens[-1]
    if last.end_line == cursor_line or logical.depth > 0:
        return logical
    return None


def _program_name(chunk: Chunk) -> str | None:
    head = chunk.head.tokens
    if chunk.keyword == "PROGRAM" and len(head) > 1 and head[1].type == "NAME":
        return head[1].text
    return None


def _types(tokens: list[Token]) -> list[str]:
    return [t.type for t in tokens]


def _open_call(tokens: list[Token]) -> tuple[int, int] | None:
    """(index of the innermost unclosed `(`, number of commas after it), or None."""
    stack: list[list[int]] = []
    for i, t in enumerate(tokens):
        if t.type in ("LPAR", "LSQB"):
            stack.append([i, 0])
        elif t.type in ("RPAR", "RSQB") and stack:
            stack.pop()
        elif t.type == "COMMA" and stack:
            stack[-1][1] += 1
    if stack and tokens[stack[-1][0]].type == "LPAR":
        return stack[-1][0], stack[-1][1]
    return None


def _parser_argument(after: list[Token], prefix: str, declaring: str | None) -> Context | None:
    """Inside quivers' `parser(...)`: its keywords, the rules of `rules=[`, the objects
    after `terminal=`; None outside such a call."""
    opened: list[int] = []
    for i, t in enumerate(after):
        if t.type in ("LPAR", "LSQB"):
            opened.append(i)
        elif t.type in ("RPAR", "RSQB") and opened:
            opened.pop()
    calls = [i for i in opened if after[i].type == "LPAR"]
    if not calls or calls[-1] == 0 or after[calls[-1] - 1].text != PARSER:
        return None
    paren = calls[-1]
    inside = after[paren + 1 :]
    last = after[-1].type
    if opened[-1] != paren:  # in a list: which keyword's?
        bracket = opened[-1]
        key = after[bracket - 2].text if after[bracket - 1].type == "EQUAL" else None
        if key == "rules" and last in ("LSQB", "COMMA"):
            return Context(Where.PARSER_RULE, prefix, declaring=declaring)
        return Context(Where.NOTHING, prefix)
    if last in ("LPAR", "COMMA"):
        present = tuple(
            t.text
            for t, following in pairwise(inside)
            if t.type == "NAME" and following.type == "EQUAL"
        )
        return Context(Where.PARSER_KEY, prefix, declaring=declaring, present=present)
    if last == "EQUAL" and after[-2].text == "terminal":
        return Context(Where.TYPE, prefix, declaring=declaring)
    return Context(Where.NOTHING, prefix)


def _step(tokens: list[Token], prefix: str, program: str) -> Context:
    kinds = _types(tokens)
    first, last = kinds[0], kinds[-1]
    if first == "NAME" and tokens[0].text in _SOFT_STEP_WORDS:  # `marginalize`, `score`
        first = tokens[0].text.upper()
    if first in ("SAMPLE", "OBSERVE", "MARGINALIZE") and "LARROW" in kinds:
        after = tokens[kinds.index("LARROW") + 1 :]
        opened = _open_call(after)
        if opened is not None:
            i = opened[0]
            callee = after[i - 1].text if i > 0 and after[i - 1].type == "NAME" else None
            return Context(Where.BOUND, prefix, program, callee=callee)
        if not after:
            return Context(Where.CALLABLE, prefix, program)
        options = _step_options(after, prefix, program)
        if options is not None:
            return options
        return Context(Where.NOTHING, prefix, program)
    if (
        first in ("SAMPLE", "OBSERVE", "MARGINALIZE")
        and "COLON" in kinds
        and last in ("COLON", "STAR")
    ):
        return Context(Where.TYPE, prefix, program)
    if first in ("LET", "SCORE") and "EQUAL" in kinds and last in _OPERATOR_TOKENS:
        return Context(Where.ARITH, prefix, program)
    if first == "RETURN" and last in ("RETURN", "LPAR", "COMMA"):
        return Context(Where.BOUND, prefix, program)
    return Context(Where.NOTHING, prefix, program)


def _step_options(after: list[Token], prefix: str, program: str) -> Context | None:
    """Inside the `[...]` after a step's source: an option key, or a key's value."""
    kinds = _types(after)
    if "LSQB" not in kinds:
        return None
    opened = len(kinds) - 1 - kinds[::-1].index("LSQB")
    inside = after[opened + 1 :]
    if "RSQB" in _types(inside):
        return None
    last = kinds[-1]
    present = tuple(
        t.text
        for t, following in pairwise(inside)
        if t.type == "NAME" and following.type == "EQUAL"
    )
    if last in ("LSQB", "COMMA"):
        return Context(Where.STEP_OPTION_KEY, prefix, program, present=present)
    if last == "EQUAL" and len(inside) >= 2 and inside[-2].type == "NAME":
        return Context(Where.STEP_OPTION_VALUE, prefix, program, option=inside[-2].text)
    return None


_OPERATOR_TOKENS = frozenset({"EQUAL", "PLUS", "MINUS", "STAR", "SLASH", "LPAR", "COMMA"})


def _declaration(tokens: list[Token], prefix: str) -> Context:
    kinds = _types(tokens)
    first, last = kinds[0], kinds[-1]
    if first == "NAME" and tokens[0].text in _SOFT_DECLARATION_WORDS:
        first = "LET"  # `define x = multihead(...)` is a let by another word
    declaring = tokens[1].text if len(tokens) > 1 and kinds[1] == "NAME" else None
    if first == "OBJECT" and "COLON" in kinds:
        if last == "COLON":
            return Context(Where.OBJECT_BODY, prefix, declaring=declaring)
        if last == "STAR":
            return Context(Where.TYPE, prefix, declaring=declaring)
    elif first == "MORPHISM":
        return _morphism(tokens, kinds, prefix, declaring)
    elif first == "LET" and "EQUAL" in kinds:
        return _let_expression(tokens, prefix, declaring)
    elif first == "PROGRAM" and "COLON" in kinds and last in ("COLON", "ARROW", "STAR"):
        return Context(Where.TYPE, prefix, declaring=declaring)
    elif first == "EXPORT" and len(tokens) == 1:
        return Context(Where.EXPORT, prefix)
    elif len(tokens) == 1 and tokens[0].text == COMPOSITION:
        return Context(Where.ALGEBRA, prefix)
    return Context(Where.NOTHING, prefix)


def _morphism(tokens: list[Token], kinds: list[str], prefix: str, declaring: str | None) -> Context:
    last = kinds[-1]
    if "LSQB" in kinds:
        opened = len(kinds) - 1 - kinds[::-1].index("LSQB")
        inside = tokens[opened + 1 :]
        if "RSQB" not in _types(inside):
            present = tuple(
                t.text
                for t, following in pairwise(inside)
                if t.type == "NAME" and following.type == "EQUAL"
            )
            if last in ("LSQB", "COMMA"):
                return Context(Where.OPTION_KEY, prefix, declaring=declaring, present=present)
            if last == "EQUAL" and len(inside) >= 2 and inside[-2].type == "NAME":
                key = inside[-2].text
                return Context(Where.OPTION_VALUE, prefix, option=key, declaring=declaring)
            return Context(Where.NOTHING, prefix)
    if last == "TILDE":
        return Context(Where.FAMILY, prefix, declaring=declaring)
    if "COLON" in kinds and "LSQB" not in kinds and last in ("COLON", "ARROW", "STAR"):
        return Context(Where.TYPE, prefix, declaring=declaring)
    return Context(Where.NOTHING, prefix)


def _let_expression(tokens: list[Token], prefix: str, declaring: str | None) -> Context:
    after = tokens[_types(tokens).index("EQUAL") + 1 :]
    last = after[-1].type if after else "EQUAL"
    in_parser = _parser_argument(after, prefix, declaring)
    if in_parser is not None:
        return in_parser
    call = _open_call(after)
    if last == "TRANS":  # `softmax(B) >>> `: the next step of a change of base
        return Context(Where.TRANSFORMATION, prefix, declaring=declaring)
    if call is not None:
        index, commas = call
        callee = after[index - 1].text if index > 0 and after[index - 1].type == "NAME" else None
        if callee == CHANGE_BASE and index > 1 and after[index - 2].type == "DOT":
            where = Where.TRANSFORMATION if last == "LPAR" else Where.NOTHING
            return Context(where, prefix, declaring=declaring)
        found = TRANSFORMATIONS.get(callee or "")
        takes = found.takes if found is not None else ""
        if takes == "axis" and last == "LPAR":  # `softmax(`: the object of its axis
            return Context(Where.TYPE, prefix, declaring=declaring)
        combinator = COMBINATORS.get(callee or "")
        if combinator is not None:
            param = combinator.param_at(commas)
            if param is not None and param.kind == "object":
                return Context(Where.TYPE, prefix, declaring=declaring)
            if param is None or param.kind == "count":
                return Context(Where.NOTHING, prefix)  # a keyword argument or a count
    if last in ("EQUAL", "RSHIFT", "AT", "LPAR", "COMMA"):
        return Context(Where.LET_EXPR, prefix, declaring=declaring, whole=last == "EQUAL")
    return Context(Where.NOTHING, prefix)
