"""The lock-order graph: an edge A -> B wherever a path takes B while holding A.

Each edge keeps its witness: the path, the step's location, both modes and the full held set
(the guards), so a cycle can be checked for whether its waits can really happen and explained
step by step. Nodes are lock classes; a self-edge means one path holds two instances of a class.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from operator import attrgetter
from typing import NamedTuple, TypeVar

from lockdocs import model as m
from lockdocs.analysis.chain import EMPTY, Chain
from lockdocs.analysis.events import Event, Held
from lockdocs.analysis.facts import Facts
from lockdocs.diagnostics import Location
from lockdocs.model.columns import dimension_columns, dimension_of, dimensions, nested
from lockdocs.modes import covers

T = TypeVar("T", int, str)


class Edge(NamedTuple):
    """A -> B: a path took B while holding A; kept with its witness (modes, guards, where)."""

    src: str
    dst: str
    path: str
    location: Location
    held_mode: str
    wanted_mode: str
    guards: tuple[Held, ...]
    ordered: bool = False
    order: str | None = None
    backend: str | None = None
    transaction: int = 0
    txkind: str | None = None
    through: Chain = EMPTY
    held_at: int = 0  # line where src was taken
    # For an upgrade: the modes of dst this transaction already holds. Whoever blocks it must
    # hold that same instance in a mode that coexists with every one of them.
    upgrade_from: tuple[str, ...] = ()
    # NOWAIT fails at once (55P03) and SKIP LOCKED skips the row: such a take never waits, so
    # it cannot close a wait cycle.
    never_waits: bool = False
    held_maybe: bool = False  # src is held only maybe (see events.Held.maybe)
    held_instance: str = ""  # which instance of src (events.Held.instance)
    wanted_instance: str = ""  # which instance of dst

    # src was taken in an earlier iteration of a loop that takes dst now
    across_iterations: bool = False
    # A row's wait queue (see analysis/queues.py): this transaction waits for dst (a row) in
    # wanted_mode, holding the tuple's lock, first in the queue; a later request for the row
    # must wait behind it because another transaction holds the row in this mode.
    queued: str | None = None
    # ... and the transaction that holds it so (a witness: its path and what it holds then)
    queued_by: Edge | None = None
    # Parent gates (instances: {within: P}): the mode this transaction holds the parent of the
    # wanted instance in, and of the held instance (still held for sure), None if it holds none.
    # A transaction that waits for a child instance another one holds waits for the same
    # parent's child, so where both hold that parent in conflicting modes it cannot happen.
    wanted_parent: str | None = None
    held_parent: str | None = None
    # For a sorted self-edge (ordered): the order its run follows (the lock's declared order,
    # or the one a keyed lock follows in a loop sorted by its columns; see model/columns).
    sorted_by: str = ""
    # What the held and the wanted instance are to each other on each dimension (a column
    # tuple a sort says something about): "<" the wanted one comes later, "<=" not earlier.
    # A cycle whose every hop moves forward on one dimension, one of them strictly, cannot
    # close (analysis/search.py).
    dims: tuple[tuple[str, str], ...] = ()
    # The connection that waits ("" the path's own), and whether src is held on another one of
    # the same worker (Take.connection): Postgres then sees the holder idle, not waiting.
    connection: str = ""
    split: bool = False

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return _BY_PLACE(self)


# Edge.sort_key as one C call: sorting a 100x project's 50,000 edges calls it for each.
_BY_PLACE = attrgetter("location.file", "location.line", "location.column", "src", "dst")


class PairEdges(Mapping[tuple[str, str], list[Edge]]):
    """(held, taken) -> its edges, sorted by place; each pair's edges are made the first time
    they are asked for. A check reads the pairs inside a strongly connected component and the
    self-pairs only: in the 100x project 4,000 of 50,000 edges, whose making was a tenth of a
    cold check. Iteration goes over the pairs in the order the events first make them."""

    __slots__ = ("_made", "_make", "_raw")

    def __init__(
        self,
        raw: dict[tuple[str, str], list[tuple[Event, Held]]],
        make: Callable[[Event, Held], Edge],
    ) -> None:
        self._raw = raw
        self._made: dict[tuple[str, str], list[Edge]] = {}
        self._make = make

    def __getitem__(self, pair: tuple[str, str]) -> list[Edge]:
        found = self._made.get(pair)
        if found is None:
            make = self._make
            found = [make(ev, h) for ev, h in self._raw[pair]]
            found.sort(key=_BY_PLACE)  # stable: equal places keep the events' order
            self._made[pair] = found
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, pair: object) -> bool:
        return pair in self._raw


class LockGraph:
    """The lock-order graph of one backend: its nodes, and its edges by pair (`by_pair`) or all
    of them in the order of their places (`edges`), both made only when read."""

    __slots__ = ("_edges", "backend", "by_pair", "nodes")

    def __init__(self, nodes: list[str], by_pair: PairEdges, backend: str | None) -> None:
        self.nodes = nodes
        self.by_pair = by_pair
        self.backend = backend
        self._edges: list[Edge] | None = None

    @property
    def edges(self) -> list[Edge]:
        """Every edge, sorted by place (file, line, column, then the pair); the page draws
        them all."""
        if self._edges is None:
            # Equal places share a pair, and each pair's list keeps the events' order: a
            # stable sort of the pairs' lists gives the order one sort of all edges gives.
            every = [e for pair in self.by_pair for e in self.by_pair[pair]]
            every.sort(key=_BY_PLACE)
            self._edges = every
        return self._edges

    def successors(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for src, dst in sorted(self.by_pair):
            if src != dst:
                out[src].append(dst)
        return out


def _named(instance: str) -> bool:
    """A declared `instance:` name (loop instances carry '#', the path's one instance is '')."""
    return instance != "" and "#" not in instance


def _earlier_iteration(instance: str, loops: tuple[str, ...]) -> bool:
    """Is `instance` a per-iteration instance of one of `loops`, from an earlier iteration?
    (Loop instances are named `<loop>#<iteration per level>`, 1 earlier and 2 now.)"""
    if "#" not in instance:
        return False
    loop, _, vector = instance.rpartition("#")
    return loop in loops and vector.split("*")[0].endswith("1")


def parent_mode(held: tuple[Held, ...], parent_lock: str | None, tag: str) -> str | None:
    """The mode the parent instance `tag` (Held.parent) is held in for sure, if it is."""
    if parent_lock is None or not tag:
        return None
    for g in held:
        if g.lock == parent_lock and "@" + g.instance == tag and not g.maybe:
            return g.mode
    return None


def _with_parents(e: Edge, ev: Event, h: Held, ctx: Facts) -> Edge:
    locks = ctx.model.locks
    wanted = parent_mode(ev.held, locks[ev.lock].within, ev.parent)
    held = parent_mode(ev.held, locks[h.lock].within, h.parent)
    if wanted is None and held is None:
        return e
    return e._replace(wanted_parent=wanted, held_parent=held)


def _edge(ev: Event, h: Held, ctx: Facts, backend: str | None) -> Edge:
    """The edge from held `h` to what `ev` takes, with its witness."""
    lock = ctx.model.locks[ev.lock]
    # Sorted only when both instances belong to one sorted run: two iterations of one run
    # of a loop over the lock's elements in its declared order, or two named instances, the
    # later taken with that order. Anything else (an instance held from before the loop, a
    # second run of the loop, another lock's instances across iterations) is not.
    by_run = h.lock == ev.lock and h.run != "" and h.run == ev.run
    ordered = by_run or (
        h.lock == ev.lock
        and _named(h.instance)
        and _named(ev.instance)
        and ev.order is not None
        and ev.order == lock.instance_order
    )
    sorted_by = ""
    if ordered:
        sorted_by = ev.run.partition("|")[2] if by_run else lock.instance_order or ""
    upgrade_from = ev.upgrade_from if ev.kind == "upgrade" else ()
    # (positional: there is one edge per held lock per take)
    e = Edge(
        h.lock, ev.lock, ev.path, ev.location, h.mode, ev.mode, ev.held, ordered,
        ev.order if h.lock == ev.lock else None, backend, ev.transaction, ev.txkind,
        ev.through, h.acquired_at, upgrade_from, ev.option in m.NEVER_WAITS, h.maybe,
        h.instance, ev.instance, bool(ev.loops) and _earlier_iteration(h.instance, ev.loops),
    )  # fmt: skip
    if ordered or (h.instance and ev.instance and "#" in ev.instance):
        dims = _dims(ctx, ev, h, sorted_by, backend)
        if dims or sorted_by:
            e = e._replace(sorted_by=sorted_by, dims=dims)
    if ev.connection or h.connection:
        e = e._replace(connection=ev.connection, split=ev.connection != h.connection)
    # Only projects that declare parents (instances: {within: ...}) pay for them.
    return _with_parents(e, ev, h, ctx) if ctx.has_parents else e


def _loop_vector(instance: str) -> tuple[str, tuple[str, ...]] | None:
    """(loop id, iteration per enclosing loop) of a loop's instance (an earlier iteration's
    take in a loop nested in it, `#1*<line>`, counts as that iteration's); None for any other
    (a named one, the path's one)."""
    loop, sep, vector = instance.rpartition("#")
    if not sep or not vector:
        return None
    return loop, tuple(vector.partition("*")[0].split("."))


def _dims(
    ctx: Facts, ev: Event, h: Held, sorted_by: str, backend: str | None
) -> tuple[tuple[str, str], ...]:
    """What the held and the wanted instance are to each other on each dimension: a sorted
    run's wait is for a later instance of its order (strictly, unless the wait may be an
    upgrade of one instance); two keyed instances of one loop run, the held one from this
    iteration or an earlier one, are not later on the leading columns of the loop's sort that
    both keys name; strictly later on the wanted lock's whole key when the path still holds the
    wanted lock's instance of the held one's iteration (an equal key would be that instance,
    already held: no wait)."""
    out: dict[str, str] = {}
    if sorted_by:
        dim = dimension_of(sorted_by)
        if dim is not None:
            kind = ctx.lock_kind(ev.lock, backend)
            out[dim] = "<" if covers(kind, (h.mode,), ev.mode) else "<="
    held, wanted = _loop_vector(h.instance), _loop_vector(ev.instance)
    if held is not None and wanted is not None and held[0] in ev.loops:
        (loop, vh), (_, vw) = held, wanted
        # the level of the nest both stand in: the held one's loop, around the wanted one's
        p = ev.loops.index(loop)
        if len(vh) == p + 1 and len(vw) > p and vh[:p] == vw[:p] and vh[p] <= vw[p]:
            locks = ctx.model.locks
            orders = tuple(ctx.loop_orders.get(lid) for lid in ev.loops[: p + 1])
            sort = next((s for q in range(p + 1) if (s := nested(orders[q:])) is not None), None)
            wanted_key = set(locks[ev.lock].columns)
            kind = ctx.lock_kind(ev.lock, backend)
            # the wanted lock's instance of the held one's iteration, still held
            holds_it = "*" not in h.instance and any(
                g.lock == ev.lock
                and g.instance == h.instance
                and not g.maybe
                and covers(kind, (g.mode,), ev.mode)
                for g in ev.held
            )
            for dim in dimensions(sort, locks[h.lock].columns, locks[ev.lock].columns):
                whole = dimension_columns(dim) == wanted_key
                out.setdefault(dim, "<" if holds_it and whole else "<=")
    return tuple(sorted(out.items()))


def build_graph(ctx: Facts, backend: str | None = None) -> LockGraph:
    """The graph of one backend: which take was made holding which lock, per pair; each
    pair's edges are made when first read (PairEdges)."""
    raw: dict[tuple[str, str], list[tuple[Event, Held]]] = {}
    count = 0
    locks = ctx.model.locks
    for ev in ctx.events(backend):  # events are distinct, so their edges are too
        if ev.kind in ("acquire", "upgrade"):
            lock = locks[ev.lock]
            dst = ev.lock
            single = lock.singleton
            for h in ev.held:
                # No edge for a row only this transaction can see (nobody waits for it), nor
                # for a re-take of the instance held (any instance of a singleton).
                if h.private or (h.lock == dst and (single or h.instance == ev.instance)):
                    continue
                pair = (h.lock, dst)
                found = raw.get(pair)
                if found is None:
                    raw[pair] = [(ev, h)]
                else:
                    found.append((ev, h))
                count += 1
    ctx.budget.spend(count)  # the whole analysis's (budget.py): an edge is a unit
    return LockGraph(list(locks), PairEdges(raw, lambda ev, h: _edge(ev, h, ctx, backend)), backend)


def strongly_connected(nodes: list[T], succ: Mapping[T, list[T]]) -> list[list[T]]:
    """Tarjan's algorithm, iterative (no recursion limit), in a deterministic order."""
    index: dict[T, int] = {}
    low: dict[T, int] = {}
    on_stack: set[T] = set()
    stack: list[T] = []
    out: list[list[T]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work: list[tuple[T, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = succ.get(node, [])
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                comp: list[T] = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                out.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out
