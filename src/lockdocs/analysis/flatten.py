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

The walk's parts: events.py (what it produces), states.py (its states, merged and joined),
walkbase.py (the budget and the events recorded), summaries.py (what a loop body may leave
held), takes.py (taking locks, with the instance rules) and this module (the walk itself).
"""

from __future__ import annotations

from typing import Any, assert_never

from lockdocs import model as m
from lockdocs.analysis.budget import EVENT, Budget
from lockdocs.analysis.events import Event, Refusal
from lockdocs.analysis.states import (
    Frame,
    LoopFrame,
    State,
    add_maybe,
    bound,
    dedupe,
    written,
    zero_or_more,
)
from lockdocs.analysis.takes import Takes
from lockdocs.analysis.walkbase import Stop
from lockdocs.records import field, record, replace

# Work units one path may take (a unit is one state through one step, or one held lock recorded
# in an event) unless locks.yaml says otherwise (`limits: {path_work: N}`).
PATH_BUDGET = m.Limits().path_work
# Work units one flatten may take over every path: this many times the path budget.
TOTAL_FACTOR = 20


class Flattener(Takes):
    """The walk of one model's paths through one backend; `path` walks one and records its
    events."""

    # --- the walk ---------------------------------------------------------------------------

    def walk(self, path: m.Path, steps: tuple[m.Step, ...], start: list[State]) -> None:
        """Walk `steps` from `start` with an explicit stack (no recursion)."""
        cur = start
        backend = self.backend
        # ("seq", steps, index, frame) | ("join", states) | ("alt", states, name)
        # | ("alt_end", acc, outer branch) | ("branches_end", acc)
        stack: list[tuple[Any, ...]] = [("seq", steps, 0, Frame())]
        step: m.Step  # (the stack's items are Any: typed here, so the match below is checked)
        while stack:
            item = stack.pop()
            tag = item[0]
            if tag == "seq":
                _, seq, i, frame = item
                # Steps that do not nest run here, one after another (`skip` and `spend`
                # written out: this loop runs once per step of every path).
                while i < len(seq) and not isinstance(seq[i], _NESTING):
                    step = seq[i]
                    i += 1
                    if backend and step.backend and step.backend != backend:
                        continue
                    self.units += len(cur)
                    if self.units > self.limit:
                        raise Stop
                    if len(cur) == 1:
                        cur = self.step(path, step, cur[0], frame)
                        if len(cur) > 1:
                            cur = bound(dedupe(cur))
                        continue
                    nxt: list[State] = []
                    for st in cur:
                        nxt.extend(self.step(path, step, st, frame))
                    cur = bound(dedupe(nxt))
                if i >= len(seq):
                    continue
                stack.append(("seq", seq, i + 1, frame))
                step = seq[i]
                if self.skip(step):
                    continue
                match step:
                    case m.Loop():
                        site = f"{'/'.join(frame.sites)}>" if frame.sites else ""
                        loop_id = f"{path.id}@{site}{step.location.line}"
                        self.loop_orders[loop_id] = step.order
                        looped = (*frame.loops, LoopFrame(loop_id, step.order, self.element(step)))
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
                            cur = [add_maybe(st, earlier) for st in cur]
                    case m.Branches():
                        acc: list[State] = []
                        outer = cur[0].branch if cur else ()
                        stack.append(("branches_end", acc))
                        for name, alt in reversed(step.alternatives):
                            stack.append(("alt_end", acc, outer))
                            stack.append(("seq", alt, 0, frame))
                            stack.append(("alt", cur, name))
                    case m.Run():
                        callee = self.model.paths[step.path]
                        inner = replace(
                            frame,
                            through=frame.through.add(callee.id),
                            sites=frame.sites.add(f"{step.location.file}:{step.location.line}"),
                        )
                        stack.append(("seq", callee.steps, 0, inner))
                    case m.Leaf():  # pragma: no cover
                        raise AssertionError(f"a step that does not nest: {step!r}")
                    case _:
                        assert_never(step)
            elif tag == "join":  # a loop may run zero times: the states before it go on too
                cur = bound(dedupe(zero_or_more(self.model.locks, item[1], cur)))
            elif tag == "alt":
                cur = [st._replace(branch=(*st.branch, item[2])) for st in item[1]]
            elif tag == "alt_end":
                item[1].extend(st._replace(branch=item[2]) for st in cur)
            else:  # branches_end
                cur = bound(dedupe(item[1]))

    def step(self, path: m.Path, step: m.Step, st: State, frame: Frame) -> list[State]:
        """A step that does not nest (loops, branches and runs are the walk's)."""
        match step:
            case m.Take():
                return self.take(path, st, step, frame)
            case m.External():
                self.emit(
                    self.event(path, step, st, frame)._replace(
                        kind="external", name=step.name, note=step.note
                    )
                )
                return [st]
            case m.Write():
                if not st.skipped:
                    self.emit(
                        self.event(path, step, st, frame)._replace(
                            kind="write", name=step.what, via=step.via
                        )
                    )
                table = step.insert or step.update
                if table is not None and (table, step.location) not in st.tables:
                    tables = written({*st.tables, (table, step.location)})
                    return [st._replace(wrote=True, tables=tables)]
                return [st._replace(wrote=True)]
            case m.Call():
                return [st]
            case m.Release():
                self.emit(
                    self.event(path, step, st, frame)._replace(
                        kind="release", lock=step.lock, wrote=st.wrote and st.open
                    )
                )
                return [st._replace(held=tuple(h for h in st.held if h.lock != step.lock))]
            case m.Begin():
                return self.begin(
                    path, st, step.transaction, step.location, frame, st.transaction + 1
                )
            case m.End():
                self.emit(self.event(path, step, st, frame)._replace(kind=step.how, wrote=st.wrote))
                if step.how == "leave_open":
                    return [st]
                if step.connection:  # another connection's transaction: only its locks go
                    held = tuple(
                        h
                        for h in st.held
                        if h.connection != step.connection or self.outlives(h.lock, None)
                    )
                    return [st._replace(held=held)]
                held = tuple(h for h in st.held if h.connection or self.outlives(h.lock, st.txkind))
                return [st._replace(held=held, open=False, wrote=False, tables=())]
            case m.Loop() | m.Branches() | m.Run():  # pragma: no cover
                raise AssertionError(f"a step that nests is the walk's: {step!r}")
            case _:
                assert_never(step)

    def event(self, path: m.Path, step: m.Step, st: State, frame: Frame) -> Event:
        """The event of `step` in state `st`, before its kind and what it names are set."""
        return Event(
            "",
            path.id,
            step.location,
            st.held,
            st.transaction,
            st.txkind,
            st.branch,
            through=frame.through,
        )

    def path(self, path: m.Path) -> None:
        self.path_start = self.units
        budget = self.model.limits.path_work
        self.limit = min(self.units + budget, TOTAL_FACTOR * budget, self.cap)
        start = State((), 0, None, (), False, False)
        if path.transaction:
            states = self.begin(path, start, path.transaction, path.location, Frame(), 1)
        else:
            states = [start._replace(transaction=1, open=True)]
        self.walk(path, path.steps, states)


_NESTING = (m.Loop, m.Branches, m.Run)


def backends(model: m.Model) -> tuple[str | None, ...]:
    """Each backend the declarations name, or just the one default."""
    names = sorted({b.name for lock in model.locks.values() for b in lock.backends})
    return tuple(names) if names else (None,)


@record(frozen=False)
class Flattened:
    events: list[Event]
    refusals: list[Refusal]
    loop_orders: dict[str, str | None] = field(default_factory=dict)


def flatten_all(
    model: m.Model,
    backend: str | None = None,
    only: str | None = None,
    budget: Budget | None = None,
) -> Flattened:
    """Every standalone path's events, in declaration order, and the path refused as too large
    to analyse, if any (the walk stops there: the run cannot be trusted past it). `budget`, the
    whole analysis's, is charged with the work and stops the walk where it runs out."""
    f = Flattener(model, backend)
    refusals: list[Refusal] = []
    # one path's, `only`: looked up, not searched for, so the page's one call per path stays
    # linear in paths
    chosen = model.paths.items() if only is None else [(only, model.paths[only])]
    for pid, path in chosen:
        if not path.standalone and only is None:
            continue
        start, made = f.units, len(f.events)
        if budget is not None:
            f.cap = start + budget.left
        try:
            f.path(path)
        except Stop:
            used = f.units - f.path_start
            paid = budget is None or budget.spend(used + EVENT * (len(f.events) - made))
            if used > model.limits.path_work:
                refusals.append(Refusal(pid, path.location, used, model.limits.path_work, "path"))
            elif budget is not None and not paid:
                refusals.append(
                    Refusal(pid, path.location, budget.spent, budget.limit, budget.out or "work")
                )
            else:
                total = TOTAL_FACTOR * model.limits.path_work
                refusals.append(Refusal(pid, path.location, f.units, total, "total"))
            break
        if budget is not None and not budget.spend(
            f.units - start + EVENT * (len(f.events) - made)
        ):
            refusals.append(
                Refusal(pid, path.location, budget.spent, budget.limit, budget.out or "work")
            )
            break
    return Flattened(f.events, refusals, f.loop_orders)


def flatten(model: m.Model, backend: str | None = None, only: str | None = None) -> list[Event]:
    """Every standalone path's events, in declaration order."""
    return flatten_all(model, backend, only).events
