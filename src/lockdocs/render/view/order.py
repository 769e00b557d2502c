"""The lock-order section: where a new lock goes.

From the graph's edges it derives, for each connected part of the graph, levels to take the locks
in (every edge goes from an earlier level to a later one), the pairs taken in both orders (each
explained by `bothways`), and for each lock the paths that take several instances in
an order other than the declared one, with the exception that allows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import assert_never

from lockdocs import model as m
from lockdocs.modes import conflicts
from lockdocs.render.edges import EdgeSet, PairEdge
from lockdocs.render.escape import Link
from lockdocs.render.view.base import PageContext
from lockdocs.render.view.bothways import BothWaysView, both_ways
from lockdocs.render.words import mode_label, order_phrase


@dataclass(frozen=True)
class EdgeView:
    """One arrow: `dst` taken while `src` is held, by these paths."""

    src: Link
    dst: Link
    paths: tuple[Link, ...]
    modes: str
    self_edge: bool
    ordered: bool
    cycle: str  # "" | "reported" | "waived"


@dataclass(frozen=True)
class DeviationView:
    """Paths that hold several instances of a lock in an order other than the declared one:
    how they take them, and the exception that allows it or what keeps it safe."""

    paths: tuple[Link, ...]
    verb: str  # "takes" | "take"
    how: str  # "them in provision order", "them the parked site first, then ..."
    exceptions: tuple[Link, ...]
    why: str  # when no exception: what keeps it from deadlocking, in words ("" if nothing)
    reported: bool = False  # a finding no exception waives is about it


@dataclass(frozen=True)
class OrderedLockView:
    """A lock in its level, with how several of it are taken."""

    lock: Link
    words: str | None  # "several at once, in ascending pool_id order"; None when never several
    deviations: tuple[DeviationView, ...]
    declared: bool = False  # the lock declares an instance order
    # the same paths, grouped by the exceptions that cover them (the lock order's short form)
    brief: tuple[tuple[tuple[Link, ...], tuple[Link, ...]], ...] = ()


@dataclass(frozen=True)
class ComponentView:
    """One connected part of the graph: its levels, first level first, and its diagram (none
    for a lock alone, whose only arrow is to another instance of itself)."""

    levels: tuple[tuple[OrderedLockView, ...], ...]
    size: int
    name: str  # the diagram's graph name and file stem: lock-order-<its first lock>
    diagram: str | None  # the SVG drawn after this part's list, relative to the page
    diagram_dot: str | None
    diagram_parts: tuple[int, ...]  # the parts that diagram draws (the small ones share one)
    diagram_alt: str
    # Set when the part is more than one diagram can show: why there is no picture (the list
    # of levels alone gives the order).
    too_large: str = ""


@dataclass(frozen=True)
class OrderView:
    """Everything the section prints besides the diagram."""

    lead: str  # what the numbered lines of the first part say, and that they are derived
    edges: tuple[EdgeView, ...]
    components: tuple[ComponentView, ...]
    both_ways: tuple[BothWaysView, ...]
    alone: tuple[Link, ...]  # locks never held while another is taken, nor taken under one
    reported_cycles: int
    # The same, by id, for the diagram: each part's levels, and the pairs taken both ways
    # (the order most paths follow first).
    layer_ids: tuple[tuple[tuple[str, ...], ...], ...]
    two_way_ids: tuple[tuple[str, str], ...]


# The most one lock-order diagram draws. Past about this size Graphviz's layout of labelled
# arrows grows from seconds to minutes (measured: 30 locks and 218 arrows in 1 s, 40 and 299 in
# 9 s, 180 and 1,519 unfinished after 5 min) and the picture is unreadable anyway; a larger
# set is given by its list of levels alone, and small sets share a diagram up to this size.
DIAGRAM_MAX_LOCKS = 40
DIAGRAM_MAX_ARROWS = 250


def _modes(ctx: PageContext, e: PairEdge) -> str:
    src_kind = ctx.model.locks[e.src].kind
    dst_kind = ctx.model.locks[e.dst].kind
    return ", ".join(
        f"{mode_label(src_kind, h)} then {mode_label(dst_kind, w)}" for h, w in e.modes
    )


def _components(locks: list[str], links: set[tuple[str, str]]) -> list[list[str]]:
    """Weakly connected parts, in declaration order of their first lock."""
    parent = {lk: lk for lk in locks}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in sorted(links):
        parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for lk in locks:
        groups.setdefault(find(lk), []).append(lk)
    return list(groups.values())


def _levels(nodes: list[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Longest-path layers (every edge goes down); nodes left in a cycle share a last layer."""
    preds: dict[str, set[str]] = {n: set() for n in nodes}
    succs: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in sorted(edges):
        if a != b and b in preds and a in preds and a not in preds[b]:
            preds[b].add(a)
            succs[a].append(b)
    # Kahn's order: a node's level is known once all its predecessors' are; what never gets
    # there sits in a cycle (or below one) and shares the last layer.
    waiting = {n: len(preds[n]) for n in nodes}
    level: dict[str, int] = {}
    ready = [n for n in nodes if not waiting[n]]
    while ready:
        n = ready.pop()
        level[n] = 1 + max((level[p] for p in preds[n]), default=0)
        for s in succs[n]:
            waiting[s] -= 1
            if not waiting[s]:
                ready.append(s)
    if len(level) < len(nodes):
        top = max(level.values(), default=0) + 1
        for n in nodes:
            level.setdefault(n, top)
    out: list[list[str]] = [[] for _ in range(max(level.values(), default=0))]
    for n in nodes:
        out[level[n] - 1].append(n)
    return [lv for lv in out if lv]


