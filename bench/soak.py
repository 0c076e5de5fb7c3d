"""Soak: a long editing session against the real server, its memory sampled throughout.

A session of an hour or so, compressed: files of a few thousand lines are
opened, typed in (each edit waits for its diagnostics, as an editor's user
would see them), hovered, asked for their outline and semantic tokens, and
closed, over and over. The server's resident memory (VmRSS) is sampled after
each file; the goal (issue #19) is that after warm-up it stays within 20% of
its value then.

    .venv/bin/python bench/soak.py [--files 60] [--edits 50] [--lines 2000]

Prints the samples, the RSS after warm-up, the last and the highest, and
their ratios. tests/security/test_soak.py runs a smaller session and checks
the growth.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from generated import generate

SERVER = [sys.executable, "-m", "qvr_lsp"]
GOAL = 1.20


@dataclass
class Soak:
    """RSS samples (MiB) after each file, and how many of them were warm-up."""

    samples: list[float] = field(default_factory=list)
    warmup: int = 0
    edits: int = 0
    seconds: float = 0.0

    @property
    def after_warmup(self) -> float:
        return self.samples[self.warmup - 1]

    @property
    def final(self) -> float:
        return self.samples[-1]

    @property
    def growth(self) -> float:
        """The last sample against the one after warm-up."""
        return self.final / self.after_warmup

    @property
    def peak_growth(self) -> float:
        return max(self.samples[self.warmup - 1 :]) / self.after_warmup


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Session:
    def __init__(self) -> None:
        self.client = LanguageClient("qvr-soak", "1")
        self.versions: dict[str, int] = {}
        self.changed = asyncio.Event()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            if params.version is not None:
                self.versions[params.uri] = params.version
            self.changed.set()

    async def start(self, root: Path) -> int:
        await self.client.start_io(*SERVER)
        await self.client.initialize_async(
            lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=root.as_uri())
        )
        self.client.initialized(lsp.InitializedParams())
        return self.client._server.pid  # type: ignore[union-attr]

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    async def diagnostics(self, uri: str, version: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while self.versions.get(uri, -1) < version:
            self.changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    async def one_file(self, uri: str, text: str, edits: int) -> None:
        """Open, type `edits` characters with a few requests, then close."""
        c = self.client
        c.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, text))
        )
        await self.diagnostics(uri, 1)
        doc = lsp.TextDocumentIdentifier(uri)
        line = text.count("\n") // 2
        for i in range(edits):
            version = i + 2
            where = lsp.Position(line, 0)
            change = (
                lsp.TextDocumentContentChangePartial(lsp.Range(where, where), "#")
                if i % 2 == 0
                else lsp.TextDocumentContentChangePartial(
                    lsp.Range(where, lsp.Position(line, 1)), ""
                )
            )
            c.text_document_did_change(
                lsp.DidChangeTextDocumentParams(
                    lsp.VersionedTextDocumentIdentifier(version, uri), [change]
                )
            )
            await self.diagnostics(uri, version)
            if i % 10 == 0:
                await c.text_document_hover_async(lsp.HoverParams(doc, lsp.Position(3, 8)))
        await c.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc))
        await c.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(doc))
        c.text_document_did_close(lsp.DidCloseTextDocumentParams(doc))


async def soak(files: int, edits: int, lines: int, warmup: int = 5) -> Soak:
    """Run the session and return the samples."""
    root = Path(os.environ.get("TMPDIR", "/tmp")) / "qvr-soak"
    root.mkdir(exist_ok=True)
    texts = [generate(lines), generate(lines // 2 or 1)]
    session = Session()
    pid = await session.start(root)
    result = Soak(warmup=min(warmup, files))
    started = time.monotonic()
    try:
        for i in range(files):
            await session.one_file((root / f"soak{i}.qvr").as_uri(), texts[i % 2], edits)
            await asyncio.sleep(0.1)  # the close's work (tasks ending) happens now
            result.samples.append(rss_mib(pid))
            result.edits += edits
    finally:
        result.seconds = time.monotonic() - started
        await session.stop()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=60)
    parser.add_argument("--edits", type=int, default=50, help="edits per file")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=5, help="files before the baseline")
    args = parser.parse_args()
    result = asyncio.run(soak(args.files, args.edits, args.lines, args.warmup))
    print(
        f"{args.files} files of {args.lines} and {args.lines // 2} lines opened and closed, "
        f"{result.edits} edits in all, each waiting for its diagnostics, in {result.seconds:.0f} s"
    )
    print("RSS (MiB) after each file:", " ".join(f"{s:.0f}" for s in result.samples))
    print(f"after warm-up ({result.warmup} files): {result.after_warmup:.1f} MiB")
    print(f"last: {result.final:.1f} MiB  ratio {result.growth:.3f}")
    print(f"peak: ratio {result.peak_growth:.3f}  (goal: within {GOAL:.2f})")
    return 0 if result.peak_growth <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
