"""Checking a text again after an edit, reusing what the edit cannot have changed.

An editor re-checks a file on every keystroke. `IncrementalChecker` keeps
what its last check learnt per segment (one declaration with the comments
above it, see `layout.segment_starts`): the segment's parse, and the frame
of facts the checker recorded for its declaration (frames.py). On the next
text, a segment whose text is unchanged is not parsed again, and its
declaration keeps its frame unless something it looked up changed:

- a name it looked up is now declared by a different text (or no longer,
  or newly), or another frame it depends on is itself checked again;
- it listed the top-level names (a did-you-mean) and any declaration changed;
- the strictness changed (then nothing is reused);
- its frame depends on the order of checking (a cycle), or mentions a
  position after its own segment, or before it in text that changed (a
  related declaration, a fix that inserts elsewhere).

Reused facts are in the positions of the text they were recorded in. The
diagnostics are moved into place at once; everything else only when the
module's tables are first read (`PendingModule`), so that an edit's
diagnostics do not wait for the whole file's facts to move.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple, TypeVar

from qvr_core.check.checker import (
    Env,
    Facts,
    Run,
    build_module,
    replicate_members,
    run_passes,
)
from qvr_core.check.context import Context, SymbolKey
from qvr_core.check.frames import Frame
from qvr_core.check.kept import Kept, stretch
from qvr_core.check.module import CheckedModule, PendingModule, Stopped
from qvr_core.check.types import Arrow, Group, ObjectType, Product, Scalar, Seq
from qvr_core.collector import collector_paused
from qvr_core.diagnostics import Diagnostic
from qvr_core.syntax import ast
from qvr_core.syntax.parser import (
    Placed,
    Segment,
    common_prefix,
    place_again,
    place_segments,
)
from qvr_core.syntax.shift import Shifter, positionless
from qvr_core.syntax.span import LineIndex, unify_line_ends

_T = TypeVar("_T")

#: Numbers the checks of this process (`Kept.check`).
_CHECKS = itertools.count(1)

log = logging.getLogger(__name__)

# values without positions: reused as they are when facts move
positionless(ObjectType, Product, Seq, Scalar, Arrow, Group, SymbolKey)


@dataclass(frozen=True)
class _Entry:
    """A segment of the last check, with the frames of its declarations (same positions)."""

    segment: Segment
    frames: tuple[Frame | None, ...]  # per declaration; None when it was not checked
    # per frame: how far before the segment its diagnostics point (Frame.reach);
    # None when they point after it, so that it cannot simply move
    reach: tuple[int | None, ...]


@dataclass(frozen=True)
class _State:
    """What one check leaves for the next."""

    entries: dict[str, _Entry]  # by segment text
    identity: dict[str, list[str]]  # top-level name -> texts of the declarations of it
    strict: bool
    text: str
    placed: list[Placed]  # where the entries' segments are in `text`
    # segment text -> what it declares (names, their identity, aliases)
    declared: dict[str, _Declares]

    @cached_property
    def segments(self) -> dict[str, Segment]:
        return {text: e.segment for text, e in self.entries.items()}


class IncrementalChecker:
    """Checks successive versions of one document, each time reusing the last check.

    Checks run one at a time (a lock); the modules it returns are safe to
    share, and to materialize from any thread.
    """

    def __init__(self, *, safe: bool = True) -> None:
        self._state: _State | None = None
        self._kept: Kept | None = None  # the record of the last check
        self._built: int | None = None  # the newest check whose module's tables were built
        self._safe = safe  # tests turn the safety net off, so that bugs surface
        self._lock = threading.Lock()

    def check(
        self, text: str, *, strict: bool = False, memory_budget: int | None = None
    ) -> CheckedModule:
        """Parse and check `text`. Never raises: problems are diagnostics."""
        text = unify_line_ends(text)  # lines end at \n, \r\n and \r alike; offsets unchanged
        with self._lock, collector_paused():
            try:
                return self._check(text, strict, memory_budget)
            except Exception:  # a bug here must cost the reuse, not the diagnostics
                if not self._safe:
                    raise
                log.exception("incremental check failed; checking from scratch")
                self._state = self._kept = None
                return _from_scratch(text, strict, memory_budget)

    def _check(self, text: str, strict: bool, memory_budget: int | None = None) -> CheckedModule:
        state = self._state
        if state is None:
            prefix = 0
            placed = place_segments(text, {})
        else:
            prefix = common_prefix(state.text, text)
            placed = place_again(state.text, state.placed, text, state.segments, prefix)
        plan = _Plan(placed, state, strict, prefix)
        decls, moved, syntax = plan.decls_in_place()

        lines = LineIndex(text)
        module = ast.Module(tuple(decls), (), lines.span(0, len(text)))
        ctx = Context(text=text, module=module, strict=strict, lines=lines, recording=True)
        ctx.memory_budget = memory_budget
        ctx.moved.update(moved)
        env = Env(ctx, plan)
        run = run_passes(ctx, env, module.decls, tuple(syntax))

        kept = self._kept = plan.kept(self._kept, self._built, text, decls, moved)
        self._state = plan.next_state(env, text)
        builder = _Builder(text, placed, plan.shifters, ctx, env, run, moved)

        def build(stop: Callable[[], bool]) -> CheckedModule:
            module = builder.module(stop)
            if self._built is None or kept.check > self._built:
                self._built = kept.check  # later records reach back to it (`Kept.bounded`)
            return module

        return PendingModule(text, run.diagnostics, strict, lines, build, kept=kept)


_UNCHECKED_HERE = (ast.ObjectDecl, ast.ExportDecl)  # the passes over the whole module do these


class _Plan:
    """Which declarations of the new text keep their frames, decided before checking."""

    def __init__(
        self, placed: list[Placed], state: _State | None, strict: bool, prefix: int
    ) -> None:
        self.placed = placed
        self.state = state
        self.prefix = prefix  # the length of the start the old and the new text share
        known = state.declared if state is not None else {}
        self.identity, self.declared, self.twice = _names(placed, known)
        usable = state is not None and state.strict == strict
        self.changed: set[str] = set()  # top-level names whose meaning may differ (`_dirty`)
        self.dirty = self._dirty() if usable else None
        self.reusable: dict[int, Frame] = {}  # by id(decl)
        self.kept_starts: list[int] = []  # where the declarations of `reusable` start now
        self.shifters: list[Shifter | None] = []  # per segment, as used to move its nodes

    def _dirty(self) -> set[str]:
        """Texts of the old segments whose frames the edit may have changed."""
        assert self.state is not None
        old, new = self.state.identity, self.identity
        changed = {n for n in old.keys() | new.keys() if old.get(n) != new.get(n)}
        # an alias (`object State : Hidden * Hidden`) changes with what it names
        changed |= _aliases_of(changed, [*self.state.declared.values(), *self.declared.values()])
        # a did-you-mean lists the names that are valid now: any change may change it
        names_changed = bool(changed)
        # What a frame points at before its declaration must be in the unchanged start
        # of the text (by induction, still at the positions the frame was made at).
        prefix = self.prefix
        checked = [
            (text, frame, reach is not None and reach <= prefix)
            for text, entry in self.state.entries.items()
            for frame, reach in zip(entry.frames, entry.reach, strict=True)
            if frame is not None
        ]
        dirty: set[str] = set()
        growing = True
        while growing:  # until no newly dirty declaration names something others use
            growing = False
            for text, frame, stays in checked:
                if text in dirty:
                    continue
                if (
                    frame.volatile
                    or not stays
                    or (names_changed and frame.namespace)
                    or not frame.deps.isdisjoint(changed)
                ):
                    dirty.add(text)
                    names = set(self.state.declared[text].names) - changed
                    if names:
                        changed |= names
                        growing = True
        self.changed = changed
        return dirty

    def kept(
        self,
        last: Kept | None,
        built: int | None,
        text: str,
        decls: list[ast.Decl],
        moved: dict[int, Shifter],
    ) -> Kept:
        """The record of this check (see kept.py): what it changed and what it reused,
        reaching back to the check numbered `built` when it can."""
        number = next(_CHECKS)
        state = self.state
        if self.dirty is None or state is None or last is None:
            return Kept(number, None)
        first = decls[0].span.start if decls else -1
        if decls and (shift := moved.get(id(decls[0]))) is not None:
            first += shift.chars
        return Kept(
            number,
            last.check,
            last,
            stretch(state.text, text, self.prefix),
            frozenset(self.changed | self.twice),
            frozenset(self.kept_starts),
            first,
        ).bounded(built)

    def decls_in_place(self) -> tuple[list[ast.Decl], dict[int, Shifter], list[Diagnostic]]:
        """The declarations to check, the shifters of those that keep their frames, and
        the parser's diagnostics, in place.

        A declaration that keeps its frame stays where its segment was parsed
        (moving it waits for `_Builder`); every other one is moved now,
        because the checker reads the text at its positions.
        """
        decls: list[ast.Decl] = []
        moved: dict[int, Shifter] = {}
        syntax: list[Diagnostic] = []
        entries = self.state.entries if self.state is not None else {}
        dirty = self.dirty
        seen: set[int] = set()
        for p in self.placed:
            seg = p.segment
            shift = p.shifter()
            if id(seg) in seen:  # the same text again (a duplicate): its own copy of the nodes
                shift = shift or Shifter(0, 0, seg.start)
                self.shifters.append(shift)
                syntax.extend(shift(seg.diagnostics))
                decls.extend(shift(seg.decls))
                continue
            seen.add(id(seg))
            self.shifters.append(shift)
            if seg.diagnostics:
                syntax.extend(shift(seg.diagnostics) if shift is not None else seg.diagnostics)
            if not seg.decls:
                continue
            d = seg.decls[0]
            if (
                p.reused
                and dirty is not None
                and len(seg.decls) == 1  # always, but moving assumes it
                and seg.text not in dirty
                and type(d) not in _UNCHECKED_HERE
            ):
                frame = entries[seg.text].frames[0]
                if frame is not None:
                    self.reusable[id(d)] = frame
                    if shift is not None:
                        moved[id(d)] = shift
                    self.kept_starts.append(d.span.start + (shift.chars if shift else 0))
                    decls.append(d)
                    continue
            decls.extend(shift(seg.decls) if shift is not None else seg.decls)
        return decls, moved, syntax

    # the Reuse protocol of checker.Env
    def frame(self, decl: ast.Decl) -> Frame | None:
        return self.reusable.get(id(decl))

    def next_state(self, env: Env, text: str) -> _State:
        """The entries for the next check: each segment with the frames it has now."""
        old = self.state.entries if self.state is not None else {}
        entries: dict[str, _Entry] = {}
        reusable = self.reusable
        for p, shift in zip(self.placed, self.shifters, strict=True):
            seg = p.segment
            if seg.text in entries:
                continue  # a duplicate: the first is the declaration that counts
            decls = seg.decls
            if p.reused and (not decls or id(decls[0]) in reusable):
                entries[seg.text] = old[seg.text]  # nothing in it was checked again
                continue
            checked = [
                found[1]
                for d in decls
                if id(d) not in reusable
                and (found := env.frames.get(id(shift.memo.get(id(d), d) if shift else d)))
            ]
            if p.reused and not checked:
                entries[seg.text] = old[seg.text]
                continue
            if shift is not None:
                seg = seg.moved(shift)  # its declaration was checked in place
            frames = tuple(_frame_of(env, d) for d in seg.decls)
            reach = tuple(f.reach(seg.start, seg.end) if f is not None else None for f in frames)
            entries[seg.text] = _Entry(seg, frames, reach)
        placed = []
        for p in self.placed:
            kept = entries[p.segment.text].segment
            placed.append(p if p.reused and kept is p.segment else Placed(kept, *p[1:3], True))
        return _State(entries, self.identity, env.ctx.strict, text, placed, self.declared)


def _frame_of(env: Env, decl: ast.Decl) -> Frame | None:
    found = env.frames.get(id(decl))
    return found[1] if found is not None else None


def _declared(decls: Iterable[ast.Decl]) -> list[str]:
    """The top-level names the declarations declare (replicated copies included)."""
    names: list[str] = []
    for d in decls:
        if type(d) is ast.ExportDecl:
            continue
        names.append(d.name.text)
        if type(d) is ast.MorphismDecl and d.options:
            names += replicate_members(d)
    return names


class _Declares(NamedTuple):
    """What a segment declares, as the next check's dependency analysis needs it."""

    names: list[str]  # top-level names, replicated copies included
    key: str  # the declaring text without the comments above it: the names' identity
    aliases: tuple[tuple[str, frozenset[str]], ...]  # (alias, the names it is made of)

    @classmethod
    def of(cls, seg: Segment) -> _Declares:
        aliases = tuple(
            (d.name.text, frozenset(f.text for f in d.body.factors))
            for d in seg.decls
            if type(d) is ast.ObjectDecl and type(d.body) is ast.TypeRef
        )
        return cls(_declared(seg.decls), _declaring_text(seg), aliases)


