"""Special files in a workspace: the command line refuses them, the server skips them.

`in.qvr -> /dev/stdin` used to make the server read its own input stream,
`zero.qvr -> /dev/zero` read until memory ran out, a FIFO named `x.qvr`
blocked the thread pool for good, and links led out of the workspace. The
processes here run under an address-space limit, so a regression fails the
test instead of exhausting the machine.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.lsp.support import position_of
from tests.security.support import served

GOOD = "object Good : Real 2\nmorphism visible : Good -> Good [role=kernel] ~ Normal\n"
SECRET = "object Secret : Real 1\n"
MEMORY_LIMIT = 2 << 30
ANSWER_SECONDS = 15.0
QVR = Path(sys.executable).with_name("qvr")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "good.qvr").write_text(GOOD)
    (root / "in.qvr").symlink_to("/dev/stdin")
    (root / "zero.qvr").symlink_to("/dev/zero")
    os.mkfifo(root / "x.qvr")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.qvr").write_text(SECRET)
    (root / "out.qvr").symlink_to(outside / "secret.qvr")
    (root / "linked").symlink_to(outside)  # not walked: os.walk does not follow links
    return root


def qvr(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`qvr ARGS` with a stdin pipe that stays open (as a terminal's would)."""
    with subprocess.Popen(
        [str(QVR), *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limit_memory,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"qvr {' '.join(args)} did not finish in 30 s") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("in.qvr", "it is outside the workspace (it leads to /proc/"),
        ("zero.qvr", "it is outside the workspace (it leads to /dev/zero)"),
        ("/dev/zero", "it is a character device, not a regular file"),
        ("x.qvr", "it is a FIFO (named pipe), not a regular file"),
        ("out.qvr", "it is outside the workspace (it leads to"),
        ("linked/secret.qvr", "it is outside the workspace (it leads to"),
    ],
)
@pytest.mark.parametrize("command", ["check", "diagram", "fmt"])
def test_the_command_line_refuses_with_one_line_and_exit_2(hostile, name, why, command):
    done = qvr([command, name], hostile)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"qvr: cannot read {name}: {why}")
    assert done.stderr.count("\n") == 1, done.stderr
    assert "Secret" not in done.stdout + done.stderr


def test_check_goes_on_with_the_other_files(hostile):
    done = qvr(["check", "x.qvr", "good.qvr", "zero.qvr"], hostile)
    assert done.returncode == 2
    assert done.stderr.count("cannot read") == 2


@pytest.mark.asyncio(loop_scope="function")
async def test_the_server_skips_special_files_and_keeps_answering(hostile):
    async with served(hostile, memory_limit=MEMORY_LIMIT) as client:
        symbols = await asyncio.wait_for(
            client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="")), ANSWER_SECONDS
        )
        names = {s.name for s in symbols}
        assert {"Good", "visible"} <= names
        assert "Secret" not in names

        skipped = [m.message for m in client.log_messages if "skipped" in m.message]
        for name in ("in.qvr", "zero.qvr", "x.qvr", "out.qvr"):
            assert any(name in m for m in skipped), (name, skipped)

        # The thread pool is free and the event loop reads its own input: requests answer.
        uri = (hostile / "good.qvr").as_uri()
        client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "qvr", 1, GOOD))
        )
        hover = await asyncio.wait_for(
            client.text_document_hover_async(
                lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position_of(GOOD, "visible"))
            ),
            ANSWER_SECONDS,
        )
        assert hover is not None and "visible" in hover.contents.value
        again = await asyncio.wait_for(
            client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="vis")), ANSWER_SECONDS
        )
        assert [s.name for s in again] == ["visible"]


@pytest.mark.asyncio(loop_scope="function")
async def test_commands_refuse_special_files_and_files_outside_the_workspace(hostile):
    async with served(hostile, memory_limit=MEMORY_LIMIT) as client:
        for name in ("in.qvr", "zero.qvr", "x.qvr", "out.qvr", "linked/secret.qvr"):
            uri = (hostile / name).as_uri()
            for command, arguments in [
                ("qvr.diagram", {"uri": uri}),
                ("qvr.runInference", {"uri": uri, "steps": 1}),
            ]:
                with pytest.raises(JsonRpcException) as info:
                    await asyncio.wait_for(
                        client.workspace_execute_command_async(
                            lsp.ExecuteCommandParams(command=command, arguments=[arguments])
                        ),
                        ANSWER_SECONDS,
                    )
                assert f"cannot read {hostile / name}: it is" in info.value.message
                assert "Secret" not in info.value.message
