"""Layout: cut QVR text into comments, tokens, logical lines and declaration chunks.

This pass settles everything that depends on lines: comments, doc comments,
tabs, indentation and bracket continuations. What it hands to the grammar is
one logical line at a time (a declaration, a program header or one program
step), which is what makes error recovery simple: a syntax error can only
cost the line it is on, and the next declaration always starts afresh.

It is one linear pass, with one regular expression per line (two after an
unterminated string), so it stays fast on large files and on hostile lines,
and it never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from qvr_core.builtins.objects import OBJECT_CONSTRUCTORS, UNTYPED_CONSTRUCTORS
from qvr_core.syntax.ast import Comment
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, make
from qvr_core.text.span import Span, unify_line_ends

#: Reserved words and their token types.
KEYWORDS: dict[str, str] = {
    "object": "OBJECT",
    "morphism": "MORPHISM",
    "let": "LET",
    "program": "PROGRAM",
    "sample": "SAMPLE",
    "observe": "OBSERVE",
    "return": "RETURN",
    "export": "EXPORT",
}
KEYWORD_TYPES = frozenset(KEYWORDS.values())
#: Declarations that never have an indented body.
NON_PROGRAM_DECLS = frozenset({"OBJECT", "MORPHISM", "LET", "EXPORT"})

#: The declaration kinds of quivers' grammar beyond object/morphism/define/program
#: (soft keywords: each may be a name elsewhere). The TextMate grammar highlights them
#: where they start a line (scripts/gen_grammar.py).
DECLARATION_KINDS = (
    "index",
    "family",
    "effect",
    "instance",
    "handler",
    "composition",
    "category",
    "rule",
    "schema",
    "bundle",
    "contraction",
    "deduction",
    "signature",
    "encoder",
    "decoder",
    "loss",
)
#: Words that are keywords only where the grammar expects them (as in quivers'
#: grammar, where `index` or `loss` may also name a morphism). The lexer makes
#: them names; the parser's driver retypes one when its state accepts the keyword.
SOFT_KEYWORDS: dict[str, str] = {
    word: word.upper()
    for word in (
        "define",
        "where",
        "marginalize",
        "score",
        *DECLARATION_KINDS,
        "for",
        "as",
        "in",
        "from",
        "with",
        "over",
        "atoms",
        "binders",
        "lexicon",
        "sorts",
        "constructors",
        "vertex_kinds",
        "edge_kinds",
        "dim",
        "iterations",
        "readout",
        "op",
        "init",
        "message",
        "update",
        "var_init",
        "recurrent",
        "attention",
        "structure",
        "primitive",
        "factor",
        "binder_select",
        "body",
        "binds",
        "constructor",
        "resumes",
        "perform",
        "resume",
        "handle",
        "case",
        "motive",
        "if",
        "then",
        "else",
        "construct",
        "lacks",
        "not",
        "true",
        "false",
        "unit",
        "type",
        "output",
        "draw",
        "quantale",
        "via",
    )
}
#: quivers' object constructors (keywords in its grammar), and the role words that
#: declared morphisms in quivers 0.1 - 0.10 (`kernel f : A -> B`).
SOFT_KEYWORDS.update(dict.fromkeys((*OBJECT_CONSTRUCTORS, *UNTYPED_CONSTRUCTORS), "CTOR"))
SOFT_KEYWORDS.update(
    dict.fromkeys(("embed", "continuous", "kernel", "latent", "stochastic", "discrete"), "ROLE")
)

#: Words that start a declaration wherever they stand (the grammar's `storage.type`).
DECLARATION_KEYWORDS = ("object", "morphism", "let", "define", "program")
#: Words of program steps, `where` blocks and exports (the grammar's `keyword.control`).
CONTROL_KEYWORDS = ("sample", "observe", "marginalize", "score", "return", "export", "where")

#: Words that start a top-level statement when they begin a line at column 0.
#: Such a line always starts a new statement (it closes an unclosed bracket), so
#: the text can be cut before it (`segment_starts`).
TOP_WORDS = frozenset((*KEYWORDS, "define", *DECLARATION_KINDS))

PUNCTUATION: dict[str, str] = {
    "->": "ARROW",
    "<-": "LARROW",
    ">>>": "TRANS",
    ">>": "RSHIFT",
    "<<": "LSHIFT",
    ":": "COLON",
    "*": "STAR",
    "+": "PLUS",
    "-": "MINUS",
    "/": "SLASH",
    "\\": "BACKSLASH",
    "[": "LSQB",
    "]": "RSQB",
    "(": "LPAR",
    ")": "RPAR",
    "{": "LBRACE",
    "}": "RBRACE",
    ",": "COMMA",
    "=": "EQUAL",
    "~": "TILDE",
    "@": "AT",
    ".": "DOT",
    "|->": "MAPSTO",
    "|-": "TURNSTILE",
    "\u22a2": "TURNSTILE",
    "=>": "FATARROW",
    "|": "BAR",
    "!": "BANG",
    "%": "PERCENT",
    "==": "EQEQ",
    "!=": "NOTEQ",
    "<": "LESS",
    "<=": "LESSEQ",
    ">": "MORE",
    ">=": "MOREEQ",
    "&&": "ANDAND",
    "||": "OROR",
    "--": "DASHDASH",
    "#[": "PRAGMA",
    "#![": "IPRAGMA",
    # quivers 0.11-0.14's extra composition operators
    ">=>": "KLEISLI",
    "*>": "KLEISLI",
    "~>": "KLEISLI",
    "||>": "KLEISLI",
    "?>": "KLEISLI",
    "&&>": "KLEISLI",
    "+>": "KLEISLI",
    "$>": "KLEISLI",
    "%>": "KLEISLI",
}
OPENERS = frozenset({"LPAR", "LSQB", "LBRACE", "PRAGMA", "IPRAGMA"})
CLOSERS = frozenset({"RPAR", "RSQB", "RBRACE"})

TAB_WIDTH = 4
_MAX_BAD_RUNS = 20  # per logical line: a pasted binary must not flood the editor
TAB_MESSAGE = "tab character: QVR indents with spaces"

# One match per token with its leading blanks, so blanks cost no match of their
# own. Groups: 0 the blanks, 1 name, 2 float, 3 int, 4 punctuation or string,
# 5 an unterminated string (its quote and the rest of the line), 6 tabs, 7 a
# run of characters that start no token (or one, like a lone '<'); at the end of
# the line only the blanks match. Names are matched in any script so that
# `Größe` is one (reported) name rather than three tokens; numbers are ASCII
# ([0-9], not \d, which accepts every script's digits). A byte order mark
# counts as a blank.
#
# Every alternative looks at most a character or two past what the match takes,
# except a string's: it scans to its closing quote, or to the end of the line
# when there is none. An unterminated string therefore ends the line's pass
# (group 5), and the rest of the line is read with `_AFTER_QUOTE_RE`, which has
# no strings: no string can start after an unterminated one (each later quote
# is escaped in its scan, which goes on from just after it as a scan from it
# would), so scanning again from every later quote, as one pattern for the
# whole line did, would only find the same end of line (quadratic on a line of
# `"\"\"\"...`). The string's loop is possessive: on failing it gives back nothing.
_PUNCT = "|".join(re.escape(p) for p in sorted(PUNCTUATION, key=len, reverse=True))
_STRING = r"\"(?:[^\"\\]|\\.)*+\""


def _token_pattern(strings: bool) -> re.Pattern[str]:
    return re.compile(
        r"([ \r\f\v\ufeff]*)(?:"
        r"([^\W\d]\w*)"
        r"|((?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"
        r"|([0-9]+)"
        r"|(" + _PUNCT + (r"|" + _STRING if strings else "") + r")"
        r"|(" + (r"(?s:\".*)" if strings else r"(?!)") + r")"
        r"|(\t+)"
        r"|([^ \t\r\f\v\ufeffA-Za-z0-9_.:*+\-/\[\](){},=~@<>|!%&#$?\\\"\u22a2]+|[^ \r\f\v\ufeff])"
        r"|$)"
    )


_TOKEN_RE = _token_pattern(strings=True)
_AFTER_QUOTE_RE = _token_pattern(strings=False)
_FIXED_TYPES = {**KEYWORDS, **PUNCTUATION}

_new_tuple = tuple.__new__


class Token(NamedTuple):
    """One token on one line. Its position fields are named like Span's, so a span
    can run from a token or a node to a token or a node (see `cover`)."""

    type: str
    text: str
    start: int
    start_line: int
    start_col: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def end_line(self) -> int:
        return self.start_line

    @property
    def end_col(self) -> int:
        return self.start_col + len(self.text)

    @property
    def span(self) -> Span:
        _, text, start, line, col = self
        return Span(start, start + len(text), line, col, line, col + len(text))


def make_token(type_: str, text: str, start: int, line: int, col: int) -> Token:
    """A Token, built without NamedTuple's Python-level __new__ (tokens are the hot path)."""
    return _new_tuple(Token, (type_, text, start, line, col))


