"""Workspace diagnostics over the real protocol: what a pull of a whole workspace costs.

Copies a workspace of `.qvr` files (the shared corpus of quivers' own files,
182 of them, or `--root`) into a temporary folder, starts `qvr-lsp` as a
client that pulls diagnostics would, and prints the time of:

- the first `workspace/diagnostic` (every file read and checked),
- a second one after one file changed (that file checked again, the others
  answered "unchanged" from their result ids),
- `workspace/symbol` over the same files (a walk and a parse of each), the
  baseline from the same run: the ratio says what checking adds to reading.

    .venv/bin/python bench/workspace_diagnostics.py [--root DIR] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("QVR_SHARED", ROOT.parent.parent / "shared")) / "corpus"
SERVER = [sys.executable, "-m", "qvr_lsp"]


def capabilities() -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        text_document=lsp.TextDocumentClientCapabilities(
            diagnostic=lsp.DiagnosticClientCapabilities()
        ),
        workspace=lsp.WorkspaceClientCapabilities(
            diagnostics=lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=False)
        ),
    )


async def one_run(workspace: Path) -> dict[str, float]:
    client = LanguageClient("qvr-bench", "1")
    await client.start_io(*SERVER)
    await client.initialize_async(
        lsp.InitializeParams(
            capabilities=capabilities(),
            root_uri=workspace.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(workspace.as_uri(), workspace.name)],
        )
    )
    client.initialized(lsp.InitializedParams())
    try:
        started = time.perf_counter()
        first = await client.workspace_diagnostic_async(
            lsp.WorkspaceDiagnosticParams(previous_result_ids=[])
        )
        full = time.perf_counter() - started
        changed = next(workspace.rglob("*.qvr"))
        changed.write_text(changed.read_text() + "\n# touched\n")
        previous = [lsp.PreviousResultId(i.uri, i.result_id) for i in first.items if i.result_id]
        started = time.perf_counter()
        second = await client.workspace_diagnostic_async(
            lsp.WorkspaceDiagnosticParams(previous_result_ids=previous)
        )
        incremental = time.perf_counter() - started
        started = time.perf_counter()
        await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=""))
        symbols = time.perf_counter() - started
        full_reports = sum(
            isinstance(i, lsp.WorkspaceFullDocumentDiagnosticReport) for i in second.items
        )
        return {
            "files": len(first.items),
            "full": full,
            "incremental": incremental,
            "rechecked": full_reports,
            "symbols": symbols,
        }
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=CORPUS)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="qvr-bench-ws-") as tmp:
            workspace = Path(tmp) / "ws"
            shutil.copytree(args.root, workspace, ignore=shutil.ignore_patterns(".*"))
            results.append(asyncio.run(one_run(workspace)))
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    files = int(med["files"])
    print(f"workspace: {args.root} ({files} .qvr files reported), {args.runs} runs, median")
    print(f"  first workspace/diagnostic (read + check all): {med['full'] * 1000:8.1f} ms")
    rechecked = int(med["rechecked"])
    print(f"  after one file changed ({rechecked} rechecked):  {med['incremental'] * 1000:8.1f} ms")
    print(f"  workspace/symbol (read + parse all, baseline):  {med['symbols'] * 1000:8.1f} ms")
    print(f"  ratio first pull / symbols: {med['full'] / med['symbols']:.1f}x")
    print(f"  ratio changed pull / first pull: {med['incremental'] / med['full']:.2f}x")


if __name__ == "__main__":
    main()
