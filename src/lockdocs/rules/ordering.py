"""LD2xx: lock-order analysis: cycles that can deadlock, unsorted instances, upgrades."""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.analysis.cycles import Cycle, find_cycles, gate, instance_clashes
from lockdocs.analysis.graph import Edge
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


def interleaving(locks: tuple[str, ...], edges: tuple[Edge, ...]) -> list[str]:
    """A column per transaction, one row per event, ending in the deadlock."""
    k = len(edges)
    heads = [f"T{i + 1} ({e.path})" for i, e in enumerate(edges)]
    rows: list[list[str]] = []
    for i, e in enumerate(edges):
        row = [""] * k
        row[i] = f"takes {locks[i]} ({e.held_mode})"
        rows.append(row)
    for i, e in enumerate(edges):
        row = [""] * k
        nxt = (i + 1) % k
        last = i == k - 1
        row[i] = f"wants {locks[nxt]} ({e.wanted_mode})"
        row[i] += ": deadlock" if last else f", waits for T{nxt + 1}"
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
        "hold in conflicting modes) keeps the transactions apart. The report names each hop's "
        "path, file and line, and shows the interleaving that ends in the deadlock."
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
        graph = ctx.graph(backend)
        for cycle in find_cycles(ctx, graph):
            k = len(cycle.locks)
            on = f" on {backend}" if backend else ""
            details = ["The waits, hop by hop:"]
            for i, e in enumerate(cycle.edges):
                taken = f", taken at line {e.held_at}" if e.held_at else ""
                details.append(
                    f"  {i + 1}. {e.path} at {_where(e)}: holds {cycle.locks[i]} "
                    f"({e.held_mode}{taken}), wants {cycle.locks[(i + 1) % k]} ({e.wanted_mode})"
                )
            details.append("One interleaving:")
            details.extend("  " + line for line in interleaving(cycle.locks, cycle.edges))
            paths = tuple(dict.fromkeys(e.path for e in cycle.edges))
            first = cycle.edges[0]
            hops = _hops(cycle)
            yield Diagnostic(
                "LD201",
                Severity.ERROR,
                f"lock-order cycle{on}: "
                + " -> ".join((*cycle.locks, cycle.locks[0]))
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
        "way round, with conflicting modes and no gate between them."
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
            yield Diagnostic(
                "LD202",
                Severity.ERROR,
                f"path '{owner}' takes several instances of {lock_id} {order}; {declared}"
                + run_from(callers),
                e.location,
                f"take them in {lock.instance_order} (say so with order:), or hold a gate lock"
                if lock.instance_order
                else "declare instances: {order: ...} on the lock and take every instance in it",
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
        "Two runs both get the weak mode, then each waits for the other to let go: Postgres "
        "reports 40P01 at once (its early deadlock check), every time the two overlap."
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
    # modes can be held at once, each strong mode waits for the other's weak one, and no
    # gate keeps the two transactions apart.
    upgrades: list[tuple[Edge, str]] = []
    for ev in ctx.all_events:
        if ev.kind != "upgrade":
            continue
        held = next(h for h in ev.held if h.lock == ev.lock and h.instance == ev.instance)
        as_edge = Edge(
            ev.lock,
            ev.lock,
            ev.path,
            ev.location,
            held.mode,
            ev.mode,
            ev.held,
            held_at=held.acquired_at,
        )
        upgrades.append((as_edge, ctx.lock_kind(ev.lock, None)))
    seen: set[tuple[str, str, int]] = set()
    for e, kind in upgrades:
        key = (e.path, e.src, e.location.line)
        if key in seen or not conflicts(kind, e.wanted_mode, e.held_mode):
            continue
        other = next(
            (
                f
                for f, _ in upgrades
                if f.src == e.src
                and not conflicts(kind, e.held_mode, f.held_mode)
                and conflicts(kind, e.wanted_mode, f.held_mode)
                and conflicts(kind, f.wanted_mode, e.held_mode)
                and not gate(ctx, e, f)
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
