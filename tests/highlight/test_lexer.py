"""The Pygments lexer: found by its entry point, clean on every real file, right on the words."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename, get_lexer_for_mimetype
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String

from qvr.lexer import QvrLexer
from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, OBJECT_CONSTRUCTORS, RESERVED
from tests.conformance.shared import corpus

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("**/*.qvr"))
FILES = [(str(p.relative_to(ROOT)), p) for p in EXAMPLES] + [(f.name, f.path) for f in corpus()]

EIGHT_SCHOOLS = """\
#! Eight schools, non-centred.
object School : FinSet 8   # the schools

program eight_schools : School -> School
    sample tau <- HalfCauchy(5.0)
    sample theta : School <- Normal(0.0, tau) [via="school"]
    return theta

export eight_schools
"""


def tokens(text: str) -> list[tuple[object, str]]:
    return [(kind, value) for kind, value in QvrLexer().get_tokens(text) if value.strip()]


def kind_of(text: str, word: str, nth: int = 0) -> object:
    return [kind for kind, value in tokens(text) if value == word][nth]


def test_pygments_finds_the_lexer_by_name_file_and_mime_type() -> None:
    assert isinstance(get_lexer_by_name("qvr"), QvrLexer)
    assert isinstance(get_lexer_for_filename("model.qvr"), QvrLexer)
    assert isinstance(get_lexer_for_mimetype("text/x-qvr"), QvrLexer)


def test_there_are_files_to_lex() -> None:
    assert len(EXAMPLES) > 40


@pytest.mark.parametrize("path", [p for _, p in FILES], ids=[name for name, _ in FILES])
def test_every_example_and_corpus_file_lexes_without_an_error_token(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = list(QvrLexer().get_tokens(text))
    assert [value for kind, value in found if kind in Error] == []
    assert "".join(value for _, value in found).rstrip("\n") == text.rstrip("\n")


def test_a_small_model_gets_the_kinds_the_semantic_tokens_give() -> None:
    got = tokens(EIGHT_SCHOOLS)
    for expected in [
        (Comment.Special, "#! Eight schools, non-centred."),
        (Keyword.Declaration, "object"),
        (Name.Class, "School"),
        (Keyword.Type, "FinSet"),
        (Number.Integer, "8"),
        (Comment.Single, "# the schools"),
        (Keyword.Declaration, "program"),
        (Operator, "->"),
        (Keyword, "sample"),
        (Operator, "<-"),
        (Name.Builtin, "HalfCauchy"),
        (Punctuation, "("),
        (Number.Float, "5.0"),
        (Name.Builtin, "Normal"),
        (String.Double, '"school"'),
        (Keyword, "return"),
        (Keyword, "export"),
        (Name, "eight_schools"),
    ]:
        assert expected in got


def test_every_registry_word_gets_its_kind() -> None:
    for word in FAMILIES:
        assert kind_of(f"sample x <- {word}(1.0)", word) is Name.Builtin, word
    for word in (*COMBINATORS, *FUNCTIONS):
        assert kind_of(f"let y = {word}(x)", word) is Name.Builtin, word
    for word in OBJECT_CONSTRUCTORS:
        assert kind_of(f"object A : {word} 3", word) is Keyword.Type, word
    for word in RESERVED:
        assert kind_of(f"    {word} x", word) in Keyword, word


@pytest.mark.parametrize(
    ("text", "word", "kind"),
    [
        ("define h = f >> g", "define", Keyword.Declaration),
        ("morphism f : A -> B", "f", Name.Function),
        ("    marginalize z : K <- Categorical(probs)", "marginalize", Keyword),
        ("    score s = -x * x", "score", Keyword),
        ("    sample score <- Normal(0.0, 1.0)", "score", Name),
        ("    let loss = a + b", "loss", Name),
        ("let h = f >> index", "index", Name),
        ("export loss", "loss", Name),
        ("index Nat = Zero | Succ(Nat)", "index", Keyword.Declaration),
        ("    if x > 0.0 then", "then", Keyword),
        ("    else", "else", Keyword),
        ("let x = random.sample(y)", "sample", Name),
        ("    let y = theta.sum()", "sum", Name.Builtin),
        ("    let b = true", "true", Keyword.Constant),
    ],
)
def test_soft_keywords_are_keywords_only_where_they_are_not_names(
    text: str, word: str, kind: object
) -> None:
    assert kind_of(text, word) is kind


@pytest.mark.parametrize("text", ["object A : FinSet 2;", 'let s = "open', "let x = y ' 2"])
def test_characters_that_start_no_token_are_errors(text: str) -> None:
    assert any(kind in Error for kind, _ in tokens(text))


def test_pragmas_are_code_and_hash_comments_are_not() -> None:
    got = tokens("#[learnable]\nlet x = 1  # one")
    assert (Comment.Preproc, "#[") in got
    assert (Name, "learnable") in got
    assert (Comment.Single, "# one") in got
