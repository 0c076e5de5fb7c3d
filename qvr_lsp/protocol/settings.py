"""Server settings, read from `initializationOptions` and `workspace/didChangeConfiguration`.

Both carry `{"qvr": {"strict": true, "run": {"memoryBudget": "8GB"},
"export": {"target": "stan"}}}` (a bare `{"strict": true}` is accepted too,
and `"run.memoryBudget"` and `"export.target"` as one dotted key). The
server never asks with `workspace/configuration` because Neovim 0.7's
client does not answer it. Anything malformed leaves the setting as it was
rather than failing (and is logged).

- `strict`: matching by dimension (QVR203) is an error, not a hint;
- `run.memoryBudget`: an inference run estimated to need more memory is
  refused before it starts, and the checker warns (QVR601) about a program
  over it at the default batch; `"8GB"`, `"512MB"`, or a number of MiB.
  Unset (null): half the memory available (see `qvr_core.sizing.resources`).
- `export.target`: "stan", "numpyro" or "pymc" (any case): the diagnostics of a
  document without errors also say what that language cannot express of its
  exportable programs (QVR701, `qvr_core.export.target_diagnostics`), and the
  "Export to ..." code lens appears above each model program. "" or null: off
  (the default). quivers' own editor calls it `transpileTarget`, accepted
  under `qvr` too (`export.target` wins when both are given).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from qvr_core.sizing.resources import parse_size

SECTION = "qvr"
log = logging.getLogger("qvr_lsp")
_UNSET = object()


@dataclass(frozen=True)
class Settings:
    strict: bool = False  # matching by dimension (QVR203) is an error, not a hint
    memory_budget: int | None = None  # bytes; None: the default budget
    export_target: str = ""  # a name of qvr_core.export.TARGETS; "": off

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
        target = _export_target(section)
        if isinstance(target, str):
            out = replace(out, export_target=target)
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


def _export_target(section: dict[str, Any]) -> object:
    """The target's name, "" for off, or _UNSET (absent, or not a target: logged)."""
    export = section.get("export")
    if isinstance(export, dict) and "target" in export:
        value = export["target"]
    elif "export.target" in section:
        value = section["export.target"]
    elif "transpileTarget" in section:  # quivers' name for it
        value = section["transpileTarget"]
    else:
        return _UNSET
    if value is None:
        return ""
    if not isinstance(value, str):
        log.warning("qvr.export.target ignored: %r is not a string", value)
        return _UNSET
    name = value.strip().lower()
    if not name:
        return ""
    from qvr_core.export.targets import TARGETS  # only when set: the package is 10 ms to import

    if name not in TARGETS:
        choices = ", ".join(TARGETS)
        log.warning("qvr.export.target ignored: unknown target %r (choose %s)", value, choices)
        return _UNSET
    return name


def _section(payload: Any) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        return None
    inner = payload.get(SECTION)
    if isinstance(inner, dict):
        return inner
    return payload
