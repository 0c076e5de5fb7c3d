"""From Run to posterior in the editor: `qvr.runInference` on a warm server, with and without
the spare worker.

    .venv/bin/python bench/run_latency.py [--rounds 2] [--draws 1000] [--pause 10]

A fresh server opens eight schools (examples/models/eight_schools_noncentered.qvr),
shows its code lenses (which starts the spare worker, `qvr_lsp/runs/spare_worker.py`), and
after `--pause` seconds (a user reading the model before clicking Run) is asked for
NUTS, 4 chains x (`--draws` warmup + `--draws` draws), maximum tree depth 10, on the
classic data. Printed per round: seconds from the request to the final summary, with
the spare worker and with `QVR_SPARE_WORKER=0` (each run starts its own worker, as
before), the smallest bulk ESS in the summary and ESS per second of that wait.
Rounds alternate the two so load on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_documents import open_document

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "models" / "eight_schools_noncentered.qvr"
DATA = "examples/models/eight_schools.json"  # relative to the workspace, ROOT


async def one_run(
    spare: bool, draws: int, pause: float, chains: int = 4, seed: int = 1
) -> tuple[float, dict[str, Any]]:
    """Seconds from the request to the summary, and the summary (`qvr run --json`'s)."""
    client = LanguageClient("qvr-bench", "1")

    @client.feature("qvr/inferenceProgress")
    def on_progress(params: object) -> None:  # read by the editor's panel; not timed here
        return None

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:  # not timed here
        return None

    env = {**os.environ, "QVR_SPARE_WORKER": "1" if spare else "0"}
    await client.start_io(sys.executable, "-m", "qvr_lsp", env=env)
    await client.initialize_async(
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=ROOT.as_uri())
    )
    client.initialized(lsp.InitializedParams())
    uri = MODEL.as_uri()
    open_document(client, uri, MODEL.read_text(encoding="utf-8"))
    await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    await asyncio.sleep(pause)
    arguments = {"uri": uri, "method": "nuts", "steps": 2 * draws, "chains": chains,
                 "max_tree_depth": 10, "data": DATA, "seed": seed}  # fmt: skip
    began = time.perf_counter()
    summary: Any = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="qvr.runInference", arguments=[arguments])
    )
    waited = time.perf_counter() - began
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return waited, summary


def least_ess(summary: dict[str, Any]) -> float:
    """The summary's smallest bulk ESS (qvr's estimator, ArviZ's to 1e-6)."""
    return min(float(r["ess_bulk"]) for r in summary["posterior"]["rows"])


async def main(rounds: int, draws: int, pause: float) -> None:
    got: dict[str, list[tuple[float, float]]] = {"spare worker": [], "a worker per run": []}
    for _ in range(rounds):
        for name, spare in (("spare worker", True), ("a worker per run", False)):
            waited, summary = await one_run(spare, draws, pause)
            got[name].append((waited, least_ess(summary)))
    print(f"eight schools, NUTS 4 x ({draws} + {draws}), request -> summary on a warm server, "
          f"{rounds} round(s), after a {pause:.0f} s pause")  # fmt: skip
    medians = {}
    for name, runs in got.items():
        wait = statistics.median(w for w, _ in runs)
        ess = statistics.median(e for _, e in runs)
        medians[name] = wait
        print(f"{name:18} {wait:7.2f} s   min bulk ESS {ess:6.0f}   {ess / wait:6.1f} ESS/s")
    print(f"spare / per run: {medians['spare worker'] / medians['a worker per run']:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--pause", type=float, default=10.0)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.draws, args.pause))
