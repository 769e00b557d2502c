"""Taking locks: which instance a take names, what a take of a held instance does (a re-take
or an upgrade), the parent instance a take stands under, and a transaction's opening lock.

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

from lockdocs import model as m
from lockdocs.analysis.events import Event, Held
from lockdocs.analysis.states import Frame, State
from lockdocs.analysis.summaries import Summaries, run_id, sorted_by
from lockdocs.diagnostics import Location
from lockdocs.modes import conflicts, covers, modes_for_kind


class Takes(Summaries):
    # --- transactions ---------------------------------------------------------------------

    def begin(
        self, path: m.Path, st: State, kind: str | None, loc: Location, frame: Frame, number: int
    ) -> list[State]:
        # (another connection's transaction goes on: take ... connection:)
        held = tuple(h for h in st.held if h.connection or self.outlives(h.lock, st.txkind))
        st = State(held, number, kind, st.branch, True, False, st.skipped)
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

    def _instance(self, step: m.Take, frame: Frame, parent: str = "") -> tuple[str, str]:
        """(instance, sorted run) of a take that is not a re-take (`again`). Outside a loop, an
        unnamed take of a lock within a parent is that parent's one child: two parents, two
        children (`parent` is the parent's tag, Held.parent)."""
        lock = self.model.locks[step.lock]
        if lock.singleton:
            return "", ""
        if step.instance is not None:
            return step.instance, ""
        if not frame.loops:
            return ("^" + parent[1:] if parent else ""), ""
        loop = frame.loops[-1]
        instance = f"{loop.id}#{'.'.join(frame.iteration)}"
        found = sorted_by(lock, step.order, frame.loops)
        if found is not None:
            order, at = found
            return instance, run_id(frame.loops[at], ".".join(frame.iteration[:at]), order)
        return instance, ""

    def take(self, path: m.Path, st: State, step: m.Take, frame: Frame) -> list[State]:
        """The states after `step`; a take of a lock held maybe, or `again` with several
        instances held, has one outcome per possibility."""
        # (the walk has asked `skip` already: a take is the hottest step of the analysis)
        if step.recheck is not None and not _rewrites(st, step):
            return [st]
        lock_id = step.lock
        lock = self.model.locks[lock_id]
        if step.claimed and not lock.singleton:
            return self._claimed(path, st, step, frame)
        private = step.inserted
        if not private:
            for h in st.held:
                if h.private and h.lock == lock_id:
                    private = True
                    break
        if private:
            seen_alone = self._private(st, step, frame)
            if seen_alone is not None:
                return [seen_alone]
        parent = _parent(st.held, lock.within, step.under) if lock.within else ""
        if step.again and not lock.singleton:
            # The instance already held (one of them, if several): a certain one first, else
            # one held maybe; with none held, the path's one instance.
            mine = [h for h in st.held if h.lock == lock_id]
            pick = [h for h in mine if not h.maybe] or mine
            runs = {h.instance: h.run for h in reversed(pick)}
            targets = [(inst, runs[inst]) for inst in dict.fromkeys(h.instance for h in pick)]
            targets = targets or [("", "")]
        else:
            targets = [self._instance(step, frame, parent)]
        out: list[State] = []
        mode = self.take_mode(step)
        loops = frame.loops
        # A loop's order is the order its iterations visit things in: a named instance taken
        # in its body is the same row in every iteration, in no order unless the take says so
        # (two runs can name a and b the other way round).
        order = step.order
        if order is None and step.instance is None and loops:
            order = loops[-1].order
        avoids = step.how_it_avoids_waiting
        conn = step.connection or ""
        for instance, run in targets:
            # (positional: a take is the hottest path of the analysis)
            ev = Event(
                "acquire", path.id, step.location, st.held, st.transaction, st.txkind,
                st.branch, lock_id, mode, instance, run, bool(loops), order, step.via,
                frame.through, avoids, step.implicit, step.changes_key, "", step.note,
                False, (), frame.loop_ids, parent, conn,
            )  # fmt: skip
            for h in st.held:
                # (held on another connection: another transaction's, so not a re-take)
                if h.lock == lock_id and h.instance == instance and h.connection == conn:
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
                    connection=conn,
                )
                out.append(State((*st.held, held), *st[1:]))
                continue
            out.extend(self._take_instance(st, ev, step))
        return out

    def _private(self, st: State, step: m.Take, frame: Frame) -> State | None:
        """A take of a row only this transaction can see (one it inserted): held, and so a
        re-take where taken again, but never waited for or waiting; None when `step` takes
        another instance."""
        lock = self.model.locks[step.lock]
        instance, run = self._instance(step, frame)
        if step.again and not lock.singleton:
            mine = [h for h in st.held if h.lock == step.lock and h.private]
            if not mine:
                return None
            instance, run = mine[-1].instance, mine[-1].run
        same = [h for h in st.held if h.lock == step.lock and h.instance == instance]
        if same and not any(h.private for h in same):
            return None
        if not step.inserted and not same:
            return None
        if any(h.mode == self.take_mode(step) for h in same):
            return st
        held = Held(
            step.lock, self.take_mode(step), instance, run, step.location.line, private=True
        )
        return st._replace(held=(*st.held, held))

    def _claimed(self, path: m.Path, st: State, step: m.Take, frame: Frame) -> list[State]:
        """A take of the rows the path claimed: each instance of the lock it holds (held maybe
        or not: a row a SKIP LOCKED claim skipped is simply not among those written), taken
        again in `step`'s mode, one re-take or upgrade each; no new instance, so no order."""
        lock_id = step.lock
        kind = self.lock_kind(lock_id)
        mode = self.take_mode(step)
        out = st
        for instance in dict.fromkeys(h.instance for h in st.held if h.lock == lock_id):
            same = [h for h in out.held if h.lock == lock_id and h.instance == instance]
            modes = tuple(dict.fromkeys(h.mode for h in same))
            ev = Event(
                "retake", path.id, step.location, out.held, out.transaction, out.txkind,
                out.branch, lock_id, mode, instance, same[0].run, bool(frame.loops),
                step.order, step.via, frame.through, step.how_it_avoids_waiting,
                step.implicit, step.changes_key, "", step.note, False, (), frame.loop_ids,
                same[0].parent,
            )  # fmt: skip
            if covers(kind, modes, mode):
                self.emit(ev)
                continue
            if can_wait(kind, modes, mode):
                self.emit(ev._replace(kind="upgrade", upgrade_from=modes))
            else:
                self.emit(ev)
            maybe = all(h.maybe for h in same)
            new = Held(
                lock_id, mode, instance, same[0].run, same[0].acquired_at, maybe, same[0].parent
            )
            out = out._replace(held=_in_place(out.held, same, _reduce(kind, (*same, new))))
        return [out]

    def _take_instance(self, st: State, ev: Event, step: m.Take) -> list[State]:
        lock_id, mode, instance, run = ev.lock, ev.mode, ev.instance, ev.run
        kind = self.lock_kind(lock_id)
        same = [
            h
            for h in st.held
            if h.lock == lock_id and h.instance == instance and h.connection == ev.connection
        ]
        must = tuple(dict.fromkeys(h.mode for h in same if not h.maybe))
        maybe = tuple(dict.fromkeys(h.mode for h in same if h.maybe and h.mode not in must))
        line = step.location.line

        def after() -> State:
            # Every mode still needed of this instance (a table lock held SHARE and ROW
            # EXCLUSIVE is both); the new one only maybe with SKIP LOCKED (the row may have been
            # skipped), and kept apart from the modes held for sure.
            at = min((h.acquired_at for h in same if not h.maybe), default=line)
            parent = next((h.parent for h in same if not h.maybe and h.parent), ev.parent)
            new = Held(
                lock_id,
                mode,
                instance,
                run,
                at,
                step.option == "skip locked",
                parent,
                connection=ev.connection,
            )
            mine = _reduce(
                kind, (*(h for h in same if not h.maybe), new, *(h for h in same if h.maybe))
            )
            return st._replace(held=_in_place(st.held, same, mine))

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


def _rewrites(st: State, step: m.Take) -> bool:
    """Did an earlier write of this transaction (another step than the one this re-check is
    derived from) insert into or update the re-checked table? Only then does Postgres check
    the foreign key of an update that leaves it alone."""
    return any(t == step.recheck and at != step.location for t, at in st.tables)


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


def _in_place(held: tuple[Held, ...], old: list[Held], new: tuple[Held, ...]) -> tuple[Held, ...]:
    """`held` with the holds in `old` replaced by `new`, at the place of the first of them:
    a lock keeps its place among the holds (the order locks were taken in)."""
    out: list[Held] = []
    for h in held:
        if h in old:
            out.extend(new)
            new = ()
        else:
            out.append(h)
    return tuple(out)


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
