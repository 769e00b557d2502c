"""Paths -> events: each step run with the set of locks held at that moment.

A path is walked as a small data-flow program over a set of states. A state is what is held
(lock, mode, instance), the transaction and the branch taken. Branches fork the state and equal
states are merged; past `MAX_STATES` states at one step they are joined into one, and a lock not
held on every joined state is kept as a `maybe` hold (it still makes its edges, but never keeps
two transactions apart), so the walk stays linear in the declarations however many branches
follow each other.

A loop with no loop inside is walked twice, exactly: the second iteration (instances `#2`) starts
from what the first (`#1`) holds, which is what makes a "several instances" edge. A loop with
loops inside is walked once, from the state before it plus what earlier iterations may still
hold (each a `maybe` hold under an earlier iteration's instance name, `#1`), so nesting costs
one walk per level, however deep. After a loop the walk goes on from both "some iterations"
and "no iteration at all" (a loop may run zero times).

`run:` inlines another path in the caller's transaction. The walk keeps an explicit stack, so a
chain of runs has no recursion limit, and it counts its work: a path that needs more than
`PATH_BUDGET` units (states times steps, plus the size of every held set it records) is refused
with a `Refusal`, reported as LD209, rather than exhausting time or memory.

Instances (see docs/concepts.md):
- a singleton has one instance wherever it is taken;
- `instance: NAME` names one instance, the same in every loop iteration;
- an unnamed take inside a loop is the iteration's instance of that lock; several locks taken in
  one iteration belong to one element, but nothing is assumed about how another lock's
  instances relate across iterations (two pools may share a ledger): only the loop's element
  lock (the first lock taken in the body whose declared instance order is the loop's order)
  follows the loop's order;
- an unnamed take outside a loop is the path's one instance, which may or may not be one of the
  instances a loop took; `again: true` re-takes an instance the path already holds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, NamedTuple

from lockdocs import model as m
from lockdocs.diagnostics import Location
from lockdocs.modes import conflicts, covers, modes_for_kind

# Joined into one state past this many at one step (see the module docstring).
MAX_STATES = 64
# Work units one path may take (a unit is one state through one step, or one held lock recorded
# in an event) unless locks.yaml says otherwise (`limits: {path_work: N}`).
PATH_BUDGET = m.Limits().path_work
# Work units one flatten may take over every path: this many times the path budget.
TOTAL_FACTOR = 20


class Held(NamedTuple):
    """A lock held at some moment. A named tuple: events hash their held sets constantly."""

    lock: str
    mode: str
    instance: str  # "" for the path's one instance of the lock (or a singleton's one)
    run: str = ""  # the sorted run of a loop this instance belongs to, "" if none
    acquired_at: int = 0  # line, to explain guards
    # Maybe not held: taken with SKIP LOCKED (the row may have been skipped), taken in an
    # earlier loop iteration or in a loop that may not have run, or held on some joined states
    # only. A maybe hold makes edges but never gates; a later take of it is both a re-take and
    # a first acquisition.
    maybe: bool = False
    # For a lock declared `instances: {within: P}`: "@" + the instance of P it was taken under
    # (held for sure then), "" if none; see graph.Edge.wanted_parent.
    parent: str = ""


class Event(NamedTuple):
    """One thing a path does, with what it holds then. A named tuple: a large project makes
    tens of thousands, and they are hashed to merge equal states."""

    # acquire | retake | upgrade | release | external | write | commit | rollback | begin |
    # leave_open
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
    run: str = ""  # for a take: the sorted run the instance belongs to, "" if none
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
    # For an upgrade: the modes this transaction already holds the instance in.
    upgrade_from: tuple[str, ...] = ()
    loops: tuple[str, ...] = ()  # for a take: the loops it stands in, outermost first
    parent: str = ""  # for a take of a lock within a parent: see Held.parent


class _State(NamedTuple):
    held: tuple[Held, ...]
    transaction: int
    txkind: str | None
    branch: tuple[str, ...]
    open: bool
    wrote: bool
    # A loop before this point ran zero times here. Its writes are not events: a write after a
    # loop that found nothing to do is taken to write nothing (the state where the loop ran
    # reports every write that lacks a lock anyway).
    skipped: bool = False


class _LoopFrame(NamedTuple):
    id: str
    order: str | None
    element: str | None  # the lock whose instances follow the loop's order


@dataclass(frozen=True)
class _Frame:
    """Where the walk is: the loop nesting and the run: chain."""

    loops: tuple[_LoopFrame, ...] = ()
    iteration: tuple[str, ...] = ()  # per enclosing loop: "2" now, "1" an earlier iteration
    through: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()  # where each run: step of the chain stands, to tell two runs apart

    @cached_property
    def loop_ids(self) -> tuple[str, ...]:
        return tuple(lf.id for lf in self.loops)


@dataclass(frozen=True)
class Refusal:
    """A path too large to analyse: the run must stop (LD209) rather than guess."""

    path: str
    location: Location
    units: int
    budget: int
    scope: str  # "path" | "total"


class _Stop(Exception):
    """Internal: the budget ran out; turned into a Refusal by `flatten`."""


class _Item(NamedTuple):
    """A take a loop body may still hold at the end of an iteration."""

    lock: str
    mode: str
    # "": the iteration's instance; "*": a nested loop's; "=NAME": a named instance ("=" alone:
    # the one instance); "again": a re-take (of the path's one instance if nothing was taken
    # before it); a leading "~": session-scoped, it survives the end of a transaction.
    where: str
    order: str | None  # the take's own order
    line: int


@dataclass(frozen=True)
class _Summary:
    """What a run of some steps does to the may-held set: (held - dropped) | added, where a
    commit, rollback or begin drops every transaction-scoped lock and release drops its lock.
    Sequences compose, alternatives join (drop only what every one drops)."""

    drops_transaction: bool = False
    released: frozenset[str] = frozenset()
    added: tuple[_Item, ...] = ()

    def then(self, nxt: _Summary) -> _Summary:
        """This, then `nxt`."""
        kept = tuple(
            it
            for it in self.added
            if it.lock not in nxt.released
            and not (nxt.drops_transaction and not it.where.startswith("~"))
        )
        # A re-take (`again`) of a lock this sequence has already taken adds nothing.
        taken = {it.lock for it in kept if not it.where.endswith("again")}
        added = tuple(
            it for it in nxt.added if not (it.where.endswith("again") and it.lock in taken)
        )
        return _Summary(
            self.drops_transaction or nxt.drops_transaction,
            self.released | nxt.released,
            _unique((*kept, *added)),
        )

    def join(self, other: _Summary) -> _Summary:
        """This or `other`."""
        return _Summary(
            self.drops_transaction and other.drops_transaction,
            self.released & other.released,
            _unique((*self.added, *other.added)),
        )


def _unique(items: tuple[_Item, ...]) -> tuple[_Item, ...]:
    return tuple(dict.fromkeys(items))


@dataclass
class Flattener:
    model: m.Model
    backend: str | None = None
    events: list[Event] = field(default_factory=list)
    _seen: set[Event] = field(default_factory=set)
    units: int = 0
    _path_start: int = 0
    _limit: int = 0
    _summaries: dict[str, _Summary] = field(default_factory=dict)
    _elements: dict[int, str | None] = field(default_factory=dict)
    _innermost: dict[int, bool] = field(default_factory=dict)

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

    def _spend(self, n: int) -> None:
        self.units += n
        if self.units > self._limit:
            raise _Stop

    def emit(self, ev: Event) -> None:
        if ev not in self._seen:
            self.units += 1 + len(ev.held)
            if self.units > self._limit:
                raise _Stop
            self._seen.add(ev)
            self.events.append(ev)

    def _skip(self, step: m.Step) -> bool:
        return bool(self.backend and step.backend and step.backend != self.backend)

    def _mode(self, step: m.Take) -> str:
        mode = step.mode
        if self.backend:
            lock = self.model.locks[step.lock]
            for b in lock.backends:
                if b.name == self.backend and b.mode and b.kind != lock.kind:
                    mode = b.mode
        return mode

    # --- transactions ---------------------------------------------------------------------

    def begin(
        self, path: m.Path, st: _State, kind: str | None, loc: Location, frame: _Frame, number: int
    ) -> list[_State]:
        held = tuple(h for h in st.held if self.lock_scope(h.lock) == "session")
        st = _State(held, number, kind, st.branch, True, False, st.skipped)
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
            return self.take(path, st, take, frame)
        return [st]

    # --- takes ------------------------------------------------------------------------------

    def _instance(self, step: m.Take, frame: _Frame) -> tuple[str, str]:
        """(instance, sorted run) of a take that is not a re-take (`again`)."""
        lock = self.model.locks[step.lock]
        if lock.singleton:
            return "", ""
        if step.instance is not None:
            return step.instance, ""
        if not frame.loops:
            return "", ""
        loop = frame.loops[-1]
        instance = f"{loop.id}#{'.'.join(frame.iteration)}"
        order = step.order or (loop.order if step.lock == loop.element else None)
        if order is not None and order == lock.instance_order:
            return instance, f"{loop.id}#{'.'.join(frame.iteration[:-1])}"
        return instance, ""

    def take(self, path: m.Path, st: _State, step: m.Take, frame: _Frame) -> list[_State]:
        """The states after `step`; a take of a lock held maybe, or `again` with several
        instances held, has one outcome per possibility."""
        if self._skip(step):
            return [st]
        lock_id = step.lock
        lock = self.model.locks[lock_id]
        if step.again and not lock.singleton:
            # The instance already held (one of them, if several): a certain one first, else
            # one held maybe; with none held, the path's one instance.
            mine = [h for h in st.held if h.lock == lock_id]
            pick = [h for h in mine if not h.maybe] or mine
            runs = {h.instance: h.run for h in reversed(pick)}
            targets = [(inst, runs[inst]) for inst in dict.fromkeys(h.instance for h in pick)]
            targets = targets or [("", "")]
        else:
            targets = [self._instance(step, frame)]
        out: list[_State] = []
        mode = self._mode(step)
        loops = frame.loops
        # A loop's order is the order its iterations visit things in: a named instance taken
        # in its body is the same row in every iteration, in no order unless the take says so
        # (two runs can name a and b the other way round).
        order = step.order
        if order is None and step.instance is None and loops:
            order = loops[-1].order
        parent = _parent(st.held, lock.within, step.under) if lock.within else ""
        avoids = step.how_it_avoids_waiting
        for instance, run in targets:
            # (positional: a take is the hottest path of the analysis)
            ev = Event(
                "acquire", path.id, step.location, st.held, st.transaction, st.txkind,
                st.branch, lock_id, mode, instance, run, bool(loops), order, step.via,
                frame.through, avoids, step.implicit, step.changes_key, "", step.note,
                False, (), frame.loop_ids, parent,
            )  # fmt: skip
            for h in st.held:
                if h.lock == lock_id and h.instance == instance:
                    break
            else:
                # The common case: a first acquisition of an instance not held at all.
                self.emit(ev)
                held = Held(
                    lock_id,
                    mode,
                    instance,
                    run,
                    step.location.line,
                    step.option == "skip locked",
                    parent,
                )
                out.append(_State((*st.held, held), *st[1:]))
                continue
            out.extend(self._take_instance(st, ev, step))
        return out

    def _take_instance(self, st: _State, ev: Event, step: m.Take) -> list[_State]:
        lock_id, mode, instance, run = ev.lock, ev.mode, ev.instance, ev.run
        kind = self.lock_kind(lock_id)
        same = [h for h in st.held if h.lock == lock_id and h.instance == instance]
        must = tuple(dict.fromkeys(h.mode for h in same if not h.maybe))
        maybe = tuple(dict.fromkeys(h.mode for h in same if h.maybe and h.mode not in must))
        line = step.location.line

        def after() -> _State:
            # Every mode still needed of this instance (a table lock held SHARE and ROW
            # EXCLUSIVE is both); the new one only maybe with SKIP LOCKED (the row may have been
            # skipped), and kept apart from the modes held for sure.
            at = min((h.acquired_at for h in same if not h.maybe), default=line)
            parent = next((h.parent for h in same if not h.maybe and h.parent), ev.parent)
            new = Held(lock_id, mode, instance, run, at, step.option == "skip locked", parent)
            mine = _reduce(
                kind, (*(h for h in same if not h.maybe), new, *(h for h in same if h.maybe))
            )
            # The instance keeps its place among the holds (the order locks were taken in).
            held: list[Held] = []
            for h in st.held:
                if h in same:
                    held.extend(mine)
                    mine = ()
                else:
                    held.append(h)
            return st._replace(held=tuple(held))

        if must:
            if covers(kind, must, mode):
                self.emit(ev._replace(kind="retake"))
                return [st]
            wait = can_wait(kind, must, mode)
            self.emit(
                ev._replace(kind="upgrade", upgrade_from=must)
                if wait
                else ev._replace(kind="retake")
            )
            # A mode held only maybe (SKIP LOCKED that did lock the row) is held too on the
            # route where that take got it: the upgrade from both, as the other run sees it.
            also = tuple(x for x in maybe if not covers(kind, must, x))
            if also and can_wait(kind, (*must, *also), mode):
                self.emit(ev._replace(kind="upgrade", upgrade_from=(*must, *also)))
            return [after()]
        # Not held for sure: a first acquisition; if held maybe, also the upgrade (or re-take)
        # it would be then.
        self.emit(ev)
        if maybe:
            if covers(kind, maybe, mode):
                self.emit(ev._replace(kind="retake"))
            elif can_wait(kind, maybe, mode):
                self.emit(ev._replace(kind="upgrade", upgrade_from=maybe))
        return [after()]

    # --- loops ------------------------------------------------------------------------------

    def element(self, loop: m.Loop) -> str | None:
        """The lock whose instances are the loop's elements: the first lock taken in the body
        (outside nested loops, through run:) whose declared instance order is the loop's."""
        key = id(loop)
        if key not in self._elements:
            found = None
            if loop.order is not None:
                for take in self._direct_takes(loop.steps):
                    lk = self.model.locks[take.lock]
                    if (
                        not take.again
                        and take.instance is None
                        and not lk.singleton
                        and lk.instance_order == loop.order
                    ):
                        found = take.lock
                        break
            self._elements[key] = found
        return self._elements[key]

    def _direct_takes(self, steps: tuple[m.Step, ...]) -> Iterator[m.Take]:
        """The takes of `steps` in order, through branches and run: but not nested loops.
        Iterative: a run: chain has no recursion limit."""
        stack: list[tuple[tuple[m.Step, ...], int]] = [(steps, 0)]
        while stack:
            seq, i = stack.pop()
            if i >= len(seq):
                continue
            stack.append((seq, i + 1))
            step = seq[i]
            self._spend(1)
            if self._skip(step):
                continue
            if isinstance(step, m.Take):
                yield step
            elif isinstance(step, m.Branches):
                for _, alt in reversed(step.alternatives):
                    stack.append((alt, 0))
            elif isinstance(step, m.Run):
                stack.append((self.model.paths[step.path].steps, 0))

    def summary(self, steps: tuple[m.Step, ...]) -> _Summary:
        """The may-held transfer of `steps` (see _Summary); a path's own summary is computed
        once, callees first, with an explicit stack."""
        self._summarise_callees(steps)
        return self._sequence(steps)

    def _summarise_callees(self, steps: tuple[m.Step, ...]) -> None:
        todo: list[tuple[str, bool]] = [(p, False) for p in self._runs_in(steps)]
        while todo:
            pid, ready = todo.pop()
            if pid in self._summaries:
                continue
            callees = list(self._runs_in(self.model.paths[pid].steps))
            missing = [p for p in callees if p not in self._summaries]
            if missing and not ready:
                todo.append((pid, True))
                todo.extend((p, False) for p in missing)
                continue
            self._summaries[pid] = self._sequence(self.model.paths[pid].steps)

    def _runs_in(self, steps: tuple[m.Step, ...]) -> Iterator[str]:
        stack = [steps]
        while stack:
            for step in stack.pop():
                if isinstance(step, m.Run):
                    yield step.path
                elif isinstance(step, m.Loop):
                    stack.append(step.steps)
                elif isinstance(step, m.Branches):
                    stack.extend(alt for _, alt in step.alternatives)

    def _sequence(self, steps: tuple[m.Step, ...]) -> _Summary:
        out = _Summary()
        for step in steps:
            self._spend(1)
            if not self._skip(step):
                out = out.then(self._one(step))
        return out

    def _one(self, step: m.Step) -> _Summary:
        if isinstance(step, m.Take):
            lk = self.model.locks[step.lock]
            if step.again and not lk.singleton:
                # re-takes what is held; with nothing held, the path's one instance (the same
                # in every iteration)
                where = "again"
            elif lk.singleton:
                where = "="
            elif step.instance is not None:
                where = "=" + step.instance
            else:
                where = ""
            if self.lock_scope(step.lock) == "session":
                where = "~" + where  # survives the end of a transaction
            return _Summary(
                added=(_Item(step.lock, self._mode(step), where, step.order, step.location.line),)
            )
        if isinstance(step, m.Loop):
            body = self._sequence(step.steps)
            nested = tuple(
                it._replace(where=("~*" if it.where.startswith("~") else "*"))
                if it.where in ("", "~")
                else it
                for it in body.added
            )
            return _Summary(added=nested)  # zero or more iterations: drops nothing for sure
        if isinstance(step, m.Branches):
            alts = [self._sequence(alt) for _, alt in step.alternatives]
            out = alts[0]
            for a in alts[1:]:
                out = out.join(a)
            return out
        if isinstance(step, m.Run):
            found = self._summaries.get(step.path)
            return found if found is not None else self._sequence(self.model.paths[step.path].steps)
        if isinstance(step, m.Release):
            return _Summary(released=frozenset({step.lock}))
        if isinstance(step, m.End):
            return _Summary() if step.how == "leave_open" else _Summary(drops_transaction=True)
        if isinstance(step, m.Begin):
            tk = self.model.transactions.get(step.transaction)
            first: tuple[_Item, ...] = ()
            if tk and tk.first_lock:
                where = "~=" if self.lock_scope(tk.first_lock) == "session" else "="
                first = (
                    _Item(
                        tk.first_lock, tk.first_mode or "exclusive", where, None, step.location.line
                    ),
                )
            return _Summary(drops_transaction=True, added=first)
        return _Summary()

    def innermost(self, loop: m.Loop) -> bool:
        """Is there no loop inside `loop` (through run: too)?"""
        key = id(loop)
        if key not in self._innermost:
            found = True
            stack: list[tuple[m.Step, ...]] = [loop.steps]
            seen: set[str] = set()
            while stack and found:
                for step in stack.pop():
                    if isinstance(step, m.Loop):
                        found = False
                        break
                    if isinstance(step, m.Branches):
                        stack.extend(alt for _, alt in step.alternatives)
                    elif isinstance(step, m.Run) and step.path not in seen:
                        seen.add(step.path)
                        stack.append(self.model.paths[step.path].steps)
            self._innermost[key] = found
        return self._innermost[key]

    def _zero_or_more(self, before: list[_State], after: list[_State]) -> list[_State]:
        """The states after a loop that may have run zero times. A state from before the loop
        is folded into one after it that holds all it held plus only instances of locks with
        instances (which never gate): those become maybe holds, which is the same as keeping
        both (a maybe hold makes its edges, and a later take of it is both a first acquisition
        and a re-take). Otherwise it goes on beside them, marked as skipped."""
        out = list(after)
        keep: list[_State] = []
        for st in before:
            mine = {(h.lock, h.instance, h.mode) for h in st.held}
            certain = {(h.lock, h.instance, h.mode) for h in st.held if not h.maybe}
            for n, o in enumerate(out):
                if (o.transaction, o.txkind, o.branch, o.open) != (
                    st.transaction,
                    st.txkind,
                    st.branch,
                    st.open,
                ):
                    continue
                theirs = {(h.lock, h.instance, h.mode): h for h in o.held}
                if not mine <= theirs.keys():
                    continue
                extra = [h for k, h in theirs.items() if k not in mine]
                if any(self.model.locks[h.lock].singleton and not h.maybe for h in extra):
                    continue
                if any(theirs[k].maybe for k in certain):
                    continue
                held = tuple(
                    h._replace(maybe=True) if (h.lock, h.instance, h.mode) not in mine else h
                    for h in o.held
                )
                out[n] = o._replace(held=held, wrote=o.wrote or st.wrote)
                break
            else:
                keep.append(st._replace(skipped=True))
        return [*keep, *out]

    def earlier_iterations(self, loop: m.Loop, inner: _Frame) -> tuple[tuple[Held, bool], ...]:
        """What earlier iterations of `loop` may still hold, as maybe holds named for an
        earlier iteration (the current one's instances end in 2, earlier ones in 1), each with
        whether it comes from a re-take (`again`), which adds nothing where the lock is held
        already."""
        lf = inner.loops[-1]
        outer = ".".join(inner.iteration[:-1])
        earlier = f"{outer}.1" if outer else "1"
        run = f"{lf.id}#{outer}"
        out: list[tuple[Held, bool]] = []
        for it in self.summary(loop.steps).added:
            where = it.where.lstrip("~")
            lk = self.model.locks[it.lock]
            ordered = False
            if where == "again":
                instance = ""
            elif where.startswith("="):
                instance = where[1:]
            elif where == "*":
                instance = f"{lf.id}#{earlier}*{it.line}"
            else:
                instance = f"{lf.id}#{earlier}"
                order = it.order or (lf.order if it.lock == lf.element else None)
                ordered = order is not None and order == lk.instance_order
            held = Held(it.lock, it.mode, instance, run if ordered else "", it.line, True)
            out.append((held, where == "again"))
        return tuple(out)

    # --- the walk ---------------------------------------------------------------------------

    def walk(self, path: m.Path, steps: tuple[m.Step, ...], start: list[_State]) -> None:
        """Walk `steps` from `start` with an explicit stack (no recursion)."""
        cur = start
        # ("seq", steps, index, frame) | ("join", states) | ("alt", states, name)
        # | ("alt_end", acc, outer branch) | ("branches_end", acc)
        stack: list[tuple[Any, ...]] = [("seq", steps, 0, _Frame())]
        while stack:
            item = stack.pop()
            tag = item[0]
            if tag == "seq":
                _, seq, i, frame = item
                # Steps that do not nest run here, one after another.
                while i < len(seq) and not isinstance(seq[i], _NESTING):
                    step = seq[i]
                    i += 1
                    if self._skip(step):
                        continue
                    self._spend(len(cur))
                    if len(cur) == 1:
                        cur = self.step(path, step, cur[0], frame)
                        if len(cur) > 1:
                            cur = _bound(_dedupe(cur))
                        continue
                    nxt: list[_State] = []
                    for st in cur:
                        nxt.extend(self.step(path, step, st, frame))
                    cur = _bound(_dedupe(nxt))
                if i >= len(seq):
                    continue
                stack.append(("seq", seq, i + 1, frame))
                step = seq[i]
                if self._skip(step):
                    continue
                if isinstance(step, m.Loop):
                    site = f"{'/'.join(frame.sites)}>" if frame.sites else ""
                    loop_id = f"{path.id}@{site}{step.location.line}"
                    looped = (*frame.loops, _LoopFrame(loop_id, step.order, self.element(step)))
                    second = replace(frame, loops=looped, iteration=(*frame.iteration, "2"))
                    stack.append(("join", cur))
                    if self.innermost(step):
                        # A loop with no loop inside is walked twice, exactly: the second
                        # iteration starts from what the first one holds.
                        first = replace(frame, loops=looped, iteration=(*frame.iteration, "1"))
                        stack.append(("seq", step.steps, 0, second))
                        stack.append(("seq", step.steps, 0, first))
                    else:
                        # One with loops inside is walked once, with what earlier iterations
                        # may hold, so nesting costs one walk per level.
                        earlier = self.earlier_iterations(step, second)
                        stack.append(("seq", step.steps, 0, second))
                        cur = [_add_maybe(st, earlier) for st in cur]
                elif isinstance(step, m.Branches):
                    acc: list[_State] = []
                    outer = cur[0].branch if cur else ()
                    stack.append(("branches_end", acc))
                    for name, alt in reversed(step.alternatives):
                        stack.append(("alt_end", acc, outer))
                        stack.append(("seq", alt, 0, frame))
                        stack.append(("alt", cur, name))
                elif isinstance(step, m.Run):
                    callee = self.model.paths[step.path]
                    inner = replace(
                        frame,
                        through=(*frame.through, callee.id),
                        sites=(*frame.sites, f"{step.location.file}:{step.location.line}"),
                    )
                    stack.append(("seq", callee.steps, 0, inner))
            elif tag == "join":  # a loop may run zero times: the states before it go on too
                cur = _bound(_dedupe(self._zero_or_more(item[1], cur)))
            elif tag == "alt":
                cur = [st._replace(branch=(*st.branch, item[2])) for st in item[1]]
            elif tag == "alt_end":
                item[1].extend(st._replace(branch=item[2]) for st in cur)
            else:  # branches_end
                cur = _bound(_dedupe(item[1]))

    def step(self, path: m.Path, step: m.Step, st: _State, frame: _Frame) -> list[_State]:
        """A step that does not nest (loops, branches and runs are the walk's)."""
        if isinstance(step, m.Take):
            return self.take(path, st, step, frame)
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
        if isinstance(step, m.External):
            self.emit(common._replace(kind="external", name=step.name, note=step.note))
            return [st]
        if isinstance(step, m.Write):
            if not st.skipped:
                self.emit(common._replace(kind="write", name=step.what, via=step.via))
            return [st._replace(wrote=True)]
        if isinstance(step, m.Call):
            return [st]
        if isinstance(step, m.Release):
            self.emit(common._replace(kind="release", lock=step.lock, wrote=st.wrote and st.open))
            return [st._replace(held=tuple(h for h in st.held if h.lock != step.lock))]
        if isinstance(step, m.Begin):
            return self.begin(path, st, step.transaction, step.location, frame, st.transaction + 1)
        if isinstance(step, m.End):
            self.emit(common._replace(kind=step.how, wrote=st.wrote))
            if step.how == "leave_open":
                return [st]
            held = tuple(h for h in st.held if self.lock_scope(h.lock) == "session")
            return [st._replace(held=held, open=False, wrote=False)]
        raise AssertionError(f"unknown step {step!r}")  # pragma: no cover

    def path(self, path: m.Path) -> None:
        self._path_start = self.units
        budget = self.model.limits.path_work
        self._limit = min(self.units + budget, TOTAL_FACTOR * budget)
        start = _State((), 0, None, (), False, False)
        if path.transaction:
            states = self.begin(path, start, path.transaction, path.location, _Frame(), 1)
        else:
            states = [start._replace(transaction=1, open=True)]
        self.walk(path, path.steps, states)


