"""`qvr.runInference`'s `device` and `subsample` arguments are checked before any run.

Validation only: every request here is refused by `validate_run_arguments` with an
"invalid" error that names the argument, before the document is read or a worker
started (no fit runs, so the URIs need not exist).
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_lsp.protocol.command_errors import INVALID_PARAMS
from tests.lsp.support import WAIT_SECONDS, fresh_uri

pytestmark = pytest.mark.asyncio(loop_scope="module")

RUN = "qvr.runInference"


async def refusal(client, arguments: dict) -> JsonRpcException:
    request = client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command=RUN, arguments=[arguments])
    )
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(request, WAIT_SECONDS)
    return info.value


@pytest.mark.parametrize("device", ["tpu", "CUDA", "", 0])
async def test_an_unknown_device_is_refused_naming_device(client, device):
    error = await refusal(client, {"uri": fresh_uri("device"), "device": device})
    assert error.code == INVALID_PARAMS and error.data == {"kind": "invalid"}
    assert error.message.startswith("qvr.runInference: device must be one of cpu, cuda, auto")


@pytest.mark.parametrize(
    "subsample",
    ["Row=0", "Row", "Row=-4", "1Row=4", "Row=many", {"plate": "Row", "rows": 0}, ["Row"]],
)
async def test_a_malformed_subsample_is_refused_naming_subsample(client, subsample):
    arguments = {"uri": fresh_uri("subsample"), "method": "svi", "subsample": subsample}
    error = await refusal(client, arguments)
    assert error.code == INVALID_PARAMS and error.data == {"kind": "invalid"}
    assert error.message.startswith("qvr.runInference: subsample must be"), error.message


async def test_a_good_device_does_not_excuse_a_bad_subsample(client):
    """Each argument is checked on its own: a valid device passes, the subsample is named."""
    arguments = {"uri": fresh_uri("both"), "device": "auto", "subsample": "Row=0"}
    error = await refusal(client, arguments)
    assert error.message.startswith("qvr.runInference: subsample must be"), error.message
    assert "from 1 to" in error.message, "it says how many rows are allowed"
