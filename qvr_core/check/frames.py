"""What checking one declaration recorded, kept apart so that it can be reused.

The checker records its findings into the frame of the declaration being
checked (the global passes into a frame of their own). A frame also notes
which top-level names the declaration looked up, so that after an edit the
incremental checker (incremental.py) knows which declarations an edit can
have changed: the others keep their frames, moved to their new place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from qvr_core.text.diagnostics import Diagnostic
from qvr_core.text.span import Span


@dataclass
class Frame:
    """The facts recorded while checking one declaration, in its own coordinates."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    references: list[tuple[Span, Any, bool]] = field(default_factory=list)
    typed: dict[Span, tuple[object, str, str]] = field(default_factory=dict)
    expr_types: dict[Any, Any] = field(default_factory=dict)
    reversed_scans: set[Any] = field(default_factory=set)
    reversed_branches: dict[Any, frozenset[int]] = field(default_factory=dict)
    used: set[Any] = field(default_factory=set)
    locals: dict[Any, tuple[Any, Span, Span, Any]] = field(default_factory=dict)
    deps: set[str] = field(default_factory=set)  # top-level names looked up, found or not
    namespace: bool = False  # listed the top-level names (for a did-you-mean)
    volatile: bool = False  # depends on the order of checking (a cycle): never reused
    result: Any = None  # MorphismInfo | LetInfo | ProgramInfo | None

    @cached_property
    def used_top(self) -> frozenset[str]:
        """The top-level names it uses. Read once its declaration is checked: a reused
        frame is asked at every check, and answers from the first time."""
        return frozenset([k.name for k in self.used if k.scope is None])

    def reach(self, start: int, end: int) -> int | None:
        """How far before [start, end) its diagnostics point, or None if they point after it.

        Facts other than diagnostics are recorded at the declaration's own
        nodes; a diagnostic may point elsewhere (the objects it mentions, a
        fix that inserts a declaration). The frame can be moved with its
        declaration only while what it points to before it stays where it
        is: the result is the end of that stretch (0 when none).
        """
        reach = 0
        for d in self.diagnostics:
            spans = [d.span, *(r.span for r in d.related)]
            spans += [e.span for f in d.fixes for e in f.edits]
            for s in spans:
                if s.end > end or (s.start < start < s.end):
                    return None
                if s.start < start:
                    reach = max(reach, s.end)
        return reach


class Current:
    """The frame being recorded into, shared by a context and its name tables.

    (The tables hold this rather than the context itself, so that no
    reference cycle keeps a finished check alive until a cycle collection.)
    """

    __slots__ = ("frame",)

    def __init__(self, frame: Frame) -> None:
        self.frame = frame


class Names(dict):  # type: ignore[type-arg]  # str -> a declaration or its info
    """A name table that notes, in the current frame, every name looked up in it."""

    def __init__(self, owner: Current) -> None:
        super().__init__()
        self.owner = owner

    def get(self, key: str, default: Any = None) -> Any:
        self.owner.frame.deps.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.owner.frame.deps.add(key)  # type: ignore[arg-type]  # a name (str) in practice
        return super().__contains__(key)

    def __getitem__(self, key: str) -> Any:
        self.owner.frame.deps.add(key)
        return super().__getitem__(key)

    def __iter__(self):  # type: ignore[no-untyped-def]  # dict's own signature
        self.owner.frame.namespace = True
        return super().__iter__()

    def keys(self):  # type: ignore[no-untyped-def]  # dict's own signature
        self.owner.frame.namespace = True
        return super().keys()

    def values(self):  # type: ignore[no-untyped-def]  # dict's own signature
        self.owner.frame.namespace = True
        return super().values()

    def items(self):  # type: ignore[no-untyped-def]  # dict's own signature
        self.owner.frame.namespace = True
        return super().items()
