"""One pass over the logs: entries -> transactions -> findings, coverage and proposals.

`Observer` is handed each finished transaction as the log is read and keeps only what the
findings need (the first place and the count of each, the distinct lock sequences, the
coverage counts); nothing of a transaction outlives it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lockdocs import model as m
from lockdocs.config import apply_overrides, severity_overrides
from lockdocs.diagnostics import Diagnostic, Location, sort_diagnostics
from lockdocs.observe import findings as f
from lockdocs.observe.coverage import Coverage
from lockdocs.observe.locks import Locker, Seen
from lockdocs.observe.orders import Orders
from lockdocs.observe.paths import PATH_TAG, Declared, First, Match, PathMatcher
from lockdocs.observe.propose import Proposer
from lockdocs.observe.sessions import Rebuilder, Take, Transaction
from lockdocs.observe.shapes import Shapes
from lockdocs.postgres.serverlog import Entry
from lockdocs.project.state import did_you_mean
from lockdocs.records import replace
from lockdocs.rules.context import CheckContext
from lockdocs.rules.waivers import matching, waiver_label
from lockdocs.scan.collect import ScanResult

CYCLE_CODES = ("LD201", "LD202", "LD203", "LD204")
# Advisory keys remembered to find two families meeting (about 150 bytes each); past this,
# the keys after are not compared, and the JSON's `observed` says how many were.
MAX_KEYS = 250_000
MAX_NOTED = 1_000  # distinct unread statements and unknown path tags kept
MAX_CUTS = 50  # cut transactions reported one by one; the rest are counted


@dataclass
class Observed:
    diagnostics: list[Diagnostic]
    coverage: Coverage | None
    stats: dict[str, Any] = field(default_factory=dict)
    proposer: Proposer | None = None


class Observer:
    def __init__(
        self,
        model: m.Model | None,
        check: list[Diagnostic],
        scan: ScanResult | None,
        *,
        propose: bool = False,
    ) -> None:
        self.model = model
        self.locker = Locker(model, scan)
        self.locker.static = propose
        self.shapes = Shapes(self.locker)
        self.rebuilder = Rebuilder(self.shapes, self.transaction)
        ctx = CheckContext(model) if model is not None else None
        self.matcher = PathMatcher(model, ctx.all_events if ctx is not None else ())
        # The declared orders are the lock-order graph's edges (a re-take of a held lock is
        # none), as `lockdocs check` builds it.
        self.declared_pairs = (
            {
                pair
                for backend in ctx.backends
                for pair in ctx.graph(backend).by_pair
                if pair[0] != pair[1]
            }
            if ctx is not None
            else set()
        )
        self.declared_cycles = {frozenset(d.locks) for d in check if d.code in CYCLE_CODES}
        self.coverage = (
            Coverage.of(list(model.locks), list(model.paths), self.declared_pairs)
            if model is not None
            else None
        )
        self.orders = Orders(declared=self.declared_pairs)
        self.proposer = Proposer(self.locker, self.shapes) if propose else None
        self.undeclared: dict[tuple[str, int, str], tuple[Seen, Take, int]] = {}
        self.departures: dict[tuple[str, str, str, str | None, int], tuple[Any, int]] = {}
        self.keys: dict[tuple[int, int, int], tuple[str, str, int]] = {}
        self.keys_unchecked = 0
        self.clashes: dict[frozenset[str], Diagnostic] = {}
        self.unread: dict[str, tuple[str, int, int]] = {}
        self.unknown_paths: dict[str, tuple[str, int, int]] = {}
        self.cuts: list[Diagnostic] = []
        self.cut_count = 0
        self.matches: dict[str, int] = {}
        self.transactions = 0

    # --- the stream ---------------------------------------------------------------------

    def feed(self, entries: Iterable[Entry]) -> None:
        feed = self.rebuilder.feed
        for e in entries:
            feed(e)
        self.rebuilder.finish()

    def transaction(self, t: Transaction) -> None:
        self.transactions += 1
        for line, why in t.unread:
            first = self.unread.get(why)
            if first is not None:
                self.unread[why] = (*first[:2], first[2] + 1)
            elif len(self.unread) < MAX_NOTED:
                self.unread[why] = (t.source, line, 1)
        if t.cut:
            self.cut_count += 1
            if len(self.cuts) < MAX_CUTS:
                self.cuts.append(f.cut(t))
        if not t.takes:
            return
        rough = _firsts(t.takes, None)
        match = self.matcher.match(t, rough, [x.take for x in rough if not x.quiet])
        self.matches[match.how] = self.matches.get(match.how, 0) + 1
        ambiguous = False
        for x in rough:
            if len(x.take.took.seen.locks) > 1:
                ambiguous = True
                break
        firsts = _firsts(t.takes, match.declared) if match.declared and ambiguous else rough
        path = match.path if match.how not in ("unknown", "ambiguous", "none", "partial") else None
        declared = match.declared if path is not None else None
        if declared is not None and declared.private:
            firsts = [_inserted(x, declared) for x in firsts]
        if match.how == "unknown" and match.path is not None:
            self._unknown_path(match.path, t)
        if self.coverage is not None:
            for x in firsts:
                # a re-check counts where the path's steps take the lock (they derive it too)
                if x.lock is not None and (
                    x.quiet != "recheck" or (declared is not None and x.lock in declared.modes)
                ):
                    self.coverage.lock(x.lock)
            if path is not None:
                self.coverage.path(path)
        self._undeclared(t)
        if match.declared is not None and match.how in ("tag", "mapping", "application_name"):
            self._departures(match, firsts)
        self._keys(firsts)
        self.orders.add(firsts, t.line, path)
        if self.proposer is not None:
            self.proposer.add(t, firsts, match)

    def _unknown_path(self, value: str, t: Transaction) -> None:
        hit = self.unknown_paths.get(value)
        line = t.takes[0].line if t.takes else t.line
        if hit is not None:
            self.unknown_paths[value] = (*hit[:2], hit[2] + 1)
        elif len(self.unknown_paths) < MAX_NOTED:
            self.unknown_paths[value] = (t.source, line, 1)

    def _undeclared(self, t: Transaction) -> None:
        for take in t.takes:
            seen = take.took.seen
            if seen.locks or not seen.explicit:
                continue
            code = "LD805" if seen.kind == "advisory" else "LD803"
            key = (code, take.shape, seen.label if code == "LD803" else seen.kind)
            hit = self.undeclared.get(key)
            self.undeclared[key] = (seen, take, 1) if hit is None else (*hit[:2], hit[2] + 1)

    def _departures(self, match: Match, firsts: list[First]) -> None:
        assert match.declared is not None and match.path is not None
        for dep in self.matcher.departures(match.declared, firsts):
            key = (match.path, dep.kind, dep.lock, dep.other, dep.take.shape)
            hit = self.departures.get(key)
            self.departures[key] = (dep, 1) if hit is None else (hit[0], hit[1] + 1)

    def _keys(self, firsts: list[First]) -> None:
        for x in firsts:
            tag = x.take.took.seen.tag
            if x.lock is None or tag is None:
                continue
            first = self.keys.get(tag)
            if first is None:
                if len(self.keys) < MAX_KEYS:
                    self.keys[tag] = (x.lock, x.take.source, x.take.line)
                else:
                    self.keys_unchecked += 1
            elif first[0] != x.lock:
                pair = frozenset((first[0], x.lock))
                self.clashes.setdefault(pair, f.clash(tag, first, (x.lock, x.take)))

    # --- the end ------------------------------------------------------------------------

    def finish(self, root: Path | None) -> Observed:
        out: list[Diagnostic] = []
        witnesses = set()
        for pair, w in self.orders.undeclared_orders(self.declared_pairs):
            out.append(f.undeclared_order(pair, w))
            witnesses.add((w.source, w.line))
        if self.model is not None:
            out += [
                f.deadlock(d, witnesses) if d.code != "LD204" else d
                for d in self.orders.cycles(self.model, self.declared_cycles)
            ]
        for seen, take, count in self.undeclared.values():
            out.append(
                f.undeclared_lock(seen, take, self.shapes.samples.get(take.shape, ""), count)
            )
        for (path, *_), (dep, count) in self.departures.items():
            out.append(f.departure(path, dep, count))
        out += list(self.clashes.values())
        out += self.cuts
        for why, (source, line, count) in self.unread.items():
            out.append(f.unread(source, line, why, count))
        known = list(self.model.paths) if self.model is not None else []
        for value, (source, line, count) in self.unknown_paths.items():
            out.append(
                f.unknown_path(value, source, line, count, "; " + did_you_mean(value, known))
            )
        if self.coverage is not None:
            for pair, w in self.orders.edges.items():
                self.coverage.edge(pair, w.count)
        out = [_located(d, root) for d in out]
        if self.model is not None:
            overrides, _ = severity_overrides(Path(self.model.root), self.model.checks)
            out = apply_overrides(out, overrides)
            out = [self._waived(d) for d in out]
        stats = {
            "transactions": self.transactions,
            "statements": self.rebuilder.statements,
            "sessions": self.rebuilder.sessions_seen,
            "statements not read": self.rebuilder.unread,
            "cut transactions": self.cut_count,
            "shapes": len(self.shapes.numbers),
            "parses": self.shapes.parses,
            "fingerprints": self.shapes.fingerprints,
            "paths": dict(sorted(self.matches.items())),
            "sequences": len(self.orders.sequences),
            "sequences not searched": self.orders.dropped,
            "advisory keys compared": len(self.keys),
            "advisory keys not compared": self.keys_unchecked,
        }
        return Observed(sort_diagnostics(out), self.coverage, stats, self.proposer)

    def _waived(self, d: Diagnostic) -> Diagnostic:
        assert self.model is not None
        w = matching(self.model, d)
        return replace(d, waived_by=waiver_label(self.model, w)) if w is not None else d


def _firsts(takes: list[Take], d: Declared | None) -> list[First]:
    """Each lock class's first take, with the declared lock chosen for it: its only one, or
    the one of several that the path's transaction takes (none when that does not tell). A
    take a savepoint's rollback let go is still a first take, but held by nothing after it."""
    done: set[object] = set()
    maybe: set[object] = set()
    held: list[str] = []
    out: list[First] = []
    new = tuple.__new__  # First's own __new__ is Python: this runs per lock a log shows
    for take in takes:
        took = take.took
        seen = took.seen
        locks = seen.locks
        lock = None
        if len(locks) == 1:
            lock = locks[0]
        elif locks and d is not None:
            fitting = [lk for lk in locks if lk in d.modes]
            lock = fitting[0] if len(fitting) == 1 else None
        key: object = lock if lock is not None else seen
        if key in done:
            continue
        if took.recheck is not None:
            # a possible take: said once, held by nothing; a later certain take is the first
            if key not in maybe:
                maybe.add(key)
                out.append(new(First, (lock, take, tuple(held), "recheck")))
            continue
        out.append(new(First, (lock, take, tuple(held), "")))
        if take.released:
            continue
        done.add(key)
        if lock is not None:
            held.append(lock)
    return out


def _inserted(first: First, d: Declared) -> First:
    """A first take of a lock the path's steps take only on a row it inserted itself."""
    if first.lock is not None and first.lock in d.private and not first.quiet:
        return first._replace(quiet="inserted")
    return first


def _located(d: Diagnostic, root: Path | None) -> Diagnostic:
    """Log files inside the project are named from the project's folder, like every other
    file a finding names; others as the user named them."""
    if root is None:
        return d

    def rel(loc: Location) -> Location:
        if loc.file.startswith("<") or not loc.file:
            return loc
        path = Path(loc.file).resolve()
        try:
            return replace(loc, file=path.relative_to(root.resolve()).as_posix())
        except ValueError:
            return replace(loc, file=os.path.normpath(loc.file))

    return replace(
        d,
        location=rel(d.location),
        related=tuple(r._replace(location=rel(r.location)) for r in d.related),
    )


__all__ = ["PATH_TAG", "Observed", "Observer"]
