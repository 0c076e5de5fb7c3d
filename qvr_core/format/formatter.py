"""The canonical layout of a QVR file: `format_source(text) -> str`.

Rules (one layout, so formatting is idempotent):
- declarations at column 0, program steps indented by four spaces, each
  declaration and step on one line with the printer's spacing;
- one blank line between groups (objects, morphisms, lets, exports, and
  each program on its own); blank lines the user put elsewhere are kept,
  several in a row become one, none at the start of the file or of a body;
- comments stay where they are relative to the code: a comment on its own
  line keeps its line (indented like the code it sits in), a comment after
  code stays after it, two spaces away; trailing whitespace goes;
- a declaration or step that runs over several lines with comments inside
  its brackets is kept as written, since joining its lines would have to
  move those comments.

A file with syntax errors is returned unchanged (with the reason, from
`format_text`): formatting what did not parse would drop it. The result is
checked against the input (same tree without positions, same comments)
before it is returned; a mismatch is a formatter bug and also leaves the
text unchanged.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

from qvr_core.format import printer
from qvr_core.format.equivalence import equivalent
from qvr_core.host.collector import collector_paused
from qvr_core.syntax import ast
from qvr_core.syntax.parser import parse
from qvr_core.text import rules
from qvr_core.text.span import Span, line_end_style, unify_line_ends

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FormatResult:
    text: str
    refused: str | None = None  # why the text was left as it was

    @property
    def ok(self) -> bool:
        return self.refused is None


def format_source(text: str) -> str:
    """The text in the canonical layout, or unchanged when it does not parse."""
    return format_text(text).text


class Cancelled(Exception):
    """Raised by `format_text` when its `cancelled` callback turns true (a newer text came)."""


def format_text(text: str, cancelled: Callable[[], bool] | None = None) -> FormatResult:
    """Format `text`; on syntax errors or a failed self-check, the text unchanged and why.

    `cancelled` is polled between the stages (parse, layout, re-parse, self-check);
    once it is true, `Cancelled` is raised, so an editor's stale request stops early.
    """

    with collector_paused():  # many small frozen nodes and no cycles (see collector.py)
        return _format_text(text, cancelled)


def _format_text(text: str, cancelled: Callable[[], bool] | None) -> FormatResult:
    def check_cancelled() -> None:
        if cancelled is not None and cancelled():
            raise Cancelled

    parsed = parse(text)
    check_cancelled()
    if parsed.diagnostics:
        errors = [d for d in parsed.diagnostics if d.code != rules.OLDER_SURFACE.code]
        first = (errors or parsed.diagnostics)[0]
        what = "syntax error" if errors else "an older surface of QVR (fix it first)"
        return FormatResult(
            text, f"not formatted: {what} on line {first.span.start_line + 1}: {first.message}"
        )
    try:
        formatted = _Layout(unify_line_ends(text), parsed.module, line_end_style(text)).render()
    except Exception:  # a formatter bug must not cost the user their file
        log.exception("formatter failed")
        return FormatResult(text, "not formatted: internal formatter error (please report it)")
    check_cancelled()
    check = parse(formatted)
    check_cancelled()
    if check.diagnostics or not equivalent(parsed.module, check.module):
        log.error("formatter output differs from its input; left unchanged")
        return FormatResult(text, "not formatted: internal formatter error (please report it)")
    return FormatResult(formatted)


@dataclass
class _Item:
    """One output line: a declaration, header or step, or a comment on its own line."""

    text: str
    depth: int  # 0 top level, 1 program body
    start_line: int  # source lines it came from, for blank-line detection
    end_line: int
    group: str | None = None  # top-level declarations only
    blank_before: bool = False


_GROUPS = {
    ast.ObjectDecl: "object",
    ast.MorphismDecl: "morphism",
    ast.LetDecl: "let",
    ast.ExportDecl: "export",
}


class _Layout:
    def __init__(self, text: str, module: ast.Module, newline: str = "\n") -> None:
        self.text = text  # lone `\r`s made `\n` (`unify_line_ends`)
        self.module = module
        self.newline = newline  # the file's own line end
        self.claimed: set[int] = set()  # comments printed with a line or kept inside one
        self.by_line = {c.span.start_line: c for c in module.comments}  # at most one a line
        self.decl_starts = [d.span.start for d in module.decls]

    def render(self) -> str:
        items = self._code_items()
        items.extend(self._comment_items())
        items.sort(key=lambda i: i.start_line)
        self._blank_lines(items)
        lines: list[str] = []
        for item in items:
            if item.blank_before and lines:
                lines.append("")
            lines.append(printer.INDENT * item.depth + item.text)
        return self.newline.join(lines) + self.newline if lines else ""

    # ------------------------------------------------------------- code

    def _code_items(self) -> list[_Item]:
        items = []
        for index, decl in enumerate(self.module.decls):
            group = _GROUPS.get(type(decl), f"program {index}")
            try:
                items.extend(self._printed(decl, group))
            except printer.Unprintable:
                # no canonical spelling (a declaration kind qvr does not model yet): as written
                items.append(self._verbatim(decl.span, group))
        return items

    def _printed(self, decl: ast.Decl, group: str) -> list[_Item]:
        if not isinstance(decl, ast.ProgramDecl):
            return [self._unit(decl.span, printer.declaration(decl), 0, group)]
        items = [self._unit(decl.header_span, printer.declaration(decl), 0, group)]
        self._steps(decl.steps, 1, items)
        return items

    def _steps(self, steps: tuple[ast.Step, ...], depth: int, items: list[_Item]) -> None:
        for s in steps:
            if isinstance(s, ast.MarginalizeStep):
                items.append(self._unit(s.header_span, printer.step(s), depth))
                self._steps(s.steps, depth + 1, items)
            else:
                items.append(self._unit(s.span, printer.step(s), depth))

    def _verbatim(self, span: Span, group: str) -> _Item:
        """A declaration kept as written (trailing whitespace trimmed), with its comments."""
        start = self.text.rfind("\n", 0, span.start) + 1
        source = self.text[start : span.end].replace("\r\n", "\n").split("\n")
        text = self.newline.join(line.rstrip() for line in source)
        for c in self.module.comments:
            if span.start <= c.span.start < span.end:
                self.claimed.add(id(c))
        after = self.by_line.get(span.end_line)
        if after is not None and after.span.start >= span.end:  # a comment after its last line
            text += "  " + after.text.rstrip()
            self.claimed.add(id(after))
        return _Item(text, 0, span.start_line, span.end_line, group)

    def _unit(self, span: Span, printed: str, depth: int, group: str | None = None) -> _Item:
        """A declaration, header or step; kept as written when comments sit inside it."""
        lines = range(span.start_line, span.end_line + 1)
        on_lines = [self.by_line[n] for n in lines if n in self.by_line]
        inner = [c for c in on_lines if span.start < c.span.start < span.end]
        text = printed
        if inner:
            source = self.text[span.start : span.end].replace("\r\n", "\n").split("\n")
            text = "\n".join(line.rstrip() for line in source)
            text = text.replace("\n", self.newline)
            self.claimed.update(id(c) for c in inner)
        for c in on_lines:
            if c.span.start_line != span.end_line or c.span.start < span.end:
                continue
            text += "  " + c.text.rstrip()
            self.claimed.add(id(c))
        return _Item(text, depth, span.start_line, span.end_line, group)

    # --------------------------------------------------------- comments

    def _comment_items(self) -> list[_Item]:
        items = []
        for c in self.module.comments:
            if id(c) in self.claimed:
                continue
            text = c.text.rstrip()
            depth = 1 if self._in_body(c) else 0
            if depth == 0 and c.span.start_col > 0 and text.startswith("#!"):
                # At column 0 it would become a doc comment: keep it where it is.
                text = " " * c.span.start_col + text
            items.append(_Item(text, depth, c.span.start_line, c.span.start_line))
        return items

    def _in_body(self, c: ast.Comment) -> bool:
        """In a program's body, or indented after its last step (before the next declaration)."""
        decls = self.module.decls
        before = bisect_right(self.decl_starts, c.span.start)
        owner = decls[before - 1] if before else None
        if not isinstance(owner, ast.ProgramDecl):
            return False
        if c.span.start < owner.span.end:
            return c.span.start > owner.header_span.end
        return c.span.start_col > 0

    # ------------------------------------------------------ blank lines

    @staticmethod
    def _blank_lines(items: list[_Item]) -> None:
        """Keep the user's blank lines (one at most), then add one between groups."""
        previous: _Item | None = None
        for item in items:
            gap = previous is not None and item.start_line - previous.end_line > 1
            after_header = previous is not None and previous.group is not None and item.depth == 1
            item.blank_before = gap and not after_header
            previous = item
        last_group: str | None = None
        run_start: int | None = None  # first top-level comment since the last code line
        for i, item in enumerate(items):
            if item.group is None and item.depth == 0:
                run_start = i if run_start is None else run_start
                continue
            if item.group is not None:
                first = i if run_start is None else run_start
                new_group = last_group is not None and item.group != last_group
                if new_group and not any(x.blank_before for x in items[first : i + 1]):
                    items[first].blank_before = True  # before the comments that lead in
                last_group = item.group
            run_start = None
        if items:
            items[0].blank_before = False