_NESTING = (m.Loop, m.Branches, m.Run)


def _parent(held: tuple[Held, ...], parent_lock: str, under: str | None) -> str:
    """The instance of `parent_lock` a take is under: the one its `under:` names, else the one
    taken last. None ("") when that one is held only maybe (it may not be held, or another
    may have been taken after it, so it keeps nobody apart)."""
    last: Held | None = None
    for h in held:
        if h.lock == parent_lock and (under is None or h.instance == under):
            last = h
    return "@" + last.instance if last is not None and not last.maybe else ""


def can_wait(kind: str, held_modes: tuple[str, ...], mode: str) -> bool:
    """Can a request in `mode` wait while this transaction holds the same lock in `held_modes`?
    Only for another holder whose mode coexists with every held mode and conflicts with
    `mode`."""
    return any(
        conflicts(kind, mode, other) and not any(conflicts(kind, h, other) for h in held_modes)
        for other in modes_for_kind(kind)
    )


def _reduce(kind: str, mine: tuple[Held, ...]) -> tuple[Held, ...]:
    """The entries one instance keeps: certain modes that no other certain mode covers (for a
    row or advisory lock that is the strongest alone; a table lock held SHARE and ROW EXCLUSIVE
    keeps both), and maybe modes that the certain ones do not cover."""
    certain = [h for h in mine if not h.maybe]
    modes = tuple(h.mode for h in certain)
    out: list[Held] = []
    seen: set[tuple[str, bool]] = set()
    for h in mine:
        if (h.mode, h.maybe) in seen:
            continue
        if h.maybe:
            if covers(kind, modes, h.mode):
                continue
        elif any(o != h.mode and covers(kind, (o,), h.mode) for o in modes):
            continue
        seen.add((h.mode, h.maybe))
        out.append(h)
    return tuple(out)


