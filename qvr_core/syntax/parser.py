"""The QVR parser: `parse(text)` returns the syntax tree of what parsed plus QVR001 errors.

It never raises. Recovery works by construction rather than by repair:
layout.py cuts the text into declarations and each declaration into logical
lines (a declaration, a program header, one program step), and each logical
line is parsed on its own against grammar.lark. A bad line costs only that
line: the other declarations, and the other steps of the same program, are
still in the tree, and every bad line is reported.

Lark compiles grammar.lark into LALR(1) tables and wraps the tree-building
callbacks (builder.py); tables.py keeps both between runs. The tables are
driven here by a small loop of our own, because a file is tens of thousands
of tiny parses: lark's per-parse objects and its lookups keyed by grammar
objects would cost more than the lines themselves. Callbacks run on each
reduction, so no parse tree is built and nothing recurses, however deep the
nesting.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import pairwise, repeat
from operator import add, itemgetter
from typing import Any, NamedTuple, Protocol, TypeGuard

from qvr_core.builtins.objects import FINSET
from qvr_core.host.collector import collector_paused
from qvr_core.syntax import ast
from qvr_core.syntax.argument_hint import argument_hint
from qvr_core.syntax.builder import MAX_OBJECT_SIZE, Era, Header, NodeError
from qvr_core.syntax.layout import (
    CLOSERS,
    KEYWORD_TYPES,
    OPENERS,
    SOFT_KEYWORDS,
    Chunk,
    LogicalLine,
    Token,
    cover,
    make_token,
    segment_starts,
    split,
)
from qvr_core.syntax.messages import shorten, unexpected_token
from qvr_core.syntax.shift import Shifter
from qvr_core.syntax.tables import STARTS as STARTS
from qvr_core.syntax.tables import Tables, cache_path, tables
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, Fix, Related, TextEdit, make
from qvr_core.text.span import Span, unify_line_ends

# (the names the tests of the grammar cache reach for: the tables now live in tables.py)
_tables, _cache_path = tables, cache_path

#: How an older surface is rewritten: from the source of a span, the new text.
_Rewrite = Callable[[Callable[[Span], str]], str]

#: Deepest expression nesting accepted: brackets, calls and changes of operator.
#: A chain of one operator (`a >> b >> c`, `x + y - z`) is one level, however long.
MAX_DEPTH = 64
#: Most levels of the syntax tree below a line, chains counted term by term: a
#: chain is a tree leaning left, and later stages (checker, hashing, printing,
#: drawing) recurse along it, so a longer one is refused as too long.
MAX_TREE_DEPTH = 200

_NESTING_TOKENS = frozenset(
    {"RSHIFT", "AT", "PLUS", "MINUS", "STAR", "SLASH", "LPAR", "LSQB", "LBRACE", "ARROW"}
)
_WORD_TYPES = KEYWORD_TYPES | frozenset(SOFT_KEYWORDS.values())

#: Tokens that only an older surface would put after a line's first keyword.
_ERA_ONLY = {"OBJECT": frozenset({"EQUAL"}), "OBSERVE": frozenset({"TILDE"})}

#: The start symbol of the indented lines below a line, by the kind of clause it is.
BODIES = {
    "deduction": "deduction_line",
    "lexicon": "lexicon_line",
    "signature": "signature_line",
    "section": "signature_entry",
    "encoder": "encoder_line",
    "decoder": "decoder_line",
    "loss": "loss_line",
    "composition": "composition_line",
    "family": "family_line",
    "effect": "effect_line",
    "handler": "handler_line",
    "computation": "computation_line",
    "return_clause": "computation_line",
    "operation_clause": "computation_line",
    "handle": "computation_line",
    "with_instance": "computation_line",
    "case": "case_line",
    "case_branch": "computation_line",
    "if": "computation_line",
    "else": "computation_line",
    "let_value": "computation_line",
}


@dataclass(frozen=True)
class ParseResult:
    """The tree of everything that parsed, and one QVR001 diagnostic per problem (sorted)."""

    module: ast.Module
    diagnostics: tuple[Diagnostic, ...]


class _Stuck(Exception):
    """The token at `index` cannot continue the parse; `states` is the stack at that point."""

    def __init__(self, index: int, states: list[int]) -> None:
        super().__init__(index)
        self.index = index
        self.states = states


def _run(tables: Tables, tokens: list[Token]) -> object:
    """Parse one logical line, building its node through the callbacks."""
    actions, rules, end = tables.actions, tables.rules, tables.end
    state = tables.start
    states = [state]
    values: list[Any] = []
    last = tokens[-1]
    eof = make_token("$END", "", last.end, last.start_line, last.end_col)
    soft = SOFT_KEYWORDS.get
    for index, tok in enumerate([*tokens, eof]):
        kind = tok[0]
        if kind == "NAME":
            # a word that is a keyword only where the grammar expects one
            word = soft(tok[1])
            if word is not None and word in actions[state]:
                kind = word
                tok = make_token(kind, tok[1], tok[2], tok[3], tok[4])
        while True:
            act = actions[state].get(kind)
            if act is None:
                if index and kind in _WORD_TYPES and "NAME" in actions[state]:
                    kind = "NAME"  # a keyword where a name is expected: `morphism sample : ..`
                    tok = make_token(kind, tok[1], tok[2], tok[3], tok[4])
                    continue
                raise _Stuck(index, states)
            if act >= 0:  # shift
                state = act
                states.append(state)
                values.append(tok)
                break
            size, callback, goal = rules[~act]
            if callback is None:  # a `?rule` alternative passing its only child up
                state = actions[states[-2]][goal]
                states[-1] = state
            else:
                children = values[-size:]
                del values[-size:]
                del states[-size:]
                values.append(callback(children))
                state = actions[states[-1]][goal]
                states.append(state)
            if state == end and kind == "$END":
                return values[-1]
    raise AssertionError("unreachable: $END either reduces to the end state or is stuck")


def _acceptable(tables: Tables, states: list[int]) -> set[str]:
    """The terminals that would really be shifted from `states`.

    LALR tables over-approximate (a state may reduce on a token that the state
    after the reduction rejects), so each candidate is tried on a copy of the stack.
    """
    actions, rules = tables.actions, tables.rules
    accepted = set()
    for kind in actions[states[-1]]:
        if not kind.isupper():
            continue  # a nonterminal's goto
        stack = list(states)
        while (act := actions[stack[-1]].get(kind)) is not None:
            if act >= 0 or (kind == "$END" and stack[-1] == tables.end):
                accepted.add(kind)
                break
            size, _, goal = rules[~act]
            del stack[len(stack) - size :]
            stack.append(actions[stack[-1]][goal])
            if kind == "$END" and stack[-1] == tables.end:
                accepted.add(kind)
                break
    return accepted


def parse(text: str) -> ParseResult:
    """Parse QVR source text. Never raises but MemoryError: problems come back as diagnostics.

    Every line end the protocol allows (`\\n`, `\\r\\n`, `\\r`) ends a line.
    """
    try:
        text = unify_line_ends(text)
        with collector_paused():
            # one stretch: the same tree as segment by segment (place_segments), but
            # without the per-segment work that only pays off when segments are reused
            return join(text, [_FileParser(text).segment()])
    except MemoryError:  # not a bug: the process is out of memory, which its owner reports
        raise
    except Exception as exc:  # the contract is to never raise; a bug must not kill the server
        return failed(text, exc)


def failed(text: object, exc: Exception) -> ParseResult:
    """What a bug in the parser leaves: an empty module and a QVR000 asking for a report."""
    span = Span(0, 0, 0, 0, 0, 0)
    message = f"internal parser error ({type(exc).__name__}: {exc}); please report it"
    module = ast.Module((), (), _whole(text) if isinstance(text, str) else span)
    return ParseResult(module, (make(rules.INTERNAL_ERROR, message, span),))


def join(text: str, segments: list[Segment]) -> ParseResult:
    """The parse of a whole text from the parses of its segments (all in place), in order."""
    decls = [d for seg in segments for d in seg.decls]
    comments = [c for seg in segments for c in seg.comments]
    diagnostics = [d for seg in segments for d in seg.diagnostics]
    return ParseResult(ast.Module(tuple(decls), tuple(comments), _whole(text)), tuple(diagnostics))


@dataclass(frozen=True)
class Segment:
    """A stretch of text parsed on its own: one declaration with the comments above it.

    See `layout.segment_starts` for why stretches can be parsed separately.
    Positions are those of the text it was parsed in, at `start` and `line`;
    `pending_doc` means a doc comment at its end belongs to the next one.
    """

    text: str
    start: int
    line: int
    decls: tuple[ast.Decl, ...]
    comments: tuple[ast.Comment, ...]
    diagnostics: tuple[Diagnostic, ...]  # sorted
    pending_doc: bool

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    def moved(self, shift: Shifter) -> Segment:
        """This segment moved by `shift` (whose memo then maps its old nodes to the new)."""
        return Segment(
            self.text,
            self.start + shift.chars,
            self.line + shift.lines,
            shift(self.decls),
            shift(self.comments),
            shift(self.diagnostics),
            self.pending_doc,
        )


class Placed(NamedTuple):
    """A segment of a text and where it is: `segment` may be one parsed in an earlier text,
    still in that text's positions, and is then `reused`. (A tuple: files have thousands.)"""

    segment: Segment
    start: int
    line: int
    reused: bool

    def shifter(self) -> Shifter | None:
        """What moves the segment into place (spans before it stay), or None when it is."""
        seg = self.segment
        if seg.start == self.start and seg.line == self.line:
            return None
        return Shifter(self.start - seg.start, self.line - seg.line, seg.start)


