"""LD201 and LD202: the lock-order rules, cycles that can deadlock and several instances of one
lock taken in no declared order. LD203 (upgrades) is in upgrades.py, LD204 and LD209 (the
analysis' bounds) in limits.py, and the wording of a cycle's proof in witnesses.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.analysis.cycles import instance_clashes
from lockdocs.analysis.graph import Edge
from lockdocs.analysis.proof import proof, race
from lockdocs.diagnostics import Diagnostic, Location, Related, Severity
from lockdocs.rules.context import CheckContext, run_from
from lockdocs.rules.examples import ACCOUNT_ROW, HEAD
from lockdocs.rules.finder import Finder
from lockdocs.rules.hints import cycle_hint, sorted_first
from lockdocs.rules.registry import rule
from lockdocs.rules.witnesses import (
    hang_end,
    hops_of,
    interleaving,
    labels,
    stand_in_lines,
    unseen_waits,
    where,
)

_TWO_ROWS = (
    HEAD
    + "locks:\n"
    + ACCOUNT_ROW
    + """\
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: writers}
"""
)


def _claimed_before(ctx: CheckContext, e: Edge, lock_id: str) -> bool:
    """Does the path hold rows of the lock it took with SKIP LOCKED earlier (a claim)?"""
    lines = {g.acquired_at for g in e.guards if g.lock == lock_id and g.maybe}
    return any(
        ev.option == "skip locked" and ev.location.line in lines
        for ev in ctx.all_events
        if ev.lock == lock_id and ev.path == e.path and ev.kind == "acquire"
    )


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


@rule(
    "LD201",
    "deadlock-cycle",
    Severity.ERROR,
    summary="Two or more paths take the same locks in orders that can deadlock.",
    what=(
        "Builds the lock-order graph (an edge A -> B wherever a path takes B while holding A) "
        "and reports each minimal cycle whose waits can really happen: every wanted mode "
        "conflicts with the mode the next transaction holds, and no gate lock (a singleton both "
        "hold in conflicting modes) keeps the transactions apart, nor a parent: a lock declared "
        "`instances: {within: P}` whose instance each side takes while holding its P (the one "
        "taken last, or the one `under:` names) is one P's child, so both would hold that P, "
        "which they cannot where their modes of it conflict. A `set:` step (one statement that "
        "locks several things in no order) is taken in every order, so it closes a cycle with "
        "an ordered path, and with a second run of itself. A lock with instances may "
        "appear twice on a cycle (three transactions through two rows of it). Waits are the ones "
        "PostgreSQL 15 makes, which a live server confirms: a request waits for another "
        "transaction holding a conflicting mode; for a row, a request that has to wait first "
        "takes the tuple's own lock, so a later request that has to wait too queues behind it "
        "even where it conflicts with no mode the first one waits for (the server's "
        "src/backend/access/heap/README.tuplock describes this queue; a request that conflicts "
        "with no holder is granted at once, and an upgrade of a row already held skips the "
        "queue). For advisory and table locks a request also queues behind earlier conflicting "
        "requests, but those waits are the 'soft edges' the deadlock detector resolves by "
        "reordering the queue (src/backend/storage/lmgr/README), so only waits for holders are "
        "counted there. The report names each hop's path, file and line, and shows the "
        "interleaving that ends in the deadlock."
    ),
    why=(
        "Postgres breaks a deadlock by aborting one transaction after deadlock_timeout (40P01), "
        "or, when lock_timeout is shorter, both waits end in 55P03. Either way a request fails "
        "under load, in a way no single-request test shows. A cycle through an in-process lock "
        "(kind: memory) is worse: its wait happens in the application, where the deadlock "
        "detector cannot see it, so nothing breaks the cycle and the requests hang (the "
        "finding says so, and replay expects a hang, not 40P01); only a lock_timeout on one of "
        "its database waits, or a timeout the application puts on the in-process wait, ends it."
    ),
    example={
        "locks.yaml": _TWO_ROWS,
        "paths/money.yaml": """\
group: Money
paths:
  post:
    title: Post an entry
    steps:
      - take: account
      - take: ledger
  close:
    title: Close a ledger
    steps:
      - take: ledger
      - take: account
