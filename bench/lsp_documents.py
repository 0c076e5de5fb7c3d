"""What the benches' language clients send about documents: an open and a range edit.

`bench/lsp_latency.py` and `bench/server_flood.py` each run their own client (they record
different notifications); the document messages are the same for both.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient


def open_document(client: LanguageClient, uri: str, text: str) -> None:
    item = lsp.TextDocumentItem(uri=uri, language_id="qvr", version=1, text=text)
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=item))


def edit_document(
    client: LanguageClient, uri: str, version: int, rng: lsp.Range, text: str
) -> None:
    """Replace `rng` by `text`, as version `version` of the document."""
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
            content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=text)],
        )
    )
