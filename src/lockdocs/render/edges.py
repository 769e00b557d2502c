"""The lock-order edges the page and the diagram show, one per (held lock, wanted lock) pair,
and what the page derives from them: which pairs are taken in both orders and what keeps those
apart, and an order per connected part of the graph that the paths follow.

The checker's `lockdocs.analysis.graph.build_graph` is the source, so the page draws the graph
the check reasons about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from lockdocs import model as m
from lockdocs.analysis.facts import Facts
from lockdocs.analysis.gates import gate
from lockdocs.analysis.graph import LockGraph, build_graph
from lockdocs.diagnostics import Diagnostic

if TYPE_CHECKING:
    from lockdocs.rules.context import CheckContext


@dataclass(frozen=True)
class PairEdge:
    """One arrow of the diagram: every path that takes `dst` while it holds `src`."""

    src: str
    dst: str
    paths: tuple[str, ...]  # path ids, in page order
    modes: tuple[tuple[str, str], ...]  # (held mode, wanted mode), sorted
    ordered: bool  # a self-edge every path of which follows the lock's declared order
    unordered: tuple[str, ...] = ()  # for a self-edge: the paths that do not follow it


class _Raw(NamedTuple):
    src: str
    dst: str
    path: str
    held: str
    wanted: str
    ordered: bool
    witness: Any  # the checker's Edge (for gates), or None


# The page's comparisons per unit of limits.analysis_work: a comparison costs a few times a unit.
COMPARISONS_PER_UNIT = 10


class EdgeSet:
    """The graph once per render: the raw edges with their witnesses, and the pairs."""

    def __init__(self, model: m.Model, analysis: CheckContext | None = None) -> None:
        self.model = model
        # The checker's own graph (and its gates, for the ones the page explains), so
        # the page draws the graph the check reasons about. One graph per backend, as the
        # check builds them: a step for one backend never runs in the same transaction as a
        # step for another.
        raw = _reused(model, analysis)
        self.ctx: Facts = analysis if raw is not None and analysis is not None else Facts(model)
        if raw is None:
            raw = []
            for backend in self.ctx.backends:
                raw.extend(_raw(build_graph(self.ctx, backend)))
        self.raw = raw
        self.pairs = _pairs(model, raw)
        # What is left of the page's bound on comparing the two ways of a pair (render/view/
        # bothways.py): a tenth of the analysis's units (200,000 comparisons by default, a
        # second or two; the 4,500 paths of bench/generate.py's 100x project need 109).
        self._comparisons = model.limits.analysis_work // COMPARISONS_PER_UNIT
        self._raw_of: dict[tuple[str, str], list[_Raw]] | None = None

    def raw_of(self, src: str, dst: str) -> list[_Raw]:
        """The raw edges of one (held, taken) pair, in graph order (indexed on first use)."""
        if self._raw_of is None:
            index: dict[tuple[str, str], list[_Raw]] = {}
            for r in self.raw:
                index.setdefault((r.src, r.dst), []).append(r)
            self._raw_of = index
        return self._raw_of.get((src, dst), [])

    def comparisons_left(self) -> int:
        return self._comparisons

    def spend_comparisons(self, n: int) -> None:
        self._comparisons = max(0, self._comparisons - n)

    def gate(self, a: _Raw, b: _Raw) -> tuple[str, str, str] | None:
        """(lock, mode on a's side, mode on b's side) of a singleton both hold in conflicting
        modes, which keeps the two transactions apart; None when nothing does."""
        if a.witness is None or b.witness is None:
            return None
        if a.witness.backend != b.witness.backend:
            return None
        lock = gate(self.ctx, a.witness, b.witness)
        if lock is None:
            return None
        mode_a = next(g.mode for g in a.witness.guards if g.lock == lock)
        mode_b = next(g.mode for g in b.witness.guards if g.lock == lock)
        return lock, mode_a, mode_b


def _raw(graph: LockGraph) -> list[_Raw]:
    return [
        _Raw(e.src, e.dst, e.path, e.held_mode, e.wanted_mode, bool(e.ordered), e)
        for e in graph.edges
    ]


def _reused(model: m.Model, analysis: CheckContext | None) -> list[_Raw] | None:
    """The raw edges of the analysis's own graphs (the build's: flattening every path and
    building the graph again was a fifth of the page's time), or None when they may differ
    from the graph a fresh walk builds: another model, or an analysis whose budget ran out
    (its walks then stop where its checks left off, not where a fresh budget would)."""
    if analysis is None or analysis.model is not model or analysis.budget.out is not None:
        return None
    raw: list[_Raw] = []
    for backend in analysis.backends:
        raw.extend(_raw(analysis.graph(backend)))
    return None if analysis.budget.out is not None else raw


def _pairs(model: m.Model, raw: list[_Raw]) -> list[PairEdge]:
    lock_rank = {lid: i for i, lid in enumerate(model.locks)}
    path_rank = page_path_order(model)

    def by_page(paths: set[str]) -> tuple[str, ...]:
        return tuple(sorted(paths, key=lambda p: (path_rank.get(p, len(path_rank)), p)))

    pairs: dict[tuple[str, str], tuple[set[str], set[tuple[str, str]], set[str]]] = {}
    for r in raw:
        paths, modes, unordered = pairs.setdefault((r.src, r.dst), (set(), set(), set()))
        paths.add(r.path)
        modes.add((r.held, r.wanted))
        if not r.ordered:
            unordered.add(r.path)
    out = [
        PairEdge(src, dst, by_page(paths), tuple(sorted(modes)), not unordered, by_page(unordered))
        for (src, dst), (paths, modes, unordered) in pairs.items()
    ]
    out.sort(key=lambda e: (lock_rank[e.src], lock_rank[e.dst]))
    return out


def lock_edges(model: m.Model) -> list[PairEdge]:
    """The edges in a fixed order: by the held lock's, then the wanted lock's declared order."""
    return EdgeSet(model).pairs


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
