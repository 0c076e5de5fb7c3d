"""What a client sees of a run while it goes: `$/progress` and `qvr/inferenceProgress`.

`$/progress` (begin, reports "step 120/500, loss 3.21" with a percentage,
end) is sent only to clients that declare `window.workDoneProgress`; the
`qvr/inferenceProgress` notification carries the loss series so far, so a
client drawing a chart can redraw from any one message, and for NUTS the
latest `live` state the run reported (every chain's traces and the summary
table of the draws so far, `qvr_core.inference.live`; the run throttles it). A long series is
thinned to at most `MAX_POINTS` evenly spaced points (the first and the
newest always kept); the exact series is in the run's summary. Reports are
throttled; the last point of a run is always sent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from pygls.capabilities import get_capability

from qvr_core.draws.series import evenly_spaced
from qvr_lsp.protocol.contract import INFERENCE_PROGRESS, InferenceProgress

if TYPE_CHECKING:
    from qvr_lsp.protocol.server import QvrLanguageServer

log = logging.getLogger("qvr_lsp")

NOTIFICATION = INFERENCE_PROGRESS
REPORT_INTERVAL_SECONDS = 0.2
MAX_POINTS = 2000
CREATE_TIMEOUT_SECONDS = 5.0


class RunProgress:
    """Progress of one run: its token, the loss series, and the client's cancel button."""

    def __init__(
        self,
        server: QvrLanguageServer,
        uri: str,
        run_id: int,
        method: str,
        total: int,
        client_token: str | int | None = None,
    ) -> None:
        self.server = server
        self.uri = uri
        self.run_id = run_id
        self.method = method
        self.total = total
        self.points: list[list[float | None]] = []
        self.worker_pid: int | None = None
        # A token the client sent with the request is the progress it already shows
        # (the protocol's client-initiated progress); otherwise the server creates one.
        self._client_token = client_token is not None
        self.token: str | int = f"qvr-inference-{run_id}" if client_token is None else client_token
        self._enabled = self._client_token or bool(
            get_capability(server.caps, "window.work_done_progress", False)
        )
        self._last_sent = 0.0
        self._reported = 0  # points already reported
        self.live: dict[str, Any] | None = None  # the run's latest draws, as the core made them

    async def begin(self, title: str) -> None:
        if self._enabled and not self._client_token:
            try:
                await asyncio.wait_for(
                    self.server.work_done_progress.create_async(self.token),
                    CREATE_TIMEOUT_SECONDS,
                )
            except Exception as exc:  # the run goes on without a progress bar
                log.warning("client did not create progress %s: %s", self.token, exc)
                self._enabled = False
        if self._enabled:
            self.server.work_done_progress.begin(
                self.token,
                lsp.WorkDoneProgressBegin(
                    title=title, cancellable=True, message="starting", percentage=0
                ),
            )
        self._notify(done=False)

    def queued(self, ahead: int) -> None:
        """The run waits for a worker: say how many runs are ahead of it."""
        if self._enabled:
            runs = "run is" if ahead == 1 else "runs are"
            self.server.work_done_progress.report(
                self.token,
                lsp.WorkDoneProgressReport(
                    message=f"waiting for a worker: {ahead} {runs} ahead", cancellable=True
                ),
            )

    def cancel_requested(self) -> bool:
        """True once the client pressed cancel on the progress (window/workDoneProgress/cancel)."""
        future = self.server.work_done_progress.tokens.get(self.token)
        return future is not None and future.cancelled()

    def point(self, step: int, loss: float | None, total: int | None = None) -> None:
        if total:
            self.total = total  # NUTS counts warmup and draws
        self.points.append([step, loss])
        now = time.monotonic()
        if now - self._last_sent >= REPORT_INTERVAL_SECONDS or step >= self.total:
            self._last_sent = now
            self._report(step, loss)

    def update(self, live: dict[str, Any]) -> None:
        """The run's draws so far (already throttled by the run): sent at once."""
        self.live = live
        self._notify(done=False)

    def flush(self) -> None:
        """Send the last point if throttling held it back."""
        if self.points and self._reported < len(self.points):
            step, loss = self.points[-1]
            self._report(int(step), loss)  # type: ignore[arg-type]  # a step is never None

    def end(self, message: str) -> None:
        if self._enabled:
            self.server.work_done_progress.end(self.token, lsp.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)
        self._notify(done=True)

    def _report(self, step: int, loss: float | None) -> None:
        self._reported = len(self.points)
        shown = "nan" if loss is None else f"{loss:.4g}"
        if self._enabled:
            self.server.work_done_progress.report(
                self.token,
                lsp.WorkDoneProgressReport(
                    message=f"step {step}/{self.total}, loss {shown}",
                    percentage=min(100, int(100 * step / max(1, self.total))),
                    cancellable=True,
                ),
            )
        self._notify(done=False)

    def _notify(self, done: bool) -> None:
        payload: InferenceProgress = {
            "uri": self.uri,
            "runId": self.run_id,
            "method": self.method,
            "total": self.total,
            "points": thin(self.points, MAX_POINTS),
            "done": done,
            "workerPid": self.worker_pid,
        }
        if self.live is not None:
            payload["live"] = self.live
        self.server.protocol.notify(NOTIFICATION, payload)


def thin(points: list[list[float | None]], limit: int) -> list[list[float | None]]:
    """At most `limit` evenly spaced points, keeping the first and the last."""
    return [points[i] for i in evenly_spaced(len(points), limit)]
