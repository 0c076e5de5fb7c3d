"""`bench/corpus.py --guides` reads quivers' guides as quivers' doc tests do: every ```qvr
block with the compile mode of the comment before it, a cumulative block joined to the
guide's earlier cumulative ones. The markdown is our own, shaped like a guide."""

from __future__ import annotations

from pathlib import Path

from bench.guide_blocks import blocks_of, guide_blocks

GUIDE = """# A guide

Prose first.

```qvr
object A : FinSet 2
```

<!-- compile: false -->
```qvr
program p : A -> A
```

<!-- compile: cumulative -->

```qvr
object B : FinSet 3
```

Some prose between.

<!-- compile: cumulative -->
```qvr
object C : A * B
```

1. A list item with a block:

   ```qvr
   object D : FinSet 4
   ```

````markdown
```qvr
object E : FinSet 5
```
````
"""


def test_each_block_with_its_mode() -> None:
    found = blocks_of("g.md", GUIDE)
    assert [(b.index, b.mode) for b in found] == [
        (1, "alone"),
        (2, "false"),
        (3, "cumulative"),
        (4, "cumulative"),
        (5, "alone"),
        (6, "alone"),
    ]
    assert found[0].text == "object A : FinSet 2\n"
    assert not found[1].compiled and found[0].compiled
    # a cumulative block is checked with the guide's earlier cumulative ones
    assert found[3].text == "object B : FinSet 3\n\nobject C : A * B\n"
    assert found[4].text == "object D : FinSet 4\n"  # the list item's indent removed
    assert found[5].text == "object E : FinSet 5\n"  # inside another fence, still qvr


def test_a_folder_is_read_in_path_order(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text(GUIDE, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text("```qvr\nobject Z : FinSet 1\n```\n", encoding="utf-8")
    names = [b.name for b in guide_blocks(tmp_path)]
    assert names[0] == "b.md#1" and names[-1] == "sub/a.md#1" and len(names) == 7
