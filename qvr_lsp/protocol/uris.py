"""One spelling per document: `canonical_uri` is applied to every URI a client sends.

The server keys its state by URI (open documents, analyses, the one run per
document), and a client may spell one file several ways: `file:///a/./b.qvr`,
`file:///a/%62.qvr`, `file://localhost/a/b.qvr`, `%3a` or `%3A` after a drive
letter. `qvr_lsp.protocol.messages` rewrites each incoming document URI with this
function before any handler sees it, so all of those are one document.

The canonical form of a `file:` URI is what VS Code and Neovim send for an
ordinary path (percent-encoded UTF-8 with upper-case escapes, `/` and the
unreserved characters left alone, a lower-case drive letter, no `localhost`),
so answers about a document name it the way the client does. Other schemes
(`untitled:`) keep their spelling apart from the scheme's case.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

_DRIVE = re.compile(r"/[A-Za-z]:(?:/|$)")
_LEADING_SLASHES = re.compile(r"^/{2,}")


def canonical_uri(uri: str) -> str:
    """The one spelling of `uri`; anything that does not parse as a URI is left as it is."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    scheme = parts.scheme.lower()
    if not scheme or uri[: len(scheme)].lower() != scheme:
        return uri  # no scheme, or urlsplit dropped what came before it (` A:`): no URI
    if scheme != "file":
        return scheme + uri[len(scheme) :]
    host = "" if parts.netloc.lower() in ("", "localhost") else parts.netloc.lower()
    path = unquote(parts.path, errors="surrogateescape")
    if path:
        path = posixpath.normpath(_LEADING_SLASHES.sub("/", path))
        if _DRIVE.match(path):
            path = "/" + path[1].lower() + path[2:]
    encoded = quote(path, safe="/", errors="surrogateescape")
    return urlunsplit(("file", host, encoded, parts.query, parts.fragment))
