"""The outline, written as JSON off the event loop, is what pygls would have sent (#46).

`features/symbols.py` builds the protocol's JSON itself, in the thread that
computes the outline (`qvr_lsp.protocol.answers`); here it is compared with the
protocol's classes for the same outline, sent the way pygls sends them.
"""

from __future__ import annotations

import json

from lsprotocol import types as lsp

from qvr_core.check import check
from qvr_core.ide.outline import OutlineItem, outline
from qvr_lsp.app import build_server
from qvr_lsp.features.symbols import SYMBOL_KIND, document_symbols, flatten
from qvr_lsp.protocol.answers import Serialized
from qvr_lsp.protocol.convert import TextPositions
from qvr_lsp.protocol.server import QvrLanguageServer
from tests.lsp.support import example


class Sink:
    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def close(self) -> None:
        pass


def sent(server: QvrLanguageServer, msg_id: object, result: object) -> tuple[bytes, dict]:
    """The frame the server writes for `result`: its header, and its body parsed."""
    sink = Sink()
    server.protocol.set_writer(sink)
    server.protocol._result_types[msg_id] = lsp.DocumentSymbolResponse
    server.protocol._send_response(msg_id, result)
    (frame,) = sink.frames
    head, _, body = frame.partition(b"\r\n\r\n")
    assert int(head.split(b"\r\n")[0].split(b":")[1]) == len(body)
    assert msg_id not in server.protocol._result_types
    return head, json.loads(body)


def reference(item: OutlineItem, positions: TextPositions) -> lsp.DocumentSymbol:
    """The outline as the protocol's classes (how the feature built it before)."""
    children = item.children
    return lsp.DocumentSymbol(
        name=item.name,
        kind=SYMBOL_KIND[item.kind],
        range=positions.range(item.span),
        selection_range=positions.range(item.name_span),
        detail=item.detail,
        children=None if children is None else [reference(c, positions) for c in children],
    )


def reference_flat(
    uri: str, nodes: list[lsp.DocumentSymbol], container: str | None = None
) -> list[lsp.SymbolInformation]:
    out: list[lsp.SymbolInformation] = []
    for n in nodes:
        location = lsp.Location(uri, n.range)
        out.append(
            lsp.SymbolInformation(
                name=n.name, kind=n.kind, location=location, container_name=container
            )
        )
        out += reference_flat(uri, list(n.children or []), n.name)
    return out


def test_the_outline_is_sent_as_pygls_would_send_the_protocols_classes():
    uri = "file:///a.qvr"
    text = example("vanilla_rnn_lm.qvr")
    module = check(text)
    positions = TextPositions(text)
    nodes = document_symbols(module, positions)
    objects = [reference(item, positions) for item in outline(module)]
    assert any("children" in n for n in nodes) and any("detail" in n for n in nodes)
    server = build_server()
    cases = [
        ("7", objects, nodes),
        (8, reference_flat(uri, objects), flatten(uri, nodes)),
        (9, [], []),
    ]
    for msg_id, classes, written in cases:
        head, plain = sent(server, msg_id, classes)
        head_off, off_loop = sent(server, msg_id, Serialized(json.dumps(written)))
        assert off_loop == plain
        assert head_off == head
        assert plain["id"] == msg_id and plain["jsonrpc"] == "2.0"
