"""Exporting from the editor at library level: the setting, the command's arguments and the
diagnostics an analysis adds (the protocol side is test_export.py)."""

from __future__ import annotations

import pytest

from qvr_lsp.analysis.analyzer import export_diagnostics
from qvr_lsp.features.exports import ExportRequest, _name, _stem, export_arguments
from qvr_lsp.protocol.command_errors import CommandError
from qvr_lsp.protocol.settings import Settings
from tests.lsp_commands.conftest import EXAMPLES

NOT_EXPORTABLE = EXAMPLES / "errors" / "QVR701_not_exportable.qvr"
BROKEN = (
    (EXAMPLES / "models" / "eight_schools_noncentered.qvr")
    .read_text()
    .replace("Normal(theta, sigma)", "Normal(theta, nope")
)


@pytest.mark.parametrize(
    ("payload", "target"),
    [
        ({"qvr": {"export": {"target": "stan"}}}, "stan"),
        ({"qvr": {"export.target": " NumPyro "}}, "numpyro"),
        ({"qvr": {"transpileTarget": "pymc"}}, "pymc"),
        ({"transpileTarget": "pymc"}, "pymc"),  # a bare section, as for `strict`
        ({"qvr": {"export": {"target": "stan"}, "transpileTarget": "pymc"}}, "stan"),
        ({"qvr": {"export": {"target": ""}}}, ""),
        ({"qvr": {"export": {"target": None}}}, ""),
        ({"qvr": {"export": {"target": "julia"}}}, "numpyro"),  # unknown: left as it was
        ({"qvr": {"export": {"target": 3}}}, "numpyro"),
        ({"qvr": {"strict": True}}, "numpyro"),  # not mentioned: left as it was
    ],
)
def test_the_setting_and_its_alias(payload: dict, target: str) -> None:
    before = Settings(export_target="numpyro")
    assert before.updated(payload).export_target == target


def test_arguments_in_both_forms() -> None:
    lens = export_arguments(({"uri": "file:///m.qvr", "program": "m", "target": "stan"},))
    assert lens == ExportRequest("file:///m.qvr", "m", "stan")
    assert export_arguments(("file:///m.qvr",)) == ExportRequest("file:///m.qvr", None, None)
    assert export_arguments(("file:///m.qvr", None, "pymc")).target == "pymc"
    with pytest.raises(CommandError):
        export_arguments(("file:///m.qvr", "m", "stan", "extra"))


def test_export_diagnostics_never_raise_and_wait_for_a_module_without_errors() -> None:
    from qvr_core.check import check

    clean = check(NOT_EXPORTABLE.read_text())
    (found,) = export_diagnostics(clean, "stan")
    assert (found.code, found.span.start_line) == ("QVR701", 7)
    broken = check(BROKEN)
    assert not broken.ok and export_diagnostics(broken, "stan") == ()
    assert export_diagnostics(clean, "no-such-target") == ()  # logged, not raised


@pytest.mark.parametrize(
    ("uri", "name", "stem"),
    [
        ("file:///w/models/eight_schools.qvr", "eight_schools.qvr", "eight_schools"),
        ("file:///w/with%20space.qvr", "with space.qvr", "with space"),
        ("untitled:Untitled-1", "Untitled-1", "Untitled-1"),
    ],
)
def test_the_file_an_export_is_named_after(uri: str, name: str, stem: str) -> None:
    assert (_name(uri), _stem(uri)) == (name, stem)
