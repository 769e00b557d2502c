"""A row's wait queue as hops of the graph of waits (PostgreSQL's
src/backend/access/heap/README.tuplock): a request that has to wait takes the tuple's own lock
first, so a later request that has to wait too queues behind it.
"""

from __future__ import annotations

from lockdocs.analysis.budget import HOP, PAIR
from lockdocs.analysis.events import Event, Held
from lockdocs.analysis.facts import Facts
from lockdocs.analysis.gates import gate, parent_gated, singleton_guards
from lockdocs.analysis.graph import Edge, parent_mode

TUPLE_LOCK = "tuple lock"


def queue_hops(ctx: Facts, backend: str | None, locks: set[str]) -> list[Edge]:
    """The hops a row's wait queue adds (PostgreSQL's src/backend/access/heap/README.tuplock):
    a request for a row that conflicts with a holder first takes the tuple's own lock, then
    waits for the holders; a later request that must wait too (it conflicts with some holder)
    queues for the tuple lock behind it, in strengths that conflict as the row modes do, even
    when it coexists with every holder the first one waits for. A request that conflicts with
    no holder is granted at once (it never queues), and an upgrade of a row already held skips
    the queue. One hop per waiting take (row, mode, gates) and per way another transaction
    holds the row (what makes the later request queue: its mode and what it holds then)."""
    rows = {lk for lk in locks if ctx.lock_kind(lk, backend) == "row"}
    if not rows:
        return []
    holders: dict[str, dict[tuple[object, ...], Edge]] = {}
    waiters: dict[str, dict[tuple[object, ...], Event]] = {}
    for ev in ctx.events(backend):
        if ev.kind not in ("acquire", "upgrade") or ev.lock not in rows:
            continue
        mine = Held(ev.lock, ev.mode, ev.instance, ev.run, ev.location.line, parent=ev.parent)
        # The parent (instances: {within: P}) the row is taken under, held for sure then.
        parent = parent_mode(ev.held, ctx.model.locks[ev.lock].within, ev.parent)
        holding = Edge(
            ev.lock,
            ev.lock,
            ev.path,
            ev.location,
            ev.mode,
            ev.mode,
            (*ev.held, mine),
            backend=backend,
            through=ev.through,
            held_parent=parent,
        )
        key = (ev.mode, tuple(sorted(singleton_guards(ctx, holding).items())), parent)
        holders.setdefault(ev.lock, {}).setdefault(key, holding)
        if ev.kind == "acquire" and ev.option is None:
            wkey = (
                ev.mode,
                tuple(
                    sorted(
                        (g.lock, g.mode)
                        for g in ev.held
                        if not g.maybe and ctx.model.locks[g.lock].singleton
                    )
                ),
                parent,
            )
            waiters.setdefault(ev.lock, {}).setdefault(wkey, ev)
    out: list[Edge] = []
    for lock in sorted(waiters):
        for ev in waiters[lock].values():
            # A waiter meets every holder of its row: the whole analysis's budget (budget.py)
            # pays for each meeting; past it the search reports its graph unfinished.
            if not ctx.budget.spend(1 + PAIR * len(holders.get(lock, {}))):
                return out
            waiting = Edge(
                src=lock,
                dst=lock,
                path=ev.path,
                location=ev.location,
                held_mode=TUPLE_LOCK,
                wanted_mode=ev.mode,
                guards=ev.held,
                backend=backend,
                transaction=ev.transaction,
                txkind=ev.txkind,
                through=ev.through,
                wanted_instance=ev.instance,
                wanted_parent=parent_mode(ev.held, ctx.model.locks[lock].within, ev.parent),
            )
            for holding in holders.get(lock, {}).values():
                if gate(ctx, waiting, holding) or parent_gated(ctx, waiting, holding.held_parent):
                    continue  # they never run at once
                if not ctx.budget.spend(HOP):
                    return out
                out.append(waiting._replace(queued=holding.held_mode, queued_by=holding))
    return out