def place_segments(
    text: str, previous: Mapping[str, Segment], offset: int = 0, line: int = 0
) -> list[Placed]:
    """The segments of `text` in order: those of `previous` (by text) reused, others parsed.

    `offset` and `line` place `text` in a larger text, of which it is a stretch
    that begins a segment.
    """
    text = unify_line_ends(text)
    starts = segment_starts(text) if text else []
    starts.append(len(text))
    out: list[Placed] = []
    i = 0
    while i < len(starts) - 1:
        start = starts[i]
        i += 1
        placed = _place(text[start : starts[i]], offset + start, line, previous)
        while placed.segment.pending_doc and i < len(starts) - 1:
            i += 1  # the doc comment belongs to the next declaration: parse them together
            placed = _place(text[start : starts[i]], offset + start, line, previous)
        out.append(placed)
        line += placed.segment.text.count("\n")
    return out


def place_again(
    old_text: str,
    old: list[Placed],
    text: str,
    previous: Mapping[str, Segment],
    prefix: int | None = None,
) -> list[Placed]:
    """`place_segments(text, previous)`, given that `old` placed `old_text` (an earlier
    version) with the segments of `previous`: only the stretch that changed is cut again.

    A segment before the change keeps its place if the one after it does too
    (the start of a segment depends on the keyword line that ends the walk
    up over comments); one after the change keeps its text and moves by the
    change in length if the one before it starts after the line of the change.
    `prefix` is `common_prefix(old_text, text)` when the caller has it already.
    """
    if "\r" in old_text or "\r" in text:
        # segments are cut from the unified text; counting lines below must see a lone
        # `\r` as the line end it is (unifying keeps offsets, not always the prefix)
        old_text, text = unify_line_ends(old_text), unify_line_ends(text)
        prefix = None
    if prefix is None:
        prefix = common_prefix(old_text, text)
    suffix = common_suffix(old_text, text, min(len(old_text), len(text)) - prefix)
    # the last segment runs to the end of the text: it never stays when the text grows
    starts = [*map(_START, old), len(old_text), len(old_text) + 1]  # ascending
    # old[:head] stay as they are: those whose next segment but one starts by the prefix
    head = min(len(old), bisect_right(starts, prefix, 2) - 2)
    changed_end = len(old_text) - suffix
    # the first line wholly after the change (a change at the start of a line changes
    # that line: whether it is a comment, say)
    after = old_text.find("\n", changed_end) + 1 or len(old_text) + 1
    # old[tail:] keep their text and move: those (after old[head]) whose segment before
    # them starts after the change
    tail = min(len(old), max(bisect_left(starts, after) + 1, head + 1))
    begin = starts[head] if head < len(old) else len(old_text)
    old_end = starts[tail] if tail < len(old) else len(old_text)
    end = old_end + len(text) - len(old_text)
    if not (begin <= prefix and end >= len(text) - suffix and begin <= end):
        return place_segments(text, previous)
    line = old[head].line if head < len(old) else text.count("\n", 0, begin)
    middle = place_segments(text[begin:end], previous, begin, line)
    if tail < len(old) and middle and middle[-1].segment.pending_doc:
        return place_segments(text, previous)  # its doc comment belongs to the next one
    moved_lines = text.count("\n", begin, end) - old_text.count("\n", begin, old_end)
    moved = len(text) - len(old_text)
    return [*_reused(old[:head], 0, 0), *middle, *_reused(old[tail:], moved, moved_lines)]


