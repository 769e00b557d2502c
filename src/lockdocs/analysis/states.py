"""The walk's states (what is held, the transaction, the branch) and how they are merged.

Branches fork a state and equal states are merged; past `MAX_STATES` states at one step they are
joined into one, and a lock not held on every joined state is kept as a `maybe` hold (it still
makes its edges, but never keeps two transactions apart), so the walk stays linear in the
declarations however many branches follow each other. After a loop, the states from before it
(it may have run zero times) are folded into the ones after it where that changes nothing.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

from lockdocs import model as m
from lockdocs.analysis.chain import EMPTY, Chain
from lockdocs.analysis.events import Held
from lockdocs.diagnostics import Location
from lockdocs.records import record

# Joined into one state past this many at one step (see the module docstring).
MAX_STATES = 64


class State(NamedTuple):
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
    # What this transaction has inserted into or updated, as (table, the write's location): a
    # foreign-key re-check of a later update depends on it. Sorted; may-written where joined
    # states differ.
    tables: tuple[tuple[str, Location], ...] = ()


class LoopFrame(NamedTuple):
    id: str
    order: str | None
    element: str | None  # the lock whose instances follow the loop's order


@record
class Frame:
    """Where the walk is: the loop nesting and the run: chain."""

    loops: tuple[LoopFrame, ...] = ()
    iteration: tuple[str, ...] = ()  # per enclosing loop: "2" now, "1" an earlier iteration
    through: Chain = EMPTY
    sites: Chain = EMPTY  # where each run: step of the chain stands, to tell two runs apart

    @cached_property
    def loop_ids(self) -> tuple[str, ...]:
        return tuple(lf.id for lf in self.loops)


def written(tables: set[tuple[str, Location]]) -> tuple[tuple[str, Location], ...]:
    """A state's written tables in one order (equal states hash equal)."""
    return tuple(sorted(tables, key=lambda t: (t[0], t[1].file, t[1].line, t[1].column)))


def add_maybe(st: State, extra: tuple[tuple[Held, bool], ...]) -> State:
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


def dedupe(states: list[State]) -> list[State]:
    seen: set[State] = set()
    out: list[State] = []
    for s in states:
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def bound(states: list[State]) -> list[State]:
    """Join states past MAX_STATES: per (transaction, kind, branch, open), one state holding
    everything any of them holds, certain only where every one of them holds it."""
    if len(states) <= MAX_STATES:
        return states
    groups: dict[tuple[object, ...], list[State]] = {}
    for s in states:
        groups.setdefault((s.transaction, s.txkind, s.branch, s.open), []).append(s)
    out: list[State] = []
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
                tables=written({t for s in group for t in s.tables}),
            )
        )
    return out


def zero_or_more(locks: dict[str, m.Lock], before: list[State], after: list[State]) -> list[State]:
    """The states after a loop that may have run zero times. A state from before the loop
    is folded into one after it that holds all it held plus only instances of locks with
    instances (which never gate): those become maybe holds, which is the same as keeping
    both (a maybe hold makes its edges, and a later take of it is both a first acquisition
    and a re-take). Otherwise it goes on beside them, marked as skipped."""
    out = list(after)
    keep: list[State] = []
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
            if any(locks[h.lock].singleton and not h.maybe for h in extra):
                continue
            if any(theirs[k].maybe for k in certain):
                continue
            held = tuple(
                h._replace(maybe=True) if (h.lock, h.instance, h.mode) not in mine else h
                for h in o.held
            )
            tables = written({*o.tables, *st.tables})
            out[n] = o._replace(held=held, wrote=o.wrote or st.wrote, tables=tables)
            break
        else:
            keep.append(st._replace(skipped=True))
    return [*keep, *out]
