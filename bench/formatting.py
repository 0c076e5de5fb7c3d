"""Formatting a large pasted file: its cost, and a hover in another file meanwhile.

Issue 18: formatting a pasted 5,000-line file whose groups were not in the
canonical layout (1,110 edits) took 26-29 s and froze the server; a hover
on another file waited 29 s. Goals: formatting under 1 s, a hover during
it under 100 ms.

Prints, for `generated.messy(lines)` (every line needs an edit):
- the core: `format_edits` wall and CPU seconds, against one `parse` of the
  same text in the same run (formatting parses twice: input and self-check);
- the server (`qvr-lsp` over stdio): the formatting request's round trip,
  and hovers on a small document sent while it runs, against hovers on the
  same document when the server is idle.

    .venv/bin/python bench/formatting.py [--lines 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated import messy
from lsp_latency import ROOT, Session

from qvr_core.format.diff import format_edits
from qvr_core.syntax.parser import parse

TINY = "object A : Real 2\nmorphism f : A -> A [role=kernel]\nlet g = f >> f\n"


def timed(work) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def core(text: str, runs: int) -> None:
    edits = len(format_edits(text))
    fmt = [timed(lambda: format_edits(text)) for _ in range(runs)]
    once = [timed(lambda: parse(text)) for _ in range(runs)]
    f_wall = statistics.median(w for w, _ in fmt)
    f_cpu = statistics.median(c for _, c in fmt)
    p_wall = statistics.median(w for w, _ in once)
    p_cpu = statistics.median(c for _, c in once)
    print(f"core: {edits} edits")
    print(
        f"  format_edits   wall {f_wall * 1000:7.0f} ms   cpu {f_cpu * 1000:7.0f} ms"
        "   (goal < 1000)"
    )
    print(f"  parse (base)   wall {p_wall * 1000:7.0f} ms   cpu {p_cpu * 1000:7.0f} ms")
    print(f"  ratio format / one parse: {f_cpu / p_cpu:.1f}x (cpu)")


async def server(text: str, runs: int) -> None:
    session = Session()
    await session.start()
    large = (ROOT / "bench-messy.qvr").as_uri()
    tiny = (ROOT / "bench-tiny.qvr").as_uri()
    session.open(large, text)
    session.open(tiny, TINY)
    await session.diagnostics(large, 1)
    await session.diagnostics(tiny, 1)
    client = session.client
    hover = lsp.HoverParams(lsp.TextDocumentIdentifier(tiny), lsp.Position(1, 9))

    async def hover_once() -> float:
        t0 = time.perf_counter()
        assert await client.text_document_hover_async(hover) is not None
        return time.perf_counter() - t0

    idle = [await hover_once() for _ in range(20)]
    during: list[float] = []
    rounds: list[float] = []
    edits = 0
    for run in range(runs):
        params = lsp.DocumentFormattingParams(
            lsp.TextDocumentIdentifier(large), lsp.FormattingOptions(4, True)
        )
        t0 = time.perf_counter()
        msg_id = f"bench-format-{run}"
        protocol = client.protocol
        pending = asyncio.ensure_future(
            protocol.send_request_async(lsp.TEXT_DOCUMENT_FORMATTING, params, msg_id)
        )
        # The answer stays plain JSON: structuring thousands of edits into objects would
        # hold this client's loop, and its hovers, for a moment that is not the server's.
        protocol._result_types.pop(msg_id, None)
        while not pending.done():
            during.append(await hover_once())
            await asyncio.sleep(0.01)
        rounds.append(time.perf_counter() - t0)
        edits = len(pending.result() or [])
    await session.stop()
    print(f"server: formatting request, {edits} edits")
    print(
        f"  round trip          median {statistics.median(rounds) * 1000:7.0f} ms   (goal < 1000)"
    )
    print(
        f"  hover while idle    median {statistics.median(idle) * 1000:7.1f} ms"
        f"   max {max(idle) * 1000:7.1f} ms"
    )
    print(
        f"  hover during it     median {statistics.median(during) * 1000:7.1f} ms"
        f"   max {max(during) * 1000:7.1f} ms   ({len(during)} hovers, goal < 100 ms)"
    )
    print(
        "  ratio during / idle (median):"
        f" {statistics.median(during) / statistics.median(idle):.1f}x"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    text = messy(args.lines)
    print(
        f"Formatting a pasted {text.count(chr(10))}-line file"
        f" ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})"
    )
    core(text, args.runs)
    await server(text, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