_SEGMENT, _START, _LINE, _REUSED = (itemgetter(i) for i in range(4))


def _reused(placed: list[Placed], chars: int, lines: int) -> list[Placed]:
    """`placed` as reused, moved by `chars` and `lines`: thousands of segments at every
    edit, so built in C (`tuple.__new__` makes each `Placed` from a zipped row)."""
    if chars == 0 and lines == 0 and all(map(_REUSED, placed)):
        return placed
    rows = zip(
        map(_SEGMENT, placed),
        map(add, map(_START, placed), repeat(chars)),
        map(add, map(_LINE, placed), repeat(lines)),
        repeat(True),
    )
    return list(map(tuple.__new__, repeat(Placed), rows))


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common start of `a` and `b` (string compares, not a loop)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # invariant: a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common end of `a` and `b`, at most `limit`."""
    lo, hi = 0, max(0, limit)
    if a[len(a) - hi :] == b[len(b) - hi :]:
        return hi
    while hi - lo > 1:  # invariant: the last lo agree, the last hi do not
        mid = (lo + hi) // 2
        if a[len(a) - mid : len(a) - lo] == b[len(b) - mid : len(b) - lo]:
            lo = mid
        else:
            hi = mid
    return lo


def _place(text: str, start: int, line: int, previous: Mapping[str, Segment]) -> Placed:
    old = previous.get(text)
    if old is None:
        return Placed(_FileParser(text, start, line).segment(), start, line, False)
    return Placed(old, start, line, True)


