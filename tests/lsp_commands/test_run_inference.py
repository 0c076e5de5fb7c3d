"""`qvr.runInference` through the real server: progress, cancellation, limits, clear errors.

Runs are kept short (a few SVI steps on the seed models); the long ones exist
only to be cancelled or timed out and never run to their end.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.lsp.support import position_of
from tests.lsp_commands.conftest import open_file

pytestmark = pytest.mark.asyncio(loop_scope="module")

RUN = "qvr.runInference"
# How long a test waits for an answer or an event. Runs here take seconds; the bound is for
# a loaded CI machine (a 6-draw NUTS run took over 60 s there), under pytest's 300 s limit.
WAIT = 200.0
HOVER_SECONDS = 5.0  # a hover takes milliseconds; this only bounds a loaded machine


_ids = itertools.count(1)


def start(
    client, arguments: dict | list, msg_id: str | None = None, token: str | None = None
) -> asyncio.Future:
    """Send a run: `arguments` is the object, or the list a code lens sends."""
    future = client.protocol.send_request(
        lsp.WORKSPACE_EXECUTE_COMMAND,
        lsp.ExecuteCommandParams(
            command=RUN,
            arguments=arguments if isinstance(arguments, list) else [arguments],
            work_done_token=token,
        ),
        msg_id=msg_id or f"run-{next(_ids)}",
    )
    return asyncio.wrap_future(future)


async def answer(pending: asyncio.Future, seconds: float = WAIT):
    """The answer to a request, waiting at most `seconds`. The wait is shielded: a timeout
    fails this test alone, where cancelling the request's future would make pygls raise
    when the answer comes after all, which stops the client for every later test."""
    return await asyncio.wait_for(asyncio.shield(pending), seconds)


async def run(client, arguments: dict | list, token: str | None = None) -> dict:
    msg_id = f"run-{next(_ids)}"
    pending = start(client, arguments, msg_id=msg_id, token=token)
    try:
        return await answer(pending)
    except TimeoutError:  # the next test must not find the document busy with this run
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
        with contextlib.suppress(Exception):
            await answer(pending)
        raise


async def failure(client, arguments: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await run(client, arguments)
    return info.value


async def first_progress(client, uri: str, after: int) -> dict:
    """The first inferenceProgress for `uri` with a point, among notes from index `after` on."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for note in client.inference_progress[after:]:
            if note["uri"] == uri and note["points"] and not note["done"]:
                return note
        await asyncio.sleep(0.05)
    raise AssertionError(f"no progress for {uri}")


async def until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def long_run(client, uri: str):
    """A run too long to finish: yields (msg_id, pending, first progress); cancelled at exit."""
    msg_id = f"long-run-{next(_ids)}"
    after = len(client.inference_progress)
    pending = start(client, {"uri": uri, "steps": 100000}, msg_id=msg_id)
    try:
        note = await first_progress(client, uri, after)
        yield msg_id, pending, note
    finally:  # never leave a run going: the next test would find the document busy
        if not pending.done():
            client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
        with contextlib.suppress(Exception):
            await answer(pending)
        await until(lambda: ended(client, None, uri, after), WAIT)


def ended(client, run_id: int | None, uri: str | None = None, after: int = 0) -> bool:
    """Whether the run (by id, or the first of `uri` after index `after`) announced its end."""
    return any(
        n["done"] and (n["runId"] == run_id if run_id is not None else n["uri"] == uri)
        for n in client.inference_progress[after:]
    )


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


_hovers = itertools.count(1)


async def hover_answers(client, path: Path) -> None:
    """The server answers a hover at once (on a fresh copy of `path`, opened now)."""
    text = path.read_text()
    copy = path.with_name(f"hover-{next(_hovers)}.qvr")
    copy.write_text(text)
    uri = open_file(client, copy)
    started = time.monotonic()
    result = await answer(
        client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position_of(text, "backbone", 1, 2))
        ),
        HOVER_SECONDS,
    )
    assert result is not None and "backbone" in result.contents.value
    assert time.monotonic() - started < HOVER_SECONDS


# ----------------------------------------------------------------- runs


async def test_svi_run_reports_progress_and_returns_a_summary(client, workspace):
    uri = open_file(client, workspace / "vanilla_rnn_lm.qvr")
    before = set(client.progress_reports)
    summary = await run(client, {"uri": uri, "method": "svi", "steps": 12, "lr": 0.01})
    assert summary["status"] == "completed" and summary["method"] == "svi"
    assert summary["program"] == "vanilla_rnn_lm"
    assert len(summary["losses"]) == 12
    assert summary["initial_loss"] == summary["losses"][0]
    assert summary["final_loss"] == summary["losses"][-1]
    assert summary["seconds"] > 0 and summary["steps_per_second"] > 0

    (token,) = set(client.progress_reports) - before
    reports = client.progress_reports[token]
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin) and reports[0].cancellable
    middle = [r for r in reports if isinstance(r, lsp.WorkDoneProgressReport)]
    assert middle and middle[-1].message.startswith("step 12/12, loss ")
    assert middle[-1].percentage == 100
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd)
    assert reports[-1].message.startswith("done after")

    notes = [n for n in client.inference_progress if n["runId"] == summary["runId"]]
    assert notes[-1]["done"] is True and notes[-1]["total"] == 12
    assert [p[0] for p in notes[-1]["points"]] == list(range(1, 13))
    assert [p[1] for p in notes[-1]["points"]] == pytest.approx(summary["losses"])


