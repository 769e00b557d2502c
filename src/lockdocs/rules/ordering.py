"""LD2xx: lock-order analysis: cycles that can deadlock, unsorted instances, upgrades."""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs import model as m
from lockdocs.analysis.cycles import Cycle, gate, instance_clashes, parent_gated, stand_ins
from lockdocs.analysis.graph import Edge, parent_mode
from lockdocs.analysis.proof import proof
from lockdocs.diagnostics import Diagnostic, Location, Related, Severity
from lockdocs.modes import conflicts
from lockdocs.rules.context import Context, run_from
from lockdocs.rules.hints import cycle_hint
from lockdocs.rules.registry import rule

_TWO_ROWS = """\
lockdocs: 1
page: {title: Locks}
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: writers}
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: writers}
"""


def _where(e: Edge) -> str:
    through = f" (inside {' -> '.join(e.through)})" if e.through else ""
    return f"{e.location}{through}"


def labels(ctx: Context, locks: tuple[str, ...], edges: tuple[Edge, ...]) -> list[str]:
    """How to name each lock of a cycle: a lock with instances met more than once on it is
    several rows (or keys), told apart as `a #1`, `a #2`. An upgrade, or a wait first in a
    row's queue, wants the very instance it stands on, so the next position keeps its name."""
    k = len(locks)
    repeated = {lk for lk in locks if locks.count(lk) > 1 and not ctx.model.locks[lk].singleton}
    out = list(locks)
    counter: dict[str, int] = {}
    for i in range(k):
        lk = locks[i]
        if lk not in repeated:
            continue
        prev = edges[i - 1]
        if i > 0 and prev.src == lk and (prev.upgrade_from or prev.queued):
            out[i] = out[i - 1]
            continue
        counter[lk] = counter.get(lk, 0) + 1
        out[i] = f"{lk} #{counter[lk]}"
    if k > 1 and edges[-1].src == locks[0] and (edges[-1].upgrade_from or edges[-1].queued):
        out[0] = out[-1]
    return out


def interleaving(locks: tuple[str, ...], edges: tuple[Edge, ...]) -> list[str]:
    """A column per transaction, one row per event, ending in the deadlock. A transaction that
    waits first in a row's queue waits from the start; the one whose hold makes the next
    request queue gets a column of its own after the cycle's."""
    k = len(edges)
    heads = [f"T{i + 1} ({e.path})" for i, e in enumerate(edges)]
    extra = {i: len(heads) + n for n, i in enumerate(i for i, e in enumerate(edges) if e.queued)}
    for i, column in extra.items():
        by = edges[i].queued_by
        heads.append(f"T{column + 1} ({by.path if by else '?'})")
    width_n = len(heads)
    rows: list[list[str]] = []
    for i, e in enumerate(edges):
        row = [""] * width_n
        if e.queued:
            hold = [""] * width_n
            hold[extra[i]] = f"takes {locks[i]} ({e.queued})"
            rows.append(hold)
            nxt = (i + 1) % k
            row[i] = f"wants {locks[i]} ({e.wanted_mode}), waits for T{nxt + 1}, first in the queue"
        else:
            row[i] = f"takes {locks[i]} ({e.held_mode})"
        rows.append(row)
    order = [i for i in range(k) if not edges[i].queued]
    for n, i in enumerate(order):
        e = edges[i]
        row = [""] * width_n
        nxt = (i + 1) % k
        row[i] = f"wants {locks[nxt]} ({e.wanted_mode})"
        if edges[nxt].queued:
            row[i] += f", queues behind T{nxt + 1}"
        if n == len(order) - 1:
            row[i] += ": deadlock"
        elif edges[nxt].queued:
            pass
        else:
            row[i] += f", waits for T{nxt + 1}"
        rows.append(row)
    width = max(len(c) for r in [heads, *rows] for c in r) + 2
    lines = ["".join(h.ljust(width) for h in heads).rstrip()]
    for r in rows:
        lines.append("".join(c.ljust(width) for c in r).rstrip())
    return lines


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
        "under load, in a way no single-request test shows."
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
def check_cycles(ctx: Context) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for cycle in ctx.cycles(backend)[0]:
            k = len(cycle.locks)
            on = f" on {backend}" if backend else ""
            names = labels(ctx, cycle.locks, cycle.edges)
            details = ["The waits, hop by hop:"]
            for i, e in enumerate(cycle.edges):
                if e.queued and e.queued_by:
                    by = e.queued_by
                    details.append(
                        f"  {i + 1}. {e.path} at {_where(e)}: waits for {names[i]} "
                        f"({e.wanted_mode}) first in the row's queue, holding its tuple lock; "
                        f"while {by.path} (at {_where(by)}) holds {names[i]} ({e.queued}), the "
                        f"previous request must wait too and queues behind it"
                    )
                    continue
                taken = f", taken at line {e.held_at}" if e.held_at else ""
                earlier = " in an earlier iteration" if e.across_iterations else ""
                details.append(
                    f"  {i + 1}. {e.path} at {_where(e)}: holds {names[i]} "
                    f"({e.held_mode}{taken}{earlier}), wants {names[(i + 1) % k]} "
                    f"({e.wanted_mode})"
                )
            details.append("One interleaving:")
            details.extend("  " + line for line in interleaving(tuple(names), cycle.edges))
            details.extend(_stand_in_lines(ctx, backend, cycle, names))
            paths = tuple(dict.fromkeys(e.path for e in cycle.edges))
            first = cycle.edges[0]
            hops = _hops(cycle)
            yield Diagnostic(
                "LD201",
                Severity.ERROR,
                f"lock-order cycle{on}: "
                + " -> ".join(
                    f"{n} (queue)" if e.queued else n
                    for n, e in zip((*names, names[0]), (*cycle.edges, cycle.edges[0]), strict=True)
                )
                + " (paths "
                + ", ".join(paths)
                + ")",
                first.location,
                cycle_hint(ctx, cycle),
                details=tuple(details),
                paths=paths,
                locks=cycle.locks,
                related=hops[1:],
                threads=tuple((hop,) for hop in hops),
                extra={"proof": proof("cycle", cycle.edges)},
            )


