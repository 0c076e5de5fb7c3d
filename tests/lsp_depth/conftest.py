"""The real server over stdio, as VS Code and as Neovim, for the editing features.

One server per module and client flavour; each test opens its own URI.
"""

from __future__ import annotations

import pytest
import pytest_lsp

from tests.lsp.support import CONFIG, FLAVOURS, RecordingClient, initialize_params


@pytest_lsp.fixture(config=CONFIG, params=sorted(FLAVOURS), scope="module")
async def client(request: pytest.FixtureRequest, lsp_client: RecordingClient):
    lsp_client.flavour = request.param  # type: ignore[attr-defined]
    result = await lsp_client.initialize_session(initialize_params(request.param))
    lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()
