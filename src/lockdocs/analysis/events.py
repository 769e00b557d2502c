"""What flattening produces: the locks held at each moment (`Held`), the events a path's walk
emits with them (`Event`), and the path refused as too large to analyse (`Refusal`).

Everything above the walk (the graph, the cycle search, the rules, the page) reads these and
nothing else of it.
"""

from __future__ import annotations

from typing import NamedTuple

from lockdocs.analysis.chain import EMPTY, Chain
from lockdocs.diagnostics import Location
from lockdocs.records import record


class Held(NamedTuple):
    """A lock held at some moment. A named tuple: events hash their held sets constantly."""

    lock: str
    mode: str
    instance: str  # "" for the path's one instance of the lock (or a singleton's one)
    run: str = ""  # the sorted run of a loop this instance belongs to, "" if none
    acquired_at: int = 0  # line, to explain guards
    # Maybe not held: taken with SKIP LOCKED (the row may have been skipped), taken in an
    # earlier loop iteration or in a loop that may not have run, or held on some joined states
    # only. A maybe hold makes edges but never gates; a later take of it is both a re-take and
    # a first acquisition.
    maybe: bool = False
    # For a lock declared `instances: {within: P}`: "@" + the instance of P it was taken under
    # (held for sure then), "" if none; see graph.Edge.wanted_parent.
    parent: str = ""
    # A row this transaction inserted itself (Take.inserted): no other transaction can see it,
    # so nobody waits for it; it makes no edges.
    private: bool = False
    connection: str = ""  # the connection that holds it ("" the path's own: Take.connection)


class Event(NamedTuple):
    """One thing a path does, with what it holds then. A named tuple: a large project makes
    tens of thousands, and they are hashed to merge equal states."""

    # acquire | retake | upgrade | release | external | write | commit | rollback | begin |
    # leave_open
    kind: str
    path: str
    location: Location
    held: tuple[Held, ...]
    transaction: int
    txkind: str | None
    branch: tuple[str, ...] = ()
    lock: str = ""
    mode: str = ""
    instance: str = ""
    run: str = ""  # for a take: the sorted run the instance belongs to, "" if none
    repeated: bool = False
    order: str | None = None
    via: tuple[str, ...] = ()
    through: Chain = EMPTY  # the run: chain, outermost first (chain.py)
    option: str | None = None
    implicit: str | None = None
    changes_key: bool = False
    name: str = ""
    note: str | None = None
    wrote: bool = False  # for release/commit: a write happened earlier in the transaction
    # For an upgrade: the modes this transaction already holds the instance in.
    upgrade_from: tuple[str, ...] = ()
    loops: tuple[str, ...] = ()  # for a take: the loops it stands in, outermost first
    parent: str = ""  # for a take of a lock within a parent: see Held.parent
    connection: str = ""  # for a take: the connection it runs on ("" the path's own)


@record
class Refusal:
    """A path too large to analyse: the run must stop (LD209) rather than guess."""

    path: str
    location: Location
    units: int
    budget: int
    # "path" (limits.path_work), "total" (all paths: twenty times that), or the whole
    # analysis's budget (analysis/budget.py): "work" (limits.analysis_work), "time"
    scope: str
