"""Which cycles of the lock-order graph are real deadlock risks.

A cycle is reported only when one edge per hop can be chosen so that the waits can really
happen at once: each wanted mode conflicts with the mode the next transaction holds (Postgres's
tables), no two of the transactions hold a common singleton lock in conflicting modes (a gate,
which keeps them apart), and sorted instances are not counted against each other. Two running
instances of one path are two transactions. A lock with instances may appear more than once
on a cycle (three transactions: one holds row 2 and wants the ledger, one holds the ledger and
wants row 1, one holds row 1 and wants row 2 in its sorted loop).

The search is complete or says it is not: for every hop that lies on a strongly connected
component of the graph of waits, a breadth-first search over (hop, gates claimed so far) finds
the shortest cycle through it that no gate cuts, or proves there is none. When a search needs
more than its budget of states it stops and the component is reported as unfinished (LD204)
instead of being passed over in silence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lockdocs.analysis.events import Event, Held
from lockdocs.analysis.facts import Facts as Context
from lockdocs.analysis.graph import Edge, LockGraph, parent_mode, strongly_connected
from lockdocs.modes import conflicts

# States one search (one starting hop) may visit unless locks.yaml says otherwise (`limits:
# {cycle_search: N}`), and all searches of one graph together (ten times that).
SEARCH_BUDGET = 200_000


@dataclass(frozen=True)
class Cycle:
    locks: tuple[str, ...]
    edges: tuple[Edge, ...]  # edge i: transaction i holds locks[i], wants locks[i+1]
    backend: str | None


@dataclass(frozen=True)
class Unfinished:
    """A component of the graph of waits where the search stopped at its budget."""

    locks: tuple[str, ...]  # the locks of the component
    start: Edge  # the hop whose search stopped
    states: int
    backend: str | None


def _singleton_guards(ctx: Context, e: Edge) -> dict[str, str]:
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


def parent_gated(ctx: Context, wanting: Edge, holding_parent: str | None) -> bool:
    """Is a wait of `wanting` for a transaction that holds the instance under a parent held in
    `holding_parent` impossible? Both hold the parent of one child instance, so the same
    parent instance: in conflicting modes, they never hold it at once (a parent gate)."""
    if wanting.wanted_parent is None or holding_parent is None:
        return False
    parent = ctx.model.locks[wanting.dst].within
    assert parent is not None
    kind = ctx.lock_kind(parent, wanting.backend)
    return conflicts(kind, wanting.wanted_parent, holding_parent)


def _signature(e: Edge, ctx: Context) -> tuple[object, ...]:
    guards = tuple(sorted(_singleton_guards(ctx, e).items()))
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
    )


def _representatives(edges: list[Edge], ctx: Context) -> list[Edge]:
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


def _waits(ctx: Context, wanting: Edge, holding: Edge) -> bool:
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


def _rotate(cycle: Cycle) -> Cycle:
    """Start at the smallest (lock, path) hop, so one cycle has one spelling."""
    keys = [(lk, e.path, e.location.line) for lk, e in zip(cycle.locks, cycle.edges, strict=True)]
    i = keys.index(min(keys))
    return Cycle(
        cycle.locks[i:] + cycle.locks[:i], cycle.edges[i:] + cycle.edges[:i], cycle.backend
    )


TUPLE_LOCK = "tuple lock"


def _queue_hops(ctx: Context, backend: str | None, locks: set[str]) -> list[Edge]:
    """The hops a row's wait queue adds (PostgreSQL's src/backend/access/heap/README.tuplock):
    a request for a row that conflicts with a holder first takes the tuple's own lock, then
    waits for the holders; a later request that must wait too (it conflicts with some holder)
    queues for the tuple lock behind it, in strengths that conflict as the row modes do, even
    when it coexists with every holder the first one waits for. A request that conflicts with
    no holder is granted at once (it never queues), and an upgrade of a row already held skips
    the queue. One hop per waiting take (row, mode, gates) and per way another transaction
    holds the row (what makes the later request queue: its mode and what it holds then)."""
    rows = {lk for lk in locks if ctx.lock_kind(lk, backend) == "row"}
    if not rows:
        return []
    holders: dict[str, dict[tuple[object, ...], Edge]] = {}
    waiters: dict[str, dict[tuple[object, ...], Event]] = {}
    for ev in ctx.events(backend):
        if ev.kind not in ("acquire", "upgrade") or ev.lock not in rows:
            continue
        mine = Held(ev.lock, ev.mode, ev.instance, ev.run, ev.location.line, parent=ev.parent)
        # The parent (instances: {within: P}) the row is taken under, held for sure then.
        parent = parent_mode(ev.held, ctx.model.locks[ev.lock].within, ev.parent)
        holding = Edge(
            ev.lock,
            ev.lock,
            ev.path,
            ev.location,
            ev.mode,
            ev.mode,
            (*ev.held, mine),
            backend=backend,
            through=ev.through,
            held_parent=parent,
        )
        key = (ev.mode, tuple(sorted(_singleton_guards(ctx, holding).items())), parent)
        holders.setdefault(ev.lock, {}).setdefault(key, holding)
        if ev.kind == "acquire" and ev.option is None:
            wkey = (
                ev.mode,
                tuple(
                    sorted(
                        (g.lock, g.mode)
                        for g in ev.held
                        if not g.maybe and ctx.model.locks[g.lock].singleton
                    )
                ),
                parent,
            )
            waiters.setdefault(ev.lock, {}).setdefault(wkey, ev)
    out: list[Edge] = []
    for lock in sorted(waiters):
        for ev in waiters[lock].values():
            waiting = Edge(
                src=lock,
                dst=lock,
                path=ev.path,
                location=ev.location,
                held_mode=TUPLE_LOCK,
                wanted_mode=ev.mode,
                guards=ev.held,
                backend=backend,
                transaction=ev.transaction,
                txkind=ev.txkind,
                through=ev.through,
                wanted_instance=ev.instance,
                wanted_parent=parent_mode(ev.held, ctx.model.locks[lock].within, ev.parent),
            )
            for holding in holders.get(lock, {}).values():
                if gate(ctx, waiting, holding) or parent_gated(ctx, waiting, holding.held_parent):
                    continue  # they never run at once
                out.append(waiting._replace(queued=holding.held_mode, queued_by=holding))
    return out


class _Search:
    """The graph of waits of one lock graph and the searches over it."""

    def __init__(self, ctx: Context, graph: LockGraph) -> None:
        self.ctx = ctx
        # Only an edge inside a strongly connected component of the lock graph can lie on a
        # cycle over two or more locks; in a healthy code base those components are few and
        # small, so the graph of waits is built for a small part of the edges only.
        component: dict[str, int] = {}
        for n, locks in enumerate(strongly_connected(graph.nodes, graph.successors())):
            if len(locks) > 1:
                for lock in locks:
                    component[lock] = n
        reps: list[Edge] = []
        for (src, dst), edges in sorted(graph.by_pair.items()):
            if src in component and component[src] == component.get(dst):
                reps.extend(_representatives(edges, ctx))
        backend = graph.backend
        reps.extend(_queue_hops(ctx, backend, set(component)))
        self.reps = reps
        self.guards = [_singleton_guards(ctx, e) for e in reps]
        # Each hop's guard set as a number (-1: none), so gate checks are cached per pair.
        ids: dict[frozenset[tuple[str, str]], int] = {}
        self.gid = [
            ids.setdefault(frozenset(g.items()), len(ids)) if g else -1 for g in self.guards
        ]
        self._gates: dict[tuple[int, int], bool] = {}
        # For a queue hop: what the transaction that makes later requests queue holds.
        self.witness = {
            i: _singleton_guards(ctx, e.queued_by) for i, e in enumerate(reps) if e.queued_by
        }
        self.kinds = {
            lock: ctx.lock_kind(lock, backend)
            for g in (*self.guards, *self.witness.values())
            for lock in g
        }
        # Hops are grouped by what decides an arc into them: a holder by (lock, held mode, gate
        # set), a queue waiter by (lock, wanted mode, the mode that makes others queue, gate
        # sets); a hop's successors depend only on its own (lock wanted, modes, gate set), so
        # hops that share those share one list. That keeps a dense graph (many behaviours of
        # one pair of locks) from costing a gate check per pair of hops.
        holders: dict[str, dict[tuple[str, int, str | None], list[int]]] = {}
        waiters: dict[str, dict[tuple[str, str, int, int, str | None, str | None], list[int]]] = {}
        self.wid: dict[int, int] = {}
        wids: dict[frozenset[tuple[str, str]], int] = {}
        for i, e in enumerate(reps):
            if e.queued is None:
                key_h = (e.held_mode, self.gid[i], e.held_parent)
                holders.setdefault(e.src, {}).setdefault(key_h, []).append(i)
            else:
                w = self.witness[i]
                self.wid[i] = wids.setdefault(frozenset(w.items()), len(wids)) if w else -1
                witness = e.queued_by.held_parent if e.queued_by else None
                key = (
                    e.wanted_mode,
                    e.queued,
                    self.gid[i],
                    self.wid[i],
                    e.wanted_parent,
                    witness,
                )
                waiters.setdefault(e.dst, {}).setdefault(key, []).append(i)
        cache: dict[tuple[object, ...], list[int]] = {}
        self.succ: dict[int, list[int]] = {}
        for i, e in enumerate(reps):
            if e.never_waits:
                self.succ[i] = []
                continue
            same = (
                e.dst,
                e.wanted_mode,
                e.upgrade_from,
                e.queued is not None,
                self.gid[i],
                e.wanted_parent,
            )
            found = cache.get(same)
            if found is None:
                found = self._successors(ctx, backend, i, holders, waiters)
                cache[same] = found
            self.succ[i] = found
        self._claims: dict[int, frozenset[tuple[str, str]]] = {}

    def _successors(
        self,
        ctx: Context,
        backend: str | None,
        i: int,
        holders: dict[str, dict[tuple[str, int, str | None], list[int]]],
        waiters: dict[str, dict[tuple[str, str, int, int, str | None, str | None], list[int]]],
    ) -> list[int]:
        e = self.reps[i]
        out: list[int] = []
        if e.queued is not None:
            # First in the row's queue: it waits for the holders whose mode conflicts with its
            # request. (The holder that made a later request queue may be gone by then: the
            # waiter keeps its place, holding the tuple lock, while others come and go.)
            for (mode, _gid, parent), group in holders.get(e.dst, {}).items():
                if (
                    conflicts("row", e.wanted_mode, mode)
                    and not self.gated(i, group[0])
                    and not parent_gated(ctx, e, parent)
                ):
                    out.extend(group)
            return sorted(out)
        kind = ctx.lock_kind(e.dst, backend)
        for (mode, _gid, parent), group in holders.get(e.dst, {}).items():
            if (
                conflicts(kind, e.wanted_mode, mode)
                and not any(conflicts(kind, m, mode) for m in e.upgrade_from)
                and not self.gated(i, group[0])
                and not parent_gated(ctx, e, parent)
            ):
                out.extend(group)
        if not e.upgrade_from:  # an upgrade of a row already held skips the queue
            for (wanted, queued, _g, _w, _p, _q), group in waiters.get(e.dst, {}).items():
                if (
                    conflicts("row", e.wanted_mode, wanted)
                    and conflicts("row", e.wanted_mode, queued)
                    and not self.gated(i, group[0])
                    and not self._gated_with(self.witness[group[0]], i)
                    and not self._parent_queue_gated(ctx, e, self.reps[group[0]])
                ):
                    out.extend(group)
        return sorted(out)

    @staticmethod
    def _parent_queue_gated(ctx: Context, e: Edge, waiter: Edge) -> bool:
        """Can `e` not queue behind `waiter` for one row because of their parents? Both want
        that row, and the witness that makes `e` wait holds it: all three are under one
        parent instance."""
        witness = waiter.queued_by.held_parent if waiter.queued_by else None
        return parent_gated(ctx, e, waiter.wanted_parent) or parent_gated(ctx, e, witness)

    def _gated_with(self, guards: dict[str, str], j: int) -> bool:
        gj = self.guards[j]
        return any(
            lock in gj and conflicts(self.kinds[lock], mode, gj[lock])
            for lock, mode in guards.items()
        )

    def gated(self, i: int, j: int) -> bool:
        """Do hops i and j hold a common singleton in conflicting modes (a gate)? Cached per
        pair of distinct guard sets: many hops share one."""
        a, b = self.gid[i], self.gid[j]
        if a < 0 or b < 0:
            return False
        key = (a, b) if a <= b else (b, a)
        found = self._gates.get(key)
        if found is None:
            gi, gj = self.guards[i], self.guards[j]
            if len(gj) < len(gi):
                gi, gj = gj, gi
            found = any(
                lock in gj and conflicts(self.kinds[lock], mode, gj[lock])
                for lock, mode in gi.items()
            )
            self._gates[key] = found
        return found

    def components(self) -> Iterator[list[int]]:
        for comp in strongly_connected(list(range(len(self.reps))), self.succ):
            if len(comp) > 1 or comp[0] in self.succ[comp[0]]:
                yield comp

    def _items(self, j: int) -> frozenset[tuple[str, str]]:
        """What hop j claims while it waits: its gate locks (lock, mode), and itself (a hop is
        used at most once on a cycle: a second use would make a longer walk, never a needed
        one, since the start joins two locks)."""
        found = self._claims.get(j)
        if found is None:
            found = frozenset((*self.guards[j].items(), ("#", str(j))))
            self._claims[j] = found
        return found

    def _against(self, claims: frozenset[tuple[str, str]], j: int) -> set[tuple[str, str]]:
        """The claims that hop j cannot coexist with: a gate held in a conflicting mode, or
        itself already on the walk."""
        out: set[tuple[str, str]] = set()
        mine = self.guards[j]
        if ("#", str(j)) in claims:
            out.add(("#", str(j)))
        if mine:
            for lock, mode in claims:
                if lock in mine and lock != "#" and conflicts(self.kinds[lock], mine[lock], mode):
                    out.add((lock, mode))
        return out

    def _valid(self, chain: list[int]) -> bool:
        return not any(self.gated(a, b) for x, a in enumerate(chain) for b in chain[x + 1 :])

    def shortest(self, start: int, members: set[int], budget: int) -> tuple[list[int] | None, int]:
        """The shortest cycle of waits through `start`, checking gates against `start` only
        (the fast path: it is usually the answer, and `_valid` then says so), with the number
        of hops expanded, or -1 when the budget ran out."""
        parent: dict[int, int] = {start: -1}
        frontier = [start]
        steps = 0
        while frontier:
            nxt: list[int] = []
            for n in frontier:
                steps += 1
                if steps > budget:
                    return None, -1
                for m in self.succ[n]:
                    if m == start:
                        chain = [n]
                        while parent[chain[-1]] != -1:
                            chain.append(parent[chain[-1]])
                        return list(reversed(chain)), steps
                    if m in members and m not in parent and not self.gated(start, m):
                        parent[m] = n
                        nxt.append(m)
            frontier = nxt
        return None, steps

    def shortest_valid(
        self, start: int, members: set[int], budget: int, at_least: int
    ) -> tuple[list[int] | None, int]:
        """The shortest cycle of waits through `start` in which no two hops are gated against
        each other, or None when there is none; `at_least` is the length to try first (the
        shortest cycle ignoring gates). Iterative deepening over a depth-first search that
        learns, for each hop it leaves without success, which claims made before it caused the
        failure and how many hops it had left, and skips a later visit that makes all those
        claims again with no more hops left: gate-guarded noise then costs about one visit per
        hop and depth. The second value is the number of steps taken, or -1 when the budget
        ran out first."""
        failed: dict[int, list[tuple[frozenset[tuple[str, str]], int]]] = {}
        steps = 0
        for limit in range(max(2, at_least), len(members) + 2):
            cut = False
            stack: list[list[Any]] = [[start, self._items(start), 0, set()]]
            path = [start]
            while stack:
                frame = stack[-1]
                node, claims, i, why = frame
                left = limit - len(path)  # hops this walk may still add
                succ = self.succ[node]
                if i < len(succ):
                    frame[2] += 1
                    m = succ[i]
                    steps += 1
                    if steps > budget:
                        return None, -1
                    if m == start:
                        return list(path), steps
                    if m not in members:
                        continue
                    against = self._against(claims, m)
                    if against:
                        why |= against
                        continue
                    if left <= 0:
                        cut = True
                        continue
                    known = next(
                        (c for c, had in failed.get(m, ()) if c <= claims and left - 1 <= had),
                        None,
                    )
                    if known is not None:
                        why |= known
                        continue
                    stack.append([m, claims | self._items(m), 0, set()])
                    path.append(m)
                    continue
                stack.pop()
                path.pop()
                cause = frozenset(why - self._items(node))
                failed.setdefault(node, []).append((cause, left))
                if stack:
                    stack[-1][3] |= cause
            if not cut:
                return None, steps  # every walk ended before the bound: there is no cycle
        return None, steps


def find_cycles(
    ctx: Context,
    graph: LockGraph,
    budget: int | None = None,
) -> tuple[list[Cycle], list[Unfinished]]:
    """Real, minimal cycles over two or more locks, in a deterministic order, and the
    components where the search stopped at its budget."""
    budget = budget if budget is not None else ctx.model.limits.cycle_search
    total_budget = 10 * budget
    search = _Search(ctx, graph)
    reps = search.reps
    backend = graph.edges[0].backend if graph.edges else None
    found: list[Cycle] = []
    unfinished: list[Unfinished] = []
    pairs: set[frozenset[str]] = set()
    spent = 0
    for comp in search.components():
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
            if spent >= total_budget:
                stopped = stopped or Unfinished(locks, e, 0, backend)
                break
            allowed = min(budget, total_budget - spent)
            chain, steps = search.shortest(start, members, allowed)
            if steps >= 0 and chain is not None and not search._valid(chain):
                more, extra = search.shortest_valid(start, members, allowed - steps, len(chain))
                chain, steps = more, (steps + extra if extra >= 0 else -1)
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


__all__ = [
    "Cycle",
    "InstanceClash",
    "Unfinished",
    "find_cycles",
    "gate",
    "instance_clashes",
]


def stand_ins(ctx: Context, graph: LockGraph, cycle: Cycle) -> list[list[Edge]]:
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
            if _waits(ctx, c, nxt)
            and _waits(ctx, prev, c)
            and not any(gate(ctx, c, o) for o in others)
        ]
        out.append(found or [e])
    return out
