"""Diagnostics: what every stage reports, with stable codes.

The codes are part of the interface (tests, the command line's JSON and
users' notes refer to them): add new ones, never renumber.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from qvr_core.syntax.span import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFORMATION = "information"
    HINT = "hint"


#: code -> (default severity, short title)
CODES: dict[str, tuple[Severity, str]] = {
    "QVR000": (Severity.ERROR, "internal error (a bug in qvr)"),
    "QVR001": (Severity.ERROR, "syntax error"),
    "QVR101": (Severity.ERROR, "undefined name"),
    "QVR102": (Severity.ERROR, "duplicate declaration"),
    "QVR103": (Severity.HINT, "declared but never used"),
    "QVR201": (Severity.ERROR, "dimension mismatch"),
    "QVR202": (Severity.ERROR, "discrete/continuous mismatch"),
    "QVR203": (Severity.HINT, "matched by dimension, not by name"),
    "QVR204": (Severity.ERROR, "scan cell is not A * H -> H"),
    "QVR205": (Severity.ERROR, "stack/repeat body is not A -> A"),
    "QVR206": (Severity.ERROR, "fan branches disagree on their domain"),
    "QVR207": (Severity.ERROR, "arithmetic on different dimensions"),
    "QVR301": (Severity.ERROR, "role or option problem"),
    "QVR302": (Severity.ERROR, "family does not fit the codomain"),
    "QVR401": (Severity.ERROR, "program error"),
    "QVR501": (Severity.WARNING, "export problem"),
}


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


def make(code: str, message: str, span: Span, **kwargs: object) -> Diagnostic:
    """A diagnostic with the code's default severity unless one is given."""
    severity = kwargs.pop("severity", None) or CODES[code][0]
    return Diagnostic(code, severity, message, span, **kwargs)  # type: ignore[arg-type]  # kwargs: Diagnostic's optional fields
