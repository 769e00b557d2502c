"""The lock-order edges the page and the diagram show, one per (held lock, wanted lock) pair.

The checker's `lockdocs.analysis.graph.build_graph` is the source when it is there, so the page
draws the graph the check reasons about; without it the edges are derived here from the flattened
events the same simple way (an edge h -> e for every lock h held when e is taken).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from lockdocs import model as m
from lockdocs.analysis.flatten import flatten
from lockdocs.diagnostics import Diagnostic


@dataclass(frozen=True)
class PairEdge:
    """One arrow of the diagram: every path that takes `dst` while it holds `src`."""

    src: str
    dst: str
    paths: tuple[str, ...]  # path ids, in page order
    modes: tuple[tuple[str, str], ...]  # (held mode, wanted mode), sorted
    ordered: bool  # a self-edge every path of which follows the lock's declared order


def _raw_edges(model: m.Model) -> list[tuple[str, str, str, str, str, bool]]:
    """(src, dst, path, held mode, wanted mode, ordered) from the checker's graph, or derived."""
    try:
        graph_mod: Any = importlib.import_module("lockdocs.analysis.graph")
        context_mod: Any = importlib.import_module("lockdocs.rules.context")
    except ImportError:
        graph_mod = None
    if graph_mod is not None and hasattr(graph_mod, "build_graph"):
        graph = graph_mod.build_graph(context_mod.Context(model))
        return [
            (e.src, e.dst, e.path, e.held_mode, e.wanted_mode, bool(getattr(e, "ordered", False)))
            for e in graph.edges
        ]
    out: list[tuple[str, str, str, str, str, bool]] = []
    for ev in flatten(model):
        if ev.kind not in ("acquire", "upgrade"):
            continue
        for h in ev.held:
            if h.lock == ev.lock and h.instance == ev.instance:
                continue
            lock = model.locks[ev.lock]
            ordered = h.lock == ev.lock and ev.order is not None and ev.order == lock.instance_order
            out.append((h.lock, ev.lock, ev.path, h.mode, ev.mode, ordered))
    return out


def lock_edges(model: m.Model) -> list[PairEdge]:
    """The edges in a fixed order: by the held lock's, then the wanted lock's declared order."""
    lock_rank = {lid: i for i, lid in enumerate(model.locks)}
    path_rank = page_path_order(model)
    pairs: dict[tuple[str, str], tuple[set[str], set[tuple[str, str]], list[bool]]] = {}
    for src, dst, path, held, wanted, ordered in _raw_edges(model):
        paths, modes, flags = pairs.setdefault((src, dst), (set(), set(), []))
        paths.add(path)
        modes.add((held, wanted))
        flags.append(ordered)
    out = [
        PairEdge(
            src,
            dst,
            tuple(sorted(paths, key=lambda p: (path_rank.get(p, len(path_rank)), p))),
            tuple(sorted(modes)),
            all(flags),
        )
        for (src, dst), (paths, modes, flags) in pairs.items()
    ]
    out.sort(key=lambda e: (lock_rank[e.src], lock_rank[e.dst]))
    return out


def page_path_order(model: m.Model) -> dict[str, int]:
    """Each path's position on the page: groups in their order, paths as declared."""
    order: dict[str, int] = {}
    for g in model.groups:
        for pid in g.paths:
            order.setdefault(pid, len(order))
    for pid in model.paths:
        order.setdefault(pid, len(order))
    return order


def cycle_pairs(diagnostics: list[Diagnostic]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The edges of reported cycles (LD201): (unwaived, waived) sets of (src, dst)."""
    live: set[tuple[str, str]] = set()
    waived: set[tuple[str, str]] = set()
    for d in diagnostics:
        if d.code != "LD201" or not d.locks:
            continue
        ring = list(d.locks)
        if len(ring) > 1 and ring[0] == ring[-1]:
            ring.pop()
        target = waived if d.waived_by else live
        for i, src in enumerate(ring):
            target.add((src, ring[(i + 1) % len(ring)]))
    return live, waived - live