def cover(first: Token | Span, last: Token | Span) -> Span:
    """The span from the start of `first` to the end of `last`."""
    if type(last) is Token:
        _, text, start, line, col = last
        return Span(
            first.start,
            start + len(text),
            first.start_line,
            first.start_col,
            line,
            col + len(text),
        )
    return Span(
        first.start, last.end, first.start_line, first.start_col, last.end_line, last.end_col
    )


class LogicalLine:
    """A line as the grammar sees it: physical lines joined while a bracket is open."""

    __slots__ = ("bad", "depth", "doc", "indent", "tokens")

    def __init__(self, indent: int) -> None:
        self.tokens: list[Token] = []
        self.bad: list[Token] = []  # runs of characters no token can start with
        self.indent = indent  # width of the leading blanks of its first line (tab = 4)
        self.depth = 0  # brackets still open at its end
        self.doc: str | None = None  # the doc comment just above it


@dataclass(slots=True)
class Chunk:
    """One top-level declaration: its first logical line and, for a program, its body."""

    head: LogicalLine
    body: list[LogicalLine]

    @property
    def keyword(self) -> str:
        return self.head.tokens[0].type

    @property
    def doc(self) -> str | None:
        return self.head.doc

    @property
    def last_token(self) -> Token:
        return (self.body[-1] if self.body else self.head).tokens[-1]