def _whole(text: str) -> Span:
    text = unify_line_ends(text)
    last_newline = text.rfind("\n")
    return Span(0, len(text), 0, 0, text.count("\n"), len(text) - last_newline - 1)


class _FileParser:
    """Parses one segment: chunks to declarations, collecting diagnostics."""

    def __init__(self, text: str, offset: int = 0, line: int = 0) -> None:
        self.text = text
        self.offset = offset
        self.line = line
        self.diagnostics: list[Diagnostic] = []
        self.blocks = 0  # indented blocks open around the line being parsed
        self.tables = tables()
        #: start states where a line's first name is an older surface's, rarely meant
        self.strict_starts = {self.tables["decl"].start, self.tables["step"].start}

    def segment(self) -> Segment:
        layout = split(self.text, self.offset, self.line)
        self.diagnostics.extend(layout.problems)
        decls = []
        for chunk in layout.chunks:
            decl = self._declaration(chunk)
            if decl is not None:
                decls.append(decl)
        self.diagnostics.sort(key=lambda d: (d.span.start, d.span.end))
        return Segment(
            self.text,
            self.offset,
            self.line,
            tuple(decls),
            tuple(layout.comments),
            tuple(self.diagnostics),
            layout.pending_doc,
        )

    def _declaration(self, chunk: Chunk) -> ast.Decl | None:
        braced = self._braced_deduction(chunk)
        if braced is not None:
            return braced
        head: ast.Decl | Header | ast.Clause | None = self._line(chunk.head, "decl")
        span = cover(chunk.head.tokens[0], chunk.last_token)
        if isinstance(head, Header):
            steps = self._block(chunk.body, "step") if chunk.body else []
            return ast.ProgramDecl(
                head.name,
                head.params,
                head.dom,
                head.cod,
                tuple(steps),
                chunk.doc,
                head.span,
                span,
                head.param_kinds,
                head.options,
            )
        if head is None:
            if chunk.body and chunk.keyword == "PROGRAM":
                self._block(chunk.body, "step")  # still report the body's errors
            return None
        if isinstance(head, ast.Clause):
            clause: ast.Clause = self._with_body(head, chunk.body)[0] if chunk.body else head
            return ast.OtherDecl(clause, chunk.doc, cover(clause.span, span))
        decl: ast.Decl = head
        if type(decl) is ast.LetDecl and _spans_lines(chunk.head.tokens):
            self._multiline_let(decl, chunk.head.tokens)
        if chunk.body:  # a `where` block, or lines that belong to no body
            decl = self._with_body(decl, chunk.body)[0]
        if type(decl) is ast.ObjectDecl:
            self._check_size(decl)
        if chunk.doc is not None and not isinstance(decl, ast.ExportDecl):
            decl = dataclasses.replace(decl, doc=chunk.doc)
        return decl

    def _braced_deduction(self, chunk: Chunk) -> ast.OtherDecl | None:
        """`deduction D : A -> B { ... }` (quivers 0.5-0.10): the braces make one logical
        line of the whole block. Its header is kept (so its name is declared), and the
        block gets one diagnostic naming the era instead of errors in every rule."""
        tokens = chunk.head.tokens
        if tokens[0].text != "deduction" or tokens[-1].type != "RBRACE":
            return None
        brace = next((i for i, t in enumerate(tokens) if t.type == "LBRACE"), None)
        if brace is None or brace == 0:
            return None
        try:
            head = _run(self.tables["decl"], tokens[:brace])
        except Exception:
            return None
        if type(head) is not ast.Clause or head.kind != "deduction":
            return None
        span = cover(tokens[0], tokens[-1])
        message = (
            "a braced `deduction ... { ... }` block is quivers 0.5-0.10's: since 0.11 its body "
            "is indented, without braces, one atom list or rule per line; its rules are "
            "not read"
        )
        # on the whole declaration: `qvr migrate` leaves all of it as written
        self.diagnostics.append(make(rules.OLDER_SURFACE, message, span))
        return ast.OtherDecl(dataclasses.replace(head, span=span), chunk.doc, span)

    def _braced_scope(
        self, line: LogicalLine, below: list[LogicalLine]
    ) -> ast.MarginalizeStep | None:
        """`marginalize z : T <- F(..) [over G] in { steps }` (quivers 0.4-0.10): the
        scope in braces, since 0.11 indented below without them. Its steps are parsed
        (their names are bound); one diagnostic names the era, and its rewrite drops
        the braces when the header is one line and `over` is absent."""
        tokens = [*line.tokens, *(t for more in below for t in more.tokens)]
        if tokens[-1].type != "RBRACE":
            return None
        at = next(
            (
                k
                for k in range(1, len(tokens) - 1)
                if tokens[k].text == "in" and tokens[k + 1].type == "LBRACE"
            ),
            None,
        )
        if at is None:
            return None
        head = tokens[:at]
        over = None
        if len(head) > 2 and head[-2].text == "over" and head[-1].type == "NAME":
            over = head[-1]
            head = head[:-2]
        try:
            step = _run(self.tables["step"], head)
        except Exception:
            return None
        if type(step) is not ast.MarginalizeStep:
            return None
        brace, close = tokens[at + 1], tokens[-1]
        inner = _physical_lines(tokens[at + 2 : -1])
        steps = tuple(self._block(inner, "step")) if inner else ()
        span = cover(tokens[0], close)
        message = (
            "a braced `marginalize ... in { ... }` scope is quivers 0.4-0.10's; since 0.11 "
            "its steps are indented below the `marginalize` line, without braces"
        )
        if over is not None:
            message += f", and `over {over.text}` is its option `[over={over.text}]`"
        rewrite = None
        simple = (
            over is None
            and brace.start_line == head[-1].start_line
            and inner
            and inner[0].tokens[0].start_line > brace.start_line
            and close.start_line > inner[-1].tokens[-1].start_line
            and all(more.indent > line.indent for more in inner)
        )
        if simple:
            body = self.text[brace.end - self.offset : close.start - self.offset].rstrip()
            rewrite = lambda src: body  # noqa: E731
        end = head[-1]  # the fix replaces from the end of the header to the `}`
        at_span = span
        if simple:
            col = end.start_col + len(end.text)
            at_span = Span(
                end.end, close.end, end.start_line, col, close.start_line, close.start_col + 1
            )
        self._era(Era(None, message, at_span, rewrite))
        return dataclasses.replace(step, steps=steps, span=span)

    def _block(self, lines: list[LogicalLine], start: str) -> list[Any]:
        """The nodes of a block of lines at one indentation; deeper lines belong to the
        line above them (its body, or a continuation of it). Blocks nest (`marginalize`
        in `marginalize`) at most MAX_DEPTH deep: every later stage walks them
        recursively, so a deeper one is one located error, not a recursion failure."""
        if self.blocks >= MAX_DEPTH:
            first = lines[0].tokens
            message = (
                f"statements nested too deeply (more than {MAX_DEPTH} indented levels):"
                " move the inner steps out of this scope"
            )
            self.diagnostics.append(make(rules.SYNTAX_ERROR, message, cover(first[0], first[-1])))
            return []
        self.blocks += 1
        try:
            return self._block_lines(lines, start)
        finally:
            self.blocks -= 1

    def _block_lines(self, lines: list[LogicalLine], start: str) -> list[Any]:
        out: list[Any] = []
        base = lines[0].indent
        i = 0
        while i < len(lines):
            line = lines[i]
            j = i + 1
            while j < len(lines) and lines[j].indent > line.indent:
                j += 1
            children = lines[i + 1 : j]
            if line.indent < base:
                self._misaligned(line, base, start)
            if start == "step" and line.tokens[0].text == "marginalize":
                group, after = children, j
                if j < len(lines) and [t.type for t in lines[j].tokens] == ["RBRACE"]:
                    group, after = [*children, lines[j]], j + 1  # the `}` below, at its indent
                braced = self._braced_scope(line, group)
                if braced is not None:
                    out.append(braced)
                    i = after
                    continue
            joined = None
            if children and not self._parses(line, start):
                # `factor ... in` + its body; an older surface is reported here (the line
                # alone was not)
                joined = self._continued(line, children, start, report=True)
            if joined is not None:
                if line.tokens[-1].text == "in":
                    self._factor_body_below(line, children)
                out.append(joined)
                i = j
                continue
            node = self._line(line, start)
            siblings: list[Any] = []
            if node is not None and children:
                node, siblings = self._with_body(node, children, line, start)
            elif children:
                siblings = self._block(children, start)  # report what is wrong in them too
            if node is not None:
                out.append(node)
            out += siblings
            i = j
        return out

    def _with_body(
        self,
        node: Any,
        lines: list[LogicalLine],
        line: LogicalLine | None = None,
        start: str = "decl",
    ) -> tuple[Any, list[Any]]:
        """`node` with the indented lines below it as its body: its steps, its `where`
        definitions, its entries; or, for a line that has no body, its continuation.
        Lines that are neither come back as siblings (after a diagnostic)."""
        if isinstance(node, ast.MarginalizeStep):
            steps = tuple(self._block(lines, "step"))
            return dataclasses.replace(node, steps=steps, span=_end_at(node.span, lines)), []
        if isinstance(node, ast.LetDecl) and _ends_with_where(node, self):
            where = tuple(self._block(lines, "where_line"))
            return dataclasses.replace(node, where=where, span=_end_at(node.span, lines)), []
        if isinstance(node, ast.Clause) and node.kind in BODIES:
            body = tuple(self._block(lines, BODIES[node.kind]))
            return dataclasses.replace(node, body=body, span=_end_at(node.span, lines)), []
        if line is None:
            self._report_orphans(lines)
            return node, []
        joined = self._continued(line, lines, start)
        if joined is not None:
            return joined, []
        self._misaligned(lines[0], line.indent, start)
        return node, self._block(lines, start)

    def _parses(self, line: LogicalLine, start: str) -> bool:
        try:
            _run(self.tables[start], line.tokens)
        except Exception:
            return False
        return True

    def _continued(
        self, line: LogicalLine, lines: list[LogicalLine], start: str, report: bool = False
    ) -> object:
        """The line and the deeper lines below it parsed as one (`factor ... in` and its
        body on the next line), or None when that does not parse either."""
        tokens = [*line.tokens, *(t for more in lines for t in more.tokens)]
        try:
            node = _run(self.tables[start], tokens)
        except (_Stuck, NodeError):
            return None
        except Exception:
            return None
        if type(node) is Era:
            return self._era(node) if report else node.node
        return node

    def _misaligned(self, line: LogicalLine, base: int, start: str) -> None:
        if start == "step":
            message = (
                "inconsistent indentation: the steps of a program line up with its first step"
                f" ({base} spaces)"
            )
        else:
            message = (
                f"inconsistent indentation: the lines of this block start at column {base + 1}"
            )
        self.diagnostics.append(make(rules.SYNTAX_ERROR, message, line.tokens[0].span))

    def _report_orphans(self, lines: list[LogicalLine]) -> None:
        span = cover(lines[0].tokens[0], lines[-1].tokens[-1])
        message = (
            "indented line outside a program body"
            " (to continue a line, wrap the expression in parentheses)"
        )
        self.diagnostics.append(make(rules.SYNTAX_ERROR, message, span))

    def _line(self, line: LogicalLine, start: str) -> Any:
        """Parse one logical line; on a syntax error report it and return None."""
        tokens = line.tokens
        tables = self.tables[start]
        try:
            node = _run(tables, tokens)
        except _Stuck as stuck:
            self._syntax_error(tables, stuck, tokens, start != "decl")
            return None
        except NodeError as err:
            self.diagnostics.append(make(rules.SYNTAX_ERROR, err.message, err.span))
            return None
        except MemoryError:
            raise
        except Exception as exc:  # a bug in a callback must cost one line, not the file
            message = f"internal parser error on this line ({type(exc).__name__}: {exc})"
            self.diagnostics.append(
                make(rules.INTERNAL_ERROR, message, cover(tokens[0], tokens[-1]))
            )
            return None
        if type(node) is Era:
            node = self._era(node)
        if len(tokens) > MAX_DEPTH and _nesting_bound(tokens) >= MAX_DEPTH:
            deep = _too_deep(node)
            if deep is not None:
                nested, at = deep
                message = (
                    f"expression nested too deeply (more than {MAX_DEPTH} levels):"
                    " split it into smaller 'let's"
                    if nested
                    else f"expression too long (more than {MAX_TREE_DEPTH} terms in a row):"
                    " split it into smaller 'let's"
                )
                self.diagnostics.append(make(rules.SYNTAX_ERROR, message, at.span))
                return None
        return node

    def _era(self, era: Era) -> object:
        """An older surface: one diagnostic naming its era, with the rewrite as its fix."""
        fixes: tuple[Fix, ...] = ()
        if era.rewrite is not None:
            text = era.rewrite(self._source)
            fixes = (
                Fix(
                    "Rewrite in the syntax of quivers 0.11 and later",
                    (TextEdit(era.span, text),),
                    True,
                ),
            )
        self.diagnostics.append(make(rules.OLDER_SURFACE, era.message, era.span, fixes=fixes))
        for message, span in era.notes:
            self.diagnostics.append(make(rules.OLDER_SURFACE, message, span))
        return era.node

    def _multiline_let(self, decl: ast.LetDecl, tokens: list[Token]) -> None:
        """`let g = parser(` with its arguments on the lines below: quivers 0.2-0.10 read
        a declaration on across lines while a bracket was open; no grammar since 0.11
        does, so the rewrite puts it on one line."""
        keyword = tokens[0].text
        message = (
            f"a `{keyword}` continued over several lines is quivers 0.2-0.10's; since 0.11 "
            "a top-level declaration is written on one line"
        )
        span = cover(tokens[0], tokens[-1])
        self._era(Era(decl, message, span, self._one_line_rewrite(tokens)))

    def _factor_body_below(self, line: LogicalLine, body: list[LogicalLine]) -> None:
        """`let s = factor v : V in` with its body on the line below: quivers 0.6-0.10;
        since 0.11 the body follows `in` on the same line (or is a `{ ... }` of cases)."""
        tokens = [*line.tokens, *(t for more in body for t in more.tokens)]
        message = (
            "a `factor ... in` body on the line below is quivers 0.6-0.10's; since 0.11 it "
            "follows `in` on the same line"
        )
        span = cover(tokens[0], tokens[-1])
        self._era(Era(None, message, span, self._one_line_rewrite(tokens)))

    def _one_line_rewrite(self, tokens: list[Token]) -> _Rewrite | None:
        """A rewrite putting `tokens` (one construct over several lines) on one line, or
        None when a comment between them would be lost."""
        text = self.text
        base = self.offset
        parts = [tokens[0].text]
        for prev, tok in pairwise(tokens):
            gap = text[prev.end - base : tok.start - base]
            if "\n" not in gap:
                parts.append(gap)
            elif "#" in gap:
                return None
            elif prev.type == "COMMA" and tok.type in CLOSERS:
                parts.pop()  # the trailing comma of an argument per line
            elif prev.type not in OPENERS and tok.type not in CLOSERS:
                parts.append(" ")
            parts.append(tok.text)
        joined = "".join(parts)
        return lambda src: joined

    def _source(self, span: Span) -> str:
        return self.text[span.start - self.offset : span.end - self.offset]

    def _syntax_error(
        self, tables: Tables, stuck: _Stuck, tokens: list[Token], in_body: bool
    ) -> None:
        if stuck.index == 1 and tokens[0].type == "NAME" and tables.start in self.strict_starts:
            # `progam p : ...`: a misspelt keyword, not an older surface's name
            stuck = _Stuck(0, stuck.states[:1])
        expected = _acceptable(tables, stuck.states)
        if stuck.index == 0:
            expected.discard("NAME")
        # what only older surfaces write (`object X = ...`, `observe y ~ F`) is not suggested
        expected -= _ERA_ONLY.get(tokens[0].type, frozenset())
        if stuck.index < len(tokens):
            found = tokens[stuck.index]
            span = found.span
        else:
            last = tokens[-1]
            found = make_token("$END", "", last.end, last.start_line, last.end_col)
            span = last.span  # the token that needed a continuation
        message = unexpected_token(tokens, stuck.index, found, expected, in_body)
        related: tuple[Related, ...] = ()
        opener = _unclosed(tokens) if found.type == "$END" else None
        if opener is not None:
            related = (Related(opener.span, f"'{opener.text}' opened here is not closed"),)
        fixes: tuple[Fix, ...] = ()
        hint = argument_hint(tokens, stuck.index, self.text, self.offset) if in_body else None
        if hint is not None:  # `Normal(a + 1.0, s)`: bind the argument with a let
            message += hint[0]
            fixes = (hint[1],)
        self.diagnostics.append(
            make(rules.SYNTAX_ERROR, message, span, related=related, fixes=fixes)
        )

    def _check_size(self, decl: ast.ObjectDecl) -> None:
        body = decl.body
        if type(body) is ast.ObjCtor and body.constructor.text == FINSET and len(body.args) > 1:
            extra = body.args[1]
            raw = shorten(extra.raw)
            found = f"name '{raw}'" if extra.kind == "name" else f"number {raw}"
            message = (
                f"expected end of line after the size of object {decl.name.text}, found {found}"
            )
            self.diagnostics.append(make(rules.SYNTAX_ERROR, message, extra.span))
            return
        if type(body) is not ast.SizedObject or body.size is not None:
            return
        ctor = body.constructor.text
        if body.size_span is None:
            message = (
                f"missing size: {ctor} takes a positive integer, as in "
                f"'object {decl.name.text} : {ctor} 16'"
            )
            span = body.span
        else:
            span = body.size_span
            raw = self.text[span.start - self.offset : span.end - self.offset]
            if raw.isdigit() and raw.strip("0"):
                message = (
                    f"the size of object {decl.name.text} is too large ({len(raw)} digits;"
                    f" at most {MAX_OBJECT_SIZE:,}, the most entries a tensor axis holds)"
                )
            else:
                message = (
                    f"the size of object {decl.name.text} must be a positive integer,"
                    f" found '{shorten(raw)}'"
                )
        self.diagnostics.append(make(rules.SYNTAX_ERROR, message, span))


