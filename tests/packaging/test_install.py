"""qvr as a user installs it: the wheel `python -m build` makes, in a fresh virtual environment.

`pip install qvr` must give the checker, the diagrams, the formatter and the language
server without torch (or numpy); `qvr[run]` adds torch for runs. Each environment is
made once per module: pip resolves qvr's dependencies from the package index (its cache
makes that quick after the first time), and torch comes pinned by constraints.txt.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig

from tests.conftest import EXAMPLES, ROOT
from tests.lsp.support import initialize_params, make_client, open_document

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
MODEL = EXAMPLES / "models" / "linear_regression.qvr"
DATA = EXAMPLES / "models" / "linear_regression.json"
BROKEN = EXAMPLES / "errors" / "QVR001_syntax_error.qvr"
WAIT = 60.0


def _run(command: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        **kwargs,  # type: ignore[call-overload]
    )


def _ok(command: list[str | Path], **kwargs: object) -> str:
    done = _run(command, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and the sdist, built from this checkout as a release would be."""
    out = tmp_path_factory.mktemp("dist")
    _ok([sys.executable, "-m", "build", "--outdir", out, ROOT])
    return out


def _wheel(dist: Path) -> Path:
    (wheel,) = dist.glob("qvr-*.whl")
    return wheel


def _venv(where: Path, dist: Path, extras: str = "", byte_compile: bool = True) -> Path:
    """A fresh environment with the wheel (and `extras`) installed by pip. `byte_compile=False`
    skips pip's byte-compiling of every installed module (`--no-compile`): for torch
    that is most of the install's time, and a run compiles the few modules it imports."""
    _ok([sys.executable, "-m", "venv", where])
    spec = f"{_wheel(dist)}{extras}"
    _ok(
        [
            where / "bin" / "python",
            "-m",
            "pip",
            "install",
            "-q",
            *([] if byte_compile else ["--no-compile"]),
            "-c",
            ROOT / "constraints.txt",
            spec,
        ]
    )
    return where / "bin"


