"""Forward the server's warnings and errors to the client's log (`window/logMessage`).

A guarded handler that fails logs an error; with this handler the user sees
it in the editor's language-server log instead of only on stderr. Records
from analysis threads are handed to the event loop, the only thread that
may write to the client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

_TYPES = {
    logging.ERROR: lsp.MessageType.Error,
    logging.WARNING: lsp.MessageType.Warning,
    logging.INFO: lsp.MessageType.Info,
}


class ClientLogHandler(logging.Handler):
    def __init__(self, server: LanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.WARNING)
        self.server = server
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self._sending = threading.local()
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._sending, "active", False):
            return  # a failure while sending must not log itself forever
        try:
            params = lsp.LogMessageParams(
                type=_TYPES.get(record.levelno, lsp.MessageType.Error), message=self.format(record)
            )
            if threading.get_ident() == self.loop_thread:
                self._send(params)
            elif not self.loop.is_closed():
                self.loop.call_soon_threadsafe(self._send, params)
        except Exception:
            self.handleError(record)

    def _send(self, params: lsp.LogMessageParams) -> None:
        self._sending.active = True
        try:
            self.server.window_log_message(params)
        except Exception:
            pass  # the connection is gone; stderr still has the record
        finally:
            self._sending.active = False


def forward_to_client(server: LanguageServer) -> None:
    """Attach the handler to the `qvr_lsp` logger (once), from the event loop."""
    logger = logging.getLogger("qvr_lsp")
    if any(isinstance(h, ClientLogHandler) for h in logger.handlers):
        return
    logger.addHandler(ClientLogHandler(server, asyncio.get_running_loop()))