""",
    },
    use_instead={
        "paths/money.yaml": (
            "      - take: ledger\n      - take: account\n",
            "      - take: account\n      - take: ledger\n",
        ),
    },
)
def check_cycles(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for cycle in ctx.cycles(backend)[0]:
            k = len(cycle.locks)
            on = f" on {backend}" if backend else ""
            names = labels(ctx, cycle.locks, cycle.edges)
            details = ["The waits, hop by hop:"]
            for i, e in enumerate(cycle.edges):
                if e.queued and e.queued_by:
                    by = e.queued_by
                    nxt = cycle.edges[(i + 1) % k]
                    then = (
                        f"; {by.path} then ends, and {nxt.path} takes {names[i]} "
                        f"({nxt.held_mode}) before this waiter, woken, looks at the row again "
                        "(a race: a request that conflicts with no holder takes the row at once)"
                        if race(e, nxt)
                        else ""
                    )
                    details.append(
                        f"  {i + 1}. {e.path} at {where(e)}: waits for {names[i]} "
                        f"({e.wanted_mode}) first in the row's queue, holding its tuple lock; "
                        f"while {by.path} (at {where(by)}) holds {names[i]} ({e.queued}), the "
                        f"previous request must wait too and queues behind it{then}"
                    )
                    continue
                taken = f", taken at line {e.held_at}" if e.held_at else ""
                earlier = " in an earlier iteration" if e.across_iterations else ""
                details.append(
                    f"  {i + 1}. {e.path} at {where(e)}: holds {names[i]} "
                    f"({e.held_mode}{taken}{earlier}), wants {names[(i + 1) % k]} "
                    f"({e.wanted_mode})"
                )
            unseen = unseen_waits(ctx, backend, cycle)
            split = [e for e in cycle.edges if e.split]
            hang = ""
            if split and not unseen:
                e = split[0]
                hang = (
                    f"; it hangs: '{e.path}' holds {e.src} on one connection and waits on "
                    "another, so Postgres sees the holder idle and never sees the cycle"
                )
                details.append(
                    f"A hang, not a deadlock: '{e.path}' holds {e.src} on one of its "
                    f"connections and waits for {e.dst} on another; Postgres sees the first "
                    "session idle, not waiting, so it sees no cycle to break; "
                    f"{hang_end(ctx, backend, cycle, [])}."
                )
            elif unseen:
                ends = hang_end(ctx, backend, cycle, unseen)
                waits = _and(unseen)
                many = len(unseen) > 1
                hang = (
                    f"; it hangs: the wait{'s' if many else ''} for {waits} "
                    f"{'are' if many else 'is'} in the application, where Postgres's deadlock "
                    "detector cannot see " + ("them" if many else "it")
                )
                details.append(
                    "A hang, not a deadlock: Postgres breaks a cycle only when it sees every "
                    f"wait on it, and the wait{'s' if many else ''} for {waits} "
                    f"{'happen' if many else 'happens'} in the application (an in-process "
                    f"lock); {ends}."
                )
            details.append("One interleaving:")
            details.extend(
                "  " + line
                for line in interleaving(
                    tuple(names),
                    cycle.edges,
                    "hang (nothing breaks it)" if unseen or split else "deadlock",
                )
            )
            details.extend(stand_in_lines(ctx, backend, cycle, names))
            paths = tuple(dict.fromkeys(e.path for e in cycle.edges))
            first = cycle.edges[0]
            hops = hops_of(cycle)
            yield finding(
                f"lock-order cycle{on}: "
                + " -> ".join(
                    f"{n} (queue)" if e.queued else n
                    for n, e in zip((*names, names[0]), (*cycle.edges, cycle.edges[0]), strict=True)
                )
                + " (paths "
                + ", ".join(paths)
                + ")"
                + hang,
                first.location,
                cycle_hint(ctx, cycle)
                + (
                    f"; or put a timeout on acquiring {_and(unseen)} in the application, so the "
                    "hang ends in an error"
                    if unseen
                    else ""
                ),
                details=tuple(details),
                paths=paths,
                locks=cycle.locks,
                related=hops[1:],
                threads=tuple((hop,) for hop in hops),
                extra={"proof": proof("cycle", cycle.edges)},
            )


@rule(
    "LD202",
    "unsorted-instances",
    Severity.ERROR,
    summary="A path takes several instances of one lock in no declared order.",
    what=(
        "Reports a path that holds one instance of a lock while it takes another (a loop, or "
        "two named instances) when its order is not the lock's declared `instances.order`, and "
        "another path (or a second run of the same path) can take the same instances the other "
        "way round, with conflicting modes and no gate between them. The instances of a lock "
        "declared `instances: {within: P}` (a run's jobs), taken by both sides while they hold "
        "their P in conflicting modes, are one P's children, so the two never meet on them: "
        "such a loop is not reported. A loop with `order: none` (the rows of one statement "
        "without ORDER BY) and a `set:` of two named instances are in no order. A sorted loop "
        "that starts while the path still holds an "
        "instance from before it (or from an earlier run of the same loop) is reported with "
        "that instance: it may sort after the ones the loop takes."
    ),
    why=(
        "Two transactions that lock rows 1 and 2 in opposite orders deadlock. One declared "
        "order for every path (ascending primary key, say) makes that impossible."
    ),
    example={
        "locks.yaml": _TWO_ROWS,
        "paths/money.yaml": """\
group: Money
paths:
  transfer:
    title: Transfer
    steps:
      - loop: both accounts
        order: request order
        steps:
          - take: account