def _physical_lines(tokens: list[Token]) -> list[LogicalLine]:
    """`tokens` (the inside of a braced block) cut back into lines: a new line starts on
    each new physical line where no bracket is open."""
    lines: list[LogicalLine] = []
    depth = 0
    for tok in tokens:
        if depth == 0 and (not lines or tok.start_line != lines[-1].tokens[-1].start_line):
            lines.append(LogicalLine(tok.start_col))
        lines[-1].tokens.append(tok)
        if tok.type in OPENERS:
            depth += 1
        elif tok.type in CLOSERS and depth:
            depth -= 1
    return lines


def _spans_lines(tokens: list[Token]) -> bool:
    return tokens[0].start_line != tokens[-1].start_line


def _end_at(span: Span, lines: list[LogicalLine]) -> Span:
    """`span` stretched to the end of the last of `lines`."""
    return cover(span, lines[-1].tokens[-1])


def _ends_with_where(node: ast.LetDecl, parser: _FileParser) -> bool:
    return parser._source(node.span).endswith("where")


def _unclosed(tokens: list[Token]) -> Token | None:
    """The innermost bracket left open at the end of the line, if any."""
    stack: list[Token] = []
    for tok in tokens:
        if tok.type in OPENERS:
            stack.append(tok)
        elif tok.type in CLOSERS and stack:
            stack.pop()
    return stack[-1] if stack else None


