"""Which cycles of the lock-order graph are real deadlock risks.

A cycle is reported only when one edge per hop can be chosen so that the waits can really
happen at once: each wanted mode conflicts with the mode the next transaction holds (Postgres's
tables), no two of the transactions hold a common singleton lock in conflicting modes (a gate,
which keeps them apart), and sorted instances are not counted against each other. Two running
instances of one path are two transactions. A lock with instances may appear more than once
on a cycle (three transactions: one holds row 2 and wants the ledger, one holds the ledger and
wants row 1, one holds row 1 and wants row 2 in its sorted loop).

The graph of waits and its search are in search.py, a row's wait queue in queues.py, and what
keeps two transactions apart (gates) in gates.py; this module turns what the search finds into
cycles, minimal and in one spelling, and finds the clashes of several instances of one lock.
"""

from __future__ import annotations

from lockdocs.analysis.budget import ARCS
from lockdocs.analysis.facts import Facts
from lockdocs.analysis.gates import gate, representatives, waits
from lockdocs.analysis.graph import Edge, LockGraph
from lockdocs.analysis.search import Order, Search, closes, forward
from lockdocs.model.columns import same_order
from lockdocs.records import record

# States one search (one starting hop) may visit unless locks.yaml says otherwise (`limits:
# {cycle_search: N}`), and all searches of one graph together (ten times that).
SEARCH_BUDGET = 200_000


@record
class Cycle:
    locks: tuple[str, ...]
    edges: tuple[Edge, ...]  # edge i: transaction i holds locks[i], wants locks[i+1]
    backend: str | None


@record
class Unfinished:
    """A component of the graph of waits where the search stopped at its budget."""

    locks: tuple[str, ...]  # the locks of the component
    start: Edge  # the hop whose search stopped
    states: int
    backend: str | None
    # What stopped it: "search" (limits.cycle_search), or the whole analysis's budget
    # (analysis/budget.py): "work" (limits.analysis_work) or "time" (limits.analysis_seconds)
    reason: str = "search"


def _rotate(cycle: Cycle) -> Cycle:
    """Start at the smallest (lock, path) hop, so one cycle has one spelling."""
    keys = [(lk, e.path, e.location.line) for lk, e in zip(cycle.locks, cycle.edges, strict=True)]
    i = keys.index(min(keys))
    return Cycle(
        cycle.locks[i:] + cycle.locks[:i], cycle.edges[i:] + cycle.edges[:i], cycle.backend
    )


def find_cycles(
    ctx: Facts,
    graph: LockGraph,
    budget: int | None = None,
) -> tuple[list[Cycle], list[Unfinished]]:
    """Real, minimal cycles over two or more locks, in a deterministic order, and the
    components where the search stopped at its budget."""
    budget = budget if budget is not None else ctx.model.limits.cycle_search
    total_budget = 10 * budget
    search = Search(ctx, graph)
    reps = search.reps
    backend = graph.backend
    comps = search.components()
    if comps is None:  # the whole analysis's budget ran out before any search
        why = ctx.budget.out or "work"
        return [], [Unfinished(locks, e, 0, backend, why) for locks, e in search.unsearched()]
    found: list[Cycle] = []
    unfinished: list[Unfinished] = []
    pairs: set[frozenset[str]] = set()
    spent = 0
    for comp in comps:
        members = set(comp)
        locks = tuple(sorted({reps[i].src for i in comp} | {reps[i].dst for i in comp}))
        if len(locks) < 2:
            continue  # one lock alone: several instances or an upgrade (LD202, LD203)
        stopped: Unfinished | None = None
        for start in sorted(comp, key=lambda i: reps[i].sort_key()):
            e = reps[start]
            # A cycle over two or more locks has a hop between two of them: start there. Once a
            # cycle over just these two locks is known, any other through the hop includes it.
            if e.src == e.dst or frozenset((e.src, e.dst)) in pairs:
                continue
            if spent >= total_budget or ctx.budget.out:
                why = ctx.budget.out or "search"
                stopped = stopped or Unfinished(locks, e, 0, backend, why)
                break
            allowed = min(budget, total_budget - spent)
            before = search.arcs
            search.arc_cap = before + ARCS * ctx.budget.left
            chain, steps = search.shortest(start, members, allowed)
            if steps >= 0 and chain is not None and not search.valid(chain):
                more, extra = search.shortest_valid(start, members, allowed - steps, len(chain))
                chain, steps = more, (steps + extra if extra >= 0 else -1)
            paid = search.arcs // ARCS - before // ARCS
            if not ctx.budget.spend(paid) and steps < 0:
                # the whole analysis's budget ran out during this search (one that finished
                # first still counts: its cycle, or its proof that there is none)
                stopped = stopped or Unfinished(locks, e, 0, backend, ctx.budget.out or "work")
                break
            if steps < 0:
                spent += allowed
                stopped = stopped or Unfinished(locks, e, allowed, backend)
                continue
            spent += steps
            if chain is None:
                continue  # no cycle of waits through it that no gate cuts
            hops = [reps[i] for i in chain]
            cyc = _rotate(Cycle(tuple(x.src for x in hops), tuple(hops), backend))
            found.append(cyc)
            if len(set(cyc.locks)) == 2:
                pairs.add(frozenset(cyc.locks))
        if stopped is not None:
            unfinished.append(stopped)
    return _minimal(found), unfinished


