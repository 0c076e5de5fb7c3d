"""The editor's core features run on every real file (every era), without raising,
and a re-check after an edit gives what a check from scratch gives."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.graph.build import build_graph, drawable_names
from qvr_core.ide.actions import quick_fixes
from qvr_core.ide.folding import folding_ranges
from qvr_core.ide.inlay import inlay_hints
from qvr_core.ide.selection import selection_chain
from qvr_core.ide.signature import signature_help
from qvr_core.ide.tokens import semantic_tokens
from tests.conformance.shared import CorpusFile, corpus

FILES = corpus()


@pytest.mark.parametrize("f", FILES or [None], ids=lambda f: f.name.split("/")[-1] if f else "none")
def test_editor_features_run_on_real_files(f: CorpusFile | None) -> None:
    if f is None:
        print("skipped: ../shared/corpus not found (set QVR_SHARED)")
        pytest.skip("../shared/corpus not found (set QVR_SHARED)")
    text = f.text()
    module = check(text)
    folding_ranges(module.ast, text)
    inlay_hints(module)
    tokens = semantic_tokens(module)
    assert all(t.span.start < t.span.end for t in tokens)
    quick_fixes(module, 0, len(text))
    for offset in range(0, len(text), 53):
        selection_chain(module.ast, offset)
        signature_help(text, offset, module)
    for name in drawable_names(module):
        build_graph(module, name)


@pytest.mark.parametrize("f", FILES or [None], ids=lambda f: f.name.split("/")[-1] if f else "none")
def test_a_recheck_after_an_edit_equals_a_check_from_scratch(f: CorpusFile | None) -> None:
    if f is None:
        pytest.skip("../shared/corpus not found (set QVR_SHARED)")
    text = f.text()
    checker = IncrementalChecker()
    checker.check(text).materialize()
    middle = len(text) // 2
    for edited in (text[:middle] + "x" + text[middle:], text):
        again = checker.check(edited)
        again.materialize()
        fresh = check(edited)
        assert [(d.code, d.span, d.message) for d in again.diagnostics] == [
            (d.code, d.span, d.message) for d in fresh.diagnostics
        ]