def _add_maybe(st: _State, extra: tuple[tuple[Held, bool], ...]) -> _State:
    """`st` with what earlier iterations may hold; a re-take's entry only where the state holds
    no instance of that lock (else it re-took that one)."""
    if not extra:
        return st
    have = {(h.lock, h.instance, h.mode) for h in st.held}
    locks = {h.lock for h in st.held}
    add: list[Held] = []
    for h, again in extra:
        key = (h.lock, h.instance, h.mode)
        if key not in have and not (again and h.lock in locks):
            have.add(key)
            add.append(h)
    return st._replace(held=(*st.held, *add)) if add else st


def _dedupe(states: list[_State]) -> list[_State]:
    seen: set[_State] = set()
    out: list[_State] = []
    for s in states:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _bound(states: list[_State]) -> list[_State]:
    """Join states past MAX_STATES: per (transaction, kind, branch, open), one state holding
    everything any of them holds, certain only where every one of them holds it."""
    if len(states) <= MAX_STATES:
        return states
    groups: dict[tuple[object, ...], list[_State]] = {}
    for s in states:
        groups.setdefault((s.transaction, s.txkind, s.branch, s.open), []).append(s)
    out: list[_State] = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        certain: set[tuple[str, str, str, str]] | None = None
        for s in group:
            keys = {(h.lock, h.instance, h.mode, h.run) for h in s.held if not h.maybe}
            certain = keys if certain is None else certain & keys
        assert certain is not None
        held: dict[tuple[str, str, str, str], Held] = {}
        for s in group:
            for h in s.held:
                key = (h.lock, h.instance, h.mode, h.run)
                if key not in held:
                    held[key] = h._replace(maybe=key not in certain)
        out.append(
            group[0]._replace(
                held=tuple(held.values()),
                wrote=any(s.wrote for s in group),
                skipped=all(s.skipped for s in group),
            )
        )
    return out