""",
    },
    use_instead={
        "locks.yaml": _TWO_ROWS.replace(
            "    modes: {for no key update: writers}\n  ledger",
            "    modes: {for no key update: writers}\n    instances: {order: ascending id}\n"
            "  ledger",
        ),
        "paths/money.yaml": ("        order: request order\n", "        order: ascending id\n"),
    },
)
def check_instances(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        graph = ctx.graph(backend)
        # One finding per step: a shared path's loop run from several callers is one cause.
        by_step: dict[tuple[str, Location], list[Edge]] = {}
        partner: dict[tuple[str, Location], Edge] = {}
        for clash in instance_clashes(ctx, graph):
            key = (clash.lock, clash.first.location)
            by_step.setdefault(key, []).append(clash.first)
            partner.setdefault(key, clash.second)
        for (lock_id, _), firsts in by_step.items():
            e, f = firsts[0], partner[(lock_id, firsts[0].location)]
            # Several callers of a shared path: the shared path is the cause. One caller (a
            # path that runs a sorted loop twice, say) is its own cause, as before.
            takers = sorted({x.path for x in firsts})
            owner = e.through[-1] if e.through and len(takers) > 1 else e.path
            callers = [t for t in takers if t != owner] if len(takers) > 1 else []
            lock = ctx.model.locks[lock_id]
            statement = ctx.set_statements.get(e.location)
            if statement:
                order = "in one statement, in no order (a set: take)"
            elif e.order == "none":
                order = "in no order (order: none)"
            else:
                order = f"in {e.order}" if e.order else "in no declared order"
            declared = (
                f"the lock's declared order is {lock.instance_order}"
                if lock.instance_order
                else "the lock declares no instance order"
            )
            if f.location == e.location:
                other = "a second run of the same step"
            elif f.path == e.path:
                other = "a second run of the same path"
            else:
                other = f"path '{f.path}'"
            if lock.instance_order and e.order == lock.instance_order:
                # Sorted, but not against what it already holds: an instance taken before this
                # sorted run (before the loop, or by an earlier run of it) may sort after it.
                before = (
                    "in an earlier run of this sorted loop (an enclosing loop runs it again)"
                    if e.held_at == e.location.line
                    else f"at line {e.held_at}, before the sorted run"
                )
                message = (
                    f"path '{owner}' takes instances of {lock_id} in {e.order} while it holds "
                    f"one it took {before}; that one may sort after the ones it takes, so "
                    f"the run is not in {e.order} as a whole"
                )
                hint = (
                    f"take every instance of {lock_id} in one sorted run (collect them first), "
                    "end the transaction between runs, or hold a gate lock"
                )
            else:
                message = f"path '{owner}' takes several instances of {lock_id} {order}; {declared}"
                hint = (
                    f"take them in {lock.instance_order} (say so with order:), or hold a gate lock"
                    if lock.instance_order
                    else "declare instances: {order: ...} on the lock and take every instance in it"
                )
                if lock.instance_order and statement:
                    hint = (
                        f"take them one statement at a time in {lock.instance_order}, or in one "
                        "statement that sorts them (SELECT ... ORDER BY ... FOR UPDATE) declared "
                        f"as a loop: with order: {lock.instance_order}; or hold a gate lock"
                    )
                elif lock.instance_order and e.order == "none":
                    hint = (
                        f"sort them in {lock.instance_order} (ORDER BY in the statement that "
                        f"takes them) and say so with order: {lock.instance_order}, or hold a "
                        "gate lock"
                    )
                better = sorted_first(ctx, lock_id, e.order)
                if better is not None:
                    hint = (
                        f"sort the loop's rows by {lock_id}'s order first (order: {better}), so "
                        f"each {lock_id} comes in {lock.instance_order}; or hold a gate lock"
                    )
                if e.order == "none" and _claimed_before(ctx, e, lock_id):
                    hint += (
                        "; if the statement writes exactly the rows the path claimed before "
                        "(UPDATE ... FROM the SELECT ... FOR UPDATE SKIP LOCKED), declare it as "
                        "one take with claimed: true"
                    )
            if lock.within:
                hint += (
                    f"; or hold their {lock.within} (the instance they belong to) in a mode "
                    "no other holder of it can share"
                )
            yield finding(
                message + run_from(callers),
                e.location,
                hint,
                details=(
                    f"{other} at {where(f)} also holds one instance ({f.held_mode}) while "
                    f"taking another ({f.wanted_mode}); with opposite orders the two wait on "
                    "each other.",
                ),
                paths=tuple(dict.fromkeys((owner, *callers, f.path))),
                locks=(lock_id,),
                related=(
                    Related(
                        f.location,
                        f"{other} takes another instance of {lock_id} ({f.wanted_mode}) "
                        f"while holding one ({f.held_mode})",
                    ),
                ),
                extra={"proof": proof("instances", (e, f))},
            )
