"""Server settings, read from `initializationOptions` and `workspace/didChangeConfiguration`.

Both carry `{"qvr": {"strict": true}}` (a bare `{"strict": true}` is accepted
too). The server never asks with `workspace/configuration` because Neovim
0.7's client does not answer it. Anything malformed leaves the setting as it
was rather than failing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

SECTION = "qvr"


@dataclass(frozen=True)
class Settings:
    strict: bool = False  # matching by dimension (QVR203) is an error, not a hint

    def updated(self, payload: Any) -> Settings:
        """These settings with the recognised values of `payload` applied."""
        section = _section(payload)
        if section is None:
            return self
        strict = section.get("strict")
        return replace(self, strict=strict) if isinstance(strict, bool) else self


def _section(payload: Any) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        return None
    inner = payload.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return payload
