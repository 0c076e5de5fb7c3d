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

The passes over the whole module (checker.py) run at every check, over
thousands of declarations in a large file, so they take what they can from
the last check too (the `Reuse` protocol): the table of top-level names when
the same names are declared in the same order (`_Plan.collected`), the names
each let and program uses (`nesting.UsesMemo`), and each kept frame's result.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from math import inf
from operator import attrgetter, itemgetter
from typing import NamedTuple, TypeVar

from qvr_core.check import check
from qvr_core.check.checker import (
    Env,
    Facts,
    Run,
    build_module,
    checked_records,
    replicate_members,
    run_passes,
)
from qvr_core.check.context import COMBINATORS, Context, SymbolKey
from qvr_core.check.frames import Frame
from qvr_core.check.kept import Kept, stretch
from qvr_core.check.module import CheckedModule, PendingModule, Stopped
from qvr_core.check.nesting import Uses, UsesMemo
from qvr_core.check.types import Arrow, Group, ObjectType, Product, Scalar, Seq
from qvr_core.check.unchecked import declared_names
from qvr_core.host.collector import collector_paused
from qvr_core.syntax import ast
from qvr_core.syntax.parser import (
    Placed,
    Segment,
    common_prefix,
    place_again,
    place_segments,
)
from qvr_core.syntax.shift import Shifter, positionless
from qvr_core.text.diagnostics import Diagnostic
from qvr_core.text.span import LineIndex, unify_line_ends

_T = TypeVar("_T")
_SEGMENT, _TEXT = itemgetter(0), attrgetter("text")  # of a `Placed`, of a `Segment`

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

    @cached_property
    def keeping(self) -> tuple[ast.Decl, Frame | None, int] | None:
        """Its one declaration, the frame it keeps and where it starts, when its text is
        unchanged and nothing the frame depends on changed (`decls_in_place`): None
        when the segment is not one declaration checked on its own. The frame is None
        for an `export name`, which the export pass places itself (`Context.real`),
        so that it need not move."""
        decls = self.segment.decls
        if len(decls) != 1:
            return None
        d = decls[0]
        if type(d) is ast.ExportDecl:
            return (d, None, d.span.start) if d.expr is None else None
        if type(d) is ast.ObjectDecl or self.frames[0] is None:
            return None
        return d, self.frames[0], d.span.start

    @cached_property
    def depends(self) -> tuple[float, bool, frozenset[str]] | None:
        """What `_Plan._dirty` reads of its frames, together: how far before the segment
        they point (inf: they cannot move, see `reach`, or depend on the order of
        checking), whether any listed the top-level names, and the names they looked
        up; None when none was checked."""
        frames = [(f, r) for f, r in zip(self.frames, self.reach, strict=True) if f is not None]
        if not frames:
            return None
        reach = max(inf if r is None or f.volatile else r for f, r in frames)
        deps = frozenset().union(*(f.deps for f, _ in frames))
        return reach, any(f.namespace for f, _ in frames), deps


@dataclass(frozen=True)
class _State:
    """What one check leaves for the next."""

    entries: dict[str, _Entry]  # by segment text
    identity: dict[str, str | tuple[str, ...]]  # top-level name -> its declaration's text
    strict: bool
    text: str
    placed: list[Placed]  # where the entries' segments are in `text`
    # segment text -> what it declares (names, their identity, aliases)
    declared: dict[str, _Declares]
    aliasing: list[_Declares]  # those that declare aliases
    # the top-level names' declarations when each name is declared once (see
    # `_Plan.collected`), else None
    top: dict[str, ast.Decl] | None

    @property
    def segments(self) -> Mapping[str, Segment]:
        return _Segments(self.entries)


class _Segments(Mapping[str, Segment]):
    """The entries' segments by text, read through (not copied at every check)."""

    def __init__(self, entries: dict[str, _Entry]) -> None:
        self._entries = entries

    def __getitem__(self, text: str) -> Segment:
        return self._entries[text].segment

    def get(self, text: str, default: Segment | None = None) -> Segment | None:  # type: ignore[override]  # the one form `place_segments` uses, fast
        entry = self._entries.get(text)
        return entry.segment if entry is not None else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


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
        self._uses = UsesMemo()  # the names each let and program uses, by declaration

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
                self._uses = UsesMemo()
                return _from_scratch(text, strict, memory_budget)

    def _check(self, text: str, strict: bool, memory_budget: int | None = None) -> CheckedModule:
        state = self._state
        if state is None:
            prefix = 0
            placed = place_segments(text, {})
        else:
            prefix = common_prefix(state.text, text)
            placed = place_again(state.text, state.placed, text, state.segments, prefix)
        self._uses.next_check()
        plan = _Plan(placed, state, strict, prefix, self._uses)
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

        return PendingModule(
            text,
            run.diagnostics,
            strict,
            lines,
            build,
            kept=kept,
            recheck=lambda: check(text, strict=strict),
        )