# The next three check where progress goes, the defaults a lens runs and the sites a prior
# run draws: no value a draw takes decides them, so the AVX2 pass skips them (kernel_free).
# pytest-lsp's client only knows tokens the server created; a real client knows the one it sent.
@pytest.mark.filterwarnings("ignore:Unknown progress token")
@pytest.mark.kernel_free
async def test_progress_goes_to_the_token_the_client_sent(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    before = set(client.progress_reports)
    summary = await run(client, {"uri": uri, "method": "svi", "steps": 5}, token="client-token-1")
    assert summary["status"] == "completed"
    assert set(client.progress_reports) - before == {"client-token-1"}  # one bar, the client's
    reports = client.progress_reports["client-token-1"]
    assert isinstance(reports[0], lsp.WorkDoneProgressBegin)
    assert isinstance(reports[-1], lsp.WorkDoneProgressEnd)


@pytest.mark.kernel_free
async def test_code_lens_arguments_run_the_defaults(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    summary = await run(client, [uri, "tiny"])
    assert summary["method"] == "svi" and summary["status"] == "completed"
    assert summary["program"] == "tiny" and len(summary["losses"]) == 100


@pytest.mark.kernel_free
async def test_prior_sampling(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    summary = await run(client, {"uri": uri, "method": "prior", "steps": 5})
    assert summary["method"] == "prior" and set(summary["sites"]) == {"h", "next"}


async def test_nuts_returns_the_mcmc_summary(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    summary = await run(
        client, {"uri": uri, "method": "nuts", "steps": 6, "max_tree_depth": 2, "batch": 2}
    )
    assert summary["method"] == "nuts"
    assert {"acceptance", "divergences", "r_hat", "ess"} <= set(summary)
    assert summary["chains"] == 4 and summary["posterior"]["chains"] == 4
    assert summary["posterior"]["rows"] and summary["posterior"]["warnings"]  # 3 draws: too few


def chain_processes(worker: int) -> set[int]:
    """The worker's children (its chain processes), from /proc."""
    try:
        text = Path(f"/proc/{worker}/task/{worker}/children").read_text()
    except OSError:
        return set()
    return {int(p) for p in text.split()}


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.kernel_free
async def test_cancelling_a_nuts_run_stops_every_chain_process(client, workspace):
    path = workspace / "tiny.qvr"
    uri = open_file(client, path, version=5)
    msg_id = f"long-nuts-{next(_ids)}"
    after = len(client.inference_progress)
    arguments = {"uri": uri, "method": "nuts", "steps": 100000, "chains": 2, "batch": 2}
    pending = start(client, arguments, msg_id=msg_id)
    note = await first_progress(client, uri, after)
    children = chain_processes(note["workerPid"])
    # a small model's chains run together in the worker; a slow one's in one process per
    # core (inference.chains.chosen_processes): whichever it was, cancelling ends them all
    assert len(children) in ((0, 2) if len(os.sched_getaffinity(0)) >= 2 else (0,))
    client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException):
        await answer(pending)
    await until(lambda: gone(note["workerPid"]) and all(gone(c) for c in children))
    await until(lambda: ended(client, note["runId"]))


@pytest.mark.kernel_free
async def test_run_reads_a_csv_in_the_workspace(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    summary = await run(
        client, {"uri": uri, "method": "prior", "steps": 3, "data": "data/tokens.csv"}
    )
    assert summary["data"].endswith("tokens.csv") and summary["batch"] == 4
    assert summary["program"] == "tiny"


# ---------------------------------------------------------- cancellation


@pytest.mark.kernel_free
async def test_cancel_request_stops_the_worker_and_the_server_keeps_answering(client, workspace):
    path = workspace / "tiny.qvr"
    uri = open_file(client, path, version=3)
    async with long_run(client, uri) as (msg_id, pending, note):
        pid = note["workerPid"]
        assert not gone(pid)
        client.protocol.notify(lsp.CANCEL_REQUEST, lsp.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcException) as info:
            await answer(pending)
        assert info.value.code == -32800  # RequestCancelled
        await hover_answers(client, path)
        await until(lambda: gone(pid))
        await until(lambda: ended(client, note["runId"]))


@pytest.mark.kernel_free
async def test_progress_cancel_button_stops_the_run(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    before = set(client.progress_reports)
    async with long_run(client, uri) as (_msg_id, pending, note):
        (token,) = set(client.progress_reports) - before
        client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
        with pytest.raises(JsonRpcException) as info:
            await answer(pending)
        assert info.value.data["kind"] == "cancelled" and "cancelled" in str(info.value)
        await until(lambda: gone(note["workerPid"]))
        await until(lambda: isinstance(client.progress_reports[token][-1], lsp.WorkDoneProgressEnd))
        assert client.progress_reports[token][-1].message.startswith("cancelled after")


@pytest_asyncio.fixture(scope="class", loop_scope="module")
async def going(client, workspace):
    """The URI of a copy of tiny.qvr with a long run going, for the tests of one class: a
    run is refused while another goes for its document, whatever the test, so they share
    one (one worker started, not one a test), cancelled when the class is done."""
    path = workspace / "busy.qvr"
    path.write_text((workspace / "tiny.qvr").read_text())
    uri = open_file(client, path)
    async with long_run(client, uri):
        yield uri


@pytest.mark.kernel_free
class TestWhileARunGoes:
    async def test_second_run_on_the_same_document_is_refused(self, client, going):
        error = await failure(client, {"uri": going, "steps": 5})
        assert "already going for this document" in str(error)
        assert error.data["kind"] == "busy"

    async def test_a_second_run_under_another_spelling_of_the_uri_is_refused(self, client, going):
        folder, name = going.rsplit("/", 1)
        for spelling in (f"{folder}/./{name}", f"{folder}/%62usy.qvr", f"{folder}//{name}"):
            error = await failure(client, {"uri": spelling, "steps": 5})
            assert error.data["kind"] == "busy", spelling
        lens_form = client.protocol.send_request_async(
            lsp.WORKSPACE_EXECUTE_COMMAND,
            lsp.ExecuteCommandParams(command=RUN, arguments=[f"{folder}/./{name}"]),
        )
        with pytest.raises(JsonRpcException) as info:
            await answer(lens_form)
        assert info.value.data["kind"] == "busy"


# ---------------------------------------------------------------- limits


@pytest.mark.kernel_free
async def test_wall_clock_limit_stops_a_long_run(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    started = time.monotonic()
    error = await failure(client, {"uri": uri, "steps": 100000, "timeout": 1.0})
    assert error.data["kind"] == "timeout" and "time limit" in str(error)
    assert time.monotonic() - started < 30


@pytest.mark.kernel_free
async def test_memory_limit_fails_the_run_not_the_server(client, workspace):
    path = workspace / "tiny.qvr"
    uri = path.as_uri()
    error = await failure(client, {"uri": uri, "steps": 5, "memory_mb": 64})
    assert error.data["kind"] == "memory" and "memory_mb" in str(error)
    await hover_answers(client, path)


# ---------------------------------------------------------------- errors


async def test_nan_loss_is_a_clear_error_and_the_server_stays_up(client, workspace):
    path = workspace / "tiny.qvr"
    uri = path.as_uri()
    error = await failure(client, {"uri": uri, "steps": 20, "lr": 1e30})
    assert error.data["kind"] == "nan"
    assert "nan at step" in str(error) and "smaller learning rate" in str(error)
    await hover_answers(client, path)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("../outside.csv", "outside the workspace"),
        ("/etc/hosts", "outside the workspace"),
        ("data/link.csv", "outside the workspace"),
        ("data/missing.csv", "does not exist"),
        ("tiny.qvr", "is not a data file"),
    ],
)
@pytest.mark.kernel_free
async def test_bad_data_path_is_refused_before_any_run(client, workspace, data, message):
    uri = (workspace / "tiny.qvr").as_uri()
    error = await failure(client, {"uri": uri, "steps": 5, "data": data})
    assert error.data["kind"] == "data" and message in str(error)


@pytest.mark.kernel_free
async def test_arguments_are_checked(client, workspace):
    uri = (workspace / "tiny.qvr").as_uri()
    error = await failure(client, {"uri": uri, "method": "hmc"})
    assert "method must be one of svi, nuts, prior" in str(error)
    error = await failure(client, {"uri": uri, "steps": 0})
    assert "steps must be a whole number" in str(error)
    error = await failure(client, {"uri": uri, "program": "nope"})
    assert "no program named 'nope'" in str(error)


@pytest.mark.kernel_free
async def test_unexported_program_and_file_with_errors_are_refused(client, workspace):
    error = await failure(
        client, {"uri": (workspace / "rlstm_lm.qvr").as_uri(), "program": "rlstm_cell"}
    )
    assert "not exported" in str(error)
    broken = workspace / "broken.qvr"
    broken.write_text("object A : Real 2\nlet x = nope\nexport x\n")
    error = await failure(client, {"uri": broken.as_uri()})
    assert error.data["kind"] == "source" and "undefined name 'nope'" in str(error)
