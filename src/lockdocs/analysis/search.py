"""The graph of waits of one lock graph, and the searches for the shortest cycle through a hop.

The search is complete or says it is not: for every hop that lies on a strongly connected
component of the graph of waits, a breadth-first search over (hop, gates claimed so far) finds
the shortest cycle through it that no gate cuts, or proves there is none. When a search needs
more than its budget of states it stops and the component is reported as unfinished (LD204)
instead of being passed over in silence.

Every search counts the arcs it follows (a hop of a dense graph has thousands), and building
the graph of waits counts its hops and arcs, against the whole analysis's budget
(`budget.py`): past it, `complete` is False and the parts of the graph not searched are
reported, each as unfinished.
"""

from __future__ import annotations

from typing import Any

from lockdocs.analysis.budget import HOP
from lockdocs.analysis.facts import Facts
from lockdocs.analysis.gates import parent_gated, representatives, singleton_guards
from lockdocs.analysis.graph import Edge, LockGraph, strongly_connected
from lockdocs.analysis.queues import queue_hops
from lockdocs.modes import conflicts

# Per dimension a hop moves forward on, whether strictly (Edge.dims): a frozenset of
# (dimension, strict) pairs.
Order = frozenset[tuple[str, bool]]


def forward(state: Order | None, hop: Order | None) -> Order | None:
    """The dimensions every hop of a walk so far moves forward on, and whether one of them
    moved strictly; None while the walk has only hops that move on none (upgrades)."""
    if hop is None:
        return state
    if state is None:
        return hop
    strict = {d for d, s in (*state, *hop) if s}
    common = {d for d, _ in state} & {d for d, _ in hop}
    return frozenset((d, d in strict) for d in common)


def closes(state: Order | None) -> bool:
    """Can a walk with this order state close into a cycle? Not when every hop moved forward
    on one dimension and one of them strictly: that dimension would have to come back."""
    return state is None or not any(strict for _, strict in state)


