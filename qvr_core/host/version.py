"""The installed version of qvr, read from its metadata file without `importlib.metadata`.

`importlib.metadata` imports `email`, `zipfile`, `csv` and `tempfile` to read
one line: some 40 ms of every start of the language server, before its first
diagnostics. This looks where it would look (the `sys.path` entries, in
order, for `qvr-*.dist-info/METADATA` or `qvr*.egg-info/PKG-INFO`) and reads
the `Version:` header; only what it cannot find is asked of `importlib.metadata`.
"""

from __future__ import annotations

import os
import sys

NAME = "qvr"
UNKNOWN = "0+unknown"  # a source tree that was never installed


def installed_version() -> str:
    """The version pyproject.toml declared when qvr was installed."""
    for entry in sys.path:
        found = _version_in(entry or os.curdir)
        if found is not None:
            return found
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(NAME)
    except PackageNotFoundError:
        return UNKNOWN


def _version_in(folder: str) -> str | None:
    """The version in the first qvr metadata of `folder`, None when it holds none."""
    try:
        names = sorted(os.listdir(folder))
    except (OSError, ValueError):
        return None  # not a folder (a zip file), or gone
    for name in names:
        lowered = name.lower()
        if lowered.startswith(f"{NAME}-") and lowered.endswith(".dist-info"):
            return _header(os.path.join(folder, name, "METADATA"))
        if lowered == f"{NAME}.egg-info" or (
            lowered.startswith(f"{NAME}-") and lowered.endswith(".egg-info")
        ):
            path = os.path.join(folder, name)
            return _header(os.path.join(path, "PKG-INFO") if os.path.isdir(path) else path)
    return None


def _header(path: str) -> str | None:
    """The `Version:` of a metadata file (its headers end at the first blank line)."""
    try:
        with open(path, encoding="utf-8") as file:
            for line in file:
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                if key.strip().lower() == "version":
                    return value.strip()
    except OSError:
        return None
    return None
