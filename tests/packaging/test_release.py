"""The release, one reviewed workflow away from publishing (.github/workflows/release.yml).

Nothing here can publish, so the tests hold what can be checked without the network:
the workflows against GitHub's schema (check-jsonschema's copy, shipped in its wheel),
the workflow's build steps against the ones `./dev test` runs (the wheel and sdist of
tests/packaging, `twine check` in test_install.py, the `.vsix` of the real-VS-Code
test), the tag against the versions, and the Mason package and nvim-lspconfig entry
against the release they install (the definition itself runs in a real Neovim:
tests/nvim/test_neovim.py).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import release_version

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTENSION = json.loads((ROOT / "vscode-extension" / "package.json").read_text("utf-8"))
CHECK_JSONSCHEMA = Path(sys.executable).with_name("check-jsonschema")


def load(path: Path) -> Any:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    command = [str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.github-workflows"]
    return subprocess.run(
        [*command, *map(str, paths)], capture_output=True, text=True, timeout=120, check=False
    )


def test_the_workflows_validate_against_github_s_schema() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "release.yml"}
    result = validate(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_workflow_the_schema_refuses_fails(tmp_path: Path) -> None:
    """The check can fail: a step key GitHub does not know (`runs` for `run`)."""
    bad = tmp_path / "bad.yml"
    text = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    bad.write_text(text.replace("run: .ci/run", "runs: .ci/run"), encoding="utf-8")
    result = validate(bad)
    assert result.returncode == 1, result.stdout + result.stderr


def _runs(job: dict[str, Any]) -> str:
    return "\n".join(step["run"] for step in job["steps"] if "run" in step)


def test_the_release_tests_builds_checks_and_publishes_each_artefact_once() -> None:
    release = load(ROOT / ".github" / "workflows" / "release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    jobs = release["jobs"]
    assert _runs(jobs["test"]) == ".ci/run"  # ./dev test, as CI runs it
    assert jobs["build"]["needs"] == "test"
    build = _runs(jobs["build"])
    # the steps ./dev test runs: tests/packaging builds the wheel and sdist and twine
    # checks them; scripts/vscode_e2e/run.sh packages the .vsix it installs
    for command in (
        'scripts/release_version.py "${GITHUB_REF_NAME}"',
        "python -m build --outdir dist .",
        "python -m twine check --strict dist/*",
        "npm ci",
        "npm run package",
    ):
        assert command in build, command
    assert "npm run --silent package" in (ROOT / "scripts/vscode_e2e/run.sh").read_text()
    assert EXTENSION["scripts"]["package"].startswith("vsce package ")
    # PyPI by trusted publishing: an OIDC token, no stored password
    pypi = jobs["pypi"]
    assert pypi["needs"] == "build" and pypi["permissions"] == {"id-token": "write"}
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in pypi["steps"])
    # the Marketplace with the vsce the extension builds with, Open VSX with ovsx
    vsce = EXTENSION["devDependencies"]["@vscode/vsce"]
    assert f"@vscode/vsce@{vsce} publish --packagePath qvr.vsix" in _runs(jobs["marketplace"])
    assert re.search(r"ovsx@\d+\.\d+\.\d+ publish --packagePath qvr.vsix", _runs(jobs["open-vsx"]))
    for name in ("marketplace", "open-vsx"):
        assert jobs[name]["needs"] == "build"
    # the workflow's permissions are read-only but where a job asks for more
    assert release["permissions"] == {"contents": "read"}


def test_a_tag_must_be_the_version_of_every_artefact(tmp_path: Path) -> None:
    version = PROJECT["version"]
    assert EXTENSION["version"] == version
    assert release_version.mismatches(f"v{version}") == []
    assert release_version.main([f"v{version}"]) == 0
    assert len(release_version.mismatches("v99.0.0")) == 3
    assert release_version.mismatches(version) == [f"the tag {version!r} is not of the form vX.Y.Z"]
    # one bumped, the other not: the line names the file left behind
    (tmp_path / "vscode-extension").mkdir()
    (tmp_path / "jupyterlab-extension").mkdir()
    (tmp_path / "pyproject.toml").write_text(f'[project]\nversion = "{version}"\n')
    (tmp_path / "vscode-extension" / "package.json").write_text('{"version": "0.0.1"}')
    (tmp_path / "jupyterlab-extension" / "package.json").write_text(f'{{"version": "{version}"}}')
    (line,) = release_version.mismatches(f"v{version}", tmp_path)
    assert line.startswith("vscode-extension/package.json says 0.0.1")


def test_the_mason_package_installs_this_release_s_commands() -> None:
    package = load(ROOT / "editors" / "mason" / "packages" / "qvr" / "package.yaml")
    assert package["name"] == "qvr" and "LSP" in package["categories"]
    assert package["source"]["id"] == f"pkg:pypi/qvr@{PROJECT['version']}"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    for command, where in package["bin"].items():
        assert where == f"pypi:{command}" and command in scripts, command


def test_the_lspconfig_entry_runs_the_command_the_editors_page_gives() -> None:
    entry = (ROOT / "editors" / "nvim-lspconfig" / "lsp" / "qvr.lua").read_text("utf-8")
    assert "cmd = { 'qvr-lsp' }" in entry and "filetypes = { 'qvr' }" in entry
    assert "cmd = { 'qvr-lsp' }" in (ROOT / "docs" / "editors.md").read_text("utf-8")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_release(path: Path) -> None:
    """`uses: owner/action@v4` (or a release branch), never a moving `@main`."""
    for job in load(path)["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+|release/v\d+)", step["uses"]), step
