"""Paths -> events: each step run with the exact set of locks held at that moment.

A path is walked as a small data-flow program. The state is what is held (lock, mode, instance),
the transaction and the branch taken; branches fork the state and states that are equal are
merged, so a path with many branches stays linear. A loop body is walked twice so the second
iteration meets the first one's instances (that is what makes a "several instances" edge); `run:`
inlines another path in the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from lockdocs import model as m
from lockdocs.diagnostics import Location
from lockdocs.modes import strength


class Held(NamedTuple):
    """A lock held at some moment. A named tuple: events hash their held sets constantly."""

    lock: str
    mode: str
    instance: str  # "" for the path's one instance of the lock
    loop: str = ""  # the innermost loop the instance is per-iteration of
    acquired_at: int = 0  # line, to explain guards
    # Taken with SKIP LOCKED: the row may have been skipped, so a later plain take of the
    # lock is a first acquisition, not a re-take.
    maybe: bool = False


class Event(NamedTuple):
    """One thing a path does, with what it holds then. A named tuple: a large project makes
    tens of thousands, and they are hashed to merge equal states."""

    # acquire | retake | upgrade | release | external | write | commit | begin | leave_open
    kind: str
    path: str
    location: Location
    held: tuple[Held, ...]
    transaction: int
    txkind: str | None
    branch: tuple[str, ...] = ()
    lock: str = ""
    mode: str = ""
    instance: str = ""
    loop: str = ""
    repeated: bool = False
    order: str | None = None
    via: tuple[str, ...] = ()
    through: tuple[str, ...] = ()
    option: str | None = None
    implicit: str | None = None
    changes_key: bool = False
    name: str = ""
    note: str | None = None
    wrote: bool = False  # for release/commit: a write happened earlier in the transaction


class _State(NamedTuple):
    held: tuple[Held, ...]
    transaction: int
    txkind: str | None
    branch: tuple[str, ...]
    open: bool
    wrote: bool


@dataclass(frozen=True)
class _Frame:
    """Where the walk is: the loop nesting and the run: chain."""

    loops: tuple[tuple[str, str | None], ...] = ()  # (loop id, declared order)
    iteration: str = ""
    through: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()  # where each run: step of the chain stands, to tell two runs apart


class Flattener:
    def __init__(self, model: m.Model, backend: str | None = None) -> None:
        self.model = model
        self.backend = backend
        self.events: list[Event] = []
        self._seen: set[Event] = set()

    def lock_kind(self, lock_id: str) -> str:
        lock = self.model.locks[lock_id]
        if self.backend:
            for b in lock.backends:
                if b.name == self.backend:
                    return b.kind
        return lock.kind

    def lock_scope(self, lock_id: str) -> str:
        if self.lock_kind(lock_id) == "memory":
            return "session"
        return self.model.locks[lock_id].scope

    def emit(self, ev: Event) -> None:
        if ev not in self._seen:
            self._seen.add(ev)
            self.events.append(ev)

    # --- transactions ---------------------------------------------------------------------

    def begin(
        self, path: m.Path, st: _State, kind: str | None, loc: Location, frame: _Frame, number: int
    ) -> _State:
        held = tuple(h for h in st.held if self.lock_scope(h.lock) == "session")
        st = _State(held, number, kind, st.branch, True, False)
        self.emit(
            Event(
                "begin",
                path.id,
                loc,
                st.held,
                st.transaction,
                kind,
                st.branch,
                name=kind or "",
                through=frame.through,
            )
        )
        tk = self.model.transactions.get(kind) if kind else None
        if tk and tk.first_lock:
            take = m.Take(
                tk.first_lock,
                tk.first_mode or "exclusive",
                loc,
                via=(tk.opened_by,) if tk.opened_by else (),
            )
            st = self.take(path, st, take, frame)
        return st

    # --- steps ------------------------------------------------------------------------------

    def take(self, path: m.Path, st: _State, step: m.Take, frame: _Frame) -> _State:
        if step.backend and self.backend and step.backend != self.backend:
            return st
        lock_id = step.lock
        mode = step.mode
        if self.backend:
            for b in self.model.locks[lock_id].backends:
                if b.name == self.backend and b.mode and b.kind != self.model.locks[lock_id].kind:
                    mode = b.mode
        kind = self.lock_kind(lock_id)
        loop_id = frame.loops[-1][0] if frame.loops else ""
        order = step.order or (frame.loops[-1][1] if frame.loops else None)
        # A singleton (one fixed key, one table) has one instance wherever it is taken.
        singleton = self.model.locks[lock_id].singleton
        in_loop = bool(frame.loops) and not step.again and not singleton
        if step.instance is not None and not singleton:
            instance = step.instance
        elif in_loop:
            instance = f"{loop_id}#{frame.iteration}"
        else:
            instance = ""
        if step.instance is not None or in_loop:
            same = [
                h for h in st.held if h.lock == lock_id and h.instance == instance and not h.maybe
            ]
        else:  # no instance named: the one already held, if any (a re-take)
            same = [h for h in st.held if h.lock == lock_id and not h.maybe]
        base = Event(
            "acquire",
            path.id,
            step.location,
            st.held,
            st.transaction,
            st.txkind,
            st.branch,
            lock=lock_id,
            mode=mode,
            instance=instance,
            loop=loop_id if in_loop else "",
            repeated=bool(frame.loops),
            order=order,
            via=step.via,
            through=frame.through,
            option=step.how_it_avoids_waiting,
            implicit=step.implicit,
            changes_key=step.changes_key,
            note=step.note,
        )
        if same:
            strongest = max(same, key=lambda h: strength(kind, h.mode))
            if strength(kind, mode) > strength(kind, strongest.mode):
                self.emit(base._replace(kind="upgrade", instance=strongest.instance))
                held = tuple(h._replace(mode=mode) if h == strongest else h for h in st.held)
                return st._replace(held=held)
            self.emit(base._replace(kind="retake"))
            return st
        self.emit(base)
        new = Held(
            lock_id,
            mode,
            instance,
            loop_id if in_loop else "",
            step.location.line,
            step.option == "skip locked",
        )
        return st._replace(held=(*st.held, new))

    def walk(
        self,
        path: m.Path,
        steps: tuple[m.Step, ...],
        states: list[_State],
        frame: _Frame,
        depth: int = 0,
    ) -> list[_State]:
        for step in steps:
            nxt: list[_State] = []
            for st in states:
                nxt.extend(self.step(path, step, st, frame, depth))
            states = _dedupe(nxt)
        return states

    def step(
        self, path: m.Path, step: m.Step, st: _State, frame: _Frame, depth: int
    ) -> list[_State]:
        common = Event(
            "",
            path.id,
            step.location,
            st.held,
            st.transaction,
            st.txkind,
            st.branch,
            through=frame.through,
        )
        if self.backend and step.backend and step.backend != self.backend:
            return [st]
        if isinstance(step, m.Take):
            return [self.take(path, st, step, frame)]
        if isinstance(step, m.Loop):
            site = f"{'/'.join(frame.sites)}>" if frame.sites else ""
            loop_id = f"{path.id}@{site}{step.location.line}"
            states = [st]
            for it in ("1", "2"):
                inner = replace(
                    frame,
                    loops=(*frame.loops, (loop_id, step.order)),
                    iteration=(frame.iteration + "." + it) if frame.iteration else it,
                )
                states = self.walk(path, step.steps, states, inner, depth)
            return states
        if isinstance(step, m.Branches):
            out: list[_State] = []
            for name, alt in step.alternatives:
                forked = st._replace(branch=(*st.branch, name))
                for res in self.walk(path, alt, [forked], frame, depth):
                    out.append(res._replace(branch=st.branch))
            return out
        if isinstance(step, m.Run):
            callee = self.model.paths[step.path]
            if depth > 32:
                return [st]
            inner = replace(
                frame,
                through=(*frame.through, callee.id),
                sites=(*frame.sites, f"{step.location.file}:{step.location.line}"),
            )
            return self.walk(path, callee.steps, [st], inner, depth + 1)
        if isinstance(step, m.External):
            self.emit(common._replace(kind="external", name=step.name, note=step.note))
            return [st]
        if isinstance(step, m.Write):
            self.emit(common._replace(kind="write", name=step.what, via=step.via))
            return [st._replace(wrote=True)]
        if isinstance(step, m.Call):
            return [st]
        if isinstance(step, m.Release):
            self.emit(common._replace(kind="release", lock=step.lock, wrote=st.wrote and st.open))
            return [st._replace(held=tuple(h for h in st.held if h.lock != step.lock))]
        if isinstance(step, m.Begin):
            return [
                self.begin(path, st, step.transaction, step.location, frame, st.transaction + 1)
            ]
        if isinstance(step, m.End):
            self.emit(common._replace(kind=step.how, wrote=st.wrote))
            if step.how == "leave_open":
                return [st]
            held = tuple(h for h in st.held if self.lock_scope(h.lock) == "session")
            return [st._replace(held=held, open=False, wrote=False)]
        raise AssertionError(f"unknown step {step!r}")  # pragma: no cover

    def path(self, path: m.Path) -> None:
        loc = path.location
        start = _State((), 0, None, (), False, False)
        frame = _Frame()
        if path.transaction:
            start = self.begin(path, start, path.transaction, loc, frame, 1)
        else:
            start = start._replace(transaction=1, open=True)
        self.walk(path, path.steps, [start], frame)


def _dedupe(states: list[_State]) -> list[_State]:
    seen: set[_State] = set()
    out: list[_State] = []
    for s in states:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def backends(model: m.Model) -> tuple[str | None, ...]:
    """Each backend the declarations name, or just the one default."""
    names = sorted({b.name for lock in model.locks.values() for b in lock.backends})
    return tuple(names) if names else (None,)


def flatten(model: m.Model, backend: str | None = None, only: str | None = None) -> list[Event]:
    """Every standalone path's events, in declaration order (or one path's, `only`: looked up,
    not searched for, so the page's one call per path stays linear in paths)."""
    f = Flattener(model, backend)
    chosen = model.paths.items() if only is None else [(only, model.paths[only])]
    for _, path in chosen:
        if not path.standalone and only is None:
            continue
        f.path(path)
    return f.events
