"""The highlight queries: they compile in every editor's copy, they give each word the
kind the language server's semantic tokens give it (families, builtin functions, builtin
types, option keys), and keywords, numbers, strings and comments where qvr's own lexer
finds them; Helix's and Zed's copies highlight every example exactly as Neovim does."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from qvr_core.check import check
from qvr_core.ide.tokens import TokenType, semantic_tokens
from qvr_core.syntax.layout import KEYWORDS, SOFT_KEYWORDS, Token, split
from tests.tree_sitter.support import GRAMMAR_DIR, NO_TREE_SITTER, QUERIES, ROOT, generator, winners

if TYPE_CHECKING:
    import tree_sitter
else:
    tree_sitter = pytest.importorskip("tree_sitter", reason=NO_TREE_SITTER)

EXAMPLES = sorted((ROOT / "examples").glob("**/*.qvr"))
IDS = [str(p.relative_to(ROOT / "examples")) for p in EXAMPLES]
QUERY_FILES = sorted(
    [
        *QUERIES.glob("*.scm"),
        *(GRAMMAR_DIR / "helix").glob("**/*.scm"),
        *(GRAMMAR_DIR / "zed").glob("**/*.scm"),
    ]
)

#: The capture a semantic token's kind gets, for the kinds both name the same way.
EXPECTED = {
    TokenType.FAMILY: "function.builtin",
    TokenType.BUILTIN_FUNCTION: "function.builtin",
    TokenType.BUILTIN_TYPE: "type.builtin",
    TokenType.OPTION: "property",
}
#: The capture of each kind of literal token of qvr's lexer.
LITERALS = {"INT": "number", "FLOAT": "number.float", "STRING": "string"}
#: Words that may be keywords: the lexer's keywords and the grammar's soft keywords but
#: the object constructors (which are types).
KEYWORD_WORDS = frozenset(KEYWORDS) | {w for w, t in SOFT_KEYWORDS.items() if t != "CTOR"}


@cache
def query(path: Path, language: tree_sitter.Language) -> tree_sitter.Query:
    return tree_sitter.Query(language, path.read_text(encoding="utf-8"))


def highlighted(
    path: Path, text: str, language: tree_sitter.Language, parser: tree_sitter.Parser, **kw: bool
) -> dict[tuple[int, int], str]:
    """The capture of each character range of `text` (the lexer's and the server's offsets)."""
    root = parser.parse(text.encode()).root_node
    char = _char_offsets(text)
    found = winners(query(path, language), root, **kw)
    return {(char[a], char[b]): name for (a, b), name in found.items()}


def _char_offsets(text: str) -> dict[int, int]:
    """Character offset by UTF-8 byte offset, at every character boundary of `text`."""
    out = {0: 0}
    at = 0
    for i, ch in enumerate(text, 1):
        at += len(ch.encode())
        out[at] = i
    return out


def _ranges(text: str, parser: tree_sitter.Parser, kind: str) -> list[tuple[int, int]]:
    """The character ranges of the top-level declarations of one kind."""
    char = _char_offsets(text)
    root = parser.parse(text.encode()).root_node
    return [(char[n.start_byte], char[n.end_byte]) for n in root.named_children if n.type == kind]


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: str(p.relative_to(GRAMMAR_DIR)))
def test_every_query_compiles(path: Path, language: tree_sitter.Language) -> None:
    assert query(path, language).pattern_count > 0


def test_no_query_uses_a_predicate_only_neovim_knows() -> None:
    """Helix compiles highlights, injections and locals together: one `#lua-match?` (or
    another Neovim-only predicate) and none of them loads."""
    for path in QUERY_FILES:
        used = set(re.findall(r"\(#([\w-]+[?!])", path.read_text(encoding="utf-8")))
        assert used <= {"match?", "eq?", "any-of?", "set!"}, (path, used)


def test_every_keyword_of_the_grammar_is_highlighted() -> None:
    grammar = (GRAMMAR_DIR / "src" / "grammar.json").read_text(encoding="utf-8")
    words = set(re.findall(r'"type": "STRING",\s*"value": "([a-z_]+)"', grammar))
    highlights = (QUERIES / "highlights.scm").read_text(encoding="utf-8")
    listed = set(re.findall(r'"([a-z_]+)"', highlights))
    named = {"true", "false", "unit"}  # (true) (false) (unit): nodes of their own
    roles = {w for w, t in SOFT_KEYWORDS.items() if t == "ROLE"}  # the (role) node
    assert words - listed - named - roles == set()
    assert words <= KEYWORD_WORDS | named


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_captures_agree_with_the_servers_semantic_tokens(
    path: Path, language: tree_sitter.Language, parser: tree_sitter.Parser
) -> None:
    text = path.read_text(encoding="utf-8")
    got = highlighted(QUERIES / "highlights.scm", text, language, parser)
    tokens = semantic_tokens(check(text))
    kinds = {(t.span.start, t.span.end): t.type for t in tokens}
    wrong = [
        (text[t.span.start : t.span.end], t.span.start_line + 1, t.type.value, got.get(key))
        for t in tokens
        if t.type in EXPECTED and got.get(key := (t.span.start, t.span.end)) != EXPECTED[t.type]
    ]
    assert not wrong, wrong
    # and the other way: what the queries call a builtin or an option key, the server does
    # too (but in typed computations, which the checker does not classify yet)
    computations = _ranges(text, parser, "computation_declaration")
    extra = [
        (text[a:b], name, kinds.get((a, b)))
        for (a, b), name in got.items()
        if name in ("function.builtin", "type.builtin", "property")
        and EXPECTED.get(kinds.get((a, b))) != name  # type: ignore[arg-type]
        and not any(start <= a < end for start, end in computations)
    ]
    assert not extra, extra


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_keywords_numbers_strings_and_comments_are_where_the_lexer_finds_them(
    path: Path, language: tree_sitter.Language, parser: tree_sitter.Parser
) -> None:
    text = path.read_text(encoding="utf-8")
    got = highlighted(QUERIES / "highlights.scm", text, language, parser)
    layout = split(text)
    wrong = []
    for chunk in layout.chunks:
        for line in [chunk.head, *chunk.body]:
            for i, token in enumerate(line.tokens):
                capture = got.get((token.start, token.end))
                if token.type in LITERALS:
                    ok = capture == LITERALS[token.type]
                elif i == 0 and _starts_with_keyword(line.tokens):
                    ok = capture is not None and capture.startswith("keyword")
                else:
                    continue
                if not ok:
                    wrong.append((token.text, token.start_line + 1, capture))
    for comment in layout.comments:
        capture = got.get((comment.span.start, comment.span.end))
        doc = comment.text.startswith("#!")
        if capture != ("comment.documentation" if doc else "comment"):
            wrong.append((comment.text[:20], comment.span.start_line + 1, capture))
    assert not wrong, wrong
    # and nothing else is a keyword or a comment
    comments = {(c.span.start, c.span.end) for c in layout.comments}
    for (a, b), name in got.items():
        assert not name.startswith("keyword") or text[a:b] in KEYWORD_WORDS, (text[a:b], name)
        assert not name.startswith("comment") or (a, b) in comments, (text[a:b], name)


def _starts_with_keyword(tokens: list[Token]) -> bool:
    """Whether a line's first word is a keyword there: a reserved word (qvr reads one as a
    name only after the first token), or a soft keyword not followed by what follows a
    name (`score <- ...` binds a site named score; `type` is the only word of 0.1-0.4's
    `type X = ...` that also names things)."""
    first = tokens[0]
    if first.type in KEYWORDS.values():
        return True
    kind = SOFT_KEYWORDS.get(first.text)
    after = tokens[1].type if len(tokens) > 1 else None
    return (
        kind is not None
        and kind not in ("CTOR", "TRUE", "FALSE", "UNIT")
        and after not in ("LARROW", "COLON", "EQUAL", "LPAR", "LSQB", "MAPSTO")
    )


def _renamed(
    captures: dict[tuple[int, int], str], names: dict[str, str]
) -> dict[tuple[int, int], str]:
    return {key: names.get(name, name) for key, name in captures.items()}


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_helix_and_zed_highlight_as_neovim_does(
    path: Path, language: tree_sitter.Language, parser: tree_sitter.Parser
) -> None:
    """Helix lets the first pattern win, Neovim and Zed the last: the copies written for them
    (reversed, renamed) must give every range the capture Neovim's gives it."""
    text = path.read_text(encoding="utf-8")
    neovim = highlighted(QUERIES / "highlights.scm", text, language, parser)
    helix_file = GRAMMAR_DIR / "helix" / "queries" / "qvr" / "highlights.scm"
    helix = highlighted(helix_file, text, language, parser, first_wins=True)
    zed = highlighted(
        GRAMMAR_DIR / "zed" / "languages" / "qvr" / "highlights.scm", text, language, parser
    )
    names = generator()
    assert helix == _renamed(neovim, names.HELIX_NAMES)
    assert zed == _renamed(neovim, names.ZED_NAMES)