@dataclass
class Layout:
    """A text cut up: its declarations, every comment, and what was wrong with its layout.

    `pending_doc` is true when a doc comment is left over at the end, waiting
    for a declaration that the text handed to `split` does not contain.
    """

    chunks: list[Chunk]
    comments: list[Comment]
    problems: list[Diagnostic]
    pending_doc: bool = False


def split(text: str, offset: int = 0, first_line: int = 0) -> Layout:
    """Split `text` into chunks (one per declaration), comments and layout problems.

    `offset` and `first_line` place `text` inside a larger one (a segment, see
    `segment_starts`), so that every position comes out absolute.
    """
    lines = _Lines()
    text = unify_line_ends(text)
    for line_no, raw in enumerate(text.split("\n"), first_line):
        line = raw[:-1] if raw.endswith("\r") else raw
        hash_at = line.find("#")
        if hash_at >= 0 and (line.startswith(("#[", "#!["), hash_at) or '"' in line[:hash_at]):
            hash_at = _comment_start(line)
        code = line if hash_at < 0 else line[:hash_at]
        blank = not code or code.isspace()
        if hash_at >= 0:
            lines.comment(line[hash_at:], offset + hash_at, line_no, hash_at, blank)
        if not blank:
            lines.code(code, offset, line_no)
        elif "\t" in code:
            _tokenize(code, offset, line_no, LogicalLine(0), lines.problems)
        offset += len(raw) + 1
    chunks = _group(lines.logical, lines.problems)
    return Layout(chunks, lines.comments, lines.problems, bool(lines.doc_run))