def _nesting_bound(tokens: list[Token]) -> int:
    """An upper bound on the expression depth of a line, from its operators and calls."""
    return sum(1 for tok in tokens if tok.type in _NESTING_TOKENS)


class _Spanned(Protocol):
    """A syntax node, as far as the depth check needs one."""

    @property
    def span(self) -> Span: ...


def _children(node: object) -> tuple[_Spanned, ...]:
    match node:
        case ast.Compose() | ast.Tensor() | ast.Binary():
            return (node.left, node.right)
        case ast.Call() | ast.Apply():
            return node.args
        case ast.Unary():
            return (node.operand,)
        case ast.SampleStep() | ast.ObserveStep():
            return (node.source,)
        case ast.LetStep() | ast.DestructureStep():
            return (node.value,)
        case ast.LetDecl():
            return (node.expr,)
        case ast.Name() | ast.NameRef() | ast.Literal() | ast.Number() | ast.Var():
            return ()
        case _ if dataclasses.is_dataclass(node):
            # quivers' other constructs: every node among the fields
            out: list[_Spanned] = []
            for f in dataclasses.fields(node):
                value = getattr(node, f.name)
                if type(value) is tuple:
                    out.extend(v for v in value if _is_node(v))
                elif _is_node(value):
                    out.append(value)
            return tuple(out)
        case _:
            return ()


