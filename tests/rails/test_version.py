"""The version is written once, in pyproject.toml; the extension's manifest must agree with it."""

from __future__ import annotations

import json
import re
import tomllib

import qvr_core
import qvr_lsp
from qvr_cli.main import main
from tests.conftest import ROOT

EXTENSION = ROOT / "vscode-extension"


def declared() -> str:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return str(pyproject["project"]["version"])


def test_the_packages_read_the_installed_version() -> None:
    assert qvr_core.__version__ == qvr_lsp.__version__ == declared()


def test_qvr_prints_it(capsys) -> None:
    try:
        main(["--version"])
    except SystemExit as stop:
        assert stop.code == 0
    assert capsys.readouterr().out.strip() == f"qvr {declared()}"


def test_the_extension_has_the_same_version() -> None:
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((EXTENSION / "package-lock.json").read_text(encoding="utf-8"))
    assert manifest["version"] == lock["version"] == lock["packages"][""]["version"] == declared()


def test_the_changelog_has_a_section_for_it() -> None:
    """The newest released section of CHANGELOG.md is the version `qvr --version` prints
    (an `Unreleased` section may sit above it)."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## (\d+\.\d+\.\d+\S*) - \d{4}-\d{2}-\d{2}$", changelog, re.MULTILINE)
    assert released and released[0] == declared()
