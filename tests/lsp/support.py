"""Helpers for driving the real server over the protocol: a recording client and bounded waits."""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path

from lsprotocol import types as lsp
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SERVER_COMMAND = [sys.executable, "-m", "qvr_lsp"]
WAIT_SECONDS = 15.0

#: Client flavours the end-to-end tests run under: VS Code, and the Neovim that
#: Debian ships (0.7: no `workspace/configuration`, no position encodings).
FLAVOURS = {
    "vscode": "visual-studio-code@v1.65.2",
    "neovim": "neovim@v0.7.0",
}


class RecordingClient(LanguageClient):
    """A test client that keeps every `publishDiagnostics` in arrival order."""

    published: list[lsp.PublishDiagnosticsParams]


def make_client() -> RecordingClient:
    client = RecordingClient(converter_factory=default_converter)
    client.published = []
    others = {
        method: handler
        for method, handler in DEFAULT_CLIENT_FEATURES.items()
        if method != lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
    }
    register_lsp_features(client, others)

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    return client


CONFIG = ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client)


def initialize_params(
    flavour: str, root: Path | None = None, options: object = None
) -> lsp.InitializeParams:
    root = root or EXAMPLES
    return lsp.InitializeParams(
        capabilities=client_capabilities(FLAVOURS.get(flavour, flavour)),
        root_uri=root.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(root.as_uri(), root.name)],
        initialization_options=options,
    )


def example(name: str) -> str:
    return (EXAMPLES / name).read_text(encoding="utf-8")


def uri_for(name: str, root: Path | None = None) -> str:
    return ((root or EXAMPLES) / name).as_uri()


_fresh = itertools.count(1)


def fresh_uri(label: str) -> str:
    """A URI no other test uses (tests share one server per module), next to the examples."""
    return (EXAMPLES / f"unsaved-{label}-{next(_fresh)}.qvr").as_uri()


def open_document(client: LanguageClient, uri: str, text: str, version: int = 1) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="qvr", version=version, text=text
            )
        )
    )


def change(
    client: LanguageClient,
    uri: str,
    version: int,
    rng: lsp.Range | None,
    text: str,
) -> None:
    """Send one change: a range replacement, or the whole text when `rng` is None."""
    event: lsp.TextDocumentContentChangeEvent
    if rng is None:
        event = lsp.TextDocumentContentChangeWholeDocument(text=text)
    else:
        event = lsp.TextDocumentContentChangePartial(range=rng, text=text)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(version=version, uri=uri),
            content_changes=[event],
        )
    )


async def diagnostics_for(
    client: RecordingClient, uri: str, version: int, timeout: float = WAIT_SECONDS
) -> lsp.PublishDiagnosticsParams:
    """The first publication for `uri` at `version` (or later), waiting at most `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for params in client.published:
            if params.uri == uri and params.version is not None and params.version >= version:
                return params
        if loop.time() > deadline:
            seen = [(p.uri.rsplit("/", 1)[-1], p.version) for p in client.published]
            raise AssertionError(f"no diagnostics for {uri} version {version}; got {seen}")
        await asyncio.sleep(0.01)


def versions_published(client: RecordingClient, uri: str) -> list[int | None]:
    return [p.version for p in client.published if p.uri == uri]


def position_of(text: str, needle: str, occurrence: int = 0, delta: int = 0) -> lsp.Position:
    """The UTF-16 position of the `occurrence`-th `needle` in `text` (plus `delta` columns)."""
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += delta
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    prefix = text[index - column : index]
    return lsp.Position(line, len(prefix.encode("utf-16-le")) // 2)


def codes(params: lsp.PublishDiagnosticsParams) -> list[str]:
    return [str(d.code) for d in params.diagnostics]


# Two programs that both bind `h`: navigation must never mix them up.
TWO_PROGRAMS = """\
object Token : FinSet 256
object Hidden : Real 128

morphism encode : Token -> Hidden [role=embed]
morphism lm_head : Hidden -> Token [role=kernel] ~ Categorical

program first : Token -> Token
    sample h <- encode
    observe y : Token <- lm_head(h)
    return y

program second : Token -> Token
    sample h <- encode
    observe z : Token <- lm_head(h)
    return z

export first
export second
"""


def pulling_capabilities() -> lsp.ClientCapabilities:
    """VS Code's capabilities with LSP 3.17 pull diagnostics, as VS Code 1.67+ sends them."""
    caps = client_capabilities("visual-studio-code@v1.65.2")
    caps.text_document.diagnostic = lsp.DiagnosticClientCapabilities(
        dynamic_registration=True, related_document_support=False
    )
    caps.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps
