"""scripts/build_docs.py: the docs rendered with the QVR lexer; a block that is not QVR fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "scripts/build_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_real_docs_build_and_their_qvr_blocks_are_highlighted(tmp_path: Path) -> None:
    assert _script().main([str(tmp_path)]) == 0
    page = (tmp_path / "docs" / "gallery" / "eight_schools.html").read_text(encoding="utf-8")
    assert '<div class="codehilite">' in page
    assert '<span class="k">sample</span>' in page
    assert '<span class="kd">program</span>' in page
    assert '<span class="nb">Normal</span>' in page
    assert 'class="err"' not in page
    assert ".codehilite .k" in (tmp_path / "pygments.css").read_text(encoding="utf-8")
    readme = (tmp_path / "README.html").read_text(encoding="utf-8")
    assert 'href="docs/diagnostics.html"' in readme  # links between pages follow them
    assert (tmp_path / "docs" / "images" / "vscode" / "fit-energy.png").is_file()


BAD = """\
# A page

```qvr
object A : FinSet 2
let x = y ; z
```

```text
not QVR; never lexed
```
"""


def test_a_qvr_block_that_does_not_lex_fails_the_build_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "README.md").write_text("# Readme\n", encoding="utf-8")
    (repo / "docs" / "bad.md").write_text(BAD, encoding="utf-8")
    monkeypatch.setattr(script, "ROOT", repo)
    monkeypatch.setattr(script, "DOCS", repo / "docs")
    assert script.main([str(tmp_path / "out")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["docs/bad.md:5: the qvr block does not lex: unexpected ';'"]
    assert (tmp_path / "out" / "docs" / "bad.html").is_file()


def test_blocks_are_found_indented_and_with_longer_fences() -> None:
    text = "1. a step\n\n   ````qvr\n   let x = 1\n   ````\n"
    assert list(_script().qvr_blocks(text)) == [(4, "let x = 1")]
