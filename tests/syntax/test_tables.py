"""The parser's tables kept between runs (tables.py): the callbacks made from a cache file
parse exactly as lark's own, a file that does not fit is made again, and a start with
the file kept does not import lark."""

from __future__ import annotations

import marshal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from qvr_core.syntax import parser, tables
from qvr_core.syntax.builder import TreeBuilder
from qvr_core.syntax.lark_tables import from_lark
from tests.check.test_check_properties import SOURCES, mutated
from tests.ide.helpers import ROOT


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, tables.Tables], dict[str, tables.Tables]]:
    """Tables whose callbacks are made from the specs (read back from `marshal`), and the
    same tables with lark's own callbacks."""
    kept, callbacks = from_lark(tables.GRAMMAR.read_text(encoding="utf-8"), None)
    assert kept["specs"], "a callback lark made is of a kind tables.py cannot make"
    again = marshal.loads(marshal.dumps(kept))
    return tables.made(again, TreeBuilder()), tables.made(kept, TreeBuilder(), callbacks)


def parsed_with(found: dict[str, tables.Tables], text: str, monkeypatch: Any) -> object:
    with monkeypatch.context() as m:
        m.setattr(parser, "tables", lambda: found)
        return parser.parse(text)


def test_the_examples_parse_the_same_with_the_kept_callbacks(both, monkeypatch) -> None:
    ours, larks = both
    for text in SOURCES:
        assert parsed_with(ours, text, monkeypatch) == parsed_with(larks, text, monkeypatch)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated())
def test_broken_texts_parse_the_same_with_the_kept_callbacks(text: str, both) -> None:
    ours, larks = both
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert parsed_with(ours, text, monkeypatch) == parsed_with(larks, text, monkeypatch)


def test_a_file_made_for_another_grammar_or_unreadable_is_made_again(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = "object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\n"
    path = tables.cache_path()
    assert path is not None and path.startswith(str(tmp_path))
    tables.tables.cache_clear()
    try:
        expected = parser.parse(text)
        good = marshal.loads(Path(path).read_bytes())
        for stale in (dict(good, grammar="start: NAME"), dict(good, format=-1), b"junk"):
            Path(path).write_bytes(stale if isinstance(stale, bytes) else marshal.dumps(stale))
            tables.tables.cache_clear()
            assert parser.parse(text) == expected
            assert marshal.loads(Path(path).read_bytes()) == good
    finally:
        tables.tables.cache_clear()


def test_a_start_with_the_tables_kept_does_not_import_lark(tmp_path) -> None:
    script = (
        "import sys\n"
        "from qvr_core.syntax.parser import parse\n"
        "assert not parse(open('examples/bidirectional_rnn_lm.qvr').read()).diagnostics\n"
        "print('lark' in sys.modules)\n"
    )
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
        )
        for _ in range(2)
    ]
    assert [r.stdout.strip() for r in runs] == ["True", "False"], [r.stderr for r in runs]