@pytest.fixture(scope="module")
def bare(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install qvr`: the bin folder of an environment without the run extra."""
    return _venv(tmp_path_factory.mktemp("bare"), dist)


@pytest.fixture(scope="module")
def with_run(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pip install 'qvr[run]'` (what is installed is the same; see `_venv`)."""
    return _venv(tmp_path_factory.mktemp("run"), dist, "[run]", byte_compile=False)


def _installed(bin_dir: Path) -> set[str]:
    listed = _ok([bin_dir / "python", "-m", "pip", "list", "--format", "json"])
    return {package["name"].lower() for package in json.loads(listed)}


def test_the_wheel_and_sdist_carry_what_users_need(dist: Path) -> None:
    with zipfile.ZipFile(_wheel(dist)) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"qvr-{VERSION}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"qvr-{VERSION}.dist-info/entry_points.txt").decode()
    assert "qvr_core/syntax/grammar.lark" in names
    assert {"qvr_core/py.typed", "qvr_lsp/py.typed", "qvr_cli/py.typed"} <= names
    # the server's rooms are packages of their own (docs/architecture.md)
    rooms = {f"qvr_lsp/{room}/__init__.py" for room in ("protocol", "analysis", "runs", "features")}
    assert rooms | {"qvr_lsp/runs/worker.py", "qvr_lsp/analysis/large_check.py"} <= names
    assert f"qvr-{VERSION}.dist-info/licenses/LICENSE" in names
    assert not any(n.startswith(("tests/", "bench/", "examples/")) for n in names)
    assert "Requires-Dist: torch" in metadata and 'extra == "run"' in metadata
    assert "License-Expression: MIT" in metadata
    assert "Project-URL: Changelog" in metadata
    assert "qvr = qvr_cli.main:main" in entry_points
    assert "qvr-lsp = qvr_lsp.__main__:main" in entry_points
    assert "qvr = qvr.lexer:QvrLexer" in entry_points
    assert "qvr-lsp = qvr.jupyter_lsp:spec" in entry_points  # jupyter-lsp's spec finder
    # the prebuilt JupyterLab extension, where pip puts what JupyterLab loads
    lab = f"qvr-{VERSION}.data/data/share/jupyter/labextensions/jupyterlab-qvr/"
    assert {lab + "package.json", lab + "static/style.js"} <= names
    assert any(n.startswith(lab + "static/remoteEntry.") for n in names)
    (sdist,) = dist.glob("qvr-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {Path(*Path(m).parts[1:]).as_posix() for m in archive.getnames()}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "qvr_core/syntax/grammar.lark"} <= members
    # a wheel built from the sdist carries the extension too, with no Node.js
    assert "qvr/labextension/package.json" in members


def test_pip_install_puts_the_jupyterlab_extension_where_jupyterlab_finds_it(bare: Path) -> None:
    """`pip install qvr` then `jupyter lab`: JupyterLab loads the extensions under
    `<prefix>/share/jupyter/labextensions`, each by its package.json's remote entry."""
    installed = bare.parent / "share" / "jupyter" / "labextensions" / "jupyterlab-qvr"
    package = json.loads((installed / "package.json").read_text())
    assert (installed / package["jupyterlab"]["_build"]["load"]).is_file()


def test_twine_check_passes_as_the_release_runs_it(dist: Path) -> None:
    """The release workflow's `twine check --strict` (PyPI refuses what it refuses: a
    README that does not render, missing metadata), on the wheel and sdist built here."""
    files = sorted(dist.glob("qvr-*"))
    assert len(files) == 2
    out = _ok([sys.executable, "-m", "twine", "check", "--strict", *files])
    assert out.count("PASSED") == 2, out


def test_pip_install_qvr_brings_no_torch(bare: Path) -> None:
    installed = _installed(bare)
    assert "qvr" in installed
    assert not installed & {"torch", "numpy", "arviz"}


def test_the_commands_work_without_torch(bare: Path, tmp_path: Path) -> None:
    assert _ok([bare / "qvr", "--version"]).strip() == f"qvr {VERSION}"
    _ok([bare / "qvr", "check", MODEL])
    broken = _run([bare / "qvr", "check", BROKEN])
    assert broken.returncode == 1 and "QVR001" in broken.stdout + broken.stderr
    assert _ok([bare / "qvr", "diagram", MODEL]).startswith("flowchart")
    assert "<svg" in _ok([bare / "qvr", "diagram", "--format", "svg", MODEL])
    copy = tmp_path / "model.qvr"
    copy.write_text(MODEL.read_text(encoding="utf-8"), encoding="utf-8")
    _ok([bare / "qvr", "fmt", copy])
    _ok([bare / "qvr", "fmt", "--check", copy])


@pytest.mark.parametrize(
    ("command", "extra"),
    [
        (["run", str(MODEL), "--data", str(DATA)], "run"),
        (["data", str(MODEL), "-o", "out.json"], "run"),
        (["compare", "a.nc", "b.nc"], "arviz"),
    ],
)
def test_what_needs_an_extra_says_which_in_one_line(
    bare: Path, command: list[str], extra: str, tmp_path: Path
) -> None:
    done = _run([bare / "qvr", *command], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"pip install 'qvr[{extra}]'" in done.stderr
    assert not list(tmp_path.iterdir())  # nothing was written


async def test_the_installed_server_checks_and_refuses_runs_without_torch(bare: Path) -> None:
    config = ClientServerConfig(server_command=[str(bare / "qvr-lsp")], client_factory=make_client)
    client = await config.start()
    try:
        result = await client.initialize_session(initialize_params("vscode"))
        assert result.server_info is not None and result.server_info.version == VERSION
        uri = BROKEN.as_uri()
        open_document(client, uri, BROKEN.read_text(encoding="utf-8"))
        await asyncio.wait_for(
            client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), WAIT
        )
        assert any(d.code == "QVR001" for d in client.diagnostics[uri])
        model = MODEL.as_uri()
        open_document(client, model, MODEL.read_text(encoding="utf-8"))
        with pytest.raises(JsonRpcException) as refused:
            await asyncio.wait_for(
                client.workspace_execute_command_async(
                    lsp.ExecuteCommandParams(
                        command="qvr.runInference",
                        arguments=[{"uri": model, "method": "svi", "steps": 10}],
                    )
                ),
                WAIT,
            )
        assert "pip install 'qvr[run]'" in str(refused.value)
    finally:
        await client.shutdown_session()


def test_qvr_run_extra_fits_the_linear_regression(with_run: Path, tmp_path: Path) -> None:
    assert {"torch", "numpy"} <= _installed(with_run)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = _ok(
        [with_run / "qvr", "run", MODEL, "--data", DATA, "--method", "svi", "--steps", "300",
         "--seed", "1", "--output", tmp_path / "fit.npz"],
        env=env,
    )  # fmt: skip
    assert "beta" in out, out
    assert (tmp_path / "fit.npz").is_file()
