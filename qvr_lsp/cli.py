"""`qvr lsp` and `qvr-lsp`: start the language server on stdio or TCP."""

from __future__ import annotations

import argparse
import gc
import logging
import sys

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: How long a thread holds the GIL before one that waits gets it (Python's default: 5 ms).
#: The event loop wants it back after every read and write while analyses run in
#: threads; at 5 ms a wait, a flood of edits queued requests for seconds.
SWITCH_INTERVAL_SECONDS = 0.001


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        help="listen on a TCP socket instead of talking over stdin/stdout",
    )
    parser.add_argument("--stdio", action="store_true", help="use stdin/stdout (the default)")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging level for stderr or --log-file (default WARNING)",
    )
    parser.add_argument("--log-file", metavar="PATH", help="write the server's log to this file")


def main(args: argparse.Namespace) -> int:
    """Serve until the client disconnects; 2 for a malformed --tcp address."""
    address = None
    if args.tcp:
        address = _host_port(args.tcp)
        if address is None:
            print(f"qvr-lsp: --tcp expects HOST:PORT, not {args.tcp!r}", file=sys.stderr)
            return 2
    # Cycle collection off from here on (the `Collector` below keeps it off for the
    # server's life, see memory.py): the imports that follow build some hundred thousand
    # objects that live as long as the server, and the collector's passes over them took
    # a tenth of the start (the time to the first diagnostics).
    gc.disable()
    import qvr_lsp

    qvr_lsp._drop_working_directory(always=True)  # nothing imported from here on comes from it
    _configure_logging(args.log_level, args.log_file)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)  # this process is the server's alone
    from qvr_lsp.analysis.memory import Collector
    from qvr_lsp.app import build

    session = build()
    session.analyzer.collector = Collector()  # this process is the server's alone
    server = session.server
    if address is not None:
        server.transport = "tcp"
        server.start_tcp(*address)
        return server.exit_code
    server.start_io()
    return server.exit_code


def _host_port(value: str) -> tuple[str, int] | None:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        return None
    return (host or "127.0.0.1"), int(port)


def _configure_logging(level: str, path: str | None) -> None:
    """Log to stderr (stdout carries the protocol) or to a file."""
    handler: logging.Handler
    handler = logging.FileHandler(path) if path else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
