"""What keeps two transactions apart and whether one can wait for another: a gate (a singleton
both hold in conflicting modes), a parent gate (both hold the one parent instance of a child in
conflicting modes), and a wait that Postgres's mode tables allow. Also the edges the searches
keep: one per behaviour.
"""

from __future__ import annotations

from lockdocs.analysis.facts import Facts
from lockdocs.analysis.graph import Edge
from lockdocs.modes import conflicts


def singleton_guards(ctx: Facts, e: Edge) -> dict[str, str]:
    # Keyed by the held set's identity (every edge of one event shares it): hashing a long
    # tuple of holds on every gate check would cost more than the check.
    cached = ctx.guard_cache.get(id(e.guards))
    if cached is not None and cached[0] is e.guards:
        return cached[1]
    # A maybe hold (SKIP LOCKED, an earlier iteration, one branch of several) may not be held
    # at all, so it keeps nobody apart.
    found = {g.lock: g.mode for g in e.guards if ctx.model.locks[g.lock].singleton and not g.maybe}
    ctx.guard_cache[id(e.guards)] = (e.guards, found)
    return found


def gate(ctx: Facts, a: Edge, b: Edge) -> str | None:
    """A singleton lock both transactions hold in conflicting modes, if any."""
    ga = singleton_guards(ctx, a)
    if not ga:
        return None
    gb = singleton_guards(ctx, b)
    common = ga.keys() & gb.keys()
    for lock in sorted(common) if len(common) > 1 else common:
        if conflicts(ctx.lock_kind(lock, a.backend), ga[lock], gb[lock]):
            return lock
    return None


def parent_gated(ctx: Facts, wanting: Edge, holding_parent: str | None) -> bool:
    """Is a wait of `wanting` for a transaction that holds the instance under a parent held in
    `holding_parent` impossible? Both hold the parent of one child instance, so the same
    parent instance: in conflicting modes, they never hold it at once (a parent gate)."""
    if wanting.wanted_parent is None or holding_parent is None:
        return False
    parent = ctx.model.locks[wanting.dst].within
    assert parent is not None
    kind = ctx.lock_kind(parent, wanting.backend)
    return conflicts(kind, wanting.wanted_parent, holding_parent)


def _signature(e: Edge, ctx: Facts) -> tuple[object, ...]:
    guards = tuple(sorted(singleton_guards(ctx, e).items()))
    return (
        e.held_mode,
        e.wanted_mode,
        e.ordered,
        e.order,
        e.upgrade_from,
        e.never_waits,
        guards,
        e.wanted_parent,
        e.held_parent,
        e.sorted_by,
        e.dims,
        e.split,
    )


def representatives(edges: list[Edge], ctx: Facts) -> list[Edge]:
    """One edge per behaviour: edges equal in modes, order and gates decide the same way. The
    witness kept is one whose held lock is held for sure where there is one (the plainest to
    read: the same iteration, not an earlier one)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Edge] = []
    for e in sorted(edges, key=lambda e: (e.held_maybe, e.across_iterations)):
        sig = _signature(e, ctx)
        if sig not in seen:
            seen.add(sig)
            out.append(e)
    return out


def waits(ctx: Facts, wanting: Edge, holding: Edge) -> bool:
    """Can `wanting`'s request wait for the transaction of `holding` (which holds
    `holding.src` in `holding.held_mode`)?"""
    if wanting.never_waits or parent_gated(ctx, wanting, holding.held_parent):
        return False
    kind = ctx.lock_kind(wanting.dst, wanting.backend)
    if not conflicts(kind, wanting.wanted_mode, holding.held_mode):
        return False
    # An upgrade wants the instance it already holds: the other transaction can hold that
    # instance only in a mode that coexists with every mode already held.
    return not any(conflicts(kind, m, holding.held_mode) for m in wanting.upgrade_from)
