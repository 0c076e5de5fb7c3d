"""The QVR language server as the editor sees it: the connection, document sync, settings.

It reads and writes the protocol, keeps the open documents and the settings, and
runs the lifecycle; it knows no analysis, no feature and no run. What reacts to it
hears it through hooks the composition root (`qvr_lsp.app`) connects: a
`DocumentWatcher` for opened, changed and closed documents (the analyzer), and
callbacks for new settings, `shutdown` and `exit`. The handlers of the table
(`qvr_lsp.app.HANDLERS`) are registered on it by `analysis.handlers.serve`.
Nothing here imports torch: the runtime is imported only by the inference
command's worker process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import Any, BinaryIO, Protocol
from urllib.parse import unquote

import attrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInternalError
from pygls.io_ import StdoutWriter
from pygls.protocol import lsp_method

from qvr_core.text.cells import qvr_text
from qvr_lsp import __version__
from qvr_lsp.protocol import framing
from qvr_lsp.protocol.answers import Serialized
from qvr_lsp.protocol.command_errors import plain
from qvr_lsp.protocol.convert import UTF16, encoding_of
from qvr_lsp.protocol.documents import DocumentStore, is_qvr_document
from qvr_lsp.protocol.framing import FrameReader
from qvr_lsp.protocol.guard import guarded
from qvr_lsp.protocol.logs import forward_to_client
from qvr_lsp.protocol.messages import AnsweringProtocol, AnsweringServer
from qvr_lsp.protocol.settings import Settings

log = logging.getLogger("qvr_lsp")


class DocumentWatcher(Protocol):
    """What hears the open QVR documents change (the analyzer, connected by `qvr_lsp.app`)."""

    def schedule(self, uri: str, *, immediate: bool = False) -> None:
        """`uri` was opened (`immediate`) or changed: analyse it."""

    def close(self, uri: str) -> None:
        """`uri` was closed: let go of it."""


class QvrProtocol(AnsweringProtocol):
    """pygls's protocol with the text kept by `DocumentStore` (protocol line rules).

    Every request it cannot serve is answered with an error (see messages.py).

    pygls's workspace still gets a copy of each full text, so anything that
    reads `server.workspace.get_text_document(uri).source` sees the same text.
    """

    _server: QvrLanguageServer

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: lsp.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._server.opened(params)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: lsp.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._server.changed(params)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: lsp.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        self._server.closed(params)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(
        self, params: lsp.DidOpenNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from super().lsp_notebook_document__did_open(params)  # pygls keeps the cells
        self._server.cells_changed([c.uri for c in params.cell_text_documents])

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(
        self, params: lsp.DidChangeNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from super().lsp_notebook_document__did_change(params)
        self._server.cells_changed(changed_cells(params))

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(
        self, params: lsp.DidCloseNotebookDocumentParams
    ) -> Generator[Any, Any, None]:
        yield from super().lsp_notebook_document__did_close(params)
        self._server.cells_changed([c.uri for c in params.cell_text_documents])

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: lsp.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        """pygls's executeCommand, keeping the request's workDoneToken for the command.

        pygls passes a command only its arguments; a long command (inference)
        reports progress on the client's token when the client sent one.
        """
        msg_id = self.msg_id
        if params.work_done_token is not None:
            self._server.command_progress_tokens[msg_id] = params.work_done_token
        try:
            return (yield from super().lsp_workspace__execute_command(params))
        finally:
            self._server.command_progress_tokens.pop(msg_id, None)

    #: True once `exit` arrived: nothing more is written to the client.
    closing = False

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls's, forgetting the handler's future once it is done, its exception taken.

        pygls 2.1 files the future of every notification and of every step of a
        generator handler under a fresh id in `_request_futures` and removes
        only those of requests: each `didChange` kept a Future with its lock
        and condition, 2.3 KB an edit for the life of the server.
        """

        def done(future: Any) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            if not future.cancelled() and (exc := future.exception()) is not None:
                # taken here: pygls drops the outcome of a step of a cancelled request (a
                # queued run that ends "cancelled"), which asyncio then logged as "never
                # retrieved", a traceback per run
                log.debug("%s ended with %r", getattr(handler, "__name__", handler), exc)
            callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """pygls's, with the message of an error in plain text (`command_errors.plain`), and
        an answer serialized off the loop (`answers.Serialized`) written as it is."""
        if error is None and isinstance(result, Serialized):
            self._result_types.pop(msg_id, None)
            self._send_text(
                f'{{"id": {json.dumps(msg_id)}, "jsonrpc": "2.0", "result": {result.text}}}'
            )
            return
        if attrs.has(type(error)) and isinstance(getattr(error, "message", None), str):
            error = attrs.evolve(error, message=plain(error.message))
        super()._send_response(msg_id, result, error)

    def _send_text(self, body: str) -> None:
        """pygls's `_send_data` for a body that is JSON already."""
        if self.closing or self.writer is None:
            return
        data = body.encode(self.CHARSET)
        header = (
            f"Content-Length: {len(data)}\r\n"
            f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        )
        try:
            self.writer.write(header.encode(self.CHARSET) + data)  # stdio and TCP: not async
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _send_data(self, data: Any) -> None:
        """Drop messages after `exit`: the stream is closed, and a failed write would be
        logged, reported to the client, fail again, and so on (38 MB of tracebacks)."""
        if not self.closing:
            super()._send_data(data)

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Stop the work first (workers killed, analyses dropped), then exit.

        Over TCP, stop serving instead of raising SystemExit inside a handler:
        pygls calls sys.exit from the message handler, which over TCP escapes
        the event loop with a traceback; stopping the server lets `start_tcp`
        return and the command exit with the code the protocol asks for.
        """
        self.closing = True
        self._server.stop_work()
        self._server.exit_code = 0 if self._shutdown else 1
        if self._server.transport != "tcp":
            return (yield from super().lsp_exit(*args))
        if (handler := self.fm.features.get(lsp.EXIT)) is not None:
            yield handler, args, None
        self._server.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated
        return None

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls's shutdown, iterating over a copy of the pending requests.

        Cancelling a request runs callbacks that remove it from
        `_request_futures`; pygls 2.1 iterates the dict itself and fails with
        "dictionary changed size" when a command (an inference run) is in flight.
        """
        if (handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True


class QvrLanguageServer(AnsweringServer):
    """Holds the open documents and the settings; the handler table does the rest
    (registered by the composition root, `qvr_lsp.app`)."""

    protocol: QvrProtocol

    def __init__(self) -> None:
        super().__init__(
            "qvr-lsp",
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            # every notebook's Python cells: those that start with %%qvr are QVR
            notebook_document_sync=lsp.NotebookDocumentSyncOptions(
                [lsp.NotebookDocumentFilterWithCells([lsp.NotebookCellLanguage("python")], "*")]
            ),
            protocol_cls=QvrProtocol,
        )
        self.documents = DocumentStore()
        #: "stdio" or "tcp", set by the command line; the exit code after `exit` over TCP
        self.transport = "stdio"
        self.exit_code = 0
        #: executeCommand request id -> the workDoneToken the client sent with it
        self.command_progress_tokens: dict[Any, str | int] = {}
        self.settings = Settings()
        self.encoding: lsp.PositionEncodingKind = UTF16
        self._watchers: list[DocumentWatcher] = []
        self._on_settings: list[Callable[[Settings], None]] = []
        self._on_shutdown: list[Callable[[], None]] = []
        self._on_stop: list[Callable[[], None]] = []
        self._register_lifecycle()

    # ------------------------------------------------------------ hooks

    def watch(self, watcher: DocumentWatcher) -> None:
        """Tell `watcher` of every QVR document opened, changed or closed."""
        self._watchers.append(watcher)

    def on_settings(self, listener: Callable[[Settings], None]) -> None:
        """Call `listener` with the settings whenever the client sends them."""
        self._on_settings.append(listener)

    def on_shutdown(self, listener: Callable[[], None]) -> None:
        """Call `listener` at the `shutdown` request."""
        self._on_shutdown.append(listener)

    def on_stop(self, listener: Callable[[], None]) -> None:
        """Call `listener` at `exit`, in the order given, before the process ends."""
        self._on_stop.append(listener)

    # ------------------------------------------------------------ stdio

    def _start_io_async(
        self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
    ) -> None:
        """pygls's stdio server, its frames read by `framing.FrameReader` (bounded).

        A pipe (how editors start a server) is read by the loop itself with
        asyncio's transport: pygls read every header line and body with a call
        in its thread pool, three trips between threads per message, each
        waiting for the GIL while analyses run in other threads, so a flood of
        edits kept requests queued behind them. Anything else (a file, Windows)
        is read in a thread, a chunk at a time.
        """
        source = stdin or sys.stdin.buffer
        stop = self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

        async def serve() -> None:
            on_loop = os.name == "posix" and _is_pipe(source)
            read = await _pipe_reader(source) if on_loop else self._thread_reader(source)
            await framing.serve(stop, FrameReader(read), self.protocol, self.report_server_error)

        try:
            asyncio.run(serve())
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated

    def _thread_reader(self, source: BinaryIO) -> framing.Read:
        """Reads of `source` in pygls's thread pool: what a chunk is available (`read1`)."""
        read = getattr(source, "read1", source.read)
        pool = self.thread_pool

        def chunk(n: int) -> Awaitable[bytes]:
            return asyncio.get_running_loop().run_in_executor(pool, read, n)

        return chunk

    def start_tcp(self, host: str, port: int) -> None:
        """pygls's TCP server, each connection's frames read by `framing.FrameReader`."""
        stop = self._stop_event = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)
            await framing.serve(
                stop, FrameReader(reader.read), self.protocol, self.report_server_error
            )
            self.shutdown()  # type: ignore[no-untyped-call]  # pygls leaves it unannotated

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        log.info("serving on %s:%s", host, port)
        with contextlib.suppress(asyncio.CancelledError):  # `exit` closed the listener
            asyncio.run(listen())

    # ------------------------------------------------------ for handlers

    @property
    def caps(self) -> lsp.ClientCapabilities | None:
        """The client's capabilities (None before `initialize`)."""
        return getattr(self.protocol, "client_capabilities", None)

    def window_show_message(self, params: lsp.ShowMessageParams) -> None:
        """pygls's, in plain text: notifications render Markdown links (see `plain`)."""
        super().window_show_message(attrs.evolve(params, message=plain(params.message)))

    def request_cancelled(self) -> Callable[[], bool]:
        """Whether the client sent `$/cancelRequest` for the request being handled.

        pygls answers a cancelled request itself but does not stop a command that
        is already running, so a long command (a run) asks the request's future.
        Read it before the handler first awaits: the id is that of the message
        being handled.
        """
        protocol = self.protocol
        msg_id = protocol.msg_id
        # pygls keeps no public handle on the request's future
        future = protocol._request_futures.get(msg_id) if msg_id is not None else None
        if future is None:
            return lambda: False
        return future.cancelled

    # -------------------------------------------------------- lifecycle

    def _register_lifecycle(self) -> None:
        @self.feature(lsp.INITIALIZE)
        @guarded()
        def initialize(params: lsp.InitializeParams) -> None:
            forward_to_client(self)
            self.encoding = encoding_of(self.workspace.position_encoding)
            self.documents.encoding = self.encoding
            self.apply_settings(params.initialization_options)

        @self.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
        @guarded()
        def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
            self.apply_settings(params.settings)

        @self.feature(lsp.SHUTDOWN)
        @guarded()
        def shutdown(params: None) -> None:
            for listener in self._on_shutdown:
                listener()

    def stop_work(self) -> None:
        """At `exit`: what the hooks stop (the inference workers killed, the analyses
        dropped), without waiting."""
        for listener in self._on_stop:
            listener()
        if loop_running():  # handlers cancelled as the loop ends are not errors
            asyncio.get_running_loop().set_exception_handler(_ignore_cancelled)

    def apply_settings(self, payload: Any) -> None:
        self.settings = self.settings.updated(payload)
        log.info("settings: %s", self.settings)
        for listener in self._on_settings:
            listener(self.settings)

    @guarded()
    def opened(self, params: lsp.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        if not is_qvr_document(item.uri, item.language_id):
            log.info("ignoring %s: its languageId is %r, not qvr", item.uri, item.language_id)
            self.documents.ignored.add(item.uri)
            return
        self.documents.open(item.uri, item.text, item.version, item.language_id)
        self._mirror(item.uri)
        for watcher in self._watchers:
            watcher.schedule(item.uri, immediate=True)

    @guarded()
    def changed(self, params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = self.documents.change(uri, params.text_document.version, params.content_changes)
        if doc is None:
            if uri not in self.documents.ignored:
                log.warning("change to %s, which is not open", uri)
            return
        self._mirror(uri)
        for watcher in self._watchers:
            watcher.schedule(uri)

    @guarded()
    def closed(self, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        self.documents.close(uri)
        for watcher in self._watchers:
            watcher.close(uri)
        self.workspace.remove_text_document(uri)

    @guarded()
    def cells_changed(self, uris: list[str]) -> None:
        """The notebook cells `uris` as pygls now holds them: each `%%qvr` one opened or
        changed as a QVR document, any other closed if it was one (`qvr_core.text.cells`)."""
        for uri in dict.fromkeys(uris):
            # pygls keys its documents by the unquoted URI, and VS Code's cell URIs carry a
            # percent-encoded fragment (`#W0sZmlsZQ%3D%3D`); the QVR document keeps the
            # URI the client sent, which its requests name.
            cell = self.workspace.text_documents.get(unquote(uri))
            text = qvr_text(cell.source) if cell is not None else None
            doc = self.documents.get(uri)
            if text is None:
                if doc is not None:
                    self.documents.close(uri)
                    for watcher in self._watchers:
                        watcher.close(uri)
                continue
            assert cell is not None
            version = cell.version if cell.version is not None else 0
            if doc is None:
                self.documents.open(uri, text, version, "qvr")
                for watcher in self._watchers:
                    watcher.schedule(uri, immediate=True)
            elif doc.text != text:
                self.documents.change(
                    uri, version, [lsp.TextDocumentContentChangeWholeDocument(text)]
                )
                for watcher in self._watchers:
                    watcher.schedule(uri)

    def _mirror(self, uri: str) -> None:
        doc = self.documents.get(uri)
        if doc is not None:
            item = lsp.TextDocumentItem(doc.uri, doc.language_id, doc.version, doc.text)
            self.workspace.put_text_document(item)


async def _pipe_reader(pipe: BinaryIO) -> framing.Read:
    """Reads of the client's pipe on the event loop (asyncio's transport)."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=framing.CHUNK_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    return stream.read


def _is_pipe(stream: BinaryIO) -> bool:
    """Whether `stream` is a pipe, a socket or a terminal (what asyncio can read)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, AttributeError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


def _ignore_cancelled(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


def loop_running() -> bool:
    """Whether this thread runs an event loop (the server's, once it serves)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def changed_cells(params: lsp.DidChangeNotebookDocumentParams) -> list[str]:
    """The cells a notebook change touched: their text, their kind, added or removed."""
    cells = params.change.cells
    if cells is None:
        return []
    uris = [c.document.uri for c in cells.text_content or ()]
    uris += [c.document for c in cells.data or ()]
    if cells.structure is not None:
        uris += [d.uri for d in cells.structure.did_open or ()]
        uris += [d.uri for d in cells.structure.did_close or ()]
    return uris