def order_view(ctx: PageContext, es: EdgeSet) -> OrderView:
    """The section's objects, in a fixed order (declaration order of the locks)."""
    model = ctx.model
    live, waived = ctx.cycles()
    edges = []
    for e in es.pairs:
        pair = (e.src, e.dst)
        edges.append(
            EdgeView(
                src=ctx.lock_link(e.src),
                dst=ctx.lock_link(e.dst),
                paths=tuple(ctx.path_link(p) for p in e.paths),
                modes=_modes(ctx, e),
                self_edge=e.src == e.dst,
                ordered=e.ordered,
                cycle="reported" if pair in live else "waived" if pair in waived else "",
            )
        )
    by_pair = {(e.src, e.dst): e for e in es.pairs}
    two_way: list[tuple[str, str]] = []
    kept: set[tuple[str, str]] = set()
    rank = {lk: i for i, lk in enumerate(model.locks)}
    for (a, b), e in by_pair.items():
        if a == b:
            continue
        back = by_pair.get((b, a))
        if back is None:
            kept.add((a, b))
            continue
        # The order most paths follow is the one kept; a tie keeps declaration order.
        forward = len(e.paths) > len(back.paths) or (
            len(e.paths) == len(back.paths) and rank[a] < rank[b]
        )
        if forward:
            kept.add((a, b))
            two_way.append((a, b))
    ends = {lk for p in by_pair for lk in p}
    touched = [lk for lk in model.locks if lk in ends]
    comps = _components(touched, {p for p in by_pair if p[0] != p[1]})
    comp_of = {lk: i for i, comp in enumerate(comps) for lk in comp}
    inside: list[set[tuple[str, str]]] = [set() for _ in comps]
    for p in kept:
        inside[comp_of[p[0]]].add(p)
    arrow_count = [0] * len(comps)
    for src, _ in by_pair:
        arrow_count[comp_of[src]] += 1
    ranked = sorted(  # largest first; stable
        range(len(comps)), key=lambda i: -len(comps[i])
    )
    parts = [_levels(comps[i], inside[i]) for i in ranked]
    arrows = [arrow_count[i] for i in ranked]
    sizes = [len(comps[i]) for i in ranked]
    stem_name = PurePosixPath(ctx.stem).name

    def fits(locks: int, n_arrows: int) -> bool:
        return locks <= DIAGRAM_MAX_LOCKS and n_arrows <= DIAGRAM_MAX_ARROWS

    # The largest part gets a diagram of its own; the other parts of two locks or more share
    # one, drawn side by side after the last of their lists (each alone would be a narrow
    # picture in a wide column), as many as fit in one diagram.
    drawn = [i for i in range(len(parts)) if sizes[i] > 1 and fits(sizes[i], arrows[i])]
    carriers: dict[int, tuple[int, ...]] = {}
    if drawn and drawn[0] == 0:
        carriers[0] = (0,)
        drawn = drawn[1:]
    shared: list[int] = []
    for i in drawn:
        locks = sum(sizes[k] for k in shared) + sizes[i]
        if shared and not fits(locks, sum(arrows[k] for k in shared) + arrows[i]):
            carriers[shared[-1]] = tuple(shared)
            shared = []
        shared.append(i)
    if shared:
        carriers[shared[-1]] = tuple(shared)
    components = []
    for i, layers in enumerate(parts):
        drawn_parts = carriers.get(i, ())
        name = f"lock-order-{parts[drawn_parts[0]][0][0]}" if drawn_parts else ""
        titles = [model.locks[parts[k][0][0]].title for k in drawn_parts]
        components.append(
            ComponentView(
                levels=tuple(tuple(_ordered(ctx, by_pair, lk) for lk in lv) for lv in layers),
                size=sum(len(lv) for lv in layers),
                name=name,
                diagram=f"{stem_name}/{name}.svg" if drawn_parts else None,
                diagram_dot=f"{stem_name}/{name}.dot" if drawn_parts else None,
                diagram_parts=drawn_parts,
                diagram_alt=(
                    "Lock order of "
                    + " and of ".join(titles)
                    + " and the locks taken with "
                    + ("it" if len(titles) == 1 else "them")
                    + ": an arrow from one lock to the next a path takes while holding it"
                    if titles
                    else ""
                ),
                too_large=(
                    f"This set has {sizes[i]:,} locks and {arrows[i]:,} arrows between them, "
                    f"more than one diagram can show legibly (at most {DIAGRAM_MAX_LOCKS} locks "
                    f"and {DIAGRAM_MAX_ARROWS} arrows), so it has none: the list above is the "
                    "order."
                    if sizes[i] > 1 and not fits(sizes[i], arrows[i])
                    else ""
                ),
            )
        )
    alone = tuple(ctx.lock_link(lk) for lk in model.locks if lk not in touched)
    return OrderView(
        lead=(
            "These lines are derived from the paths above: a summary of what they do today, "
            "not a design. A path takes a lock of one line only while it holds locks of "
            "earlier lines, and locks on one line are never held together."
        ),
        edges=tuple(edges),
        components=tuple(components),
        both_ways=tuple(both_ways(ctx, es, p) for p in two_way),
        alone=alone,
        reported_cycles=sum(1 for d in ctx.diags if d.code == "LD201" and not d.waived_by),
        layer_ids=tuple(tuple(tuple(lv) for lv in layers) for layers in parts),
        two_way_ids=tuple(two_way),
    )


