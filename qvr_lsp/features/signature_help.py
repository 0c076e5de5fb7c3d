"""Signature help in combinator calls (`scanl(`, `multihead(`...), program calls, builtins.

The call is found in the current text (it rarely parses while being typed);
what the callee is comes from the last analysis that parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Known
    from qvr_lsp.analysis.session import Session

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.signature",)

TRIGGERS = ["(", ","]
RETRIGGERS = [")", "="]
OPTIONS = lsp.SignatureHelpOptions(trigger_characters=TRIGGERS, retrigger_characters=RETRIGGERS)


def _units(text: str, encoding: lsp.PositionEncodingKind) -> int:
    """Length of `text` in the client's position units (parameter offsets use them)."""
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    if encoding == lsp.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _client_supports(caps: lsp.ClientCapabilities | None, what: str) -> bool:
    path = f"text_document.signature_help.signature_information.{what}"
    return bool(get_capability(caps, path, False)) if caps is not None else False


async def help_(
    session: Session, params: lsp.SignatureHelpParams, known: Known
) -> lsp.SignatureHelp | None:
    from qvr_core.ide.signature import signature_help

    document = known.document
    offset = document.positions.offset(params.position)
    found = signature_help(document.text, offset, known.structure)
    if found is None:
        return None
    signature = found.signature
    label = signature.label
    parameters = []
    encoding = session.server.encoding
    caps = session.server.caps
    offsets = _client_supports(caps, "parameter_information.label_offset_support")
    for i, (start, end) in enumerate(signature.parameters):
        doc = signature.parameter_docs[i] if i < len(signature.parameter_docs) else None
        where: tuple[int, int] | str = label[start:end]
        if offsets:
            where = (_units(label[:start], encoding), _units(label[:end], encoding))
        parameters.append(lsp.ParameterInformation(label=where, documentation=doc))
    per_signature = _client_supports(caps, "active_parameter_support")
    information = lsp.SignatureInformation(
        label=label,
        documentation=signature.doc or None,
        parameters=parameters,
        active_parameter=found.active_parameter if per_signature else None,
    )
    return lsp.SignatureHelp(
        signatures=[information], active_signature=0, active_parameter=found.active_parameter
    )
