"""Write the table of which family each export target writes into docs/export.md.

    .venv/bin/python scripts/gen_export_table.py

The table sits between the markers of `qvr_core.export.coverage`;
tests/export/test_coverage.py fails while the committed page differs from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qvr_core.export.coverage import BEGIN, END, table  # noqa: E402

PAGE = ROOT / "docs" / "export.md"


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    PAGE.write_text(text[:start] + table() + text[stop:], encoding="utf-8")


if __name__ == "__main__":
    main()
