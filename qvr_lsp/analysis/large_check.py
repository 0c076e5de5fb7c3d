"""Diagnostics of a large document, checked in a child process.

Checking a 10 MB file builds some 1 GB of syntax tree and facts in a
dozen seconds. The server keeps giving the file its diagnostics, but builds
none of that in its own process: `python -m qvr_lsp.analysis.large_check` reads the
text on stdin, checks it from scratch, writes the diagnostics (pickled) on
stdout and exits, handing every byte back to the system. The server stops
the child as soon as its text is superseded by a newer one.

The child is held on two leashes (`lifeline`), as the inference worker is:
its address space is capped (`QVR_LARGE_CHECK_MEMORY_MB`, by default
`DEFAULT_MEMORY_MB`), so a text that would take more fails the check with
"out of memory" instead of exhausting the machine; and it ends when the
server ends, however the server ends (the kernel's parent-death signal on
Linux, a watchdog of its parent everywhere), instead of checking for nobody.

Protocol: one JSON line `{"strict": bool, "memory_mb": int, "memory_budget": int}`, then the text
in UTF-8 (surrogates passed through); written by a thread of the server, so
encoding and copying a 10 MB text never happens on its event loop.

The features that need the checked module (hover, tokens, inlay hints,
folding, the outline...) decline large documents; see `analyzer.LARGE_DOCUMENT_CHARS`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic
from qvr_lsp.analysis import lifeline
from qvr_lsp.analysis.children import (
    PACKAGE_ROOT,
    child_environment,
    python_module,
    stop_child,
    write_all,
)

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1
#: The child's address space when `QVR_LARGE_CHECK_MEMORY_MB` does not say (a 10 MB
#: file takes some 1.3 GB to check).
DEFAULT_MEMORY_MB = 4096
MEMORY_VARIABLE = "QVR_LARGE_CHECK_MEMORY_MB"
EXIT_OUT_OF_MEMORY = 4


def memory_mb() -> int:
    """The child's memory limit in MiB: `QVR_LARGE_CHECK_MEMORY_MB`, else the default."""
    value = os.environ.get(MEMORY_VARIABLE, "").strip()
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value:
        log.warning(
            "%s=%r is not a positive whole number; using %s",
            MEMORY_VARIABLE,
            value,
            DEFAULT_MEMORY_MB,
        )
    return DEFAULT_MEMORY_MB


async def check_in_child(
    text: str,
    strict: bool,
    stale: Callable[[], bool],
    on_start: Callable[[int], None] | None = None,
    memory_budget: int | None = None,
) -> tuple[Diagnostic, ...] | None:
    """The diagnostics of `text`, or None when `stale()` turned true first (the child is
    stopped then). Raises RuntimeError when the child fails (out of memory included).

    `on_start(pid)` hears the child's process id once it runs. `memory_budget`
    (bytes, for QVR601) is the server's: the child's own default would be
    read under its memory limit, and differ from what a smaller file gets.
    """
    reading, writing = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *python_module("qvr_lsp.analysis.large_check"),
            cwd=PACKAGE_ROOT,  # never the workspace: see qvr_lsp/analysis/children.py
            stdin=reading,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=child_environment(),
            start_new_session=True,  # a terminal's Ctrl-C for the server is not for the child
        )
    except BaseException:
        os.close(writing)
        raise
    finally:
        os.close(reading)
    if on_start is not None:
        on_start(proc.pid)
    if memory_budget is None:
        from qvr_core.sizing.too_large import checker_budget

        memory_budget = checker_budget()
    settings = {"strict": strict, "memory_mb": memory_mb(), "memory_budget": memory_budget}
    header = json.dumps(settings).encode() + b"\n"
    sending = asyncio.ensure_future(asyncio.to_thread(_send, writing, header, text))
    try:
        talk = asyncio.ensure_future(proc.communicate())
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
        found: tuple[Diagnostic, ...] = await asyncio.to_thread(pickle.loads, out)
        return found
    finally:
        await stop_child(proc)
        await asyncio.shield(sending)  # the child is gone: the writing ends at once


def _send(fd: int, header: bytes, text: str) -> None:
    """In a thread: the header line and the text, encoded here and not on the event loop."""
    write_all(fd, header, text.encode("utf-8", "surrogatepass"))


def main() -> int:
    """The child: one text in, its diagnostics out."""
    lifeline.die_with_parent()
    settings = _settings(sys.stdin.buffer.readline())
    limit = lifeline.limit_memory(settings.get("memory_mb"))
    try:
        body = sys.stdin.buffer.read()
        from qvr_core.check import check

        budget = settings.get("memory_budget")
        module = check(
            body.decode("utf-8", "surrogatepass"),
            strict=settings.get("strict") is True,
            memory_budget=budget if isinstance(budget, int) and budget > 0 else None,
        )
        del body
        if any(_out_of_memory(d) for d in module.diagnostics):
            raise MemoryError  # the parser says so in a diagnostic; the user reads this instead
        out = pickle.dumps(tuple(module.diagnostics))
    except MemoryError:
        shown = f" (limit {limit} MiB, {MEMORY_VARIABLE})" if limit is not None else ""
        print(f"the check of this large file ran out of memory{shown}", file=sys.stderr)
        return EXIT_OUT_OF_MEMORY
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


def _out_of_memory(diagnostic: Diagnostic) -> bool:
    """An internal error the limit caused (the parser turns a MemoryError into one)."""
    return diagnostic.code == rules.INTERNAL_ERROR.code and "MemoryError" in diagnostic.message


def _settings(line: bytes) -> dict[str, Any]:
    """The header line; the older form, `strict` or an empty line, is read too."""
    stripped = line.strip()
    if stripped in (b"", b"strict"):
        return {"strict": stripped == b"strict"}
    found = json.loads(stripped)
    return found if isinstance(found, dict) else {}


if __name__ == "__main__":
    sys.exit(main())