class _Plan:
    """Which declarations of the new text keep their frames, decided before checking."""

    def __init__(
        self,
        placed: list[Placed],
        state: _State | None,
        strict: bool,
        prefix: int,
        uses: Callable[[Uses], tuple[str, ...]],
    ) -> None:
        self.placed = placed
        self.state = state
        self.prefix = prefix  # the length of the start the old and the new text share
        self.uses = uses
        known = state.declared if state is not None else {}
        self.identity, self.declared, self.twice, self.aliasing = _names(placed, known)
        usable = state is not None and state.strict == strict
        self.changed: set[str] = set()  # top-level names whose meaning may differ (`_dirty`)
        self.dirty = self._dirty() if usable else None
        self.reusable: dict[int, Frame] = {}  # by id(decl)
        self.fresh: list[ast.Decl] = []  # the declarations to check, not those of `reusable`
        self.renewed: list[int] = []  # indices in `placed` of the segments not kept whole
        self.copies: set[int] = set()  # those of them that repeat an earlier segment
        self.top: dict[str, ast.Decl] | None = None  # what `collected` gave
        self.kept_starts: list[int] = []  # where the declarations of `reusable` start now
        self.shifters: list[Shifter | None] = []  # per segment, as used to move its nodes

    def _dirty(self) -> set[str]:
        """Texts of the old segments whose frames the edit may have changed."""
        state = self.state
        assert state is not None
        changed = {n for n, _ in state.identity.items() ^ self.identity.items()}
        # an alias (`object State : Hidden * Hidden`) changes with what it names
        changed |= _aliases_of(changed, [*state.aliasing, *self.aliasing])
        # a did-you-mean lists the names that are valid now: any change may change it
        names_changed = bool(changed)
        # What a frame points at before its declaration must be in the unchanged start
        # of the text (by induction, still at the positions the frame was made at).
        prefix = self.prefix
        checked = [(text, d) for text, e in state.entries.items() if (d := e.depends) is not None]
        dirty: set[str] = set()
        while True:  # until no newly dirty declaration names something others use
            found = {
                text
                for text, (reach, namespace, deps) in checked
                if text not in dirty
                and (
                    reach > prefix or (names_changed and namespace) or not deps.isdisjoint(changed)
                )
            }
            if not found:
                break
            dirty |= found
            named = {n for text in found for n in state.declared[text].names} - changed
            if not named:
                break
            changed |= named
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
        because the checker reads the text at its positions. (One loop over
        thousands of segments, at every edit: kept lean.)
        """
        decls: list[ast.Decl] = []
        moved: dict[int, Shifter] = {}
        syntax: list[Diagnostic] = []
        entries = self.state.entries if self.state is not None else {}
        usable, dirty = self.dirty is not None, self.dirty or set()
        fresh, renewed, shifters = self.fresh, self.renewed, self.shifters
        reusable, kept_starts = self.reusable, self.kept_starts
        placed = self.placed
        # the same text twice (a duplicate) is the same segment twice: rare, looked for once
        twice = len(set(map(id, map(_SEGMENT, placed)))) < len(placed)
        seen: set[int] | None = set() if twice else None
        for i, (seg, start, line, reused) in enumerate(placed):
            if seg.start == start and seg.line == line:
                shift = None
            else:
                shift = Shifter(start - seg.start, line - seg.line, seg.start)
            if seen is not None:
                if id(seg) in seen:  # a duplicate: its own copy of the nodes
                    shift = shift or Shifter(0, 0, seg.start)
                    shifters.append(shift)
                    syntax.extend(shift(seg.diagnostics))
                    copies = shift(seg.decls)
                    decls.extend(copies)
                    fresh.extend(copies)
                    renewed.append(i)
                    self.copies.add(i)
                    continue
                seen.add(id(seg))
            shifters.append(shift)
            if seg.diagnostics:
                syntax.extend(shift(seg.diagnostics) if shift is not None else seg.diagnostics)
            if reused and usable and seg.text not in dirty:
                keeping = entries[seg.text].keeping
                if keeping is not None:
                    d, frame, at = keeping
                    if frame is not None:
                        reusable[id(d)] = frame
                        kept_starts.append(at if shift is None else at + shift.chars)
                    if shift is not None:
                        moved[id(d)] = shift
                    decls.append(d)
                    continue
            if not seg.decls:
                if not reused:
                    renewed.append(i)
                continue
            checked = shift(seg.decls) if shift is not None else seg.decls
            decls.extend(checked)
            fresh.extend(checked)
            renewed.append(i)
        return decls, moved, syntax

    # the Reuse protocol of checker.Env (`reusable` and `uses` are attributes)
    def collected(self) -> dict[str, ast.Decl] | None:
        """The last check's table of top-level names with the new declarations in it,
        when the same names are declared in the same order, each once, none a
        combinator's (so that `_collect` would report nothing and build this table)."""
        state = self.state
        if (
            state is None
            or state.top is None
            or not _declared_once(self.identity, self.twice)
            or list(state.identity) != list(self.identity)
        ):
            return None
        top = dict(state.top)  # the declarations kept are the very objects it holds
        for d in self.fresh:
            for n in _declared((d,)):
                top[n] = d
        self.top = top
        return top

    def next_state(self, env: Env, text: str) -> _State:
        """The entries for the next check: each segment with the frames it has now.

        A segment `decls_in_place` kept whole keeps its entry; only the others
        (`renewed`) are looked at.
        """
        old = self.state.entries if self.state is not None else {}
        placed = self.placed
        # every text's entry as it was (None for a new text: each new one is renewed)
        texts = list(map(_TEXT, map(_SEGMENT, placed)))
        entries: dict[str, _Entry] = dict(zip(texts, map(old.get, texts), strict=True))  # type: ignore[arg-type]  # filled below
        new_placed = list(placed)
        done: set[str] = set()  # texts whose first segment was renewed
        reusable = self.reusable
        for i in self.renewed:
            p, shift = placed[i], self.shifters[i]
            seg = p.segment
            if i not in self.copies and seg.text not in done:  # the first of its text
                done.add(seg.text)
                entries[seg.text] = _renewed(env, p, shift, old, reusable)
            kept = entries[seg.text].segment
            if not (p.reused and kept is seg):
                new_placed[i] = Placed(kept, p.start, p.line, True)
        top = self.top
        if top is None and _declared_once(self.identity, self.twice):
            top = dict(dict.items(env.ctx.top))  # (a plain read: the table notes nothing)
        return _State(
            entries,
            self.identity,
            env.ctx.strict,
            text,
            new_placed,
            self.declared,
            self.aliasing,
            top,
        )