def _is_node(value: object) -> TypeGuard[_Spanned]:
    return dataclasses.is_dataclass(value) and type(value) is not Span


_CHAINS = (ast.Compose, ast.Tensor)
_ARITH_LEVEL = {"+": 1, "-": 1, "*": 2, "/": 2}


def _continues(parent: object, child: object) -> bool:
    """Whether `child`, the left operand of `parent`, is the same chain (`a >> b` in
    `a >> b >> c`, `x + y` in `x + y - z`): no new level of nesting."""
    kind = type(parent)
    if type(child) is not kind:
        return False
    if kind in _CHAINS:
        return True
    if kind is ast.Binary:
        return _ARITH_LEVEL.get(parent.op) == _ARITH_LEVEL.get(child.op)  # type: ignore[attr-defined]  # both Binary
    return False


def _too_deep(root: object) -> tuple[bool, _Spanned] | None:
    """The leftmost node nested more than MAX_DEPTH levels, or more than MAX_TREE_DEPTH
    tree levels, below `root`: (True, node) for the first, (False, node) for the second.

    Iterative, since the tree being checked may be far deeper than Python's stack.
    """
    stack = [(child, 1, 1) for child in reversed(_children(root))]
    while stack:
        node, nesting, depth = stack.pop()
        if nesting > MAX_DEPTH:
            return True, node
        if depth > MAX_TREE_DEPTH:
            return False, node
        children = _children(node)
        for i in range(len(children) - 1, -1, -1):
            child = children[i]
            same = i == 0 and _continues(node, child)
            stack.append((child, nesting if same else nesting + 1, depth + 1))
    return None