class Search:
    """The graph of waits of one lock graph and the searches over it."""

    def __init__(self, ctx: Facts, graph: LockGraph) -> None:
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
        for src, dst in sorted(graph.by_pair):  # (only these pairs' edges are made)
            if src in component and component[src] == component.get(dst):
                reps.extend(representatives(graph.by_pair[(src, dst)], ctx))
        backend = graph.backend
        # False once the whole analysis's budget ran out while the graph of waits was built
        # (or its components found): nothing of it may be trusted then. A row's queue hops
        # are paid for as they are made (queues.py).
        self.complete = ctx.budget.spend(HOP * len(reps))
        if self.complete:
            reps.extend(queue_hops(ctx, backend, set(component)))
            self.complete = ctx.budget.out is None
        self.reps = reps
        self.graph = graph
        self.guards = [singleton_guards(ctx, e) for e in reps]
        # Each hop's guard set as a number (-1: none), so gate checks are cached per pair.
        ids: dict[frozenset[tuple[str, str]], int] = {}
        self.gid = [
            ids.setdefault(frozenset(g.items()), len(ids)) if g else -1 for g in self.guards
        ]
        self._gates: dict[tuple[int, int], bool] = {}
        # For a queue hop: what the transaction that makes later requests queue holds.
        self.witness = {
            i: singleton_guards(ctx, e.queued_by) for i, e in enumerate(reps) if e.queued_by
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
            if e.never_waits or not self.complete:
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
                # its gate checks and its arcs (the lists are shared: memory is these)
                checks = len(holders.get(e.dst, ())) + len(waiters.get(e.dst, ()))
                if not ctx.budget.spend(1 + checks + len(found)):
                    self.complete = False
            self.succ[i] = found
        self._claims: dict[int, frozenset[tuple[str, str]]] = {}
        self._excludes: dict[int, frozenset[tuple[str, str]]] = {}
        self._claimed_modes: dict[str, set[str]] | None = None
        # The arcs of a component reversed (`_back_to`), made once per component.
        self._into: dict[frozenset[int], dict[int, list[int]]] = {}
        # What each hop says about the order of its two instances (Edge.dims); None for a hop
        # that wants the very instance it stands on (an upgrade, a row's queue), which moves on
        # no dimension and so is no obstacle on any.
        self.order: list[Order | None] = [
            None if e.upgrade_from or e.queued else frozenset((d, r == "<") for d, r in e.dims)
            for e in reps
        ]
        # Arcs followed by every search so far, and where the whole analysis's budget stops
        # the one under way (set by the caller before each search).
        self.arcs = 0
        self.arc_cap = 1 << 62

    def _successors(
        self,
        ctx: Facts,
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
            # (A holder that cannot hold the row beside the witness takes it once the witness
            # has ended, before the waiter, woken, looks again: proof.race. The waiter must have
            # waited for the witness then; with Postgres's row modes it always does where a
            # later request can queue behind it without waiting for that holder itself.)
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
    def _parent_queue_gated(ctx: Facts, e: Edge, waiter: Edge) -> bool:
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

    def components(self) -> list[list[int]] | None:
        """The strongly connected components of the graph of waits that can hold a cycle, or
        None when the whole analysis's budget cannot pay for finding them (an arc each)."""
        if not self.complete or not self.ctx.budget.spend(sum(len(s) for s in self.succ.values())):
            self.complete = False
            return None
        return [
            comp
            for comp in strongly_connected(list(range(len(self.reps))), self.succ)
            if len(comp) > 1 or comp[0] in self.succ[comp[0]]
        ]

    def unsearched(self) -> list[tuple[tuple[str, ...], Edge]]:
        """Each part of the lock graph that may hold a cycle (a strongly connected component
        of two or more locks), with its first edge: what a search that never ran leaves
        unchecked."""
        graph = self.graph
        out: list[tuple[tuple[str, ...], Edge]] = []
        for locks in strongly_connected(graph.nodes, graph.successors()):
            if len(locks) < 2:
                continue
            members = set(locks)
            inside = [
                e
                for src, dst in graph.by_pair
                if src != dst and src in members and dst in members
                for e in graph.by_pair[(src, dst)]
            ]
            out.append((tuple(locks), min(inside, key=Edge.sort_key)))
        return out

    def _items(self, j: int) -> frozenset[tuple[str, str]]:
        """What hop j claims while it waits: its gate locks (lock, mode), and itself (a hop is
        used at most once on a cycle: a second use would make a longer walk, never a needed
        one, since the start joins two locks)."""
        found = self._claims.get(j)
        if found is None:
            found = frozenset((*self.guards[j].items(), ("#", str(j))))
            self._claims[j] = found
        return found

    def _against(self, claims: frozenset[tuple[str, str]], j: int) -> frozenset[tuple[str, str]]:
        """The claims that hop j cannot coexist with: a gate held in a conflicting mode, or
        itself already on the walk. One set intersection with what j excludes (`_excluded`):
        this runs for every arc a search follows."""
        return claims & self._excluded(j)

    def _excluded(self, j: int) -> frozenset[tuple[str, str]]:
        """Every claim that hop j cannot coexist with: itself, and each (gate, mode) that some
        hop may claim (a mode of that gate in any hop's guards) in conflict with j's mode."""
        found = self._excludes.get(j)
        if found is None:
            if self._claimed_modes is None:
                self._claimed_modes = {}
                for g in self.guards:
                    for lock, mode in g.items():
                        self._claimed_modes.setdefault(lock, set()).add(mode)
            claimed = self._claimed_modes
            found = frozenset(
                [("#", str(j))]
                + [
                    (lock, other)
                    for lock, mode in self.guards[j].items()
                    for other in claimed.get(lock, ())
                    if conflicts(self.kinds[lock], mode, other)
                ]
            )
            self._excludes[j] = found
        return found

    def valid(self, chain: list[int]) -> bool:
        if any(self.gated(a, b) for x, a in enumerate(chain) for b in chain[x + 1 :]):
            return False
        state: Order | None = None
        for j in chain:
            state = forward(state, self.order[j])
        return closes(state)

    def shortest(self, start: int, members: set[int], budget: int) -> tuple[list[int] | None, int]:
        """The shortest cycle of waits through `start`, checking gates against `start` only
        (the fast path: it is usually the answer, and `_valid` then says so), with the number
        of hops expanded, or -1 when the budget ran out."""
        parent: dict[int, int] = {start: -1}
        frontier = [start]
        steps = 0
        gid, mine = self.gid, self.gid[start]
        gated: dict[int, bool] = {}  # per guard set: does it gate `start`?
        while frontier:
            nxt: list[int] = []
            for n in frontier:
                steps += 1
                succ = self.succ[n]
                # every arc followed counts against the whole analysis (a hop of a dense
                # graph has thousands)
                self.arcs += len(succ)
                if steps > budget or self.arcs > self.arc_cap:
                    return None, -1
                for m in succ:
                    if m == start:
                        chain = [n]
                        while parent[chain[-1]] != -1:
                            chain.append(parent[chain[-1]])
                        return list(reversed(chain)), steps
                    if m in members and m not in parent:
                        g = gid[m]
                        if mine >= 0 and g >= 0:
                            cut = gated.get(g)
                            if cut is None:
                                cut = gated[g] = self.gated(start, m)
                            if cut:
                                continue
                        parent[m] = n
                        nxt.append(m)
            frontier = nxt
        return None, steps

    def _back_to(
        self, start: int, members: set[int], gates: frozenset[tuple[str, str]]
    ) -> set[int]:
        """The members from which `start` can be reached through hops none of which conflicts
        with `gates` (a walk's gate claims): where the claims of the hops on the way are not
        counted yet, so a walk that cannot get back even so has failed."""
        key = frozenset(members)
        into = self._into.get(key)
        if into is None:
            into = self._into[key] = {}
            for n in sorted(members):
                for m in self.succ[n]:
                    if m in members:
                        into.setdefault(m, []).append(n)
        ok = {start}
        todo = [start]
        while todo:
            m = todo.pop()
            before = into.get(m, ())
            self.arcs += len(before)  # counted as a search's arcs: the whole budget bounds it
            for n in before:
                if n not in ok and not (gates & self._excluded(n)):
                    ok.add(n)
                    todo.append(n)
        return ok

    def shortest_valid(
        self, start: int, members: set[int], budget: int, at_least: int
    ) -> tuple[list[int] | None, int]:
        """The shortest cycle of waits through `start` in which no two hops are gated against
        each other, or None when there is none; `at_least` is the length to try first (the
        shortest cycle ignoring gates). Iterative deepening over a depth-first search that
        learns, for each hop it leaves without success, which claims made before it caused the
        failure and how many hops it had left, and skips a later visit that makes all those
        claims again with no more hops left: gate-guarded noise then costs about one visit per
        hop and depth. A walk also stops at a hop from which `start` cannot be reached at all
        past the gates it claims (`_back_to`, one search of the graph per set of gate claims):
        that failure is remembered by those claims, and a proof that there is no cycle then
        takes tens of steps instead of thousands (the 10x synthetic project: 6,142 -> 27).
        The second value is the number of steps taken, or -1 when the budget ran out first."""
        # (the order state is part of what a failure is remembered by: see `forward`)
        failed: dict[tuple[int, Order | None], list[tuple[frozenset[tuple[str, str]], int]]] = {}
        back: dict[frozenset[tuple[str, str]], set[int]] = {}
        steps = 0
        for limit in range(max(2, at_least), len(members) + 2):
            cut = False
            stack: list[list[Any]] = [[start, self._items(start), 0, set(), self.order[start]]]
            path = [start]
            while stack:
                frame = stack[-1]
                node, claims, i, why, state = frame
                left = limit - len(path)  # hops this walk may still add
                succ = self.succ[node]
                if i < len(succ):
                    frame[2] += 1
                    m = succ[i]
                    steps += 1
                    self.arcs += 1
                    if steps > budget or self.arcs > self.arc_cap:
                        return None, -1
                    if m == start:
                        if closes(state):
                            return list(path), steps
                        continue  # every hop moves forward on one dimension: it cannot close
                    if m not in members:
                        continue
                    against = self._against(claims, m)
                    if against:
                        why |= against
                        continue
                    if left <= 0:
                        cut = True
                        continue
                    gates = frozenset(c for c in claims if c[0] != "#")
                    reach = back.get(gates)
                    if reach is None:
                        reach = back[gates] = self._back_to(start, members, gates)
                        if self.arcs > self.arc_cap:
                            return None, -1
                    if m not in reach:
                        why |= gates
                        continue
                    after = forward(state, self.order[m])
                    known = next(
                        (
                            c
                            for c, had in failed.get((m, after), ())
                            if c <= claims and left - 1 <= had
                        ),
                        None,
                    )
                    if known is not None:
                        why |= known
                        continue
                    stack.append([m, claims | self._items(m), 0, set(), after])
                    path.append(m)
                    continue
                stack.pop()
                path.pop()
                cause = frozenset(why - self._items(node))
                failed.setdefault((node, state), []).append((cause, left))
                if stack:
                    stack[-1][3] |= cause
            if not cut:
                return None, steps  # every walk ended before the bound: there is no cycle
        return None, steps
