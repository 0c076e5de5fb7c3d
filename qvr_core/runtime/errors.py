"""Errors the runtime raises for problems a user can cause.

`QvrError` means the source cannot be compiled (it carries the checker's
diagnostics); `QvrRuntimeError` means the tensors handed to a compiled model
do not fit the program's types, and names the site, the expected and the
received shape, so nobody has to read a PyTorch stack trace to find out.
"""

from __future__ import annotations

from collections.abc import Sequence

from qvr_core.host.datafile import printable
from qvr_core.text.diagnostics import Diagnostic


class QvrError(ValueError):
    """A source that does not check (or a construct the runtime cannot compile)."""

    def __init__(
        self,
        message: str,
        diagnostics: Sequence[Diagnostic] = (),
        path: str | None = None,
    ) -> None:
        self.diagnostics = tuple(diagnostics)
        self.path = path
        super().__init__(message)


class QvrRuntimeError(RuntimeError):
    """Tensors that do not fit the program: wrong shape, dtype, batch or index range."""

    def __init__(
        self,
        message: str,
        *,
        site: str | None = None,
        expected: str | None = None,
        received: str | None = None,
    ) -> None:
        self.site = site
        self.expected = expected
        self.received = received
        super().__init__(message)


def format_diagnostics(diagnostics: Sequence[Diagnostic], path: str | None = None) -> str:
    """`file:line:col: CODE message` per error, 1-based like compilers print them."""
    where = path or "<source>"
    return "\n".join(
        f"{where}:{d.span.start_line + 1}:{d.span.start_col + 1}: {d.code} {d.message}"
        for d in diagnostics
    )


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (torch's run to several), else its class."""
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def shown_error(e: BaseException) -> str:
    """An exception's first line, safe to print (it may quote a file's bytes)."""
    return printable(first_line(e), limit=200)
