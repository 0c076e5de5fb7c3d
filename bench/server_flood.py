"""The server under load: answers during an edit flood, scans, the run queue, run data.

Four scenarios against the real server (`python -P -m qvr_lsp`), each printing
latencies (median, p90, max) or sizes; the goal of each is in its line:

flood   an inference run going, a 5,000-line document edited every
        `--interval` seconds for `--seconds`; hover and documentSymbol in it
        and hover in another file sent throughout, each answer timed (goal:
        none over 1 s; a request in the flooded file pays for one check of
        its text and the tables of that text, some 0.5 s of CPU on a slow
        machine, never for the texts after it), the number of edits against
        the number of diagnostics published (checks coalesced), and the event
        loop's round trip (an unknown method, answered at once).
scan    `--files` `.qvr` files in a workspace; workspace/symbol sent as a user
        types in Ctrl+T (each request cancelling the one before), and a
        `qvr.diagram` and a hover sent behind them (goal: answered promptly).
queue   `--queued` runs queued behind one that holds the only worker, then all
        cancelled (goal: linear, well under a second for 1,000).
data    `--data-runs` runs of one large data file queued behind a long run:
        the server's resident memory while they wait (goal: the file held at
        most once).

    .venv/bin/python bench/server_flood.py [flood|scan|queue|data ...] [--pythonpath DIR]

`--pythonpath DIR` runs the server from another copy of `qvr_lsp` and
`qvr_core` (an older checkout, to compare).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from generated import generate  # noqa: E402
from lsp_documents import edit_document, open_document  # noqa: E402

from tests.lsp_commands.conftest import TINY  # noqa: E402

SERVER = [sys.executable, "-P", "-m", "qvr_lsp"]
RUN = "qvr.runInference"


class Session:
    """A client talking to a fresh server started in `root`."""

    #: prepended to the server's PYTHONPATH (`--pythonpath`)
    pythonpath = ""

    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = dict(env or {})
        if self.pythonpath:
            given = os.environ.get("PYTHONPATH", "")
            self.env["PYTHONPATH"] = os.pathsep.join(p for p in (self.pythonpath, given) if p)
        self.client = LanguageClient("qvr-bench", "1")
        self.published: list[tuple[str, int | None]] = []
        self.progress: list[dict[str, Any]] = []

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.published.append((params.uri, params.version))

        @self.client.feature("qvr/inferenceProgress")
        def on_progress(params) -> None:  # unannotated: pygls would pass the client
            self.progress.append(
                {"uri": params.uri, "points": len(params.points or []), "done": params.done}
            )

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            pass

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def on_message(params: lsp.ShowMessageParams) -> None:
            pass

    @property
    def pid(self) -> int:
        return self.client._server.pid  # type: ignore[union-attr]

    async def start(self) -> None:
        await self.client.start_io(*SERVER, cwd=str(ROOT), env={**os.environ, **self.env})
        self.errors: list[bytes] = []
        self._drain = asyncio.ensure_future(self._read_stderr())
        caps = lsp.ClientCapabilities(
            text_document=lsp.TextDocumentClientCapabilities(
                document_symbol=lsp.DocumentSymbolClientCapabilities(
                    hierarchical_document_symbol_support=True
                )
            )
        )
        await self.client.initialize_async(
            lsp.InitializeParams(
                capabilities=caps,
                root_uri=self.root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(self.root.as_uri(), "bench")],
            )
        )
        self.client.initialized(lsp.InitializedParams())

    async def _read_stderr(self) -> None:
        """Keep the server's stderr flowing (a full pipe would block its logging)."""
        stream = self.client._server.stderr  # type: ignore[union-attr]
        while line := await stream.readline():
            self.errors = [*self.errors[-50:], line]

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.shutdown_async(None), 30)
            self.client.exit(None)
        await self.client.stop()

    def open(self, uri: str, text: str) -> None:
        open_document(self.client, uri, text)

    def edit(self, uri: str, version: int, rng: lsp.Range, text: str) -> None:
        edit_document(self.client, uri, version, rng, text)

    async def diagnostics(self, uri: str, version: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(u == uri and (v or 0) >= version for u, v in self.published):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no diagnostics for {uri} version {version}")
            await asyncio.sleep(0.005)

    async def ping(self) -> float:
        """One round trip through the event loop (an unknown method: answered at once)."""
        t0 = time.perf_counter()
        with contextlib.suppress(JsonRpcException):
            await asyncio.wrap_future(self.client.protocol.send_request("qvr/ping", None))
        return time.perf_counter() - t0

    def request(self, method: str, params: Any, msg_id: str) -> asyncio.Future:
        return asyncio.wrap_future(self.client.protocol.send_request(method, params, msg_id=msg_id))

    def cancel(self, msg_id: str) -> None:
        self.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))

    def start_run(self, uri: str, steps: int, msg_id: str | None = None, **extra: Any):
        arguments = [{"uri": uri, "steps": steps, **extra}]
        future = self.client.protocol.send_request(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command=RUN, arguments=arguments),
            msg_id=msg_id,
        )
        return asyncio.wrap_future(future)

    async def running(self, uri: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(p["uri"] == uri and p["points"] for p in self.progress):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the run of {uri} did not start")
            await asyncio.sleep(0.02)


def stats(values: list[float]) -> str:
    if not values:
        return "none"
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
    return (
        f"median {statistics.median(values) * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms"
        f"  max {values[-1] * 1000:7.1f} ms  (n={len(values)})"
    )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def timed(request) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(JsonRpcException, asyncio.CancelledError):
        await request
    return time.perf_counter() - t0


# ------------------------------------------------------------------- flood


async def flood(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "tiny.qvr").write_text(TINY)
        text = generate(5000)
        doc = root / "big.qvr"
        doc.write_text(text)
        session = Session(root)
        await session.start()
        try:
            uri = doc.as_uri()
            session.open(uri, text)
            await session.diagnostics(uri, 1)
            tiny = (root / "tiny.qvr").as_uri()
            run = session.start_run(tiny, 1_000_000, msg_id="run")
            await session.running(tiny)
            session.open(tiny, TINY)
            await session.diagnostics(tiny, 1)
            lines = text.split("\n")
            target = next(i for i in range(len(lines) // 2, len(lines)) if "observe" in lines[i])
            column = lines[target].index("(h)")
            at = lsp.Position(target, column)
            names = [i for i, line in enumerate(lines) if line.startswith("let backbone_")]
            ident = lsp.TextDocumentIdentifier(uri)
            hovers: list[float] = []
            others: list[float] = []
            outlines: list[float] = []
            pings: list[float] = []
            version = 1
            stop = time.monotonic() + args.seconds

            async def edits() -> None:
                nonlocal version
                while time.monotonic() < stop:
                    version += 1
                    broken = version % 2 == 0
                    end = at if broken else lsp.Position(target, column + 1)
                    session.edit(uri, version, lsp.Range(at, end), "X" if broken else "")
                    await asyncio.sleep(args.interval)

            async def hover_loop() -> None:
                k = 0
                while time.monotonic() < stop:
                    k += 1
                    position = lsp.Position(names[(k * 7919) % len(names)], 6)
                    request = session.client.text_document_hover_async(
                        lsp.HoverParams(text_document=ident, position=position)
                    )
                    hovers.append(await timed(request))
                    await asyncio.sleep(args.hover_every)

            async def other_loop() -> None:
                """Hover in another (small) file: nothing of the flood is in its way."""
                other = lsp.TextDocumentIdentifier(tiny)
                while time.monotonic() < stop:
                    request = session.client.text_document_hover_async(
                        lsp.HoverParams(text_document=other, position=lsp.Position(8, 6))
                    )
                    others.append(await timed(request))
                    await asyncio.sleep(args.hover_every)

            async def outline_loop() -> None:
                while time.monotonic() < stop:
                    request = session.client.text_document_document_symbol_async(
                        lsp.DocumentSymbolParams(text_document=ident)
                    )
                    outlines.append(await timed(request))
                    await asyncio.sleep(args.outline_every)

            async def ping_loop() -> None:
                while time.monotonic() < stop:
                    pings.append(await session.ping())
                    await asyncio.sleep(0.05)

            await asyncio.gather(edits(), hover_loop(), other_loop(), outline_loop(), ping_loop())
            await session.diagnostics(uri, version)
            checked = len({v for u, v in session.published if u == uri and v is not None})
            session.cancel("run")
            await asyncio.gather(run, return_exceptions=True)
            print(
                f"flood: 5,000 lines, an edit every {args.interval * 1000:g} ms for"
                f" {args.seconds:g} s, an inference run going; a hover every"
                f" {args.hover_every:g} s after the last answer, an outline every"
                f" {args.outline_every:g} s"
            )
            print(f"  edits sent {version - 1}, versions with diagnostics published {checked}")
            print(f"  hover           {stats(hovers)}")
            print(f"  hover elsewhere {stats(others)}   (another file, during the flood)")
            print(f"  documentSymbol  {stats(outlines)}")
            print(f"  loop round trip {stats(pings)}")
            worst = max(hovers + outlines)
            print(f"  slowest answer {worst * 1000:.0f} ms (goal: under 1000 ms)")
        finally:
            await session.stop()


# -------------------------------------------------------------------- scan


async def scan(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        block = generate(40)
        for i in range(args.files):
            folder = root / f"pkg{i // 500}"
            folder.mkdir(exist_ok=True)
            (folder / f"model_{i}.qvr").write_text(block.replace("_0", f"_{i}x"))
        (root / "tiny.qvr").write_text(TINY)
        session = Session(root)
        await session.start()
        try:
            tiny = (root / "tiny.qvr").as_uri()
            session.open(tiny, TINY)
            await session.diagnostics(tiny, 1)
            for label in ("cold", "warm"):
                pings: list[float] = []
                typing: list[asyncio.Future] = []
                query = ""
                for i, ch in enumerate("backbone_12x"):
                    if i:
                        session.cancel(f"{label}{i - 1}")  # the editor cancels the previous list
                    query += ch
                    params = lsp.WorkspaceSymbolParams(query=query)
                    typing.append(session.request(lsp.WORKSPACE_SYMBOL, params, f"{label}{i}"))
                    pings.append(await session.ping())
                    await asyncio.sleep(0.08)
                diagram = session.client.workspace_execute_command_async(
                    lsp.ExecuteCommandParams(command="qvr.diagram", arguments=[tiny])
                )
                hover = session.client.text_document_hover_async(
                    lsp.HoverParams(lsp.TextDocumentIdentifier(tiny), lsp.Position(9, 6))
                )
                diagram_s, hover_s = await asyncio.gather(timed(diagram), timed(hover))
                last = await timed(typing[-1])
                print(f"scan ({label}): {args.files} files, Ctrl+T typed 12 characters")
                print(f"  qvr.diagram behind the scans {diagram_s * 1000:7.1f} ms")
                print(f"  hover behind the scans       {hover_s * 1000:7.1f} ms")
                print(f"  last workspace/symbol        {last * 1000:7.1f} ms after the others")
                print(f"  loop round trip while typing {stats(pings)}")
                await asyncio.gather(*typing, return_exceptions=True)
        finally:
            await session.stop()


# ------------------------------------------------------------------- queue


async def queue(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        uris = []
        for i in range(args.queued + 1):
            path = root / f"tiny{i}.qvr"
            path.write_text(TINY)
            uris.append(path.as_uri())
        session = Session(root, env={"QVR_INFERENCE_WORKERS": "1"})
        await session.start()
        try:
            first = session.start_run(uris[0], 1_000_000, msg_id="first")
            await session.running(uris[0])
            t0 = time.perf_counter()
            queued = [session.start_run(u, 3, msg_id=f"q{i}") for i, u in enumerate(uris[1:])]
            joining = set(uris[1:])
            pings: list[float] = []
            while joining:  # until every run has said it waits
                joining -= {n["uri"] for n in session.progress}
                pings.append(await session.ping())
            joined = time.perf_counter() - t0
            print(f"queue: {args.queued} runs queued behind one worker, then cancelled")
            print(f"  all waiting {joined * 1000:.0f} ms after they were sent")
            print(f"  loop round trip meanwhile {stats(pings)}")
            pings = []
            t0 = time.perf_counter()
            for i in range(len(queued)):
                session.cancel(f"q{i}")
            waiting = set(uris[1:])
            seen = 0
            while waiting:  # until every queued run has ended (its last progress note)
                for note in session.progress[seen:]:
                    if note["done"]:
                        waiting.discard(note["uri"])
                seen = len(session.progress)
                pings.append(await session.ping())
            took = time.perf_counter() - t0
            await asyncio.gather(*queued, return_exceptions=True)
            session.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="first"))
            await timed(first)
            print(f"  all ended {took * 1000:.0f} ms after the cancels (goal: well under 1 s)")
            print(f"  loop round trip meanwhile {stats(pings)}")
        finally:
            await session.stop()


# -------------------------------------------------------------------- data


async def data(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        uris = []
        for i in range(args.data_runs + 2):  # one long run, the queued ones, one more
            path = root / f"tiny{i}.qvr"
            path.write_text(TINY)
            uris.append(path.as_uri())
        header = ",".join([*(f"x[{i}]" for i in range(8)), "next"])
        row = ",".join(str(i % 8) for i in range(9))
        (root / "big.csv").write_text(
            header + "\n" + "\n".join([row] * (args.data_mb * 1024 * 1024 // (len(row) + 1)))
        )
        size = (root / "big.csv").stat().st_size / 1e6
        session = Session(root, env={"QVR_INFERENCE_WORKERS": "1"})
        await session.start()
        try:
            base = rss_mb(session.pid)
            first = session.start_run(uris[0], 1_000_000, msg_id="first")
            await session.running(uris[0])
            pings: list[float] = []
            queued = [
                session.start_run(u, 3, msg_id=f"d{i}", data="big.csv")
                for i, u in enumerate(uris[1:-1])
            ]
            most = base
            for _ in range(40):
                pings.append(await session.ping())
                most = max(most, rss_mb(session.pid))
                await asyncio.sleep(0.05)
            for i in range(len(queued)):
                session.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=f"d{i}"))
            session.client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id="first"))
            await asyncio.gather(*queued, first, return_exceptions=True)
            print(f"data: {args.data_runs} runs of one {size:.0f} MB file queued behind a run")
            print(f"  server RSS {base:.0f} MB before, at most {most:.0f} MB while they wait")
            print(f"  loop round trip meanwhile {stats(pings)}")
            # one run of the file for real: the transfer to the worker, off the loop
            one = session.start_run(uris[-1], 1, data="big.csv", method="prior")
            pings = []
            while not one.done():
                pings.append(await session.ping())
                await asyncio.sleep(0.02)
            try:
                outcome = one.result()["status"]
            except JsonRpcException as exc:
                outcome = f"refused: {str(exc)[:80]}"
            print(f"  one run of it ({outcome}): loop round trip meanwhile {stats(pings)}")
        finally:
            await session.stop()


async def main() -> int:
    logging.getLogger("pygls").setLevel(logging.CRITICAL)  # cancelled requests answered late
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="*", default=["flood", "scan", "queue", "data"])
    parser.add_argument("--interval", type=float, default=0.02, help="flood: seconds per edit")
    parser.add_argument("--seconds", type=float, default=10.0, help="flood: how long")
    parser.add_argument(
        "--hover-every", type=float, default=0.5, help="flood: seconds between two hovers"
    )
    parser.add_argument(
        "--outline-every", type=float, default=1.0, help="flood: seconds between two outlines"
    )
    parser.add_argument("--files", type=int, default=10_000, help="scan: workspace files")
    parser.add_argument("--queued", type=int, default=1000, help="queue: runs queued")
    parser.add_argument("--data-runs", type=int, default=8, help="data: runs queued")
    parser.add_argument("--data-mb", type=int, default=100, help="data: file size")
    parser.add_argument("--pythonpath", default="", help="run the server from this copy")
    args = parser.parse_args()
    Session.pythonpath = args.pythonpath
    print(f"qvr-lsp under load ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    scenarios = {"flood": flood, "scan": scan, "queue": queue, "data": data}
    for name in args.scenarios:
        await scenarios[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
