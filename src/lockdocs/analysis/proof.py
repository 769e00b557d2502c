"""A finding's proof as data: the transactions on the wait cycle, what each holds and wants.

LD201, LD202 and LD203 put a `Proof` in `Diagnostic.extra["proof"]`, so a replay on a real
server (lockdocs.postgres) can drive exactly the reported interleaving without reading the
analysis' internals: hop i is transaction i, which holds `holds` (the lock hop i-1 wants) and
asks for `wants` (held by hop i+1). `held` is everything the transaction holds at that moment,
in the order it took it, so a replay can take the same locks first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockdocs.analysis.events import Held
from lockdocs.diagnostics import Location

if TYPE_CHECKING:
    from lockdocs.analysis.graph import Edge


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Proof:
    kind: str  # cycle (LD201) | instances (LD202) | upgrade (LD203)
    hops: tuple[Hop, ...]
    backend: str | None = None


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
        e.through,
        upgrade,
        hop(e.queued_by) if e.queued_by is not None else None,
    )


def proof(kind: str, edges: tuple[Edge, ...] | list[Edge], upgrade: bool = False) -> Proof:
    backend = edges[0].backend if edges else None
    return Proof(kind, tuple(hop(e, upgrade) for e in edges), backend)
