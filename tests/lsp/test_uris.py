"""`canonical_uri`: one spelling per file, and the spelling clients already use."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from qvr_lsp.protocol.uris import _DRIVE, canonical_uri

SAME_FILE = [
    "file:///a/b.qvr",
    "file:///a/./b.qvr",
    "file:///a/x/../b.qvr",
    "file:///a//b.qvr",
    "file:////a/b.qvr",
    "file://localhost/a/b.qvr",
    "file://LOCALHOST/a/b.qvr",
    "file:///a/%62.qvr",
    "FILE:///a/b.qvr",
]


@pytest.mark.parametrize("spelling", SAME_FILE)
def test_spellings_of_one_file_are_one_uri(spelling: str) -> None:
    assert canonical_uri(spelling) == "file:///a/b.qvr"


def test_escapes_and_drive_letters_take_one_case() -> None:
    for spelling in ("file:///C:/x.qvr", "file:///c%3a/x.qvr", "file:///C%3A/x.qvr"):
        assert canonical_uri(spelling) == "file:///c%3A/x.qvr"  # as VS Code writes it
    assert canonical_uri("file:///a/%e2%82%ac.qvr") == canonical_uri("file:///a/€.qvr")
    assert canonical_uri("file:///a/my file.qvr") == "file:///a/my%20file.qvr"


def test_other_schemes_keep_their_spelling() -> None:
    assert canonical_uri("untitled:Untitled-1") == "untitled:Untitled-1"
    assert canonical_uri("Untitled:Untitled-1") == "untitled:Untitled-1"
    assert canonical_uri("not a uri") == "not a uri"


names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
    min_size=1,
    max_size=8,
).filter(lambda n: n not in (".", ".."))


@given(st.lists(names, min_size=1, max_size=4))
def test_a_paths_own_uri_is_canonical_and_canonical_is_idempotent(parts: list[str]) -> None:
    # a first segment spelled as a drive (`/A:`) is one file however a Windows client
    # cases its letter: lower-casing it is the one intended rewrite of a path's own URI
    assume(_DRIVE.match("/" + parts[0]) is None)
    uri = PurePosixPath("/", *parts).as_uri()  # what a client derives from a path
    assert canonical_uri(uri) == uri
    assert canonical_uri(canonical_uri(uri)) == canonical_uri(uri)


@example(" A:")  # urlsplit drops the leading space: the scheme was sliced off the wrong start
@given(st.text(max_size=30))
def test_never_raises_and_is_idempotent(text: str) -> None:
    once = canonical_uri("file:///" + text)
    assert canonical_uri(once) == once
    assert canonical_uri(text) == canonical_uri(canonical_uri(text))