def ordered_lock(ctx: PageContext, lock_id: str) -> OrderedLockView:
    """How several instances of the lock are taken, for the lock tables."""
    # the lock's own self-edge, from the index of its edges (a dict of every pair built for
    # each lock made the lock tables quadratic: 1,800 locks, 32 of the 100x page's 55 s)
    own = next((e for e in ctx.pairs_of(lock_id) if e.src == e.dst == lock_id), None)
    return _ordered(ctx, {(lock_id, lock_id): own} if own else {}, lock_id)


def _ordered(
    ctx: PageContext, by_pair: dict[tuple[str, str], PairEdge], lock_id: str
) -> OrderedLockView:
    lock = ctx.model.locks[lock_id]
    self_edge = by_pair.get((lock_id, lock_id))
    if self_edge is None:
        return OrderedLockView(ctx.lock_link(lock_id), None, ())
    declared = order_phrase(lock.instance_order)
    words = "several at once" + (f", {declared}" if declared else "")
    off = self_edge.unordered if lock.instance_order else self_edge.paths
    groups: dict[tuple[str, tuple[str, ...], str], list[str]] = {}
    for pid in off:
        how = taken_how(ctx, pid, lock_id)
        exceptions = tuple(f"exception {w.index + 1}" for w in ctx.exceptions_for(lock_id, pid))
        why = "" if exceptions else instance_gate(ctx, lock_id, pid)
        if not exceptions and not why and _reported(ctx, lock_id, pid):
            why = "a deadlock risk no exception covers"
        groups.setdefault((how, exceptions, why), []).append(pid)
    deviations = tuple(
        DeviationView(
            paths=tuple(ctx.path_link(p) for p in pids),
            verb="takes" if len(pids) == 1 else "take",
            how=how,
            exceptions=tuple(Link(x, "#" + x.replace(" ", "-")) for x in exceptions),
            why=why,
        )
        for (how, exceptions, why), pids in groups.items()
    )
    brief: dict[tuple[Link, ...], list[Link]] = {}
    for dev in deviations:
        brief.setdefault(dev.exceptions, []).extend(dev.paths)
    return OrderedLockView(
        ctx.lock_link(lock_id),
        words,
        deviations,
        bool(declared),
        tuple((tuple(paths), exceptions) for exceptions, paths in brief.items()),
    )


