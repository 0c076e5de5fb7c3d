"""Data paths for inference runs: only files inside the workspace, of a readable kind.

A run reads whatever path the client names, so the server resolves it (links
included) and refuses anything outside the workspace folders: a `..` escape,
an absolute path elsewhere, a symlink that points out.
"""

from __future__ import annotations

from pathlib import Path

from pygls.uris import to_fs_path

from qvr_core.host.datafile import DATA_SUFFIXES


class DataPathError(ValueError):
    """The path is outside the workspace, missing, or not a data file."""


def workspace_roots(folder_uris: list[str], document_uri: str) -> list[Path]:
    """The workspace folders; without any, the folder of the document itself."""
    roots = [Path(p) for u in folder_uris if (p := to_fs_path(u))]
    if not roots:
        doc = to_fs_path(document_uri)
        if doc:
            roots = [Path(doc).parent]
    return [r.resolve() for r in roots]


def resolve_data_path(data: str, roots: list[Path]) -> Path:
    """The real path of `data` (relative to the first root) when it lies inside a root."""
    if not roots:
        raise DataPathError("data paths need a workspace folder, and this document has none")
    if not data.strip():
        raise DataPathError("the data path is empty")
    candidate = Path(data).expanduser()
    if not candidate.is_absolute():
        candidate = roots[0] / candidate
    resolved = candidate.resolve()
    if not any(resolved.is_relative_to(root) for root in roots):
        shown = ", ".join(str(r) for r in roots)
        raise DataPathError(
            f"data path {data!r} is outside the workspace ({shown}); "
            "runs only read files inside the workspace"
        )
    if resolved.suffix.lower() not in DATA_SUFFIXES:
        raise DataPathError(
            f"data path {data!r} is not a data file: use {', '.join(DATA_SUFFIXES)}"
        )
    if not resolved.exists():
        raise DataPathError(f"data file {data!r} does not exist (looked for {resolved})")
    if not resolved.is_file():
        raise DataPathError(f"data file {data!r} is not a regular file")
    return resolved