# The most paths named per hop in the list of stand-ins; the rest are counted.
_MAX_STAND_INS = 12


def _stand_in_lines(ctx: Context, backend: str | None, cycle: Cycle, names: list[str]) -> list[str]:
    """Every path that can take a hop's place (one report per cycle, but no second pair of
    paths over the same locks hidden behind the first): a shared path once, with the paths
    that run it."""
    per_hop = stand_ins(ctx, ctx.graph(backend), cycle)
    k = len(cycle.edges)
    lines: list[str] = []
    for i, found in enumerate(per_hop):
        runs: dict[str, set[str]] = {}
        for c in found:
            owner = c.through[-1] if c.through else c.path
            runs.setdefault(owner, set())
            if c.through:
                runs[owner].add(c.path)
        shown = [
            owner + (f" (run from {', '.join(sorted(callers))})" if callers else "")
            for owner, callers in sorted(runs.items())
        ]
        if len(shown) > _MAX_STAND_INS:
            rest = len(shown) - _MAX_STAND_INS
            shown = [*shown[:_MAX_STAND_INS], f"and {rest} more"]
        lines.append(f"  {i + 1}. {names[i]} -> {names[(i + 1) % k]}: {'; '.join(shown)}")
    witnesses = {(e.through[-1] if e.through else e.path) for e in cycle.edges}
    more = any(
        (c.through[-1] if c.through else c.path) not in witnesses or c.through
        for found in per_hop
        for c in found
        if c not in cycle.edges
    )
    if not more:
        return []
    return ["Every path that can stand in for a hop (each makes the same deadlock):", *lines]


