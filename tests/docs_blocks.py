"""The code blocks docs/editors.md gives users to copy, read by the tests that run them, so
the documented set-up is the tested one."""

from __future__ import annotations

from tests.conftest import ROOT


def lua_block(heading: str) -> str:
    """The first Lua block after the section `heading` (its `### ...` line) of
    docs/editors.md."""
    page = (ROOT / "docs" / "editors.md").read_text(encoding="utf-8")
    section = page[page.index(heading) :]
    start = section.index("```lua\n") + len("```lua\n")
    return section[start : section.index("\n```", start)]
