"""The real server over stdio, as VS Code and as Neovim, for the editing features.

One server per client flavour for the whole session (per xdist worker), shared by every
module here: each test opens its own URI and nothing here changes the server's settings,
so a test sees only its own documents. A server's start (about a second of CPU, its
import and initialization) was paid 20 times when each module started its own.
"""

from __future__ import annotations

import pytest
import pytest_lsp

from tests.lsp.support import CONFIG, FLAVOURS, RecordingClient, initialize_params


@pytest_lsp.fixture(config=CONFIG, params=sorted(FLAVOURS), scope="session")
async def client(request: pytest.FixtureRequest, lsp_client: RecordingClient):
    lsp_client.flavour = request.param  # type: ignore[attr-defined]
    result = await lsp_client.initialize_session(initialize_params(request.param))
    lsp_client.server_capabilities = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()
