"""Diagnostics: what every stage reports, each under the stable code of its rule.

The codes are part of the interface (tests, the command line's JSON and
users' notes refer to them): add new ones in `qvr_core.text.rules`, never renumber.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from qvr_core.text.span import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


@dataclass(frozen=True)
class Rule:
    """One diagnostic code: what it means and how to fix it (`qvr_core.text.rules` lists them).

    Every diagnostic is raised through its rule (`make(rules.UNDEFINED_NAME, ...)`),
    so the code, its default severity and the Unnecessary tag have one source.
    """

    code: str  # QVRnnn: stable, never renumbered
    name: str  # kebab-case, what the mistake is
    severity: Severity  # the default; a call site may pass another
    summary: str  # one line, no final period
    explanation: str  # why it is a mistake, in prose (Markdown)
    fixes: tuple[str, ...]  # ways to fix it, in prose
    example: str | None  # file in examples/errors that triggers it (None: QVR000 only)
    quick_fixes: tuple[str, ...] = ()  # the fixes the checker attaches, if any
    unnecessary: bool = False  # rendered faded (LSP tag Unnecessary)


@dataclass(frozen=True)
class TextEdit:
    """Replace the text of `span` with `new_text` (an insertion when the span is empty)."""

    span: Span
    new_text: str


@dataclass(frozen=True)
class Fix:
    """A suggested fix: a title and the edits that apply it (same file)."""

    title: str
    edits: tuple[TextEdit, ...]
    preferred: bool = False


@dataclass(frozen=True)
class Related:
    """A location that explains a diagnostic (a declaration, the first definition)."""

    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()
    unnecessary: bool = False  # rendered faded (LSP tag Unnecessary)
    data: tuple[tuple[str, str], ...] = field(default=())  # extra machine-readable facts

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def make(rule: Rule, message: str, span: Span, **kwargs: object) -> Diagnostic:
    """A diagnostic of `rule`, with its default severity and tags unless given."""
    severity = kwargs.pop("severity", None) or rule.severity
    kwargs.setdefault("unnecessary", rule.unnecessary)
    return Diagnostic(rule.code, severity, message, span, **kwargs)  # type: ignore[arg-type]  # kwargs: Diagnostic's optional fields