def _aliases_of(names: set[str], declares: list[_Declares]) -> set[str]:
    """The aliases among `declares` that name any of `names`, transitively."""
    uses: dict[str, set[str]] = {}
    for d in declares:
        for alias, named in d.aliases:
            uses.setdefault(alias, set()).update(named)
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for alias, parts in uses.items():
            if alias not in found and not parts.isdisjoint(names | found):
                found.add(alias)
                grew = True
    return found


def _names(
    placed: list[Placed], known: dict[str, _Declares]
) -> tuple[dict[str, list[str]], dict[str, _Declares], set[str]]:
    """Who declares each top-level name, what each segment declares (`known`: what
    the last check found, by segment text), and the names declared more than once.

    A name's identity is the text of its declaration without the comments
    above it: a changed doc comment changes no frame that uses the name (the
    doc is read from the declaration when the symbol table is built).
    """
    identity: dict[str, list[str]] = {}
    declared: dict[str, _Declares] = {}
    twice: set[str] = set()
    for p in placed:
        seg = p.segment
        entry = known.get(seg.text)
        if entry is None:
            entry = _Declares.of(seg)
        declared[seg.text] = entry
        for n in entry.names:
            if n in identity:
                identity[n].append(entry.key)
                twice.add(n)
            else:
                identity[n] = [entry.key]
    return identity, declared, twice