def _renewed(
    env: Env, p: Placed, shift: Shifter | None, old: dict[str, _Entry], reusable: dict[int, Frame]
) -> _Entry:
    """The entry of a segment some of whose declarations were checked again (or that is
    new): the frames it has now, or its old entry when none was checked."""
    seg = p.segment
    decls = seg.decls
    if p.reused and (not decls or id(decls[0]) in reusable):
        return old[seg.text]  # nothing in it was checked again
    checked = [
        found[1]
        for d in decls
        if id(d) not in reusable
        and (found := env.frames.get(id(shift.memo.get(id(d), d) if shift else d)))
    ]
    if p.reused and not checked and not any(old[seg.text].frames):
        return old[seg.text]  # checked again, and as before without frames (an object)
    # (checked again without frames where it had some, as a name declared twice is: the
    # old frames are out of date, and kept they would be reused once the name is not)
    if shift is not None:
        seg = seg.moved(shift)  # its declaration was checked in place
    frames = tuple(_frame_of(env, d) for d in seg.decls)
    reach = tuple(f.reach(seg.start, seg.end) if f is not None else None for f in frames)
    return _Entry(seg, frames, reach)


def _declared_once(identity: dict[str, str | tuple[str, ...]], twice: set[str]) -> bool:
    """Whether `_collect` reports nothing: no name declared twice, none a combinator's."""
    return not twice and identity.keys().isdisjoint(COMBINATORS)


def _frame_of(env: Env, decl: ast.Decl) -> Frame | None:
    found = env.frames.get(id(decl))
    return found[1] if found is not None else None


def _declared(decls: Iterable[ast.Decl]) -> list[str]:
    """The top-level names the declarations declare (replicated copies included)."""
    names: list[str] = []
    for d in decls:
        names += [n.text for n in declared_names(d)]  # (the order `_collect` puts them in)
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
            (name.text, frozenset(f.text for f in d.body.factors))
            for d in seg.decls
            if type(d) is ast.ObjectDecl and type(d.body) is ast.TypeRef
            for name in d.names
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
) -> tuple[dict[str, str | tuple[str, ...]], dict[str, _Declares], set[str], list[_Declares]]:
    """Who declares each top-level name, what each segment declares (`known`: what
    the last check found, by segment text), the names declared more than once, and
    the segments that declare aliases.

    A name's identity is the text of its declaration without the comments
    above it (a tuple of them, in order, when it is declared more than once): a
    changed doc comment changes no frame that uses the name (the doc is read
    from the declaration when the symbol table is built).
    """
    texts = list(map(_TEXT, map(_SEGMENT, placed)))
    found = list(map(known.get, texts))
    for i in [i for i, entry in enumerate(found) if entry is None]:
        found[i] = _Declares.of(placed[i][0])
    declares: list[_Declares] = found  # type: ignore[assignment]  # none is None now
    declared = dict(zip(texts, declares, strict=True))
    pairs = [(n, entry.key) for entry in declares for n in entry.names]
    identity: dict[str, str | tuple[str, ...]] = dict(pairs)  # each name where first declared
    twice: set[str] = set()
    if len(identity) < len(pairs):
        keys: dict[str, list[str]] = {}
        for n, key in pairs:
            keys.setdefault(n, []).append(key)
        twice = {n for n, k in keys.items() if len(k) > 1}
        for n in twice:
            identity[n] = tuple(keys[n])
    return identity, declared, twice, [entry for entry in declares if entry.aliases]


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
            *checked_records(self.env, self.ctx.module.decls),
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