def _reported(ctx: PageContext, lock_id: str, path_id: str) -> bool:
    return any(
        not d.waived_by and lock_id in d.locks and path_id in ctx.deviating(d) for d in ctx.diags
    )


def taken_how(ctx: PageContext, path_id: str, lock_id: str) -> str:
    """How a path orders the instances of a lock it holds several of, in words: the order of
    the loop (or the take) that takes them, and whether an enclosing loop starts it again."""
    found: list[tuple[str | None, str | None]] = []  # (order, the enclosing loop's label)
    checks: list[m.Take] = []  # foreign-key checks outside any loop
    model = ctx.model

    def visit(
        steps: tuple[m.Step, ...],
        order: str | None,
        here: str | None,
        outer: str | None,
        seen: set[str],
    ) -> None:
        """`order` and `here`: the order and label of the loop the steps stand in; `outer`:
        the label of the loop around that one (which starts its order again)."""
        for s in steps:
            match s:
                case m.Take() if s.lock == lock_id and not s.again:
                    if s.derived and not s.order and order is None:
                        checks.append(s)  # Postgres's foreign-key check: the row the write names
                    else:
                        found.append((s.order, None) if s.order else (order, outer))
                case m.Branches() if s.statement:
                    if any(t.lock == lock_id for t in s.statement):
                        found.append(("none", None))
                case m.Loop():
                    visit(s.steps, s.order, s.label, here, seen)
                case m.Branches():
                    for _, alt in s.alternatives:
                        visit(alt, order, here, outer, seen)
                case m.Run():
                    if s.path in model.paths and s.path not in seen:
                        visit(model.paths[s.path].steps, order, here, outer, seen | {s.path})
                case m.Leaf():
                    pass  # another lock's take, a re-take, or a step that takes no lock
                case _:
                    assert_never(s)

    visit(model.paths[path_id].steps, None, None, None, {path_id})
    orders = [o for o, _ in found if o]
    check = ", then one more in a foreign-key check, in no set order" if checks else ""
    if not orders:
        return "them in no set order"
    order = orders[0]
    if order == "none":
        return "them in no particular order"
    phrase = order_phrase(order) or order
    restart = next((label for o, label in found if o == order and label), None)
    if restart:
        return f"them {phrase}, starting again for {restart}{check}"
    return f"them {phrase}{check}"


def instance_gate(ctx: PageContext, lock_id: str, path_id: str) -> str:
    """Why a path that holds several instances out of order cannot deadlock on them with any
    other path that does, in words ("" when nothing keeps them apart)."""
    mine = [r for r in ctx.edges.raw_of(lock_id, lock_id) if r.path == path_id and not r.ordered]
    others = ctx.edges.raw_of(lock_id, lock_id)
    if mine and all(r.witness is not None and r.witness.never_waits for r in mine):
        return "never waiting for one: it skips what another transaction holds"
    kind = ctx.model.locks[lock_id].kind
    if mine and all(
        not (conflicts(kind, x.wanted, y.held) and conflicts(kind, y.wanted, x.held))
        for x in mine
        for y in others
    ):
        # two such takers wait for each other only when each wants a mode the other holds
        return "safely: in these modes no two such takers can wait for each other"
    gates: set[tuple[str, str]] = set()
    for x in mine:
        for y in others:
            g = ctx.edges.gate(x, y)
            if g is None:
                return ""
            gates.add((g[0], g[1]))
    if len(gates) != 1:
        return ""
    gate, mode = next(iter(gates))
    title = ctx.model.locks[gate].title
    held = mode_label(ctx.model.locks[gate].kind, mode)
    return f"safely: it holds {title} {held}, which keeps every other such taker out"
