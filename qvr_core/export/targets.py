"""The languages a checked model exports to, one record each.

The editor's setting, `qvr export --to` and `qvr check --target` accept exactly
these names; each emitter module (`qvr_core.export.stan`, ...) is found from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A language an exported program is written in.

    `suffix` names the file `qvr export` writes by default, `language` is the
    editor's language id for the document it opens beside the source, and
    `comment` starts a line comment in that language (the header says which qvr
    and which source produced the file).
    """

    name: str
    title: str
    suffix: str
    language: str
    comment: str
    module: str  # the emitter: a module with `unsupported(plan)` and `emit(plan)`


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("stan", "Stan", ".stan", "stan", "//", "qvr_core.export.stan"),
        Target("numpyro", "NumPyro", "_numpyro.py", "python", "#", "qvr_core.export.numpyro"),
        Target("pymc", "PyMC", "_pymc.py", "python", "#", "qvr_core.export.pymc"),
    )
}


def target(name: str) -> Target:
    """The target called `name` (case-insensitive); KeyError naming the choices otherwise."""
    found = TARGETS.get(name.strip().lower())
    if found is None:
        raise KeyError(f"unknown export target {name!r} (choose {', '.join(TARGETS)})")
    return found
