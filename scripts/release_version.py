"""Refuse a release whose tag is not the version it ships (`release_version.py vX.Y.Z`).

The release workflow (.github/workflows/release.yml) runs it before building, so a tag
pushed without bumping pyproject.toml and the extensions' package.json files (or with
only some of them bumped) publishes nothing. The JupyterLab extension ships inside the
wheel, built with its version (qvr/labextension/package.json, checked current by its
`npm test`). Exit status 1 with one line saying which differs.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def versions(root: Path = ROOT) -> dict[str, str]:
    """The version each artefact declares: the Python package's and the extensions'."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    found = {"pyproject.toml": project["project"]["version"]}
    for extension in ("vscode-extension", "jupyterlab-extension"):
        package = json.loads((root / extension / "package.json").read_text("utf-8"))
        found[f"{extension}/package.json"] = package["version"]
    return found


def mismatches(tag: str, root: Path = ROOT) -> list[str]:
    """What does not match tag `vX.Y.Z`, one line each; empty when all do."""
    if not tag.startswith("v"):
        return [f"the tag {tag!r} is not of the form vX.Y.Z"]
    wanted = tag.removeprefix("v")
    return [
        f"{where} says {found}, the tag {tag}"
        for where, found in versions(root).items()
        if found != wanted
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/release_version.py vX.Y.Z", file=sys.stderr)
        return 2
    problems = mismatches(argv[0])
    for line in problems:
        print(f"release_version: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
