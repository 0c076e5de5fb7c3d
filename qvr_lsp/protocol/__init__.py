"""The protocol room: what the server is to the editor.

The connection (frames, JSON-RPC messages, every request answered), the open
documents and their positions in the negotiated encoding, the client's capabilities
and settings, the server's own commands and payloads (`contract.py`), and the guard
a handler wears. It imports nothing else of `qvr_lsp`: no analysis, no feature, no
run (`lint-imports`, contract `server-layers`). Importing this package imports none
of its modules.
"""