def _hops(cycle: Cycle) -> tuple[Related, ...]:
    """Each transaction's wait, at the step where it waits: for SARIF's related locations and
    its code flow (one thread per transaction)."""
    k = len(cycle.locks)
    out = []
    for i, e in enumerate(cycle.edges):
        nxt = (i + 1) % k
        taken = f" (taken at line {e.held_at})" if e.held_at else ""
        then = "deadlock" if i == k - 1 else f"waits for T{nxt + 1}"
        out.append(
            Related(
                e.location,
                f"T{i + 1} ({e.path}) holds {cycle.locks[i]} ({e.held_mode}){taken} and wants "
                f"{cycle.locks[nxt]} ({e.wanted_mode}): {then}",
            )
        )
    return tuple(out)


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
        "paths/money.yaml": """\
group: Money
paths:
  transfer:
    title: Transfer
    steps:
      - loop: both accounts
        order: ascending id
        steps:
          - take: account
""",
    },
)
def check_instances(ctx: Context) -> Iterable[Diagnostic]:
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
            if lock.within:
                hint += (
                    f"; or hold their {lock.within} (the instance they belong to) in a mode "
                    "no other holder of it can share"
                )
            yield Diagnostic(
                "LD202",
                Severity.ERROR,
                message + run_from(callers),
                e.location,
                hint,
                details=(
                    f"{other} at {_where(f)} also holds one instance ({f.held_mode}) while "
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


@rule(
    "LD203",
    "lock-upgrade",
    Severity.ERROR,
    summary="A path takes a lock in a weaker mode, then in a stronger one.",
    what=(
        "Reports a transaction that holds a lock in a mode that others may hold at the same "
        "time (shared, FOR SHARE) and then asks for a conflicting stronger mode of the same "
        "lock, unless a gate lock keeps two runs apart."
    ),
    why=(
        "Two runs both get the weak mode, then each waits for the other to let go, every time "
        "the two overlap. For an advisory or table lock Postgres sees it at once (40P01 from its "
        "early check when the second request queues); for a row only its deadlock detector "
        "does, after deadlock_timeout (1 s by default), so a lock_timeout shorter than that "
        "ends the wait with 55P03 instead."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
locks:
  catalog:
    title: Catalog
    kind: advisory
    key: {hashtextextended: {text: catalog}}
    modes: {shared: readers, exclusive: the publisher}
""",
        "paths/catalog.yaml": """\
group: Catalog
paths:
  publish:
    title: Publish
    steps:
      - take: catalog
        mode: shared
      - take: catalog
        mode: exclusive
""",
    },
    use_instead={
        "paths/catalog.yaml": (
            "        mode: shared\n      - take: catalog\n",
            "",
        ),
    },
)
def check_upgrades(ctx: Context) -> Iterable[Diagnostic]:
    # Two upgrades of one lock (the same path twice, or two paths) deadlock when both weak
    # holds can coexist, each strong request waits for the other's weak hold, and no gate keeps
    # the two transactions apart. An upgrade is judged on the take that waits: one taken NOWAIT
    # or SKIP LOCKED never waits, whatever the first take was; a first take with SKIP LOCKED
    # that may have skipped the row still counts when it did lock it.
    upgrades: list[tuple[Edge, str]] = []
    for ev in ctx.all_events:
        if ev.kind != "upgrade" or ev.option in m.NEVER_WAITS:
            continue
        mine = [h for h in ev.held if h.lock == ev.lock and h.instance == ev.instance]
        held_at = min((h.acquired_at for h in mine), default=0)
        # the parent (instances: {within: P}) the instance was first taken under
        tag = next((h.parent for h in mine if h.parent), ev.parent)
        parent = parent_mode(ev.held, ctx.model.locks[ev.lock].within, tag)
        as_edge = Edge(
            ev.lock,
            ev.lock,
            ev.path,
            ev.location,
            ", ".join(ev.upgrade_from),
            ev.mode,
            ev.held,
            held_at=held_at,
            upgrade_from=ev.upgrade_from,
            wanted_parent=parent,
            held_parent=parent,
        )
        upgrades.append((as_edge, ctx.lock_kind(ev.lock, None)))

    def coexist(kind: str, a: tuple[str, ...], b: tuple[str, ...]) -> bool:
        return not any(conflicts(kind, x, y) for x in a for y in b)

    def waits_for(kind: str, e: Edge, f: Edge) -> bool:
        return any(conflicts(kind, e.wanted_mode, y) for y in f.upgrade_from)

    seen: set[tuple[str, str, int]] = set()
    for e, kind in upgrades:
        key = (e.path, e.src, e.location.line)
        if key in seen:
            continue
        other = next(
            (
                f
                for f, _ in upgrades
                if f.src == e.src
                and coexist(kind, e.upgrade_from, f.upgrade_from)
                and waits_for(kind, e, f)
                and waits_for(kind, f, e)
                and not gate(ctx, e, f)
                and not parent_gated(ctx, e, f.held_parent)
            ),
            None,
        )
        if other is None:
            continue
        seen.add(key)
        who = (
            f"Two runs of '{e.path}'"
            if other.path == e.path and other.location == e.location
            else f"'{e.path}' and '{other.path}' (at {other.location})"
        )
        yield Diagnostic(
            "LD203",
            Severity.ERROR,
            f"path '{e.path}' holds {e.src} ({e.held_mode}) and then asks for it {e.wanted_mode}",
            e.location,
            f"take {e.src} {e.wanted_mode} from the start (line {e.held_at})",
            details=(
                f"{who} can both hold {e.src} {e.held_mode}; each then waits for the other to "
                f"release it before it can get {e.wanted_mode}.",
            ),
            paths=tuple(dict.fromkeys((e.path, other.path))),
            locks=(e.src,),
            extra={"proof": proof("upgrade", (e, other), upgrade=True)},
        )


@rule(
    "LD204",
    "cycle-search-unfinished",
    Severity.ERROR,
    summary="The cycle search stopped at its budget: a deadlock there may be unreported.",
    what=(
        "The search for cycles visits, for each hop of the graph of waits, every state (a hop "
        "with the gate locks claimed so far) it can reach, so it either finds the shortest "
        "cycle no gate cuts or proves there is none. When one search needs more states than "
        "`limits.cycle_search` allows, it stops and this reports the component (its locks) it "
        "could not finish, instead of passing over it in silence."
    ),
    why=(
        'A check that gives up quietly says "0 errors" about a part of the graph it never '
        "looked at. A stopped search is a finding of its own: the locks it names may still "
        "deadlock."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
limits: {cycle_search: 2}
locks:
  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}
  b: {title: B, kind: advisory, key: {hashtextextended: {text: b}}, modes: {exclusive: x}}
  c: {title: C, kind: advisory, key: {hashtextextended: {text: c}}, modes: {exclusive: x}}
""",
        "paths/ring.yaml": """\
group: Ring
paths:
  ab: {title: A then B, steps: [{take: a}, {take: b}]}
  bc: {title: B then C, steps: [{take: b}, {take: c}]}
  ca: {title: C then A, steps: [{take: c}, {take: a}]}
""",
    },
    use_instead={
        "locks.yaml": ("limits: {cycle_search: 2}\n", ""),
        "paths/ring.yaml": (
            "  ca: {title: C then A, steps: [{take: c}, {take: a}]}\n",
            "  ca: {title: C then A, steps: [{take: a}, {take: c}]}\n",
        ),
    },
)
def check_unfinished(ctx: Context) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for u in ctx.cycles(backend)[1]:
            on = f" on {backend}" if backend else ""
            shown = ", ".join(u.locks[:12]) + (
                f" and {len(u.locks) - 12} more" if len(u.locks) > 12 else ""
            )
            yield Diagnostic(
                "LD204",
                Severity.ERROR,
                f"the cycle search{on} stopped at its budget in the component of {shown}; "
                "a deadlock among these locks may be unreported",
                u.start.location,
                "raise limits.cycle_search in locks.yaml, or make the component smaller: take "
                "these locks in one order, or hold a gate lock around the paths that do not",
                details=(
                    f"The search through {u.start.src} -> {u.start.dst} ({u.start.path} at "
                    f"{_where(u.start)}) visited {u.states:,} states without finishing.",
                ),
                paths=(u.start.path,),
                locks=u.locks,
            )


@rule(
    "LD209",
    "analysis-limit",
    Severity.ERROR,
    summary="A path is too large to analyse within the analysis's bounds; the run stops.",
    what=(
        "Flattening a path walks each of its steps once per state it can be in (branches, "
        "loops and run: steps inlined). When one path needs more work than `limits.path_work` "
        "allows, or all paths together more than twenty times that, the analysis stops there "
        "and reports the path, and the run ends as bad input (exit 2): a partial analysis would "
        "pass over deadlocks."
    ),
    why=(
        "Without a bound, a few dozen lines of nested run: steps can take minutes and "
        "gigabytes; with a silent bound, the locks past it would never be checked."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
limits: {path_work: 3}
locks:
  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}
  b: {title: B, kind: advisory, key: {hashtextextended: {text: b}}, modes: {exclusive: x}}
""",
        "paths/p.yaml": """\
group: P
paths:
  p: {title: P, steps: [{take: a}, {take: b}, {take: a}, {take: b}]}
""",
    },
    use_instead={"locks.yaml": ("limits: {path_work: 3}\n", "")},
)
def check_refused(ctx: Context) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        for r in ctx.refusals(backend):
            on = f" on {backend}" if backend else ""
            what = (
                f"path '{r.path}' needs more than {r.budget:,} units of work to analyse{on}"
                if r.scope == "path"
                else f"the paths up to '{r.path}' need more than {r.budget:,} units of work{on}"
            )
            yield Diagnostic(
                "LD209",
                Severity.ERROR,
                what + "; the analysis stopped here",
                r.location,
                "split the path (fewer run: steps nested, fewer loops and branches inlined into "
                "one path), or raise limits.path_work in locks.yaml",
                paths=(r.path,),
            )
