"""Signature help in combinator calls (`scanl(`, `multihead(`...), program calls, builtins.

The call is found in the current text (it rarely parses while being typed);
what the callee is comes from the last analysis that parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

#: Imported on first use, or once the server is idle after its first diagnostics.
DEFERRED = ("qvr_core.ide.signature",)

TRIGGERS = ["(", ","]
RETRIGGERS = [")", "="]


def _units(text: str, encoding: lsp.PositionEncodingKind) -> int:
    """Length of `text` in the client's position units (parameter offsets use them)."""
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    if encoding == lsp.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _client_supports(server: QvrLanguageServer, what: str) -> bool:
    caps = server.caps
    path = f"text_document.signature_help.signature_information.{what}"
    return bool(get_capability(caps, path, False)) if caps is not None else False


def register(server: QvrLanguageServer) -> None:
    options = lsp.SignatureHelpOptions(trigger_characters=TRIGGERS, retrigger_characters=RETRIGGERS)

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, options)
    @guarded()
    async def help_(params: lsp.SignatureHelpParams) -> lsp.SignatureHelp | None:
        from qvr_core.ide.signature import signature_help

        snap = await server.available(params.text_document.uri)
        if snap is None:
            return None
        document = snap.document
        structural = snap.structural()
        module = structural.module if structural is not None else None
        offset = document.positions.offset(params.position)
        found = signature_help(document.text, offset, module)
        if found is None:
            return None
        signature = found.signature
        label = signature.label
        parameters = []
        encoding = server.encoding
        offsets = _client_supports(server, "parameter_information.label_offset_support")
        for i, (start, end) in enumerate(signature.parameters):
            doc = signature.parameter_docs[i] if i < len(signature.parameter_docs) else None
            where: tuple[int, int] | str = label[start:end]
            if offsets:
                where = (_units(label[:start], encoding), _units(label[:end], encoding))
            parameters.append(lsp.ParameterInformation(label=where, documentation=doc))
        per_signature = _client_supports(server, "active_parameter_support")
        information = lsp.SignatureInformation(
            label=label,
            documentation=signature.doc or None,
            parameters=parameters,
            active_parameter=found.active_parameter if per_signature else None,
        )
        return lsp.SignatureHelp(
            signatures=[information], active_signature=0, active_parameter=found.active_parameter
        )
