"""The entries of the server's handler table, and the one function that dispatches them.

The table itself is `qvr_lsp.app.HANDLERS`: every request, command and analysis
listener the server has, each entry naming its LSP method (or command), the snapshot
kind it answers from (`analysis/kinds.py`) and one function. `dispatch` is the only
caller of those functions: it takes the kind's snapshot, calls the handler with it,
and turns a failure into the entry's empty answer, so that freshness, the guard
against a bug and the empty answer are the same for every request and no handler
writes them again. Adding a request is one entry and one function (its answer
computed in `qvr_core.ide`).

A handler answers an error on purpose by raising a `JsonRpcException` (a refused
rename, a command's user error); anything else it raises is a bug: logged, and the
client gets the empty answer (a command: one internal error), never a dead server.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from qvr_lsp.analysis.kinds import Kind, Open
from qvr_lsp.analysis.session import Session
from qvr_lsp.analysis.snapshots import Analysis

log = logging.getLogger("qvr_lsp")

P = TypeVar("P")
V = TypeVar("V")
R = TypeVar("R")


@dataclass(frozen=True)
class Request(Generic[P, V, R]):
    """A request of the protocol: `answer(session, params, view)` with the view `needs`
    gives; `empty()` (None without it) when there is no view or the handler fails."""

    method: str
    needs: Kind[Any, V]  # pygls gives `params` the method's type: the kind reads it as such
    answer: Callable[[Session, P, V], Awaitable[R]]
    empty: Callable[[], R] | None = None
    #: the method's registration options (what the capabilities advertise)
    options: object | None = None
    #: the answer when the kind has no snapshot to give, if not the empty one (a
    #: rename says the file is still being analysed)
    unready: Callable[[], R] | None = None
    #: modules the handler imports on first use: imported ahead once the first
    #: diagnostics are out (`analysis/warmup.py`), so the start does not pay for them
    deferred: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command(Generic[R]):
    """A `workspace/executeCommand` command: `answer(session, arguments, view)`. It names
    its document in its arguments, so it reads it through the `WORKSPACE` view."""

    name: str
    answer: Callable[[Session, tuple[Any, ...], Open], Awaitable[R]]
    deferred: tuple[str, ...] = ()


@dataclass(frozen=True)
class Listener:
    """Hears each analysis announced (of a current text) and each document closed, on the
    event loop: what the server pushes rather than answers (diagnostics, notices)."""

    on_analysis: Callable[[Session, Analysis], None] | None = None
    on_close: Callable[[Session, str], None] | None = None


Entry = Request[Any, Any, Any] | Command[Any] | Listener


async def dispatch(entry: Request[P, V, R] | Command[R], session: Session, params: Any) -> Any:
    """Answer one request or command: its kind's snapshot, then its handler, guarded."""
    try:
        match entry:
            case Request():
                view = await entry.needs.take(session, params)
                if view is None:
                    return _empty(entry.unready or entry.empty)
                return await entry.answer(session, params, view)
            case Command():  # the `WORKSPACE` kind's view: its arguments name its document
                return await entry.answer(session, params, Open(session))
    except (asyncio.CancelledError, JsonRpcException):
        raise  # cancelled, or an error the handler answers on purpose
    except Exception as exc:
        if isinstance(entry, Command):
            log.exception("%s failed", entry.name)
            raise JsonRpcInternalError(f"{entry.name} failed: {type(exc).__name__}: {exc}") from exc
        log.error("%s failed: %s", entry.method, exc, exc_info=exc)
        return _empty(entry.empty)


def _empty(make: Callable[[], R] | None) -> R | None:
    """The empty answer; a factory, so no answer shares a mutable default with another."""
    try:
        return make() if make is not None else None
    except JsonRpcException:
        raise
    except Exception:  # a broken factory must not escape either
        log.exception("an empty answer failed")
        return None


def serve(session: Session, table: Iterable[Entry]) -> None:
    """Register every entry of `table` with the session's server (pygls) and analyzer.

    An entry pygls refuses (a method registered twice, options of the wrong type) is
    logged and left out: one broken feature never keeps the server from starting."""
    for entry in table:
        try:
            _serve(session, entry)
        except Exception:
            log.exception("the handler table's entry %r was left out", entry)


def _serve(session: Session, entry: Entry) -> None:
    server, analyzer = session.server, session.analyzer
    match entry:
        case Request():
            server.feature(entry.method, entry.options)(_responder(session, entry))
        case Command():
            server.command(entry.name)(_command(session, entry))
        case Listener():
            if entry.on_analysis is not None:
                analyzer.on_analysis(partial(entry.on_analysis, session))
            if entry.on_close is not None:
                analyzer.on_close(partial(entry.on_close, session))


def _responder(session: Session, entry: Request[Any, Any, Any]) -> Callable[[Any], Awaitable[Any]]:
    async def respond(params: Any) -> Any:
        return await dispatch(entry, session, params)

    respond.__name__ = respond.__qualname__ = entry.answer.__name__  # pygls logs it
    return respond


def _command(session: Session, entry: Command[Any]) -> Callable[..., Awaitable[Any]]:
    # pygls passes a command its arguments one by one, and would take an annotated first
    # parameter of the server's type for the server itself: hence `*arguments: Any`
    async def run(*arguments: Any) -> Any:
        return await dispatch(entry, session, arguments)

    run.__name__ = run.__qualname__ = entry.answer.__name__
    return run


def deferred_imports(table: Iterable[Entry]) -> list[str]:
    """The modules the table's handlers import on first use, each once, in table order."""
    found: dict[str, None] = {}
    for entry in table:
        if isinstance(entry, Request | Command):
            found |= dict.fromkeys(entry.deferred)
    return list(found)


def handler_modules(table: Iterable[Entry]) -> tuple[str, ...]:
    """The modules of the table's handlers (`qvr/serverStatus` lists them), sorted."""
    found: set[str] = set()
    for entry in table:
        functions: list[Callable[..., object] | None]
        match entry:
            case Request() | Command():
                functions = [entry.answer]
            case Listener():
                functions = [entry.on_analysis, entry.on_close]
        for function in functions:
            if function is not None:
                found.add(function.__module__.rsplit(".", 1)[-1])
    return tuple(sorted(found))
