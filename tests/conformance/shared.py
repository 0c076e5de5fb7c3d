"""Where the shared corpus is: `shared/` beside the repository's main checkout.

Looked for in order: `../shared` beside this checkout, `../shared` beside the
main checkout when this is a git worktree, then the `QVR_SHARED` variable.
The corpus is test data read in place, never copied into the project.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def shared_dir() -> Path | None:
    for candidate in _candidates():
        if (candidate / "corpus" / "MANIFEST.tsv").is_file():
            return candidate
    return None


def _candidates() -> list[Path]:
    out = [ROOT.parent / "shared"]
    dot_git = ROOT / ".git"
    if dot_git.is_file():  # a worktree: .git names its folder in the main repository
        text = dot_git.read_text(encoding="utf-8").strip()
        if text.startswith("gitdir:"):
            gitdir = (ROOT / text.removeprefix("gitdir:").strip()).resolve()
            common = gitdir
            commondir = gitdir / "commondir"
            if commondir.is_file():
                common = (gitdir / commondir.read_text(encoding="utf-8").strip()).resolve()
            out.append(common.parent.parent / "shared")
    env = os.environ.get("QVR_SHARED")
    if env:
        out.append(Path(env))
    return out


@dataclass(frozen=True)
class CorpusFile:
    name: str  # the path under corpus/
    era: str  # "E1" .. "E5", "E3'"
    path: Path

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")


def corpus() -> list[CorpusFile]:
    """The corpus files in MANIFEST.tsv order ([] when shared/ cannot be found)."""
    shared = shared_dir()
    if shared is None:
        return []
    folder = shared / "corpus"
    with (folder / "MANIFEST.tsv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [CorpusFile(r["file"], r["era"].split()[0], folder / r["file"]) for r in rows]


def families_fixture(prefix: str) -> str:
    """The text of quivers' families fixture whose file name starts with `prefix`; the
    test is skipped where the shared corpus is not."""
    import pytest

    shared = shared_dir()
    if shared is None:
        pytest.skip("the shared corpus is not here")
    folder = shared / "corpus" / "tests__transpile__fixtures__families"
    (path,) = sorted(folder.glob(f"{prefix}*.qvr"))
    return path.read_text(encoding="utf-8")
