"""Exporting from the editor, through the real server: the `qvr.export.target` setting's
QVR701 diagnostics, the `qvr.exportProgram` command and the "Export to ..." code lens."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from qvr_core.export.targets import TARGETS
from tests.lsp.support import WAIT_SECONDS, diagnostics_for, position_of
from tests.lsp_commands.conftest import EXAMPLES, open_file, plain

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOT_EXPORTABLE = EXAMPLES / "errors" / "QVR701_not_exportable.qvr"
EIGHT_SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"

# Two model programs and no export: which one to write must be said.
TWO_MODELS = """\
object School : FinSet 8

program pooled : School -> School
    sample mu <- Normal(0.0, 5.0)
    observe y : School <- Normal(mu, sigma)
    return mu

program separate : School -> School
    sample theta : School <- Normal(0.0, 5.0)
    observe y : School <- Normal(theta, sigma)
    return theta
"""


async def execute(client, *arguments: object) -> dict:
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="qvr.exportProgram", arguments=list(arguments))
    )
    return plain(result)  # type: ignore[return-value]


def configure(client, settings: dict) -> int:
    """Send new settings; the number of publications so far (to wait for the next ones)."""
    before = len(client.published)
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=settings))
    return before


async def published_after(
    client, uri: str, before: int, count: int = 1
) -> lsp.PublishDiagnosticsParams:
    """The `count`-th publication for `uri` after the `before`-th, waiting at most WAIT_SECONDS.

    With an export target a document without errors is published twice: its diagnostics
    at once, then with the target's warnings once its tables are built.
    """
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while True:
        fresh = [p for p in client.published[before:] if p.uri == uri]
        if len(fresh) >= count:
            return fresh[count - 1]
        assert asyncio.get_running_loop().time() < deadline, f"nothing published for {uri}"
        await asyncio.sleep(0.01)


def qvr701(params: lsp.PublishDiagnosticsParams) -> list[lsp.Diagnostic]:
    return [d for d in params.diagnostics if d.code == "QVR701"]


def copy(workspace: Path, source: Path, name: str) -> Path:
    path = workspace / name
    shutil.copy(source, path)
    return path


def broken_model() -> str:
    """Eight schools with an error (an unclosed call)."""
    return EIGHT_SCHOOLS.read_text().replace("Normal(theta, sigma)", "Normal(theta, nope")


OFF = {"qvr": {"export": {"target": ""}}}


async def test_the_setting_publishes_qvr701_where_the_target_cannot_follow(client, workspace):
    path = copy(workspace, NOT_EXPORTABLE, "not_exportable.qvr")
    uri = open_file(client, path)
    assert qvr701(await diagnostics_for(client, uri, 1)) == [], "off by default"
    text = path.read_text()
    try:
        before = configure(client, {"qvr": {"export": {"target": "stan"}}})
        first = await published_after(client, uri, before)
        assert first.version == 1 and qvr701(first) == [], "the checker's diagnostics first"
        (warning,) = qvr701(await published_after(client, uri, before, count=2))
        start = position_of(text, "classify :")
        assert warning.range == lsp.Range(start, lsp.Position(start.line, start.character + 8))
        assert warning.severity == lsp.DiagnosticSeverity.Warning
        assert "Stan" in warning.message and "`classify` is a program of" in warning.message
        # quivers' name for the setting, and any case
        before = configure(client, {"qvr": {"transpileTarget": "PyMC"}})
        (warning,) = qvr701(await published_after(client, uri, before, count=2))
        assert "PyMC" in warning.message
    finally:
        before = configure(client, OFF)
    assert qvr701(await published_after(client, uri, before)) == [], "off again"


async def test_a_model_every_target_can_express_gets_no_warning(client, workspace):
    uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools.qvr"))
    await diagnostics_for(client, uri, 1)
    try:
        for target in ("numpyro", "stan", "pymc"):
            before = configure(client, {"qvr": {"export.target": target}})
            published = await published_after(client, uri, before, count=2)
            assert published.version == 1 and qvr701(published) == [], target
    finally:
        configure(client, OFF)


async def test_a_file_with_errors_gets_its_errors_only(client, workspace):
    path = workspace / "broken_model.qvr"
    path.write_text(broken_model())
    uri = open_file(client, path)
    await diagnostics_for(client, uri, 1)
    try:
        before = configure(client, {"qvr": {"export": {"target": "stan"}}})
        published = await published_after(client, uri, before)
        assert published.diagnostics and qvr701(published) == []
    finally:
        configure(client, OFF)


async def test_the_command_writes_eight_schools_in_numpyro(client, workspace):
    uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools_cmd.qvr"))
    result = await execute(client, {"uri": uri, "target": "numpyro"})
    assert result["ok"] is True, result
    assert (result["target"], result["language"], result["program"]) == (
        "numpyro",
        "python",
        "eight_schools",
    )
    assert result["filename"] == "eight_schools_cmd_numpyro.py"
    text = result["text"]
    assert "import numpyro" in text and "eight_schools" in text
    assert "eight_schools_cmd.qvr" in text.splitlines()[0], "the header names the source"
    compile(text, result["filename"], "exec")  # Python, at least
    # the lens's positional form, and the program named
    again = await execute(client, uri, "eight_schools", "NumPyro")
    assert again == result


@pytest.mark.parametrize(
    ("target", "language", "filename", "marker"),
    [
        ("stan", "stan", "eight_schools_each.stan", "model {"),
        ("pymc", "python", "eight_schools_each_pymc.py", "import pymc"),
    ],
)
async def test_the_command_writes_the_other_targets(
    client, workspace, target, language, filename, marker
):
    uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools_each.qvr"))
    result = await execute(client, {"uri": uri, "target": target})
    assert result["ok"] is True, result
    assert (result["language"], result["filename"]) == (language, filename)
    assert marker in result["text"]


async def test_the_target_defaults_to_the_setting(client, workspace):
    uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools_default.qvr"))
    off = await execute(client, {"uri": uri})
    assert off["ok"] is False
    assert off["message"].startswith("no export target: name one (stan, numpyro, pymc)")
    try:
        configure(client, {"qvr": {"export": {"target": "numpyro"}}})
        result = await execute(client, {"uri": uri})
        assert (result["ok"], result["target"]) == (True, "numpyro"), result
    finally:
        configure(client, OFF)


async def test_a_program_of_morphisms_is_refused_where_it_is_declared(client, workspace):
    path = copy(workspace, NOT_EXPORTABLE, "morphisms.qvr")
    uri = open_file(client, path)
    for target in ("stan", "numpyro", "pymc"):
        result = await execute(client, {"uri": uri, "target": target})
        assert result["ok"] is False
        assert "is a program of morphisms" in result["message"]
        assert "\n" not in result["message"]
        (found,) = result["diagnostics"]
        start = position_of(path.read_text(), "classify :")
        assert found["code"] == "QVR701" and found["severity"] == "warning"
        assert found["range"] == {
            "start": {"line": start.line, "character": start.character},
            "end": {"line": start.line, "character": start.character + 8},
        }


async def test_unknown_targets_and_programs_and_errors_are_refusals(client, workspace):
    uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools_refusals.qvr"))
    bad = await execute(client, {"uri": uri, "target": "julia"})
    assert bad == {
        "ok": False,
        "message": "unknown export target 'julia' (choose stan, numpyro, pymc)",
        "diagnostics": [],
    }
    nope = await execute(client, {"uri": uri, "program": "nope", "target": "stan"})
    assert nope["ok"] is False
    assert nope["message"] == "no program named 'nope' (programs to export: eight_schools)"

    broken = workspace / "broken_cmd.qvr"
    broken.write_text(broken_model())
    errors = await execute(client, {"uri": open_file(client, broken), "target": "stan"})
    assert errors["ok"] is False
    assert errors["message"].startswith("the file has errors; fix them before exporting (line ")
    assert errors["diagnostics"] and all(d["severity"] == "error" for d in errors["diagnostics"])

    several = workspace / "two_models.qvr"
    several.write_text(TWO_MODELS)
    choose = await execute(client, {"uri": open_file(client, several), "target": "numpyro"})
    assert choose["ok"] is False and choose["programs"] == ["pooled", "separate"]
    assert choose["message"] == "the file has 2 programs to export (pooled, separate); name one"
    chosen = await execute(
        client, {"uri": several.as_uri(), "program": "separate", "target": "numpyro"}
    )
    assert (chosen["ok"], chosen["program"]) == (True, "separate"), chosen


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([{"uri": "file:///m.qvr", "target": 3}], "target must be stan, numpyro or pymc"),
        ([{"uri": 42}], "uri must be a non-empty string"),
        ([{"uri": "file:///m.qvr", "program": ["a"]}], "program must be the name of a program"),
        ([42], "takes one object {uri, program?, target?}"),
        ([], "takes one object {uri, program?, target?}"),
    ],
)
async def test_arguments_of_the_wrong_shape_are_invalid_params(client, arguments, message):
    with pytest.raises(JsonRpcException) as info:
        await execute(client, *arguments)
    assert message in str(info.value)
    assert info.value.code == -32602


async def lens_titles(client, uri: str) -> list[tuple[str, str, list]]:
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    return [
        (lens.command.title, lens.command.command, plain(list(lens.command.arguments or [])))
        for lens in lenses
        if lens.command is not None
    ]


async def test_the_export_lens_appears_only_with_the_setting(client, workspace):
    model = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight_schools_lens.qvr"))
    morphisms = open_file(client, copy(workspace, NOT_EXPORTABLE, "morphisms_lens.qvr"))
    assert not [t for t in await lens_titles(client, model) if t[0].startswith("Export")]
    try:
        configure(client, {"qvr": {"export": {"target": "pymc"}}})
        exports = [t for t in await lens_titles(client, model) if t[0].startswith("Export")]
        assert exports == [
            (
                "Export to PyMC",
                "qvr.client.exportProgram",
                [{"uri": model, "program": "eight_schools", "target": "pymc"}],
            )
        ]
        # a program of morphisms is not a model: no lens (its QVR701 says why)
        assert not [t for t in await lens_titles(client, morphisms) if t[0].startswith("Export")]
    finally:
        configure(client, OFF)
    assert not [t for t in await lens_titles(client, model) if t[0].startswith("Export")]


#: File names of issue 46 that would end the header comment of an export (or the NumPyro
#: docstring) and start a line of code; the URI carries them as `%0A`, `%0D`, `%22`, ...
PAYLOAD = 'open("PWNED", "w")'
HOSTILE_NAMES = [
    f"es\n{PAYLOAD}\n#.qvr",
    f"es\r{PAYLOAD}\r#.qvr",
    f'es"""\n{PAYLOAD}\n"""#.qvr',
    "es\\N{bad}\\x.qvr",
    f"es\u2028{PAYLOAD}\u2028#.qvr",
    f"es\x0b{PAYLOAD}\x0c{PAYLOAD}\x85#.qvr",
]


async def test_a_file_name_is_never_code_in_the_export(client, workspace):
    """The export of a file with a hostile name is the export of a plain one but for
    its first line: one comment line of printable ASCII (a URI no file has, with `%00`,
    too)."""
    plain_uri = open_file(client, copy(workspace, EIGHT_SCHOOLS, "eight schools.qvr"))
    uris = [open_file(client, copy(workspace, EIGHT_SCHOOLS, n)) for n in HOSTILE_NAMES]
    nowhere = workspace.as_uri() + "/es%00%E2%80%A8%0Aopen(%22PWNED%22,%22w%22)%0A%23.qvr"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(nowhere, "qvr", 1, EIGHT_SCHOOLS.read_text(encoding="utf-8"))
        )
    )
    for target, comment in (("stan", "//"), ("numpyro", "#"), ("pymc", "#")):
        baseline = await execute(client, {"uri": plain_uri, "target": target})
        for uri in [*uris, nowhere]:
            result = await execute(client, {"uri": uri, "target": target})
            assert result["ok"] is True, result
            first, rest = result["text"].split("\n", 1)
            assert first.startswith(comment + " ") and all(" " <= c <= "~" for c in first), first
            assert rest == baseline["text"].split("\n", 1)[1], (uri, target)
            assert 'PWNED"' not in result["text"]
            if target != "stan":
                compile(result["text"], "<export>", "exec")
            # the name to save it under is one plain file name (a module name for Python)
            saved = result["filename"]
            assert re.fullmatch(r"[A-Za-z0-9_-]+" + re.escape(TARGETS[target].suffix), saved)
            assert saved.startswith("es_"), saved
            if target != "stan":
                assert saved.removesuffix(".py").isidentifier()


async def test_exporting_does_not_load_torch(client):
    status = plain(await client.protocol.send_request_async("qvr/serverStatus", None))
    assert not {"torch", "numpy"} & set(status["loadedModules"])