#: A line starting with a keyword at column 0 always starts a new statement.
_KEYWORD_LINE = re.compile(r"^(?:(?:" + "|".join(sorted(TOP_WORDS)) + r")\b|#!?\[)", re.MULTILINE)
#: A line holding no code: blanks and at most a comment (a subset of what `split`
#: treats as blank, so that a segment never starts in the middle of a statement).
_NO_CODE = re.compile(r"[ \t\r\f\v]*(?:#.*)?")


def segment_starts(text: str) -> list[int]:
    """Offsets where `text` can be cut into stretches that `split` handles alone.

    Each stretch after the first begins with the comments and blank lines
    above a line that starts with a keyword at column 0. Since a keyword
    always starts a new logical line, the layout of each stretch does not
    depend on the others, except for a doc comment left pending at the end of
    a stretch (`Layout.pending_doc`), which the caller handles by joining the
    stretch with the next.
    """
    text = unify_line_ends(text)
    starts = [0]
    floor = 0
    for match in _KEYWORD_LINE.finditer(text):
        at = match.start()
        # move up over the lines without code just above (doc comments included)
        while at > floor:
            above = text.rfind("\n", floor, at - 1) + 1
            if above < floor or not _NO_CODE.fullmatch(text, above, at - 1):
                break
            at = above
        if at > starts[-1]:
            starts.append(at)
        floor = match.end()
    return starts


class _Lines:
    """Physical lines to logical lines, collecting comments and doc comments on the way."""

    def __init__(self) -> None:
        self.logical: list[LogicalLine] = []
        self.comments: list[Comment] = []
        self.problems: list[Diagnostic] = []
        self.open: LogicalLine | None = None  # the logical line while a bracket is open
        self.doc_run: list[str] = []
        self.doc_run_end = -2  # physical line of the last `#!` line of the run

    def comment(self, text: str, offset: int, line: int, col: int, whole_line: bool) -> None:
        span = Span(offset, offset + len(text), line, col, line, col + len(text))
        self.comments.append(Comment(text, span))
        if not (whole_line and col == 0 and text.startswith("#!")):
            return
        body = text[2:]
        if body.startswith(" "):
            body = body[1:]
        if self.doc_run_end != line - 1:
            self.doc_run = []  # a new run replaces an earlier, separated one
        self.doc_run.append(body)
        self.doc_run_end = line

    def code(self, code: str, offset: int, line: int) -> None:
        logical = LogicalLine(_indent_width(code))
        _tokenize(code, offset, line, logical, self.problems)
        current = self.open
        if current is not None and not _starts_statement(logical):
            # Implicit line joining inside brackets. A keyword always starts a new
            # statement (none can occur inside brackets), so an unclosed bracket
            # cannot swallow the declarations that follow it.
            current.tokens.extend(logical.tokens)
            current.bad.extend(logical.bad)
            current.depth = _depth_after(current.depth, logical.tokens)
        elif logical.tokens:
            if "(" in code or "[" in code or "{" in code:
                logical.depth = _depth_after(0, logical.tokens)
            logical.doc = "\n".join(self.doc_run) if self.doc_run else None
            self.doc_run = []
            self.logical.append(logical)
            current = logical
        elif logical.bad:
            # Only stray characters on this line: report them, keep no line.
            _report_bad(logical.bad, self.problems)
        self.open = current if current is not None and current.depth > 0 else None


def _starts_statement(logical: LogicalLine) -> bool:
    """A keyword always starts a new statement, and so does a top-level word at column
    0, so an unclosed bracket cannot swallow the declarations that follow it."""
    if not logical.tokens:
        return False
    first = logical.tokens[0]
    if first.type in KEYWORD_TYPES:
        return True
    return logical.indent == 0 and (first.text in TOP_WORDS or first.type in _PRAGMAS)


