"""Which cycles of the lock-order graph are real deadlock risks.

A cycle of lock classes is reported only when one edge per hop can be chosen so that the waits
can really happen at once: each wanted mode conflicts with the mode the next transaction holds
(Postgres's tables), no two of the transactions hold a common singleton lock in conflicting
modes (a gate, which keeps them apart), and sorted instances are not counted against each other.
Two running instances of one path are two transactions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from lockdocs.analysis.graph import Edge, LockGraph, strongly_connected
from lockdocs.modes import conflicts
from lockdocs.rules.context import Context


@dataclass(frozen=True)
class Cycle:
    locks: tuple[str, ...]
    edges: tuple[Edge, ...]  # edge i: transaction i holds locks[i], wants locks[i+1]
    backend: str | None


def _singleton_guards(ctx: Context, e: Edge) -> dict[str, str]:
    found = ctx.guard_cache.get(e.guards)
    if found is None:
        # A SKIP LOCKED hold may not be held at all, so it keeps nobody apart.
        found = {
            g.lock: g.mode for g in e.guards if ctx.model.locks[g.lock].singleton and not g.maybe
        }
        ctx.guard_cache[e.guards] = found
    return found


def gate(ctx: Context, a: Edge, b: Edge) -> str | None:
    """A singleton lock both transactions hold in conflicting modes, if any."""
    ga = _singleton_guards(ctx, a)
    if not ga:
        return None
    gb = _singleton_guards(ctx, b)
    common = ga.keys() & gb.keys()
    for lock in sorted(common) if len(common) > 1 else common:
        if conflicts(ctx.lock_kind(lock, a.backend), ga[lock], gb[lock]):
            return lock
    return None


def _signature(e: Edge, ctx: Context) -> tuple[object, ...]:
    guards = tuple(sorted(_singleton_guards(ctx, e).items()))
    return (e.held_mode, e.wanted_mode, e.ordered, e.order, e.upgrade_from, e.never_waits, guards)


def _representatives(edges: list[Edge], ctx: Context) -> list[Edge]:
    """One edge per behaviour: edges equal in modes, order and gates decide the same way."""
    seen: set[tuple[object, ...]] = set()
    out: list[Edge] = []
    for e in edges:
        sig = _signature(e, ctx)
        if sig not in seen:
            seen.add(sig)
            out.append(e)
    return out


def _waits(ctx: Context, wanting: Edge, holding: Edge) -> bool:
    if wanting.never_waits:
        return False
    kind = ctx.lock_kind(wanting.dst, wanting.backend)
    if not conflicts(kind, wanting.wanted_mode, holding.held_mode):
        return False
    # An upgrade wants the instance it already holds: the other transaction can hold that
    # instance only in a mode that coexists with the one already held.
    return wanting.upgrade_from is None or not conflicts(
        kind, wanting.upgrade_from, holding.held_mode
    )


def realize(ctx: Context, locks: tuple[str, ...], graph: LockGraph) -> tuple[Edge, ...] | None:
    """Pick one witness per hop so the cycle can happen, or None when it cannot."""
    k = len(locks)
    options = [
        _representatives(graph.by_pair.get((locks[i], locks[(i + 1) % k]), []), ctx)
        for i in range(k)
    ]
    chosen: list[Edge] = []

    def search(i: int) -> bool:
        if i == k:
            return _waits(ctx, chosen[-1], chosen[0])
        for e in options[i]:
            if chosen and not _waits(ctx, chosen[-1], e):
                continue
            if any(gate(ctx, c, e) for c in chosen):
                continue
            chosen.append(e)
            if search(i + 1):
                return True
            chosen.pop()
        return False

    return tuple(chosen) if search(0) else None


def _rotate(cycle: Cycle) -> Cycle:
    """Start at the smallest lock, so one cycle has one spelling."""
    i = cycle.locks.index(min(cycle.locks))
    return Cycle(
        cycle.locks[i:] + cycle.locks[:i], cycle.edges[i:] + cycle.edges[:i], cycle.backend
    )


def _valid(ctx: Context, chain: list[Edge]) -> bool:
    locks = [e.src for e in chain]
    if len(set(locks)) != len(locks):
        return False
    return not any(gate(ctx, a, b) for i, a in enumerate(chain) for b in chain[i + 1 :])


def find_cycles(ctx: Context, graph: LockGraph, dfs_budget: int = 5_000) -> list[Cycle]:
    """Real, minimal cycles across distinct locks, in a deterministic order.

    The search runs on the graph of hops: a node is one edge (one behaviour of a path between
    two locks), and hop e leads to hop f when e's wanted lock is f's held one and e's wanted
    mode conflicts with f's held mode, with no gate between the two. A cycle there is a chain
    of waits; strongly connected components bound the search, and a breadth-first search from
    each hop finds the shortest such cycle through it, so the cost stays near-linear when the
    components are small, as they are in a healthy code base.
    """
    # Only an edge inside a strongly connected component of the lock graph can lie on a
    # cycle; in a healthy code base those components are few and small, so the hop graph
    # below is built for a small part of the edges only.
    component: dict[str, int] = {}
    for n, locks in enumerate(strongly_connected(graph.nodes, graph.successors())):
        if len(locks) > 1:
            for lock in locks:
                component[lock] = n
    reps: list[Edge] = []
    for (src, dst), edges in sorted(graph.by_pair.items()):
        if src != dst and src in component and component[src] == component.get(dst):
            reps.extend(_representatives(edges, ctx))
    by_src: dict[str, list[int]] = {}
    for i, e in enumerate(reps):
        by_src.setdefault(e.src, []).append(i)
    succ: dict[int, list[int]] = {}
    for i, e in enumerate(reps):
        succ[i] = [
            j
            for j in by_src.get(e.dst, ())
            if _waits(ctx, e, reps[j]) and not gate(ctx, e, reps[j])
        ]
    backend = graph.edges[0].backend if graph.edges else None
    found: list[Cycle] = []
    seen: set[tuple[str, ...]] = set()
    lock_sets: set[frozenset[str]] = set()
    covered: set[tuple[str, str]] = set()

    def explained(locks: tuple[str, ...]) -> bool:
        """Does a smaller real cycle already found use only some of these locks?"""
        if len(locks) <= 12:  # look the subsets up: no scan over every cycle found so far
            return any(
                frozenset(sub) in lock_sets
                for size in range(2, len(locks) + 1)
                for sub in itertools.combinations(sorted(locks), size)
            )
        return any(s <= set(locks) for s in lock_sets)

    def record(chain: list[Edge]) -> None:
        cyc = _rotate(Cycle(tuple(e.src for e in chain), tuple(chain), backend))
        if cyc.locks in seen or explained(cyc.locks):
            return
        seen.add(cyc.locks)
        lock_sets.add(frozenset(cyc.locks))
        found.append(cyc)
        covered.update((e.src, e.dst) for e in chain)

    for comp in strongly_connected(list(range(len(reps))), succ):
        if len(comp) < 2:
            continue
        members = set(comp)
        for start in sorted(comp, key=lambda i: reps[i].sort_key()):
            if (reps[start].src, reps[start].dst) in covered:
                continue
            chain = _shortest(start, succ, members, reps, ctx)
            if chain is not None and _valid(ctx, chain):
                record(chain)
                continue
            chain = _bounded_dfs(start, succ, members, reps, ctx, dfs_budget)
            if chain is not None:
                record(chain)
    found.sort(key=lambda c: (len(c.locks), c.locks))
    return found


def _shortest(
    start: int, succ: dict[int, list[int]], members: set[int], reps: list[Edge], ctx: Context
) -> list[Edge] | None:
    parent: dict[int, int] = {start: -1}
    frontier = [start]
    while frontier:
        nxt: list[int] = []
        for n in frontier:
            for m in succ[n]:
                if m == start:
                    chain = [n]
                    while parent[chain[-1]] != -1:
                        chain.append(parent[chain[-1]])
                    return [reps[i] for i in reversed(chain)]
                if m in members and m not in parent and not gate(ctx, reps[start], reps[m]):
                    parent[m] = n
                    nxt.append(m)
        frontier = nxt
    return None


def _bounded_dfs(
    start: int,
    succ: dict[int, list[int]],
    members: set[int],
    reps: list[Edge],
    ctx: Context,
    budget: int,
) -> list[Edge] | None:
    """Simple cycles through `start` that respect every gate and visit each lock once."""
    stack: list[tuple[int, int]] = [(start, 0)]
    chain: list[Edge] = [reps[start]]
    locks = {reps[start].src}
    while stack and budget > 0:
        node, i = stack[-1]
        if i >= len(succ[node]):
            stack.pop()
            gone = chain.pop()
            locks.discard(gone.src)
            continue
        stack[-1] = (node, i + 1)
        m = succ[node][i]
        budget -= 1
        if m == start and len(chain) > 1:
            return list(chain)
        e = reps[m]
        if m not in members or e.src in locks or any(gate(ctx, c, e) for c in chain):
            continue
        stack.append((m, 0))
        chain.append(e)
        locks.add(e.src)
    return None


@dataclass(frozen=True)
class InstanceClash:
    """Two transactions each holding one instance of a lock and wanting the other's."""

    lock: str
    first: Edge
    second: Edge


def instance_clashes(ctx: Context, graph: LockGraph) -> list[InstanceClash]:
    """Self-edges (several instances of one lock) that can wait on each other."""
    out: list[InstanceClash] = []
    for (src, dst), edges in sorted(graph.by_pair.items()):
        if src != dst:
            continue
        reps = _representatives(edges, ctx)
        reported: set[str] = set()
        for e in edges:
            if e.ordered or e.path in reported:
                continue
            for f in reps:
                if not (_waits(ctx, e, f) and _waits(ctx, f, e)):
                    continue
                if gate(ctx, e, f):
                    continue
                out.append(InstanceClash(src, e, f))
                reported.add(e.path)
                break
    return out
