"""qvr reads what quivers reads: checked against quivers' own parsers (oracle.py).

(a) every corpus file that a quivers grammar from 0.11 on accepts parses in
    qvr with no syntax error, and checks with no false "undefined" cascade;
(b) every example in examples/ is accepted by the quivers grammar of its era
    (or uses qvr's one named extension, which qvr reports);
(c) `qvr fmt` keeps the dialect: its output is accepted by every quivers
    grammar that accepted its input; `qvr migrate --to current` output, and
    its formatting, are accepted by quivers HEAD's grammar (but for what
    migrate names as left as written: forms with no spelling today), over
    the corpus files some v0.11+ grammar accepts and over examples/; and
    so is `qvr migrate` output of the older (0.1-0.10) corpus files.

The corpus is read from ../shared (tests/conformance/shared.py); the tests
skip with the reason when it or quivers' parsers cannot be had.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.format.formatter import format_text
from qvr_core.migrate import migrate_text
from qvr_core.syntax.parser import parse
from tests.conformance import oracle
from tests.conformance.shared import CorpusFile, corpus

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _split() -> tuple[list[CorpusFile], list[CorpusFile], str | None]:
    """The corpus files quivers 0.11+ accepts and the older ones, or why there are none."""
    files = corpus()
    if not files:
        return [], [], "../shared/corpus not found (set QVR_SHARED)"
    try:
        accepted = {f.name: oracle.accepted_by(f.text()) for f in files}
    except oracle.OracleUnavailable as exc:
        return [], [], f"quivers' parsers are unavailable: {exc}"
    modern = [f for f in files if oracle.modern(accepted[f.name])]
    older = [f for f in files if not oracle.modern(accepted[f.name])]
    return modern, older, None


MODERN, OLDER, UNAVAILABLE = _split()


def _skip_if_unavailable() -> None:
    if UNAVAILABLE is not None:
        print(f"skipped: {UNAVAILABLE}")
        pytest.skip(UNAVAILABLE)


def _ids(f: CorpusFile | None) -> str:
    return f.name.split("/")[-1] if f is not None else "unavailable"


@cache
def _accepted(name: str) -> tuple[str, ...]:
    f = next(f for f in MODERN if f.name == name)
    return tuple(oracle.accepted_by(f.text()))


@pytest.mark.parametrize("f", MODERN or [None], ids=_ids)
def test_a_every_file_quivers_011_accepts_parses(f: CorpusFile | None) -> None:
    _skip_if_unavailable()
    assert f is not None
    text = f.text()
    errors = [d for d in parse(text).diagnostics if d.code in ("QVR000", "QVR001")]
    assert errors == [], [(d.span.start_line + 1, d.message) for d in errors]
    module = check(text)
    # no cascades: nothing it declares is undefined, and nothing breaks the checker
    bad = [d for d in module.diagnostics if d.code in ("QVR000", "QVR101", "QVR102")]
    assert bad == [], [(d.code, d.span.start_line + 1, d.message) for d in bad]


@pytest.mark.parametrize("f", OLDER or [None], ids=_ids)
def test_older_files_get_era_diagnostics_not_syntax_errors(f: CorpusFile | None) -> None:
    _skip_if_unavailable()
    assert f is not None
    text = f.text()
    parsed = parse(text).diagnostics
    assert [d for d in parsed if d.code == "QVR010"], "no era diagnostic"
    errors = [d for d in parsed if d.code in ("QVR000", "QVR001")]
    assert errors == [], [(d.span.start_line + 1, d.message) for d in errors]
    module = check(text)
    assert not [d for d in module.diagnostics if d.code == "QVR000"]


def _in_quivers_syntax(text: str) -> str:
    """`text` with qvr's one extension (`let (a, b) = value`, reported as QVR012, which no
    quivers grammar accepts) written as a plain `let` of its first name."""
    extension = [d for d in check(text).diagnostics if d.code == "QVR012"]
    if not extension:
        return text
    lines = text.split("\n")
    for d in extension:
        line = lines[d.span.start_line]
        names = line[line.index("(") + 1 : line.index(")")].split(",")
        value = line.split("=", 1)[1]
        indent = line[: len(line) - len(line.lstrip())]
        lines[d.span.start_line] = f"{indent}let {names[0].strip()} = {value.strip()}"
    return "\n".join(lines)


def _skip_if_oracle_unavailable() -> None:
    try:
        oracle.parsers()
    except oracle.OracleUnavailable as exc:
        print(f"skipped: quivers' parsers are unavailable: {exc}")
        pytest.skip(f"quivers' parsers are unavailable: {exc}")


def _examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*.qvr"))


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_b_every_example_is_accepted_by_a_quivers_grammar(path: Path) -> None:
    _skip_if_oracle_unavailable()
    text = path.read_text(encoding="utf-8")
    text = _in_quivers_syntax(text)
    accepted = oracle.accepted_by(text)
    assert oracle.modern(accepted), f"{path.name}: accepted only by {accepted}"


@pytest.mark.parametrize("f", MODERN or [None], ids=_ids)
def test_c_formatting_keeps_the_dialect(f: CorpusFile | None) -> None:
    _skip_if_unavailable()
    assert f is not None
    accepted = _accepted(f.name)
    result = format_text(f.text())
    assert result.ok, result.refused
    after = oracle.accepted_by(result.text)
    assert set(accepted) <= set(after), (accepted, after)
    assert format_text(result.text).text == result.text  # idempotent


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_c_formatting_the_examples_keeps_their_grammar(path: Path) -> None:
    _skip_if_oracle_unavailable()
    text = path.read_text(encoding="utf-8")
    before = oracle.accepted_by(text)
    result = format_text(text)
    assert result.ok, result.refused
    assert set(before) <= set(oracle.accepted_by(result.text))


def _without(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with `spans` cut out (overlapping ones merged), and the blanks they leave
    with them: quivers' grammars refuse trailing blanks and lines of blanks."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    for start, end in reversed(merged):
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        if (start == 0 or text[start - 1] == "\n") and text[end : end + 1] == "\n":
            end += 1  # the line is left empty: cut it all
        text = text[:start] + text[end:]
    return text


def _head_accepts_but_what_is_left(text: str) -> None:
    """HEAD's grammar accepts `text` once the constructs `qvr migrate` names as left as
    written (0.11-0.14 forms 0.15 dropped) are cut out."""
    left = migrate_text(text, "current").left
    kept = _without(text, [(x.span.start, x.span.end) for x in left])
    assert oracle.accepts("HEAD", kept), [(x.span.start_line + 1, x.message) for x in left]


@pytest.mark.parametrize("f", MODERN or [None], ids=_ids)
def test_c_migrating_and_formatting_are_accepted_by_quivers_head(f: CorpusFile | None) -> None:
    _skip_if_unavailable()
    assert f is not None
    result = migrate_text(f.text(), "current")
    assert result.ok, result.refused
    _head_accepts_but_what_is_left(result.text)
    assert migrate_text(result.text, "current").text == result.text  # idempotent
    formatted = format_text(result.text)
    assert formatted.ok, formatted.refused
    _head_accepts_but_what_is_left(formatted.text)
    # in either order
    either = migrate_text(format_text(f.text()).text, "current")
    assert either.ok, either.refused
    _head_accepts_but_what_is_left(either.text)


@pytest.mark.parametrize("f", OLDER or [None], ids=_ids)
def test_c_migrating_older_files_is_accepted_by_quivers_head(f: CorpusFile | None) -> None:
    """Files of quivers 0.1-0.10: each construct is rewritten by its QVR010 fix, or named
    as left as written; HEAD's grammar accepts the rest."""
    _skip_if_unavailable()
    assert f is not None
    result = migrate_text(f.text(), "current")
    assert result.ok, result.refused
    _head_accepts_but_what_is_left(result.text)
    assert migrate_text(result.text, "current").text == result.text  # idempotent


@pytest.mark.parametrize("path", _examples(), ids=lambda p: p.name)
def test_c_migrated_and_formatted_examples_are_accepted_by_quivers_head(path: Path) -> None:
    _skip_if_oracle_unavailable()
    result = migrate_text(path.read_text(encoding="utf-8"), "current")
    assert result.ok and not result.left, (result.refused, result.left)
    assert oracle.accepts("HEAD", _in_quivers_syntax(result.text))
    formatted = format_text(result.text)
    assert formatted.ok, formatted.refused
    assert oracle.accepts("HEAD", _in_quivers_syntax(formatted.text))
