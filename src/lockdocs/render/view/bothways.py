"""Pairs of locks taken in both orders, and what keeps the two orders from meeting.

For each such pair the lock-order section says which lock every pair of transactions holds in
conflicting modes (a gate), or that one side never waits, or that the modes never wait on each
other, or that the lock which waits is only taken under a parent held on both sides; and
whether the check reports a deadlock there.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs.analysis.gates import parent_gated, waits
from lockdocs.render.edges import EdgeSet, _Raw
from lockdocs.render.escape import Link
from lockdocs.render.view.base import PageContext
from lockdocs.render.words import mode_label


@dataclass(frozen=True)
class BothWaysView:
    """Two locks taken in both orders, and what keeps the two orders from meeting."""

    first: Link  # the order most paths follow: first, then `then`
    then: Link
    forward: tuple[Link, ...]  # paths that take `then` while holding `first`
    backward: tuple[Link, ...]  # paths that take `first` while holding `then`
    gate: Link | None  # a lock every such pair of transactions holds in conflicting modes
    gate_forward: str  # its modes on each side, as words
    gate_backward: str
    never_waits: bool  # no gate, but one side takes its lock with SKIP LOCKED or NOWAIT
    modes_apart: str  # when no gate: the modes that never wait on each other
    cycle: str  # "" | "reported" | "waived": the check reports a deadlock here
    # no gate, but the lock that waits is only taken under its parent (instances: {within:}),
    # held on both sides in modes that conflict: (the child, the parent)
    parent: tuple[Link, Link] | None = None
    forward_verb: str = "take"
    backward_verb: str = "take"
    why: str = ""  # what keeps the two orders apart (or that nothing does), as sentences


def mode_words(ctx: PageContext, lock: str, modes: set[str]) -> str:
    kind = ctx.model.locks[lock].kind
    return " or ".join(sorted(mode_label(kind, x) for x in modes))


def _behaviour(es: EdgeSet, r: _Raw) -> tuple[object, ...] | None:
    """What the comparisons below read of an edge's witness (its backend, modes, whether it
    waits, its parents and the singletons it holds, with their modes and certainty): edges
    equal in it compare the same way with every other edge."""
    w = r.witness
    if w is None:
        return None
    locks = es.model.locks
    held = tuple((g.lock, g.mode, g.maybe) for g in w.guards if locks[g.lock].singleton)
    return (
        w.backend,
        w.held_mode,
        w.wanted_mode,
        w.never_waits,
        w.upgrade_from,
        w.wanted_parent,
        w.held_parent,
        held,
    )


def _kinds(es: EdgeSet, raws: list[_Raw]) -> list[_Raw]:
    """One edge per behaviour, the first of each (so a page of many paths that take a pair
    the same way compares them once)."""
    seen: dict[tuple[object, ...] | None, _Raw] = {}
    for r in raws:
        seen.setdefault(_behaviour(es, r), r)
    return list(seen.values())


def _compare(
    es: EdgeSet,
    kinds_fwd: list[_Raw],
    kinds_back: list[_Raw],
    gates: dict[str, tuple[set[str], set[str]]],
    ungated: list[tuple[_Raw, _Raw]],
) -> bool:
    """Compare each kind of one way with each of the other: the gate that keeps each pair
    apart, or the pair in `ungated`. Whether some pair of transactions has nothing in common
    is quadratic at heart, so the page's comparisons share one bound, counted and so the same
    on every machine; False (and nothing found) when this pair would pass it. The comparing
    stops at the first pair that can wait on each other both ways: that decides the pair."""
    left = es.comparisons_left()
    done = 0
    for x in kinds_fwd:
        for y in kinds_back:
            done += 1
            if done > left:
                es.spend_comparisons(left)
                gates.clear()
                ungated.clear()
                return False
            if (
                x.witness is not None
                and y.witness is not None
                and x.witness.backend != y.witness.backend
            ):
                continue  # two backends never share a transaction
            g = es.gate(x, y)
            if g is None:
                ungated.append((x, y))
                if (
                    x.witness is not None
                    and y.witness is not None
                    and waits(es.ctx, x.witness, y.witness)
                    and waits(es.ctx, y.witness, x.witness)
                ):
                    es.spend_comparisons(done)
                    return True
                continue
            mf, mb = gates.setdefault(g[0], (set(), set()))
            mf.add(g[1])
            mb.add(g[2])
    es.spend_comparisons(done)
    return True


def both_ways(ctx: PageContext, es: EdgeSet, pair: tuple[str, str]) -> BothWaysView:
    """Why the two orders of `pair` (taken both ways) do or do not meet."""
    a, b = pair
    fwd = es.raw_of(a, b)
    back = es.raw_of(b, a)
    gates: dict[str, tuple[set[str], set[str]]] = {}
    ungated: list[tuple[_Raw, _Raw]] = []
    kinds_fwd, kinds_back = _kinds(es, fwd), _kinds(es, back)
    compared = _compare(es, kinds_fwd, kinds_back, gates, ungated)
    gate = next(iter(sorted(gates))) if len(gates) == 1 and not ungated else None
    live, waived = ctx.cycles()
    cycle = (
        "reported"
        if (a, b) in live or (b, a) in live
        else "waived"
        if (a, b) in waived or (b, a) in waived
        else ""
    )
    apart = ""
    skips = bool(ungated) and all(
        x.witness is not None
        and y.witness is not None
        and (x.witness.never_waits or y.witness.never_waits)
        for x, y in ungated
    )
    parent: tuple[Link, Link] | None = None
    if gate is None and ungated and not skips:
        pairs = [
            (x.witness, y.witness)
            for x, y in ungated
            if x.witness is not None and y.witness is not None
        ]
        child = next(
            (
                lk
                for u, v in pairs
                for w, h, lk in ((u, v, u.dst), (v, u, v.dst))
                if parent_gated(es.ctx, w, h.held_parent)
            ),
            None,
        )
        if (
            child is not None
            and pairs
            and all(
                parent_gated(es.ctx, u, v.held_parent) or parent_gated(es.ctx, v, u.held_parent)
                for u, v in pairs
            )
        ):
            within = ctx.model.locks[child].within
            assert within is not None
            parent = (ctx.lock_link(child), ctx.lock_link(within))
        elif not any(
            waits(es.ctx, x.witness, y.witness) and waits(es.ctx, y.witness, x.witness)
            for x, y in ungated
            if x.witness is not None and y.witness is not None
        ):
            apart = (
                f"{mode_words(ctx, a, {x.held for x in fwd})} and "
                f"{mode_words(ctx, a, {y.wanted for y in back})}"
            )
    first, then = ctx.model.locks[a].title, ctx.model.locks[b].title
    if cycle == "reported":
        why = "Two such transactions can deadlock, and no exception covers it."
    elif cycle == "waived":
        why = "Two such transactions can deadlock; an exception below accepts it."
    elif not compared:
        why = (
            f"lockdocs did not work out what keeps them apart: {len(kinds_fwd):,} kinds of "
            f"transaction take them one way and {len(kinds_back):,} the other, more pairs than "
            "the page may compare (limits.analysis_work); the check's own search of them is "
            "not affected."
        )
    elif gate:
        gl = ctx.model.locks[gate]
        back_paths = list(dict.fromkeys(r.path for r in back))
        names = [ctx.model.paths[p].title for p in back_paths]
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        verb = "holds" if len(names) == 1 else "hold"
        why = (
            f"They never deadlock: {who} {verb} {gl.title} "
            f"{mode_words(ctx, gate, gates[gate][1])} meanwhile, and every path that takes them "
            f"the first way holds it too ({mode_words(ctx, gate, gates[gate][0])}), so the two "
            "orders never run at once."
        )
    elif skips:
        why = (
            "They never deadlock: one side takes its lock with SKIP LOCKED, NOWAIT or a try, "
            "so it never waits."
        )
    elif parent is not None:
        why = (
            f"They never deadlock: each takes {parent[0].text} only while holding the "
            f"{parent[1].text} it belongs to, in modes that conflict, so both would have to "
            f"hold that {parent[1].text} at once."
        )
    elif apart:
        why = f"They never deadlock: their modes ({apart}) never wait on each other."
    else:
        why = f"Nothing found keeps {first} and {then} from waiting on each other here."
    return BothWaysView(
        forward_verb="takes" if len({r.path for r in fwd}) == 1 else "take",
        backward_verb="takes" if len({r.path for r in back}) == 1 else "take",
        why=why,
        first=ctx.lock_link(a),
        then=ctx.lock_link(b),
        forward=ctx.by_page_order(r.path for r in fwd),
        backward=ctx.by_page_order(r.path for r in back),
        gate=ctx.lock_link(gate) if gate else None,
        gate_forward=mode_words(ctx, gate, gates[gate][0]) if gate else "",
        gate_backward=mode_words(ctx, gate, gates[gate][1]) if gate else "",
        never_waits=gate is None and skips,
        modes_apart=apart,
        cycle=cycle,
        parent=parent,
    )