def backends(model: m.Model) -> tuple[str | None, ...]:
    """Each backend the declarations name, or just the one default."""
    names = sorted({b.name for lock in model.locks.values() for b in lock.backends})
    return tuple(names) if names else (None,)


@dataclass
class Flattened:
    events: list[Event]
    refusals: list[Refusal]


def flatten_all(model: m.Model, backend: str | None = None, only: str | None = None) -> Flattened:
    """Every standalone path's events, in declaration order, and the path refused as too large
    to analyse, if any (the walk stops there: the run cannot be trusted past it)."""
    f = Flattener(model, backend)
    refusals: list[Refusal] = []
    # one path's, `only`: looked up, not searched for, so the page's one call per path stays
    # linear in paths
    chosen = model.paths.items() if only is None else [(only, model.paths[only])]
    for pid, path in chosen:
        if not path.standalone and only is None:
            continue
        try:
            f.path(path)
        except _Stop:
            used = f.units - f._path_start
            if used > model.limits.path_work:
                refusals.append(Refusal(pid, path.location, used, model.limits.path_work, "path"))
            else:
                total = TOTAL_FACTOR * model.limits.path_work
                refusals.append(Refusal(pid, path.location, f.units, total, "total"))
            break
    return Flattened(f.events, refusals)


def flatten(model: m.Model, backend: str | None = None, only: str | None = None) -> list[Event]:
    """Every standalone path's events, in declaration order."""
    return flatten_all(model, backend, only).events
