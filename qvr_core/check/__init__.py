"""The checker: `check(text)` parses and checks a QVR source into a CheckedModule."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from qvr_core.host.collector import collector_paused

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_core.syntax.parser import ParseResult

__all__ = ["CheckedModule", "check"]

log = logging.getLogger(__name__)


def __getattr__(name: str) -> type[CheckedModule]:
    """`CheckedModule`, imported on first use: importing the package (as the core's root
    does, to register the checker's late passes with `passes`) loads no checker, parser
    or syntax tree; `check` imports them when it runs."""
    if name != "CheckedModule":
        raise AttributeError(f"module 'qvr_core.check' has no attribute {name!r}")
    from qvr_core.check.module import CheckedModule

    return CheckedModule


def check(text: str, *, strict: bool = False, memory_budget: int | None = None) -> CheckedModule:
    """Parse and check `text`. Never raises: problems are diagnostics.

    An internal failure (a bug in the checker) is reported as a QVR000
    diagnostic at the start of the file rather than taking the caller down;
    the property tests exercise `check_parsed` directly so such bugs surface.
    An editor checking one document again and again should keep an
    `IncrementalChecker` instead, which reuses the previous check (and is
    tested to give exactly what this gives). `memory_budget` (bytes) is the
    size over which an exported program gets QVR601 (default: half the
    memory available when first asked).
    """
    from qvr_core.check.checker import check_parsed
    from qvr_core.syntax.parser import parse
    from qvr_core.text.span import unify_line_ends

    text = unify_line_ends(text)  # lines end at \n, \r\n and \r alike; offsets unchanged
    with collector_paused():
        parsed = parse(text)
        try:
            return check_parsed(
                text, parsed.module, parsed.diagnostics, strict=strict, memory_budget=memory_budget
            )
        except MemoryError:  # an inference worker under its memory cap reports it as such
            raise
        except Exception as exc:  # pragma: no cover - the safety net itself
            log.exception("internal checker error")
            return _internal_error(text, parsed, exc, strict)


def _internal_error(text: str, parsed: ParseResult, exc: Exception, strict: bool) -> CheckedModule:
    from qvr_core.check.checker import check_parsed
    from qvr_core.syntax import ast
    from qvr_core.text import rules
    from qvr_core.text.diagnostics import make
    from qvr_core.text.span import LineIndex

    lines = LineIndex(text)
    empty = ast.Module((), (), lines.span(0, len(text)))
    module = check_parsed(text, empty, parsed.diagnostics, strict=strict)
    note = make(
        rules.INTERNAL_ERROR,
        f"internal checker error ({type(exc).__name__}: {exc}); please report it",
        lines.span(0, 0),
    )
    return dataclasses.replace(module, diagnostics=(note, *module.diagnostics))
