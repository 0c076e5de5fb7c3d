"""The parser, compiled once per test session (per xdist worker) into a temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.tree_sitter.support import compile_parser, load_language, tree_sitter_module

if TYPE_CHECKING:
    import tree_sitter


@pytest.fixture(scope="session")
def parser_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree_sitter_module()  # skips, saying why, without the package
    return compile_parser(tmp_path_factory.mktemp("tree-sitter-qvr") / "qvr.so")


@pytest.fixture(scope="session")
def language(parser_library: Path) -> tree_sitter.Language:
    return load_language(parser_library)


@pytest.fixture(scope="session")
def parser(language: tree_sitter.Language) -> tree_sitter.Parser:
    made: tree_sitter.Parser = tree_sitter_module().Parser(language)
    return made
