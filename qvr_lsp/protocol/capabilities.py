"""What the connected client says it can show, asked in one place.

Answers must respect the client's capabilities (pytest-lsp checks them and
old clients break on what they did not ask for), so features ask here
instead of walking `ClientCapabilities` themselves.
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.capabilities import get_capability


def markdown_hover(caps: lsp.ClientCapabilities | None) -> bool:
    formats = get_capability(caps, "text_document.hover.content_format", None) if caps else None
    return formats is None or lsp.MarkupKind.Markdown in formats


def markdown_completion_docs(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.completion.completion_item.documentation_format"
    formats = get_capability(caps, path, None) if caps else None
    return formats is not None and lsp.MarkupKind.Markdown in formats


def hierarchical_symbols(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.document_symbol.hierarchical_document_symbol_support"
    return bool(get_capability(caps, path, False)) if caps else False


def related_information(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.publish_diagnostics.related_information"
    return bool(get_capability(caps, path, False)) if caps else False


def unnecessary_tag(caps: lsp.ClientCapabilities | None) -> bool:
    path = "text_document.publish_diagnostics.tag_support"
    support = get_capability(caps, path, None) if caps else None
    return support is not None and lsp.DiagnosticTag.Unnecessary in (support.value_set or ())


def markup(caps_markdown: bool, markdown: str, plain: str) -> lsp.MarkupContent:
    """Markdown when the client renders it, else the plain-text rendering."""
    if caps_markdown:
        return lsp.MarkupContent(lsp.MarkupKind.Markdown, markdown)
    return lsp.MarkupContent(lsp.MarkupKind.PlainText, plain)
