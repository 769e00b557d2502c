"""The fix a lock-order cycle's hint proposes, in agreement with the declared rules.

A cycle breaks when one path on it takes its two locks the other way round. Which path: one
whose order a declared rule forbids (`before`, the written order's `levels`, a `first` lock),
else one no rule speaks about; never one whose present order a rule requires. Among those,
`lockdocs diff` prefers the paths the change added or reordered (`CheckContext.blame`). When a hop's
only conflict is FOR UPDATE against FOR KEY SHARE, FOR NO KEY UPDATE removes that wait without
reordering anything, and the hint says so first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockdocs.model.columns import Order, parse_order

if TYPE_CHECKING:
    from lockdocs import model as m
    from lockdocs.analysis.cycles import Cycle
    from lockdocs.analysis.graph import Edge
    from lockdocs.rules.context import CheckContext

_WEAK_PAIR = frozenset({"for update", "for key share"})


def required_before(model: m.Model, a: str, b: str, txkind: str | None = None) -> str | None:
    """The id of a declared rule that wants lock `a` taken before lock `b`, or None."""
    for r in model.rules.values():
        if r.check == "before" and (r.param("first"), r.param("then")) == (a, b):
            return r.id
        if r.check == "order":
            levels = r.param("levels")
            assert isinstance(levels, tuple)
            rank = {lid: i for i, level in enumerate(levels) for lid in level}
            if a in rank and b in rank and rank[a] < rank[b]:
                return r.id
        if r.check == "first" and r.param("lock") == a and b != a:
            kinds = r.param("transactions") or ()
            assert isinstance(kinds, tuple)
            if not kinds or txkind is None or txkind in kinds:
                return r.id
    return None


def _no_key_update(ctx: CheckContext, cycle: Cycle) -> str:
    """A hop whose only conflict is FOR UPDATE against FOR KEY SHARE: the FOR UPDATE side can
    take FOR NO KEY UPDATE instead (unless it changes a key column), and the wait is gone."""
    k = len(cycle.edges)
    for i, e in enumerate(cycle.edges):
        holder = cycle.edges[(i + 1) % k]  # the next transaction holds the lock e waits for
        lock = cycle.locks[(i + 1) % k]
        if ctx.model.locks[lock].kind != "row":
            continue
        if {e.wanted_mode, holder.held_mode} != _WEAK_PAIR:
            continue
        strong, weak = (e, holder) if e.wanted_mode == "for update" else (holder, e)
        if _changes_key(ctx, strong, lock):
            continue  # it needs FOR UPDATE (it says so): no weaker mode to offer
        return (
            f"take {lock} FOR NO KEY UPDATE instead of FOR UPDATE in '{strong.path}' unless it "
            f"changes a key column: it does not conflict with the FOR KEY SHARE of "
            f"'{weak.path}', so that wait cannot happen"
        )
    return ""


def _changes_key(ctx: CheckContext, e: Edge, lock: str) -> bool:
    """Does the FOR UPDATE take of `lock` on this hop (the wait of `e`, or the hold it is
    taken at) say it changes a key column or deletes?"""
    line = e.location.line if e.wanted_mode == "for update" else e.held_at
    return (lock, e.path, e.location.file, line) in ctx.key_changing_takes


def _reorder(ctx: CheckContext, cycle: Cycle) -> str:
    model = ctx.model
    edges = list(cycle.edges)
    against: list[tuple[Edge, str]] = []
    free: list[Edge] = []
    for e in edges:
        forbids = required_before(model, e.dst, e.src, e.txkind)
        if forbids:
            against.append((e, forbids))
        elif not required_before(model, e.src, e.dst, e.txkind):
            free.append(e)
    blame = ctx.blame
    if against:
        chosen, rid = next(((e, r) for e, r in against if e.path in blame), against[0])
        return (
            f"make '{chosen.path}' take {chosen.dst} before {chosen.src}, as rule '{rid}' requires"
        )
    if free:
        chosen = next((e for e in free if e.path in blame), free[-1])
    else:  # every hop has a rule for it: the rules contradict each other (LD506 says where)
        chosen = next((e for e in edges if e.path in blame), edges[-1])
    others = [e for e in edges if e is not chosen and (e.src, e.dst) == (chosen.dst, chosen.src)]
    other = next((e for e in others if e.path != chosen.path), None)
    if other is not None:
        why = f", as '{other.path}' does"
    elif others:
        # two routes of one path (two branches, two runs of it): say which take to move
        return (
            f"in '{chosen.path}', take {chosen.dst} before {chosen.src} where it takes "
            f"{chosen.dst} at line {chosen.location.line} too, as it does where it takes "
            f"{others[0].dst} at line {others[0].location.line}"
        )
    else:
        why = ", which breaks the cycle"
    return f"make '{chosen.path}' take {chosen.dst} before {chosen.src}{why}"


def _across_iterations(ctx: CheckContext, cycle: Cycle) -> str:
    """One iteration's lock held while a later iteration takes another lock: the loop's order
    does not order the other lock's instances (two elements can share one), so reordering the
    two takes in the body does not help; taking them all before the loop does. Unless the
    loop's rows are sorted by columns that name the wanted lock's instances, but not first:
    sorting by its order's columns first makes the loop take it in that order."""
    for e in cycle.edges:
        if e.across_iterations and e.src != e.dst:
            resort = _sort_first(ctx, e)
            if resort:
                return resort
            return (
                f"'{e.path}' still holds {e.src} from an earlier iteration when a later one "
                f"takes {e.dst}: take every {e.src} it needs before the loop, in {e.src}'s "
                "declared order"
            )
    return ""