def _minimal(found: list[Cycle]) -> list[Cycle]:
    """Drop a cycle whose locks include every lock of a smaller one (that one explains it) and
    repeats of one spelling."""
    found = sorted(found, key=lambda c: (len(set(c.locks)), len(c.locks), c.locks))
    kept: list[Cycle] = []
    seen: set[tuple[str, ...]] = set()
    sets: list[frozenset[str]] = []
    for c in found:
        s = frozenset(c.locks)
        if c.locks in seen or any(k <= s for k in sets):
            continue
        seen.add(c.locks)
        sets.append(s)
        kept.append(c)
    kept.sort(key=lambda c: (len(c.locks), c.locks))
    return kept


@record
class InstanceClash:
    """Two transactions each holding one instance of a lock and wanting the other's."""

    lock: str
    first: Edge
    second: Edge


def instance_clashes(ctx: Facts, graph: LockGraph) -> list[InstanceClash]:
    """Self-edges (several instances of one lock) that can wait on each other."""
    out: list[InstanceClash] = []
    for src, dst in sorted(graph.by_pair):
        if src != dst:
            continue
        edges = graph.by_pair[(src, dst)]
        reps = representatives(edges, ctx)
        reported: set[str] = set()
        declared = ctx.model.locks[src].instance_order
        for e in edges:
            if e.path in reported or (e.ordered and same_order(e.sorted_by, declared)):
                continue  # in the lock's declared order: never the one to blame
            for f in reps:
                if e.ordered and f.ordered and same_order(e.sorted_by, f.sorted_by):
                    continue  # two runs in one order never take two instances the other way
                if not (waits(ctx, e, f) and waits(ctx, f, e)):
                    continue
                if gate(ctx, e, f):
                    continue
                out.append(InstanceClash(src, e, f))
                reported.add(e.path)
                break
    return out


__all__ = [
    "Cycle",
    "InstanceClash",
    "Unfinished",
    "find_cycles",
    "instance_clashes",
]


def _still_closes(c: Edge, others: list[Edge]) -> bool:
    """Does the cycle still close with `c` in the place of one hop? Not when every hop then
    moves forward on one dimension, one strictly (see search.closes)."""
    state: Order | None = None
    for e in (c, *others):
        hop = None if e.upgrade_from or e.queued else frozenset((d, r == "<") for d, r in e.dims)
        state = forward(state, hop)
    return closes(state)


def stand_ins(ctx: Facts, graph: LockGraph, cycle: Cycle) -> list[list[Edge]]:
    """Per hop of `cycle`, every edge of the graph that can take that hop's place with the
    other hops kept: the same two locks, a wait on the next hop's hold, a hold the previous
    hop waits for, and no gate with any other hop. The witness is one of them. A cycle with a
    hop on one lock (instances, an upgrade) or through a row's queue gets none: its hops are
    not interchangeable that simply."""
    edges = cycle.edges
    k = len(edges)
    if any(e.src == e.dst or e.queued for e in edges):
        return []
    out: list[list[Edge]] = []
    for i, e in enumerate(edges):
        prev, nxt = edges[i - 1], edges[(i + 1) % k]
        others = [edges[j] for j in range(k) if j != i]
        found = [
            c
            for c in graph.by_pair.get((e.src, e.dst), [])
            if waits(ctx, c, nxt)
            and waits(ctx, prev, c)
            and not any(gate(ctx, c, o) for o in others)
            and _still_closes(c, others)
        ]
        out.append(found or [e])
    return out
