"""Which cycles of the lock-order graph are real deadlock risks.

A cycle of lock classes is reported only when one edge per hop can be chosen so that the waits
can really happen at once: each wanted mode conflicts with the mode the next transaction holds
(Postgres's tables), no two of the transactions hold a common singleton lock in conflicting
modes (a gate, which keeps them apart), and sorted instances are not counted against each other.
Two running instances of one path are two transactions.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs.analysis.graph import Edge, LockGraph, elementary_cycles, strongly_connected
from lockdocs.modes import conflicts
from lockdocs.rules.context import Context


@dataclass(frozen=True)
class Cycle:
    locks: tuple[str, ...]
    edges: tuple[Edge, ...]  # edge i: transaction i holds locks[i], wants locks[i+1]
    backend: str | None


def gate(ctx: Context, a: Edge, b: Edge) -> str | None:
    """A singleton lock both transactions hold in conflicting modes, if any."""
    for ga in a.guards:
        lock = ctx.model.locks[ga.lock]
        if not lock.singleton:
            continue
        kind = ctx.lock_kind(ga.lock, a.backend)
        for gb in b.guards:
            if gb.lock == ga.lock and conflicts(kind, ga.mode, gb.mode):
                return ga.lock
    return None


def _signature(e: Edge, ctx: Context) -> tuple[object, ...]:
    guards = tuple(sorted((g.lock, g.mode) for g in e.guards if ctx.model.locks[g.lock].singleton))
    return (e.held_mode, e.wanted_mode, e.ordered, e.order, guards)


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
    kind = ctx.lock_kind(wanting.dst, wanting.backend)
    return conflicts(kind, wanting.wanted_mode, holding.held_mode)


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


def find_cycles(ctx: Context, graph: LockGraph) -> list[Cycle]:
    """Real, minimal cycles across distinct locks, deterministic order."""
    succ = graph.successors()
    found: list[Cycle] = []
    for comp in strongly_connected(graph.nodes, succ):
        if len(comp) < 2:
            continue
        for locks in elementary_cycles(comp, succ):
            if any(set(c.locks) <= set(locks) for c in found):
                continue  # a smaller real cycle already explains these locks
            witness = realize(ctx, locks, graph)
            if witness is not None:
                found.append(Cycle(locks, witness, graph.edges[0].backend if graph.edges else None))
    found.sort(key=lambda c: (len(c.locks), c.locks))
    return found


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
