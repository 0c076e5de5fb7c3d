"""The models every reader of the resolved model is held to (issue 48's agreement set).

Every model program that runs, of the examples (the posteriordb programs among them),
the test models and the shared corpus (when it is here). The rails test of the resolved
model and the exports' scoring test read this one list, so they speak of the same models.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

from qvr_core.check import check
from qvr_core.plan.runnable import runnability
from tests.conformance.shared import corpus
from tests.conftest import ROOT

FOLDERS = ("examples", "tests/models")


def sources() -> Iterator[tuple[str, str]]:
    """(name, text) of each file: the folders' `.qvr` files, then the corpus's."""
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.qvr")):
            yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
    for entry in corpus():
        yield f"corpus/{entry.name}", entry.text()


@functools.cache
def runnable_models() -> tuple[tuple[str, str, str], ...]:
    """(file, program, source) of every model program that checks and runs: checked once
    per test process, however many tests read the list."""
    out = []
    for name, text in sources():
        checked = check(text)
        if any(d.is_error for d in checked.diagnostics):
            continue
        for program in checked.models:
            if runnability(checked, program).kind == "model":
                out.append((name, program, text))
    return tuple(out)
