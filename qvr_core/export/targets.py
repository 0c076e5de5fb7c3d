"""The languages a checked model exports to, one record each.

The editor's setting, `qvr export --to` and `qvr check --target` accept exactly
these names; `qvr_core.export.api.emitter` finds each one's emitter module.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass

#: Words the Python targets never use as a name: the keywords, the soft keywords (of
#: every Python the exports run on, not only this one's) and `__debug__`, which a
#: program cannot assign.
PYTHON_WORDS = frozenset(
    {*keyword.kwlist, *keyword.softkwlist, "_", "case", "match", "type", "__debug__"}
)


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

    def file_name(self, stem: str) -> str:
        """The name to save the export of a source named `stem` under: its letters,
        digits, `_` and `-`, every other character (a line break, a quote, a slash, a
        dot, anything outside ASCII) as `_`, so the suggestion is one plain file name
        and, for a Python target, an importable module name. A file's name is text from
        outside the program, as in `shown_source`."""
        plain = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in stem)
        plain = plain.strip("_-") or "untitled"
        if self.language == "python":
            plain = plain.replace("-", "_")
            if plain[0].isdigit() or plain in PYTHON_WORDS:
                plain = "_" + plain
        return plain + self.suffix


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("stan", "Stan", ".stan", "stan", "//"),
        Target("numpyro", "NumPyro", "_numpyro.py", "python", "#"),
        Target("pymc", "PyMC", "_pymc.py", "python", "#"),
    )
}


def target(name: str) -> Target:
    """The target called `name` (case-insensitive); KeyError naming the choices otherwise."""
    found = TARGETS.get(name.strip().lower())
    if found is None:
        raise KeyError(f"unknown export target {name!r} (choose {', '.join(TARGETS)})")
    return found
