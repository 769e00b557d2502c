"""How a lock-order finding shows its proof: the name of each lock on a cycle, the
interleaving that ends in the deadlock, the other paths that can stand in for a hop, and each
transaction's wait as a related location (SARIF's code flow).

The order rules (ordering.py, upgrades.py, limits.py) word their findings with these; the
search that finds what they show is lockdocs.analysis.cycles.
"""

from __future__ import annotations

from lockdocs.analysis.cycles import Cycle, stand_ins
from lockdocs.analysis.graph import Edge
from lockdocs.analysis.proof import race, schedule
from lockdocs.diagnostics import Related
from lockdocs.rules.context import CheckContext


def where(e: Edge) -> str:
    through = f" (inside {' -> '.join(e.through)})" if e.through else ""
    return f"{e.location}{through}"


def labels(ctx: CheckContext, locks: tuple[str, ...], edges: tuple[Edge, ...]) -> list[str]:
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


def unseen_waits(ctx: CheckContext, backend: str | None, cycle: Cycle) -> list[str]:
    """The locks of the cycle whose waits Postgres cannot see: in-process (memory) locks, whose
    waiters wait in the application. A cycle with one is a hang: the server's deadlock
    detector sees only its own waits, so nothing breaks it."""
    return sorted({e.dst for e in cycle.edges if ctx.lock_kind(e.dst, backend) == "memory"})


def hang_end(ctx: CheckContext, backend: str | None, cycle: Cycle, unseen: list[str]) -> str:
    """How a hang ends: the shortest lock_timeout of a database wait on the cycle, or never."""
    bounds: list[tuple[int, str, str]] = []
    for e in cycle.edges:
        if e.dst in unseen:
            continue
        tk = ctx.model.transactions.get(e.txkind) if e.txkind else None
        if tk and tk.lock_timeout:
            bounds.append((_ms(tk.lock_timeout), tk.lock_timeout, e.path))
    if not bounds:
        return "nothing ends it but a timeout in the application or a restart"
    _, timeout, path = min(bounds)
    return f"only the lock_timeout of '{path}' ({timeout}) ends it, with 55P03"


def _ms(text: str) -> int:
    for unit, factor in (("ms", 1), ("min", 60_000), ("s", 1000)):
        if text.endswith(unit) and text[: -len(unit)].isdigit():
            return int(text[: -len(unit)]) * factor
    return 0


def interleaving(
    locks: tuple[str, ...], edges: tuple[Edge, ...], end: str = "deadlock"
) -> list[str]:
    """A column per transaction, one row per move of the proof's schedule (analysis/proof.py:
    the order replay runs them in), ending in the deadlock (or the hang, for a cycle Postgres
    cannot see). The transaction whose hold makes a request queue behind the one first in a
    row's queue gets a column of its own after the cycle's."""
    k = len(edges)
    moves = schedule(edges)
    queued = [i for i, e in enumerate(edges) if e.queued]
    heads = [f"T{i + 1} ({e.path})" for i, e in enumerate(edges)]
    for i in queued:
        by = edges[i].queued_by
        heads.append(f"T{len(heads) + 1} ({by.path if by else '?'})")
    witness = {k + n: i for n, i in enumerate(queued)}  # column -> its queue hop
    q = queued[0] if queued else -1
    raced = q >= 0 and race(edges[q], edges[(q + 1) % k])
    wants = [s for s, what in moves if what == "want"]
    rows: list[list[str]] = []
    for s, what in moves:
        row = [""] * len(heads)
        if what == "take" and s in witness:
            i = witness[s]
            row[s] = f"takes {locks[i]} ({edges[i].queued})"
        elif what == "take" and not edges[s].queued:
            row[s] = f"takes {locks[s]} ({edges[s].held_mode})"
            if raced and s == (q + 1) % k:
                row[s] += f" before T{q + 1} looks at it again (a race)"
        elif what == "want" and edges[s].queued:
            first = k + queued.index(s) if raced else (s + 1) % k
            row[s] = (
                f"wants {locks[s]} ({edges[s].wanted_mode}), waits for T{first + 1}, first in "
                "the queue"
            )
        elif what == "want":
            nxt = (s + 1) % k
            row[s] = f"wants {locks[nxt]} ({edges[s].wanted_mode})"
            if edges[nxt].queued:
                row[s] += f", queues behind T{nxt + 1}"
            if s == wants[-1]:
                row[s] += f": {end}"
            elif not edges[nxt].queued:
                row[s] += f", waits for T{nxt + 1}"
        elif what == "end":
            row[s] = f"ends; T{q + 1} wakes, but has not looked at the row again yet"
        if any(row):
            rows.append(row)
    width = max(len(c) for r in [heads, *rows] for c in r) + 2
    lines = ["".join(h.ljust(width) for h in heads).rstrip()]
    for r in rows:
        lines.append("".join(c.ljust(width) for c in r).rstrip())
    return lines


# The most paths named per hop in the list of stand-ins; the rest are counted.
MAX_STAND_INS = 12


def stand_in_lines(
    ctx: CheckContext, backend: str | None, cycle: Cycle, names: list[str]
) -> list[str]:
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
        if len(shown) > MAX_STAND_INS:
            rest = len(shown) - MAX_STAND_INS
            shown = [*shown[:MAX_STAND_INS], f"and {rest} more"]
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


def hops_of(cycle: Cycle) -> tuple[Related, ...]:
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
