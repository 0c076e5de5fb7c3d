"""quivers' own parsers as an outside oracle: which grammar revisions accept a text.

The quivers 0.25.2 wheel carries a compiled tree-sitter parser for each
grammar revision (v0.2.0 .. v0.19.0 and HEAD). The wheel is fetched once with
`pip download` into a cache directory (`QVR_QUIVERS_CACHE`, else
`~/.cache/qvr/quivers`); only the parsers and HEAD's grammar.json are unpacked.
`OracleUnavailable` says why when the wheel cannot be had (no registry, no
`tree-sitter` package), so that tests can skip with that reason.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import cache
from pathlib import Path

VERSION = "0.25.2"
_PARSERS = "quivers/cli/migrations/_grammar_vcs/parsers/"
_GRAMMAR = "quivers/dsl/_grammar_data/grammar.json"
#: The grammar revisions of quivers 0.11 and later (the union qvr parses).
MODERN = ("v0.11.0", "v0.14.0", "v0.15.0", "v0.19.0", "HEAD")


class OracleUnavailable(Exception):
    """The quivers wheel or the tree-sitter package cannot be had; the message says why."""


def cache_dir() -> Path:
    env = os.environ.get("QVR_QUIVERS_CACHE")
    base = Path(env) if env else Path.home() / ".cache" / "qvr" / "quivers"
    return base


def _revision_key(name: str) -> tuple[int, ...]:
    if name == "HEAD":
        return (10**6,)
    return tuple(int(part) for part in re.findall(r"\d+", name))


@cache
def unpacked() -> Path:
    """The folder holding the unpacked parsers (`parsers/<rev>/qvr.so`) and grammar.json.

    The suite's workers (pytest-xdist) ask at once: one downloads and unpacks, under a
    lock, into a folder of its own that it renames into place when whole, so no worker
    ever loads a parser still being written (which crashed one)."""
    base = cache_dir()
    target = base / VERSION
    if (target / "complete").exists():
        return target
    base.mkdir(parents=True, exist_ok=True)
    with open(base / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (target / "complete").exists():  # another worker finished meanwhile
            return target
        wheel = _wheel(base)
        partial = Path(tempfile.mkdtemp(prefix=f"{VERSION}.", dir=base))
        try:
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.namelist():
                    if member == _GRAMMAR:
                        out = partial / "grammar.json"
                    elif member.startswith(_PARSERS) and member.endswith("/qvr.so"):
                        out = partial / "parsers" / member[len(_PARSERS) :]
                    else:
                        continue
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(archive.read(member))
            (partial / "complete").write_text("")
            shutil.rmtree(target, ignore_errors=True)  # an old run's half, if any
            partial.rename(target)
        except (OSError, zipfile.BadZipFile) as exc:
            shutil.rmtree(partial, ignore_errors=True)
            raise OracleUnavailable(f"cannot unpack {wheel}: {exc}") from exc
    return target


def _wheel(base: Path) -> Path:
    found = sorted(base.glob(f"quivers-{VERSION}-*.whl"))
    if found:
        return found[0]
    base.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        f"quivers=={VERSION}",
        "--no-deps",
        "--python-version",
        "3.14",
        "--only-binary=:all:",
        "-d",
        str(base),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OracleUnavailable(f"pip download quivers=={VERSION} failed: {exc}") from exc
    found = sorted(base.glob(f"quivers-{VERSION}-*.whl"))
    if done.returncode != 0 or not found:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise OracleUnavailable(f"pip download quivers=={VERSION} failed: {tail[0]}")
    return found[0]


_FAILED: list[OracleUnavailable] = []  # a failure is not retried within a run


def parsers() -> dict[str, object]:
    """A tree-sitter parser per grammar revision, oldest first."""
    if _FAILED:
        raise _FAILED[0]
    try:
        return _parsers()
    except OracleUnavailable as exc:
        _FAILED.append(exc)
        raise


@cache
def _parsers() -> dict[str, object]:
    try:
        import tree_sitter
    except ImportError as exc:
        raise OracleUnavailable("the tree-sitter package is not installed") from exc
    folder = unpacked() / "parsers"
    out: dict[str, object] = {}
    for rev in sorted((p.name for p in folder.iterdir()), key=_revision_key):
        lib = ctypes.cdll.LoadLibrary(str(folder / rev / "qvr.so"))
        lib.tree_sitter_qvr.restype = ctypes.c_void_p
        out[rev] = tree_sitter.Parser(tree_sitter.Language(_capsule(lib.tree_sitter_qvr())))
    return out


def _capsule(pointer: int) -> object:
    """The language pointer as the PyCapsule tree-sitter expects (a bare int is deprecated)."""
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return new(pointer, b"tree_sitter.Language", None)


def accepts(revision: str, text: str) -> bool:
    """Whether quivers' grammar `revision` parses `text` without an error node."""
    tree = parsers()[revision].parse(text.encode("utf-8"))  # type: ignore[attr-defined]
    return not tree.root_node.has_error


def accepted_by(text: str) -> list[str]:
    """The grammar revisions that accept `text`, oldest first."""
    return [rev for rev in parsers() if accepts(rev, text)]


def modern(revisions: list[str]) -> bool:
    """Whether one of `revisions` is a grammar of quivers 0.11 or later."""
    return any(rev in MODERN for rev in revisions)


def require_head(text: str) -> list[str]:
    """The revisions that accept `text`, asserting that quivers 0.11 or later and its HEAD
    grammar do; the calling test is skipped, with the reason, where the parsers cannot
    be had."""
    import pytest  # a test helper: only tests call it

    try:
        accepted = accepted_by(text)
    except OracleUnavailable as exc:
        pytest.skip(f"quivers' parsers are unavailable: {exc}")
    assert modern(accepted) and "HEAD" in accepted, accepted
    return accepted
