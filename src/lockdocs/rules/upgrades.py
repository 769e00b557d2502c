"""LD203: a lock upgrade, a weaker mode then a stronger one of the same lock, that two runs
can deadlock on (each holds the weak mode and waits for the other's)."""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs import model as m
from lockdocs.analysis.gates import gate, parent_gated
from lockdocs.analysis.graph import Edge, parent_mode
from lockdocs.analysis.proof import proof
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.modes import conflicts, covers, modes_for_kind
from lockdocs.rules.context import CheckContext
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule


def upgrade_hint(ctx: CheckContext, e: Edge, kind: str) -> str:
    """Take the strong mode from the start; unless that would block, for the whole
    transaction, what other paths take the lock in (every request writes a table, and ACCESS
    EXCLUSIVE from the start would stop them all). Then a first mode that conflicts with
    itself does it: two runs queue at the first take instead of deadlocking at the second, and
    the other paths still get through until the upgrade."""
    plain = f"take {e.src} {e.wanted_mode} from the start (line {e.held_at})"
    weak = e.upgrade_from
    others = sorted(
        {
            ev.mode
            for ev in ctx.all_events
            if ev.lock == e.src and ev.kind in ("acquire", "upgrade") and ev.path != e.path
        }
    )
    blocked = [
        o
        for o in others
        if conflicts(kind, o, e.wanted_mode) and not any(conflicts(kind, o, w) for w in weak)
    ]
    if not blocked:
        return plain
    for mode in modes_for_kind(kind):
        if (
            conflicts(kind, mode, mode)
            and all(covers(kind, (mode,), w) for w in weak)
            and not any(conflicts(kind, o, mode) for o in blocked)
        ):
            table = ctx.model.locks[e.src].table
            how = f" (LOCK TABLE {table} IN {mode.upper()} MODE)" if kind == "table" else ""
            return (
                f"take {e.src} {mode} before line {e.held_at}{how}: it conflicts with itself, "
                "so two runs queue there instead of deadlocking at the upgrade, and it lets "
                "the other paths' "
                + " and ".join(blocked)
                + f" through, which {e.wanted_mode} from the start would block for the whole "
                "transaction"
            )
    return plain + " (it blocks " + " and ".join(blocked) + " of other paths until the end)"


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
def check_upgrades(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
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
        yield finding(
            f"path '{e.path}' holds {e.src} ({e.held_mode}) and then asks for it {e.wanted_mode}",
            e.location,
            upgrade_hint(ctx, e, kind),
            details=(
                f"{who} can both hold {e.src} {e.held_mode}; each then waits for the other to "
                f"release it before it can get {e.wanted_mode}.",
            ),
            paths=tuple(dict.fromkeys((e.path, other.path))),
            locks=(e.src,),
            extra={"proof": proof("upgrade", (e, other), upgrade=True)},
        )
