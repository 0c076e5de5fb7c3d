"""Twenty inference runs at once against twenty one after another, through the real server.

Before runs were queued, twenty runs started twenty workers (6.3 GB) and none
finished. Now at most one worker per core (`QVR_INFERENCE_WORKERS`) is alive
and the rest wait, so the concurrent batch should take about as long as the
sequential one, or less. Prints both wall times, their ratio, and the most
workers seen alive at once (sampled from /proc every 20 ms).

    .venv/bin/python bench/concurrent_runs.py [--runs 20] [--steps 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.lsp_commands.conftest import TINY  # noqa: E402
from tests.security.support import workers_of  # noqa: E402

SERVER = [sys.executable, "-m", "qvr_lsp"]


async def start(root: Path) -> LanguageClient:
    client = LanguageClient("qvr-bench", "1")

    @client.feature("qvr/inferenceProgress")
    def on_progress(params) -> None:  # unannotated: pygls would pass the client
        pass

    await client.start_io(*SERVER)
    await client.initialize_async(
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=root.as_uri())
    )
    client.initialized(lsp.InitializedParams())
    return client


async def run(client: LanguageClient, uri: str, steps: int) -> dict:
    arguments = [{"uri": uri, "steps": steps, "method": "svi"}]
    return await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="qvr.runInference", arguments=arguments)
    )


async def timed(client: LanguageClient, uris: list[str], steps: int, together: bool):
    pid = client._server.pid  # type: ignore[union-attr]
    most = 0
    started = time.perf_counter()
    if together:
        batch = asyncio.gather(*(run(client, uri, steps) for uri in uris))
    else:

        async def one_by_one() -> list[dict]:
            return [await run(client, uri, steps) for uri in uris]

        batch = asyncio.ensure_future(one_by_one())
    while not batch.done():
        most = max(most, len(workers_of(pid)))
        await asyncio.sleep(0.02)
    summaries = await batch
    assert all(s["status"] == "completed" for s in summaries)
    return time.perf_counter() - started, most


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        uris = []
        for i in range(args.runs):
            (root / f"tiny{i}.qvr").write_text(TINY)
            uris.append((root / f"tiny{i}.qvr").as_uri())
        client = await start(root)
        try:
            sequential, seq_most = await timed(client, uris, args.steps, together=False)
            concurrent, con_most = await timed(client, uris, args.steps, together=True)
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
    cores = len(os.sched_getaffinity(0))
    limit = os.environ.get("QVR_INFERENCE_WORKERS", f"{cores} (the cores)")
    print(f"{args.runs} SVI runs of {args.steps} steps on the tiny model; worker limit {limit}")
    print(f"one after another: {sequential:.1f} s, at most {seq_most} worker alive")
    print(f"all at once:       {concurrent:.1f} s, at most {con_most} workers alive")
    print(f"ratio at once / one after another: {concurrent / sequential:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