_PRAGMAS = frozenset({"PRAGMA", "IPRAGMA"})


def _comment_start(line: str) -> int:
    """Where the comment of a line starts (-1 for none): not inside a string, and
    `#[` and `#![` open pragmas (code), as in quivers' grammar."""
    i = 0
    in_string = False
    while i < len(line):
        ch = line[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "#" and not line.startswith(("#[", "#!["), i):
            return i
        i += 1
    return -1


def without_comments(code: str) -> str:
    """`code` with the comment of each of its lines cut off, as the tokenizer sees it (a
    `#` in a string or opening a pragma starts none); `code` must not start in a string."""
    if "#" not in code:
        return code
    lines = code.split("\n")
    for i, line in enumerate(lines):
        at = _comment_start(line) if "#" in line else -1
        if at >= 0:
            lines[i] = line[:at]
    return "\n".join(lines)


def _tokenize(
    code: str, offset: int, line: int, out: LogicalLine, problems: list[Diagnostic]
) -> None:
    """Append the tokens of one physical line's code (comment removed) to `out`.

    One pass of `_TOKEN_RE`; if it stops at an unterminated string, its quote is
    a stray character and the rest of the line is read without strings (see
    `_TOKEN_RE`), so each character is scanned a bounded number of times.
    """
    quote = _append_tokens(_matches(_TOKEN_RE, code, 0), offset, line, out, problems)
    if quote >= 0:
        out.bad.append(make_token("BAD", '"', offset + quote, line, quote))
        rest = _matches(_AFTER_QUOTE_RE, code, quote + 1)
        _append_tokens(rest, offset, line, out, problems, quote + 1)


#: Lines longer than this are read a match at a time rather than in one `findall`: one
#: call to `re` holds the interpreter until it returns, and the language server checks
#: in a thread beside the one that answers requests (100 KB in one call: some 30 ms).
_LONG_LINE = 4096

_Groups = tuple[str, str, str, str, str, str, str, str]


def _matches(pattern: re.Pattern[str], code: str, pos: int) -> Iterable[_Groups]:
    """The groups of `pattern`'s matches in `code` from `pos`, as `findall` gives them."""
    if len(code) - pos <= _LONG_LINE:
        return pattern.findall(code, pos)
    return (match.groups("") for match in pattern.finditer(code, pos))  # type: ignore[misc]  # 8 groups


def _append_tokens(
    found: Iterable[_Groups],
    offset: int,
    line: int,
    out: LogicalLine,
    problems: list[Diagnostic],
    col: int = 0,
) -> int:
    """Append the tokens of `findall`'s groups (from column `col`) to `out`; the column of
    an unterminated string's quote where they stop at one, else -1.

    `findall` and a running column, rather than match objects, because this
    loop runs once per token of the file.
    """
    append = out.tokens.append
    fixed = _FIXED_TYPES.get
    for blanks, name, real, integer, punct, unterminated, tabs, stray in found:
        col += len(blanks)
        if name:
            append(_new_tuple(Token, (fixed(name, "NAME"), name, offset + col, line, col)))
            if not name.isascii():
                problems.append(_non_ascii_name(name, offset + col, line, col))
            col += len(name)
        elif punct:
            kind = fixed(punct) or "STRING"
            append(_new_tuple(Token, (kind, punct, offset + col, line, col)))
            col += len(punct)
        elif integer:
            append(_new_tuple(Token, ("INT", integer, offset + col, line, col)))
            col += len(integer)
        elif real:
            append(_new_tuple(Token, ("FLOAT", real, offset + col, line, col)))
            col += len(real)
        elif tabs:
            tab = make_token("TAB", tabs, offset + col, line, col)
            problems.append(make(rules.SYNTAX_ERROR, TAB_MESSAGE, tab.span))
            col += len(tabs)
        elif stray:
            out.bad.append(make_token("BAD", stray, offset + col, line, col))
            col += len(stray)
        elif unterminated:
            return col
    return -1


def _non_ascii_name(text: str, start: int, line: int, col: int) -> Diagnostic:
    message = (
        f"non-ASCII name '{text[:24]}': names use the letters A-Z and a-z, the digits 0-9 and '_'"
    )
    return make(rules.SYNTAX_ERROR, message, make_token("NAME", text, start, line, col).span)


def _indent_width(code: str) -> int:
    width = len(code) - len(code.lstrip(" "))
    if code[width : width + 1] != "\t":
        return width
    prefix = code[: len(code) - len(code.lstrip(" \t"))]
    return len(prefix) + (TAB_WIDTH - 1) * prefix.count("\t")


def _depth_after(depth: int, tokens: list[Token]) -> int:
    """Brackets open after `tokens`, starting from `depth` (a stray closer is ignored)."""
    for tok in tokens:
        kind = tok[0]
        if kind in OPENERS:
            depth += 1
        elif kind in CLOSERS and depth:
            depth -= 1
    return depth


def _report_bad(bad: list[Token], problems: list[Diagnostic]) -> None:
    """One diagnostic per run of adjacent stray characters, a bounded number per line."""
    runs = [[bad[0]]]
    for tok in bad[1:]:
        if tok.start == runs[-1][-1].end:
            runs[-1].append(tok)
        else:
            runs.append([tok])
    if len(runs) > _MAX_BAD_RUNS:
        rest = runs[_MAX_BAD_RUNS - 1 :]
        runs = runs[: _MAX_BAD_RUNS - 1]
        message = f"{len(rest)} more runs of unexpected characters on this line"
        problems.append(make(rules.SYNTAX_ERROR, message, cover(rest[0][0], rest[-1][-1])))
    problems.extend(_bad_characters(run) for run in runs)


def _bad_characters(run: list[Token]) -> Diagnostic:
    sample = "".join(tok.text for tok in run[:8])[:8]
    shown = ", ".join(_show_char(ch) for ch in dict.fromkeys(sample))
    plural = "characters" if run[-1].end - run[0].start > 1 else "character"
    return make(rules.SYNTAX_ERROR, f"unexpected {plural} {shown}", cover(run[0], run[-1]))


def _show_char(ch: str) -> str:
    if ch.isprintable() and not ch.isspace():
        return f"'{ch}'"
    return f"U+{ord(ch):04X}"


def _group(lines: list[LogicalLine], problems: list[Diagnostic]) -> list[Chunk]:
    """Group logical lines into declarations; indented lines belong to the declaration
    above them when it can have a body (the parser nests them by indentation)."""
    chunks: list[Chunk] = []
    orphans: list[LogicalLine] = []
    for logical in lines:
        if logical.bad:
            _report_bad(logical.bad, problems)
        if logical.indent == 0:
            _report_orphans(orphans, problems)
            chunks.append(Chunk(logical, []))
        elif chunks and takes_body(chunks[-1].head):
            # A body; a head that is not a declaration at all keeps its
            # indented lines too, so that one typo reports one error.
            chunks[-1].body.append(logical)
        else:
            orphans.append(logical)
    _report_orphans(orphans, problems)
    return chunks


def takes_body(head: LogicalLine) -> bool:
    """Whether a declaration's first line can have indented lines below it."""
    first = head.tokens[0]
    if first.type in NON_PROGRAM_DECLS or first.text == "define":
        # `let`/`define` have one only with `where`, or as a typed computation ending in `=`
        last = head.tokens[-1].text
        return first.type in ("LET", "NAME") and (
            last == "where" or (first.text == "define" and last == "=")
        )
    return True


def _report_orphans(orphans: list[LogicalLine], problems: list[Diagnostic]) -> None:
    if not orphans:
        return
    span = cover(orphans[0].tokens[0], orphans[-1].tokens[-1])
    message = (
        "indented line outside a program body"
        " (to continue a line, wrap the expression in parentheses)"
    )
    problems.append(make(rules.SYNTAX_ERROR, message, span))
    orphans.clear()
