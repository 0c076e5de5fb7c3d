"""The spare worker: a Run lens has a worker loaded before the click, the run takes it,
and the next spare is started while the run goes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from qvr_lsp.runs.spare_worker import WARM_VARIABLE
from tests.lsp_commands.conftest import open_file
from tests.lsp_commands.test_run_inference import gone, run

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc"),
]


def spares() -> set[int]:
    """The live processes started as spare workers (their environment says so)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split()[2]
        except OSError:
            continue
        if f"{WARM_VARIABLE}=1".encode() in environ and state != "Z":
            found.add(int(entry.name))
    return found


async def a_spare(other_than: set[int] = frozenset(), seconds: float = 60.0) -> int:  # type: ignore[assignment]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        new = spares() - other_than
        if new:
            return min(new)
        await asyncio.sleep(0.1)
    raise AssertionError("no spare worker started")


async def test_a_run_lens_starts_a_spare_which_the_run_takes_and_replaces(client, workspace):
    before = spares()
    uri = open_file(client, workspace / "tiny.qvr", version=40)
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    assert any(lens.command and lens.command.title == "Run inference" for lens in lenses)
    spare = await a_spare(before)
    after = len(client.inference_progress)
    summary = await run(client, {"uri": uri, "method": "svi", "steps": 3, "batch": 2})
    assert summary["status"] == "completed"
    workers = {n["workerPid"] for n in client.inference_progress[after:] if n.get("workerPid")}
    assert workers == {spare}  # the run was the spare's
    await a_spare(before | {spare})  # and the next one is loading or loaded
    assert gone(spare) or spare not in spares()