def _declaring_text(seg: Segment) -> str:
    """The text of the segment's declarations, from the first to the last."""
    if not seg.decls:
        return ""
    return seg.text[seg.decls[0].span.start - seg.start : seg.decls[-1].span.end - seg.start]


class _Builder:
    """Moves everything into place and builds the module's tables (on first use)."""

    def __init__(
        self,
        text: str,
        placed: list[Placed],
        shifters: list[Shifter | None],
        ctx: Context,
        env: Env,
        run: Run,
        moved: dict[int, Shifter],
    ) -> None:
        self.text = text
        self.placed = placed
        self.shifters = shifters
        self.ctx = ctx
        self.env = env
        self.run = run
        self.moved = moved

    def module(self, stop: Callable[[], bool]) -> CheckedModule:
        with collector_paused():
            return self._module(stop)

    def _module(self, stop: Callable[[], bool]) -> CheckedModule:
        moved = self.moved
        segments = []
        for i, (p, shift) in enumerate(zip(self.placed, self.shifters, strict=True)):
            if i % 128 == 0 and stop():
                raise Stopped
            segments.append(p.segment if shift is None else p.segment.moved(shift))
        decls = tuple(d for seg in segments for d in seg.decls)
        comments = tuple(c for seg in segments for c in seg.comments)
        module = ast.Module(decls, comments, self.ctx.lines.span(0, len(self.text)))

        def real(value: _T) -> _T:
            decl = getattr(value, "decl", value)
            shift = moved.get(id(decl))
            return value if shift is None else shift(value)

        frames = [self.run.globals]
        for i, (decl, frame) in enumerate(self.env.in_order(self.ctx.module.decls)):
            if i % 128 == 0 and stop():
                raise Stopped
            shift = moved.get(id(decl))
            frames.append(frame if shift is None else _moved_frame(frame, shift))
        facts = Facts.merge(frames)
        top = {n: real(d) for n, d in self.ctx.top.items()}
        morphisms = {n: real(i) for n, i in self.env.morphisms.items()}
        lets = {n: real(i) for n, i in self.env.lets.items()}
        programs = {n: real(i) for n, i in self.env.programs.items()}
        if stop():
            raise Stopped
        return build_module(
            self.text,
            module,
            self.run,
            self.ctx,
            morphisms,
            lets,
            programs,
            top,
            facts,
        )


def _moved_frame(frame: Frame, shift: Shifter) -> Frame:
    span = shift.span
    moved = Frame(
        references=[(span(s), key, d) for s, key, d in frame.references],
        typed={span(s): v for s, v in frame.typed.items()},
        expr_types={shift(e): t for e, t in frame.expr_types.items()},
        reversed_scans={shift(c) for c in frame.reversed_scans},
        reversed_branches={shift(c): v for c, v in frame.reversed_branches.items()},
        locals={k: (kind, span(a), span(b), t) for k, (kind, a, b, t) in frame.locals.items()},
    )
    return moved


def _from_scratch(text: str, strict: bool, memory_budget: int | None = None) -> CheckedModule:
    from qvr_core.check import check

    return check(text, strict=strict, memory_budget=memory_budget)
