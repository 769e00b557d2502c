"""What a loop body may leave held: the may-held summaries of steps, composed without walking them.

A loop with loops inside is walked once, from the state before it plus what earlier iterations
may still hold; those holds come from the body's summary (`Summaries.earlier_iterations`). A
summary is computed once per path, callees first, with an explicit stack. This module also
answers the two questions the walk asks of a loop's shape: which lock is its element, and
whether it has a loop inside.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple, assert_never

from lockdocs import model as m
from lockdocs.analysis.events import Held
from lockdocs.analysis.states import Frame, LoopFrame
from lockdocs.analysis.walkbase import WalkBase
from lockdocs.model.columns import followed, nested, same_order
from lockdocs.records import field, record


def sorted_by(
    lock: m.Lock,
    take_order: str | None,
    loops: tuple[LoopFrame, ...],
    inner: tuple[str | None, ...] = (),
) -> tuple[str, int] | None:
    """The order a take's instances follow across the iterations of the innermost of `loops`
    (the loops around the take, outermost first; `inner`: the orders of loops between the last
    of them and the take), when they form a sorted run, with the index of the loop that run
    belongs to: the take's own `order:` or, for the loop's element lock, the loop's, when that
    is the lock's declared order; or, for a lock keyed by columns, the leading columns of the
    nest's sort that make up its key, from the outermost loop whose nest sorts by them
    (model/columns.py). None: in no known order."""
    last = len(loops) - 1
    if take_order is not None:
        ok = same_order(take_order, lock.instance_order)
        return (lock.instance_order or "", last) if ok else None
    if lock.columns:
        orders = tuple(lf.order for lf in loops) + inner
        for start in range(len(loops)):
            eff = followed(nested(orders[start:]), lock.columns)
            if eff is not None:
                return eff.dimension(), start
    element = not inner and lock.id == loops[-1].element
    if element and same_order(loops[-1].order, lock.instance_order):
        return lock.instance_order or "", last
    return None


def run_id(loop: LoopFrame, outer: str, order: str) -> str:
    """One run of a loop's sorted instances (one per iteration of the loops around it), with
    the order they follow: instances of one run never wait for each other out of order."""
    return f"{loop.id}#{outer}|{order}"


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
    # for a take in loops nested in the summarised steps: their orders, outermost first
    inner: tuple[str | None, ...] = ()
    private: bool = False  # a row the transaction inserted (Take.inserted)


@record
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


@record(frozen=False)
class Summaries(WalkBase):
    _summaries: dict[str, _Summary] = field(default_factory=dict)
    _elements: dict[int, str | None] = field(default_factory=dict)
    _innermost: dict[int, bool] = field(default_factory=dict)

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
            self.spend(1)
            if self.skip(step):
                continue
            match step:
                case m.Take():
                    yield step
                case m.Branches():
                    for _, alt in reversed(step.alternatives):
                        stack.append((alt, 0))
                case m.Run():
                    stack.append((self.model.paths[step.path].steps, 0))
                case m.Loop() | m.Leaf():
                    pass
                case _:
                    assert_never(step)

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
                match step:
                    case m.Run():
                        yield step.path
                    case m.Loop():
                        stack.append(step.steps)
                    case m.Branches():
                        stack.extend(alt for _, alt in step.alternatives)
                    case m.Leaf():
                        pass
                    case _:
                        assert_never(step)

    def _sequence(self, steps: tuple[m.Step, ...]) -> _Summary:
        out = _Summary()
        for step in steps:
            self.spend(1)
            if not self.skip(step):
                out = out.then(self._one(step))
        return out

    def _one(self, step: m.Step) -> _Summary:
        match step:
            case m.Take():
                lk = self.model.locks[step.lock]
                if (step.again or step.claimed) and not lk.singleton:
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
                    added=(
                        _Item(
                            step.lock,
                            self.take_mode(step),
                            where,
                            step.order,
                            step.location.line,
                            private=step.inserted,
                        ),
                    )
                )
            case m.Loop():
                body = self._sequence(step.steps)
                nested = tuple(
                    it._replace(
                        where=("~*" if it.where.startswith("~") else "*"),
                        inner=(step.order, *it.inner),
                    )
                    if it.where in ("", "~", "*", "~*")
                    else it
                    for it in body.added
                )
                return _Summary(added=nested)  # zero or more iterations: drops nothing for sure
            case m.Branches():
                alts = [self._sequence(alt) for _, alt in step.alternatives]
                out = alts[0]
                for a in alts[1:]:
                    out = out.join(a)
                return out
            case m.Run():
                found = self._summaries.get(step.path)
                return (
                    found
                    if found is not None
                    else self._sequence(self.model.paths[step.path].steps)
                )
            case m.Release():
                return _Summary(released=frozenset({step.lock}))
            case m.End():
                # (another connection's end drops only its own locks: nothing for sure here)
                keeps = step.how == "leave_open" or step.connection is not None
                return _Summary() if keeps else _Summary(drops_transaction=True)
            case m.Begin():
                tk = self.model.transactions.get(step.transaction)
                first: tuple[_Item, ...] = ()
                if tk and tk.first_lock:
                    where = "~=" if self.lock_scope(tk.first_lock) == "session" else "="
                    first = (
                        _Item(
                            tk.first_lock,
                            tk.first_mode or "exclusive",
                            where,
                            None,
                            step.location.line,
                        ),
                    )
                return _Summary(drops_transaction=True, added=first)
            case m.Call() | m.External() | m.Write():
                return _Summary()
            case _:
                assert_never(step)

    def innermost(self, loop: m.Loop) -> bool:
        """Is there no loop inside `loop` (through run: too)?"""
        key = id(loop)
        if key not in self._innermost:
            found = True
            stack: list[tuple[m.Step, ...]] = [loop.steps]
            seen: set[str] = set()
            while stack and found:
                for step in stack.pop():
                    match step:
                        case m.Loop():
                            found = False
                            break
                        case m.Branches():
                            stack.extend(alt for _, alt in step.alternatives)
                        case m.Run():
                            if step.path not in seen:
                                seen.add(step.path)
                                stack.append(self.model.paths[step.path].steps)
                        case m.Leaf():
                            pass
                        case _:
                            assert_never(step)
            self._innermost[key] = found
        return self._innermost[key]

    def earlier_iterations(self, loop: m.Loop, inner: Frame) -> tuple[tuple[Held, bool], ...]:
        """What earlier iterations of `loop` may still hold, as maybe holds named for an
        earlier iteration (the current one's instances end in 2, earlier ones in 1), each with
        whether it comes from a re-take (`again`), which adds nothing where the lock is held
        already."""
        lf = inner.loops[-1]
        outer = ".".join(inner.iteration[:-1])
        earlier = f"{outer}.1" if outer else "1"
        out: list[tuple[Held, bool]] = []
        for it in self.summary(loop.steps).added:
            where = it.where.lstrip("~")
            lk = self.model.locks[it.lock]
            run = ""
            if where == "again":
                instance = ""
            elif where.startswith("="):
                instance = where[1:]
            elif where == "*":
                instance = f"{lf.id}#{earlier}*{it.line}"
            else:
                instance = f"{lf.id}#{earlier}"
            if where in ("", "*"):
                # (a nested take: sorted only where the nest's sort orders a keyed lock)
                found = sorted_by(lk, it.order if where == "" else None, inner.loops, it.inner)
                if found is not None:
                    order, at = found
                    run = run_id(inner.loops[at], ".".join(inner.iteration[:at]), order)
            held = Held(it.lock, it.mode, instance, run, it.line, True, private=it.private)
            out.append((held, where == "again"))
        return tuple(out)
