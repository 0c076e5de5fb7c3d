"""Server settings, read from `initializationOptions` and `workspace/didChangeConfiguration`.

Both carry `{"qvr": {"strict": true, "run": {"memoryBudget": "8GB"}}}` (a
bare `{"strict": true}` is accepted too, and `"run.memoryBudget"` as one
dotted key). The server never asks with `workspace/configuration` because
Neovim 0.7's client does not answer it. Anything malformed leaves the
setting as it was rather than failing (and is logged).

- `strict`: matching by dimension (QVR203) is an error, not a hint;
- `run.memoryBudget`: an inference run estimated to need more memory is
  refused before it starts, and the checker warns (QVR601) about a program
  over it at the default batch; `"8GB"`, `"512MB"`, or a number of MiB.
  Unset (null): half the memory available (see `qvr_core.resources`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from qvr_core.resources import parse_size

SECTION = "qvr"
log = logging.getLogger("qvr_lsp")
_UNSET = object()


@dataclass(frozen=True)
class Settings:
    strict: bool = False  # matching by dimension (QVR203) is an error, not a hint
    memory_budget: int | None = None  # bytes; None: the default budget

    def updated(self, payload: Any) -> Settings:
        """These settings with the recognised values of `payload` applied."""
        section = _section(payload)
        if section is None:
            return self
        out = self
        strict = section.get("strict")
        if isinstance(strict, bool):
            out = replace(out, strict=strict)
        budget = _memory_budget(section)
        if budget is not _UNSET:
            out = replace(out, memory_budget=budget)  # type: ignore[arg-type]  # not _UNSET: int | None
        return out


def _memory_budget(section: dict[str, Any]) -> object:
    run = section.get("run")
    if isinstance(run, dict) and "memoryBudget" in run:
        value = run["memoryBudget"]
    elif "run.memoryBudget" in section:
        value = section["run.memoryBudget"]
    else:
        return _UNSET
    if value is None or value == "":
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        log.warning("qvr.run.memoryBudget ignored: %s", exc)
        return _UNSET


def _section(payload: Any) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        return None
    inner = payload.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return payload
