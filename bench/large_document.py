"""A 10 MB document in the language server: memory, first diagnostics, every request.

Issue 18: a 10 MB file took 17 s to first diagnostics, 4.7 s per hover and
1.8 GB of memory in the server. Goals: the server under 1 GB, every request
under 1 s. Above `LARGE_DOCUMENT_CHARS` the server checks the document in a
child process (whose memory is the system's again when it exits) and the
features that need the checked module decline it.

Prints the server's peak resident memory (VmHWM), the time to the first
diagnostics, and the latency of each request on the large document next to
the same request on a small one (the baseline, same server, same run).

    .venv/bin/python bench/large_document.py [--mb 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated import generate
from lsp_latency import ROOT, Session

SMALL = generate(200)


def memory_mb(pid: int) -> tuple[float, float]:
    """Resident and peak resident memory of a process, in MB (Linux /proc)."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def requests(uri: str) -> dict[str, tuple[str, object]]:
    ident = lsp.TextDocumentIdentifier(uri)
    at = lsp.Position(5, 10)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(200, 0))
    return {
        "hover": ("text_document_hover_async", lsp.HoverParams(ident, at)),
        "definition": ("text_document_definition_async", lsp.DefinitionParams(ident, at)),
        "completion": ("text_document_completion_async", lsp.CompletionParams(ident, at)),
        "semantic tokens": (
            "text_document_semantic_tokens_full_async",
            lsp.SemanticTokensParams(ident),
        ),
        "inlay hints": ("text_document_inlay_hint_async", lsp.InlayHintParams(ident, whole)),
        "folding": ("text_document_folding_range_async", lsp.FoldingRangeParams(ident)),
        "outline": ("text_document_document_symbol_async", lsp.DocumentSymbolParams(ident)),
        "code lens": ("text_document_code_lens_async", lsp.CodeLensParams(ident)),
        "formatting": (
            "text_document_formatting_async",
            lsp.DocumentFormattingParams(ident, lsp.FormattingOptions(4, True)),
        ),
    }


async def timed(session: Session, method: str, params: object) -> float:
    t0 = time.perf_counter()
    await getattr(session.client, method)(params)
    return time.perf_counter() - t0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    text = generate(int(args.mb * 1e6 / 41))
    print(
        f"A {len(text) / 1e6:.1f} MB document in qvr-lsp"
        f" ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    session = Session()
    notices: list[str] = []

    @session.client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def on_message(params: lsp.ShowMessageParams) -> None:
        notices.append(params.message)

    await session.start()
    pid = session.client._server.pid  # type: ignore[union-attr]
    small = (ROOT / "bench-small.qvr").as_uri()
    large = (ROOT / "bench-large.qvr").as_uri()
    session.open(small, SMALL)
    await session.diagnostics(small, 1)
    for method, params in requests(small).values():  # warm up every feature
        await timed(session, method, params)
    t0 = time.perf_counter()
    session.open(large, text)
    first = await session.diagnostics(large, 1, timeout=600) - t0
    print(f"  first diagnostics of the large document: {first:.1f} s")
    worst = 0.0
    print(f"  {'request':16} {'large':>10} {'small (base)':>14} {'ratio':>7}")
    for (name, (method, params)), (_, (_, base_params)) in zip(
        requests(large).items(), requests(small).items(), strict=True
    ):
        big = min([await timed(session, method, params) for _ in range(3)])
        base = min([await timed(session, method, base_params) for _ in range(3)])
        worst = max(worst, big)
        print(f"  {name:16} {big * 1000:8.1f} ms {base * 1000:11.1f} ms {big / base:6.1f}x")
    # an edit of the large document: its diagnostics again
    end = text.count("\n")
    session.edit(large, 2, lsp.Range(lsp.Position(end, 0), lsp.Position(end, 0)), "# edit\n")
    t0 = time.perf_counter()
    again = await session.diagnostics(large, 2, timeout=600) - t0
    rss, peak = memory_mb(pid)
    print(f"  notices ({len(notices)}): {notices[0] if notices else 'none'}")
    print(f"  diagnostics after an edit: {again:.1f} s")
    print(f"  slowest request: {worst * 1000:.0f} ms   (goal < 1000 ms)")
    print(f"  server memory: {rss:.0f} MB now, {peak:.0f} MB at most   (goal < 1024 MB)")
    await session.stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
