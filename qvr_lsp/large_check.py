"""Diagnostics of a large document, checked in a child process.

Checking a 10 MB file builds some 1 GB of syntax tree and facts in a
dozen seconds. The server keeps giving the file its diagnostics, but builds
none of that in its own process: `python -m qvr_lsp.large_check` reads the
text on stdin, checks it from scratch, writes the diagnostics (pickled) on
stdout and exits, handing every byte back to the system. The server stops
the child as soon as its text is superseded by a newer one.

The features that need the checked module (hover, tokens, inlay hints,
folding, the outline...) decline large documents; see `analysis.LARGE_DOCUMENT_CHARS`.
"""

from __future__ import annotations

import asyncio
import pickle
import sys
from collections.abc import Callable

from qvr_core.diagnostics import Diagnostic
from qvr_lsp.children import PACKAGE_ROOT, python_module, stop_child

POLL_SECONDS = 0.1


async def check_in_child(
    text: str, strict: bool, stale: Callable[[], bool]
) -> tuple[Diagnostic, ...] | None:
    """The diagnostics of `text`, or None when `stale()` turned true first (the child is
    stopped then). Raises RuntimeError when the child fails."""
    proc = await asyncio.create_subprocess_exec(
        *python_module("qvr_lsp.large_check"),
        cwd=PACKAGE_ROOT,  # never the workspace: see qvr_lsp/children.py
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        payload = (b"strict\n" if strict else b"\n") + text.encode("utf-8", "surrogatepass")
        talk = asyncio.ensure_future(proc.communicate(payload))
        while not talk.done():
            if stale():
                talk.cancel()
                return None
            await asyncio.wait({talk}, timeout=POLL_SECONDS)
        out, err = talk.result()
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"exit code {proc.returncode}: {tail[0]}")
        # unpickling many diagnostics is work for a thread, not the event loop
        return await asyncio.to_thread(pickle.loads, out)
    finally:
        await stop_child(proc)


def main() -> int:
    """The child: one text in, its diagnostics out."""
    from qvr_core.check import check

    flag, _, body = sys.stdin.buffer.read().partition(b"\n")
    module = check(body.decode("utf-8", "surrogatepass"), strict=flag == b"strict")
    sys.stdout.buffer.write(pickle.dumps(tuple(module.diagnostics)))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
