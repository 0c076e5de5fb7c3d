"""The export targets' tables are named after the builtins registry (`export.named`), and
docs/export.md's table of which family each target writes is generated from them: a
family the registry adds shows up there, written by no target, until its rows are."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from qvr_core.builtins import FAMILIES, FUNCTIONS
from qvr_core.export import coverage
from qvr_core.export.named import members, named

PAGE = Path(__file__).resolve().parents[2] / "docs" / "export.md"


def test_docs_export_md_has_the_generated_table() -> None:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(coverage.BEGIN)
    stop = text.index(coverage.END) + len(coverage.END)
    assert text[start:stop] == coverage.table(), (
        "docs/export.md's family table is stale: run .venv/bin/python scripts/gen_export_table.py"
    )


def test_every_distribution_family_of_the_registry_has_a_row() -> None:
    table = coverage.table()
    for name, family in FAMILIES.items():
        assert (f"| `{name}` |" in table) is not family.dirac, name


def test_a_family_the_registry_adds_is_listed_as_written_by_no_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        FAMILIES, "Brandnew", dataclasses.replace(FAMILIES["Normal"], name="Brandnew")
    )
    assert coverage.cells("Brandnew") == ("no", "no", "no")
    assert "| `Brandnew` | no | no | no |" in coverage.table()


def test_what_the_table_says_is_what_each_target_writes() -> None:
    assert coverage.cells("Normal") == ("yes", "yes", "yes")
    assert coverage.cells("VonMises")[1] == "observed only"
    assert coverage.cells("ContinuousBernoulli") == ("in a marginalize",) * 3


class _Good:
    """A docstring is not an entry."""

    sigmoid = "jax.nn.sigmoid"
    _private = 1


class _Misspelt:
    Normall = "normal"


class _Mistyped:
    Normal = 3


class _Flags:
    Bernoulli = True
    Categorical = False
    Normal = True


def test_named_reads_registry_names_and_refuses_any_other() -> None:
    assert named(_Good, FUNCTIONS, str) == {"sigmoid": "jax.nn.sigmoid"}
    with pytest.raises(ValueError, match=r"_Misspelt.Normall is not a builtin"):
        named(_Misspelt, FAMILIES, str)
    with pytest.raises(TypeError, match=r"_Mistyped.Normal is not a str"):
        named(_Mistyped, FAMILIES, str)
    assert members(_Flags, FAMILIES) == ("Bernoulli", "Normal")
