"""`qvr.exportProgram`: a program of the current text written in Stan, NumPyro or PyMC.

Arguments: `[{uri, program?, target?}]` (the "Export to ..." code lens's) or
`[uri, program?, target?]`. `target` is a name of `qvr_core.export.TARGETS`
(any case), by default the `qvr.export.target` setting; `program` by default
the file's one exportable program (`exportable_programs`).

The answer is JSON either way:

- `{"ok": true, "text", "target", "language", "filename", "program"}`: the
  code, the target's name, the editor's language id for it, a file name for
  it (the source's stem and the target's suffix) and the program written;
- `{"ok": false, "message", "diagnostics": [{message, range, code, severity}]}`:
  why nothing was written, in one line, and where (QVR701 at what the target
  cannot express, or the file's errors, in protocol ranges). An unknown
  target or program, a file with errors or no program to export is such a
  refusal; when the program must be chosen among several, `programs` lists
  them.

Arguments of the wrong shape are refused as the other commands refuse them,
with an InvalidParams error (`command_errors.invalid`). Nothing here imports
torch or a target's library: an export is text.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from qvr_lsp.protocol.command_errors import invalid, plain
from qvr_lsp.protocol.contract import (
    EXPORT_ARGUMENTS,
    EXPORT_PROGRAM,
    ExportDiagnostic,
    ExportRefused,
    ExportWritten,
    names,
)
from qvr_lsp.protocol.convert import TextPositions

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_core.export import Exported, Target
    from qvr_core.text.diagnostics import Diagnostic
    from qvr_lsp.analysis.kinds import Open
    from qvr_lsp.analysis.session import Session

log = logging.getLogger("qvr_lsp")

COMMAND = EXPORT_PROGRAM


@dataclass(frozen=True)
class ExportRequest:
    uri: str
    program: str | None
    target: str | None


def export_arguments(args: tuple[Any, ...]) -> ExportRequest:
    """`[{uri, program?, target?}]` or `[uri, program?, target?]` -> the request."""
    if len(args) == 1 and isinstance(args[0], dict):
        fields = args[0]
    elif 1 <= len(args) <= 3 and all(isinstance(a, str) or a is None for a in args):
        padded = (*args, None, None)
        fields = {"uri": padded[0], "program": padded[1], "target": padded[2]}
    else:
        raise invalid(f"{COMMAND} takes one object {{uri, program?, target?}}")
    unknown = sorted(set(fields) - names(EXPORT_ARGUMENTS))
    if unknown:
        raise invalid(f"{COMMAND}: unknown argument(s) {', '.join(map(str, unknown))}")
    uri, program, target = fields.get("uri"), fields.get("program"), fields.get("target")
    if not isinstance(uri, str) or not uri:
        raise invalid(f"{COMMAND}: uri must be a non-empty string")
    if program is not None and (not isinstance(program, str) or not program):
        raise invalid(f"{COMMAND}: program must be the name of a program")
    if target is not None and not isinstance(target, str):
        raise invalid(f"{COMMAND}: target must be stan, numpyro or pymc")
    return ExportRequest(uri, program, target or None)


async def export_result(
    session: Session, open_documents: Open, args: tuple[Any, ...]
) -> ExportWritten | ExportRefused:
    from qvr_core.export import TARGETS, exportable_programs

    request = export_arguments(args)
    name = request.target or session.server.settings.export_target
    choices = ", ".join(TARGETS)
    if not name:
        return refusal(f"no export target: name one ({choices}) or set qvr.export.target")
    chosen = TARGETS.get(name.strip().lower())
    if chosen is None:
        return refusal(f"unknown export target {name!r} (choose {choices})")
    source = await open_documents.current_source(request.uri)
    module = source.module
    if not module.ok:
        errors = module.errors
        first = errors[0]
        return refusal(
            f"the file has errors; fix them before exporting (line {first.span.start_line + 1}: "
            f"{first.message})",
            errors,
            source.positions,
        )
    program = request.program
    candidates = exportable_programs(module)
    if program is None:
        if not candidates:
            return refusal("the file has no model program to export")
        if len(candidates) > 1:
            answer = refusal(
                f"the file has {len(candidates)} programs to export ({', '.join(candidates)}); "
                "name one"
            )
            answer["programs"] = list(candidates)
            return answer
        program = candidates[0]
    elif not _declared(module, program):
        listed = ", ".join(candidates) or "none"
        return refusal(f"no program named {program!r} (programs to export: {listed})")
    filename = chosen.file_name(_stem(request.uri))
    try:
        exported = await asyncio.to_thread(_export, module, chosen, program, _name(request.uri))
    except Exception as exc:  # an emitter's bug (or a missing emitter) is this answer only
        log.exception("exporting %s to %s failed", program, chosen.name)
        return refusal(
            f"the {chosen.title} export of {program} failed ({type(exc).__name__}: {exc}); "
            "please report it with this file"
        )
    if exported.text is None:
        found = exported.diagnostics
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        first_line = found[0].span.start_line + 1 if found else 0
        message = found[0].message if found else f"{chosen.title} cannot express {program}"
        where = f" (line {first_line})" if found else ""
        return refusal(f"{message}{where}{more}", found, source.positions)
    return {
        "ok": True,
        "text": exported.text,
        "target": chosen.name,
        "language": chosen.language,
        "filename": filename,
        "program": program,
    }


def refusal(
    message: str,
    diagnostics: tuple[Diagnostic, ...] | list[Diagnostic] = (),
    positions: TextPositions | None = None,
) -> ExportRefused:
    """Why nothing was exported: one line, and the located diagnostics."""
    located = [] if positions is None else [_diagnostic_json(d, positions) for d in diagnostics]
    return {"ok": False, "message": plain(message), "diagnostics": located}


def _export(module: CheckedModule, target: Target, program: str, source: str) -> Exported:
    from qvr_core.export import export_program

    return export_program(module, target, program, source=source)


def _declared(module: CheckedModule, name: str) -> bool:
    return name in module.models or name in module.programs or name in module.lets


def _diagnostic_json(d: Diagnostic, positions: TextPositions) -> ExportDiagnostic:
    rng = positions.range(d.span)
    return {
        "message": plain(d.message),
        "code": d.code,
        "severity": d.severity.value,
        "range": {
            "start": {"line": rng.start.line, "character": rng.start.character},
            "end": {"line": rng.end.line, "character": rng.end.character},
        },
    }


def _name(uri: str) -> str:
    """The document's file name (`eight_schools.qvr`), for the export's header."""
    path = unquote(urlparse(uri).path) if ":" in uri else uri
    return PurePosixPath(path).name or "untitled.qvr"


def _stem(uri: str) -> str:
    """The file name without `.qvr`: what the exported file is named after."""
    return PurePosixPath(_name(uri)).stem or "untitled"
