"""The lock-order section: the edges of the graph as table rows, reported cycles marked."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs.render.edges import PairEdge, cycle_pairs
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context
from lockdocs.render.words import mode_label


@dataclass(frozen=True)
class EdgeView:
    """One row of the lock-order table (paths.md.j2)."""

    src: Link
    dst: Link
    paths: tuple[Link, ...]
    modes: str
    self_edge: bool
    ordered: bool
    cycle: str  # "" | "reported" | "waived"


def edge_views(ctx: Context, edges: list[PairEdge]) -> tuple[EdgeView, ...]:
    """The lock-order table's rows, with reported cycles marked."""
    live, waived = cycle_pairs(ctx.diags)
    out = []
    for e in edges:
        pair = (e.src, e.dst)
        cycle = "reported" if pair in live else "waived" if pair in waived else ""
        lock_kind = ctx.model.locks[e.dst].kind
        src_kind = ctx.model.locks[e.src].kind
        modes = ", ".join(
            f"{mode_label(src_kind, h)} then {mode_label(lock_kind, w)}" for h, w in e.modes
        )
        out.append(
            EdgeView(
                src=ctx.lock_link(e.src),
                dst=ctx.lock_link(e.dst),
                paths=tuple(ctx.path_link(p) for p in e.paths),
                modes=modes,
                self_edge=e.src == e.dst,
                ordered=e.ordered,
                cycle=cycle,
            )
        )
    return tuple(out)
