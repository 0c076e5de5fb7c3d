"""One program's export as text, from a source that must check cleanly (the export tests of
single constructs share it)."""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program


def module(source: str) -> CheckedModule:
    checked = check(source)
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    return checked


def exported(source: str, target: str, name: str) -> str:
    result = export_program(module(source), TARGETS[target], name, source=f"{name}.qvr")
    assert result.text is not None, result.diagnostics
    return result.text