def sorted_first(ctx: CheckContext, lock_id: str, loop_order: str | None) -> str | None:
    """The loop order that would take a keyed lock in its declared order: that order's columns
    first, then the loop's other columns; None when the loop's columns do not name them, or
    already sort by them first."""
    order = parse_order(loop_order)
    lock = ctx.model.locks[lock_id]
    wanted = parse_order(lock.instance_order)
    if order is None or wanted is None or not lock.columns:
        return None
    n = len(wanted.columns)
    if not set(wanted.columns) <= set(order.columns) or order.columns[:n] == wanted.columns:
        return None
    rest = [c for c in order.columns if c not in wanted.columns]
    return Order(wanted.direction, (*wanted.columns, *rest)).dimension()


def _sort_first(ctx: CheckContext, e: Edge) -> str:
    """For a cycle through a later iteration's take of a keyed lock: the sort that fixes it."""
    loop = e.held_instance.rpartition("#")[0]
    better = sorted_first(ctx, e.dst, ctx.loop_orders.get(loop))
    if better is None:
        return ""
    order = parse_order(ctx.loop_orders.get(loop))
    assert order is not None
    return (
        f"'{e.path}' walks its rows in {order.dimension()}, so a later iteration's {e.dst} "
        f"may sort before an earlier one's: sort them by {e.dst}'s order first (order: "
        f"{better}), and each {e.dst} comes in its declared order"
    )


def _queue(cycle: Cycle) -> str:
    """A request that waits behind another in a row's queue: taking the row before the lock
    the waiting request holds removes the wait (reordering the queue's own waiter would not)."""
    for i, e in enumerate(cycle.edges):
        if e.queued:
            before = cycle.edges[i - 1]
            return (
                f"make '{before.path}' take {e.dst} before {before.src}: its request for "
                f"{e.dst} can queue behind '{e.path}' even where it conflicts with no lock held "
                "on the cycle"
            )
    return ""


def _set(ctx: CheckContext, cycle: Cycle) -> str:
    """A hop inside one set take (`set: [a, b]`): the statement takes its locks in no order,
    so no reordering of the declaration helps; splitting the statement does."""
    for e in cycle.edges:
        statement = ctx.set_statements.get(e.location)
        if not statement:
            continue
        if not any(t.lock == e.src and t.location.line == e.held_at for t in statement):
            continue
        names = ", ".join(dict.fromkeys(t.lock for t in statement))
        return (
            f"'{e.path}' takes {names} in one statement, in no order it controls: take "
            f"{e.dst} first in a statement of its own (for rows, a SELECT ... FOR UPDATE of "
            "that table alone, or FOR UPDATE OF only the tables that need it) and declare the "
            "takes in that order"
        )
    return ""


def cycle_hint(ctx: CheckContext, cycle: Cycle) -> str:
    """The hint of an LD201 finding."""
    first = _queue(cycle) or _across_iterations(ctx, cycle) or _set(ctx, cycle)
    parts = [
        p for p in (first, _no_key_update(ctx, cycle), "" if first else _reorder(ctx, cycle)) if p
    ]
    held = sorted(
        {
            g.lock
            for edge in cycle.edges
            for g in edge.guards
            if ctx.model.locks[g.lock].singleton and g.lock not in cycle.locks
        }
    )
    if held:
        parts.append(
            f"have every path on the cycle hold {held[0]} in conflicting modes before these "
            "locks (a gate)"
        )
    return "; or ".join(parts)
