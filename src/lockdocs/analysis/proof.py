"""A finding's proof as data: the transactions on the wait cycle, what each holds and wants.

LD201, LD202 and LD203 put a `Proof` in `Diagnostic.extra["proof"]`, so a replay on a real
server (lockdocs.postgres) can drive exactly the reported interleaving without reading the
analysis' internals: hop i is transaction i, which holds `holds` (the lock hop i-1 wants) and
asks for `wants` (held by hop i+1). `held` is everything the transaction holds at that moment,
in the order it took it, so a replay can take the same locks first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockdocs.analysis.events import Held
from lockdocs.diagnostics import Location
from lockdocs.modes import conflicts
from lockdocs.records import record

if TYPE_CHECKING:
    from lockdocs.analysis.graph import Edge


@record
class Hop:
    path: str
    location: Location  # the step that asks for `wants`
    holds: str  # lock id
    held_mode: str
    held_instance: str  # the analysis' instance name ("" for the path's one instance)
    wants: str
    wanted_mode: str
    held: tuple[Held, ...]  # everything held when it asks, in the order taken
    transaction_kind: str | None = None
    through: tuple[str, ...] = ()  # run: chain, outermost first
    upgrade: bool = False  # wants the very instance it holds (a stronger mode of it)
    # A hop that waits first in a row's queue (holds: the row, held_mode: "tuple lock"): the
    # transaction whose hold of the row (held_mode) makes the previous hop's request wait and
    # so queue behind this one; it is not on the cycle itself.
    queued_by: Hop | None = None
    # The other connection of the worker the wait is on ("" its own; Take.connection), and
    # whether what it holds on the cycle is on another one: then Postgres never sees the cycle.
    connection: str = ""
    split: bool = False


@record
class Proof:
    kind: str  # cycle (LD201) | instances (LD202) | upgrade (LD203)
    hops: tuple[Hop, ...]
    backend: str | None = None
    # The interleaving that ends in the deadlock, one move at a time: (session, what). Session
    # i < len(hops) is hop i's transaction; len(hops) + j the transaction whose hold makes a
    # request queue behind the j-th queue hop. What: take (everything it holds on the cycle,
    # in the order it took it), want (its wait on the cycle), end (its transaction ends),
    # pause / resume (the waiter first in a row's queue, woken, has not looked at the row
    # again yet: a race). The finding prints it and replay runs it, in this order.
    schedule: tuple[tuple[int, str], ...] = ()


def hop(e: Edge, upgrade: bool = False) -> Hop:
    """The hop of one edge of the lock-order graph."""
    instance = next(
        (
            h.instance
            for h in e.guards
            if h.lock == e.src and h.mode == e.held_mode and h.acquired_at == e.held_at
        ),
        next((h.instance for h in e.guards if h.lock == e.src), ""),
    )
    return Hop(
        e.path,
        e.location,
        e.src,
        e.held_mode,
        instance,
        e.dst,
        e.wanted_mode,
        e.guards,
        e.txkind,
        tuple(e.through),
        upgrade,
        hop(e.queued_by) if e.queued_by is not None else None,
        e.connection,
        e.split,
    )


def proof(kind: str, edges: tuple[Edge, ...] | list[Edge], upgrade: bool = False) -> Proof:
    backend = edges[0].backend if edges else None
    return Proof(kind, tuple(hop(e, upgrade) for e in edges), backend, schedule(tuple(edges)))


def race(e: Edge, holder: Edge) -> bool:
    """A row's queue hop `e` whose witness (the transaction whose hold makes the previous
    request queue) cannot hold the row at once with `holder`, the next hop, which holds it for
    the waiter to wait on: the witness must end first, and the holder take the row before the
    waiter, woken, looks at it again. Postgres allows it (a request that conflicts with no
    holder takes the row at once; tests/test_pg_verdicts.py forces it by pausing the waiter)."""
    w = e.queued
    h = holder.held_mode
    return w is not None and (conflicts("row", w, h) or conflicts("row", h, w))


def schedule(edges: tuple[Edge, ...]) -> tuple[tuple[int, str], ...]:
    """The moves of a cycle's interleaving (see Proof.schedule). Without a row's queue: every
    transaction takes what it holds, then each asks, in cycle order. With one: the witness
    takes the row, the waiter asks first; where the witness and the next hop's hold can be
    held at once, every other transaction has taken what it holds before; otherwise the
    request that queues asks while the witness still holds the row, the witness ends, and the
    next hop takes the row in the race."""
    k = len(edges)
    queued = [i for i, e in enumerate(edges) if e.queued]
    if not queued:
        return (*((i, "take") for i in range(k)), *((i, "want") for i in range(k)))
    q = queued[0]
    n, p, w = (q + 1) % k, (q - 1) % k, k
    rest = [(q + j) % k for j in range(1, k)]  # n .. p, in cycle order
    if not race(edges[q], edges[n]) or len(queued) > 1:
        moves = [(i, "take") for i in range(k)]
        moves += [(k + j, "take") for j in range(len(queued))]
        moves += [(q, "want")] + [(i, "want") for i in rest]
        return tuple(moves)
    moves = [(w, "take"), (q, "take"), (q, "want")]
    moves += [(i, "take") for i in rest if i != n]
    moves += [(p, "want"), (q, "pause"), (w, "end"), (n, "take"), (q, "resume")]
    moves += [(i, "want") for i in rest if i != p]
    return tuple(moves)
