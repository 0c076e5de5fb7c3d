"""The server's handler table (`qvr_lsp.app.HANDLERS`) and its one dispatcher (#53).

Each request, command and listener is one entry naming its method and the snapshot
kind it answers from; `analysis.handlers.dispatch` alone calls the handlers, so the
kind's wait, the guard and the empty answer are the same for every request. Here: the
table's shape, the dispatcher's rules on made-up entries, and the rule that nothing but
the snapshot kinds decides how fresh an answer is.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from qvr_lsp.analysis.handlers import (
    Command,
    Listener,
    Request,
    deferred_imports,
    dispatch,
    handler_modules,
)
from qvr_lsp.analysis.kinds import Kind
from qvr_lsp.app import HANDLERS, build

ROOT = Path(__file__).resolve().parents[2]


class Given(Kind[Any, str]):
    """A kind that gives a fixed view (None: no snapshot), to drive `dispatch` alone."""

    def __init__(self, view: str | None) -> None:
        super().__init__("given")
        self.view = view

    async def take(self, session: Any, params: Any) -> str | None:
        return self.view


async def _echo(session: Any, params: Any, view: str) -> str:
    return f"{params} from {view}"


async def _broken(session: Any, params: Any, view: str) -> str:
    raise ValueError("a bug")


async def _refusing(session: Any, params: Any, view: str) -> str:
    raise JsonRpcException(message="not here", code=-32803)


# --------------------------------------------------------------------- the table


def test_every_method_and_command_has_one_entry() -> None:
    methods = [e.method for e in HANDLERS if isinstance(e, Request)]
    commands = [e.name for e in HANDLERS if isinstance(e, Command)]
    assert len(methods) == len(set(methods))
    assert len(commands) == len(set(commands))
    assert all(isinstance(e.needs, Kind) for e in HANDLERS if isinstance(e, Request))


def test_the_server_registers_exactly_the_table() -> None:
    session = build()
    features = session.server.protocol.fm.features
    lifecycle = {lsp.INITIALIZE, lsp.SHUTDOWN, lsp.WORKSPACE_DID_CHANGE_CONFIGURATION}
    assert set(features) - lifecycle == {e.method for e in HANDLERS if isinstance(e, Request)}
    commands = set(session.server.protocol.fm.commands)
    assert commands == {e.name for e in HANDLERS if isinstance(e, Command)}
    assert session.warmup.modules == tuple(deferred_imports(HANDLERS))
    assert session.feature_modules == handler_modules(HANDLERS)
    assert "hover" in session.feature_modules and "run_inference" in session.feature_modules
    session.analyzer.shutdown()
    session.scans.shutdown()


def test_a_table_entry_pygls_refuses_is_left_out_and_the_rest_served(caplog) -> None:  # type: ignore[no-untyped-def]
    doubled = Request(lsp.TEXT_DOCUMENT_HOVER, Given("x"), _echo)
    with caplog.at_level(logging.ERROR, logger="qvr_lsp"):
        session = build((*HANDLERS, doubled))
    assert "left out" in caplog.text
    assert lsp.TEXT_DOCUMENT_FOLDING_RANGE in session.server.protocol.fm.features
    session.analyzer.shutdown()
    session.scans.shutdown()


def test_the_listeners_hear_analyses_in_table_order_then_the_warmup() -> None:
    session = build()
    listeners = [e for e in HANDLERS if isinstance(e, Listener)]
    heard = session.analyzer._listeners
    assert [f.func for f in heard[:-1]] == [e.on_analysis for e in listeners]  # type: ignore[attr-defined]
    assert heard[-1] == session.warmup.start_soon
    session.analyzer.shutdown()
    session.scans.shutdown()


# ---------------------------------------------------------------- the dispatcher


async def test_a_handler_gets_the_view_its_kind_gives() -> None:
    entry = Request("test/echo", Given("the view"), _echo)
    assert await dispatch(entry, None, "params") == "params from the view"  # type: ignore[arg-type]


async def test_no_view_is_the_empty_answer_and_the_handler_is_not_called() -> None:
    entry = Request("test/broken", Given(None), _broken, empty=list)
    assert await dispatch(entry, None, "params") == []  # type: ignore[arg-type]


async def test_no_view_is_the_unready_answer_where_the_entry_has_one() -> None:
    def unready() -> str:
        raise JsonRpcException(message="still being analysed", code=-32803)

    entry = Request("test/unready", Given(None), _echo, empty=str, unready=unready)
    with pytest.raises(JsonRpcException, match="still being analysed"):
        await dispatch(entry, None, "params")  # type: ignore[arg-type]


async def test_a_failing_handler_is_logged_and_answered_empty(caplog) -> None:  # type: ignore[no-untyped-def]
    entry = Request("test/broken", Given("x"), _broken, empty=list)
    with caplog.at_level(logging.ERROR, logger="qvr_lsp"):
        assert await dispatch(entry, None, "params") == []  # type: ignore[arg-type]
    assert "test/broken failed: a bug" in caplog.text


async def test_an_error_the_handler_chose_reaches_the_client() -> None:
    entry = Request("test/refusing", Given("x"), _refusing, empty=list)
    with pytest.raises(JsonRpcException, match="not here"):
        await dispatch(entry, None, "params")  # type: ignore[arg-type]


async def test_a_failing_command_is_one_internal_error() -> None:
    entry = Command("qvr.broken", _broken)
    with pytest.raises(JsonRpcInternalError, match=r"qvr\.broken failed: ValueError: a bug"):
        await dispatch(entry, None, ("file:///a.qvr",))  # type: ignore[arg-type]
    refusing = Command("qvr.refusing", _refusing)
    with pytest.raises(JsonRpcException, match="not here"):
        await dispatch(refusing, None, ())  # type: ignore[arg-type]


# ------------------------------------------------------------------ freshness

#: What decides how fresh an answer is: the analyzer's waits and reads, and the
#: snapshot's choice of analyses. Only `qvr_lsp/analysis/` may call them.
FRESHNESS = {"settled", "checked", "available", "quiet", "snapshot", "for_queries", "structural"}


def freshness_calls(folder: Path) -> list[str]:
    """`file:line name` of every call of a FRESHNESS method under `folder`."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in FRESHNESS
            ):
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.func.attr}")
    return sorted(found)


def test_no_freshness_is_decided_outside_the_snapshot_kinds() -> None:
    """The features and the runs get the view their kind gives; none waits for an
    analysis or picks one itself (hover once did: `features/hover.py`)."""
    package = ROOT / "qvr_lsp"
    assert freshness_calls(package / "features") == []
    assert freshness_calls(package / "runs") == []
    assert freshness_calls(package / "protocol") == []


def test_a_feature_that_waits_for_its_own_analysis_is_found(tmp_path: Path) -> None:
    features = tmp_path / "features"
    features.mkdir()
    (features / "hover.py").write_text(
        "async def hover(session, params, at):\n"
        "    snap = await session.analyzer.settled(params.text_document.uri)\n"
        "    return snap.for_queries()\n",
        encoding="utf-8",
    )
    assert freshness_calls(features) == [
        "features/hover.py:2 settled",
        "features/hover.py:3 for_queries",
    ]
