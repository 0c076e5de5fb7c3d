"""The server under test over stdio, as VS Code and as Neovim: one server per module and flavour.

Tests in a module share the server, so each opens its own URI (`fresh_uri`).
"""

from __future__ import annotations

import pytest
import pytest_lsp

from tests.lsp.support import CONFIG, FLAVOURS, RecordingClient, initialize_params


@pytest_lsp.fixture(config=CONFIG, params=sorted(FLAVOURS), scope="module")
async def client(request: pytest.FixtureRequest, lsp_client: RecordingClient):
    """A session initialised with the capabilities of the parametrised client."""
    lsp_client.flavour = request.param  # type: ignore[attr-defined]
    await lsp_client.initialize_session(initialize_params(request.param))
    yield
    await lsp_client.shutdown_session()
