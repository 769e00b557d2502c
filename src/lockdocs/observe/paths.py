"""Each observed transaction -> the declared path it ran, and how it departs from its steps.

The path is known when a statement of the transaction carries it: the sqlcommenter tag
`lockdocs_path`, another sqlcommenter key that locks.yaml's `observe:` maps to a path, or an
`application_name` that names a path (or that `observe:` maps). Otherwise the transaction's
locks, in the order it took them, are matched against every declared transaction of every
path (the flattened steps: branches, loops and `run:` included); the best match is said with
how sure it is, and a tie is said as a tie, never broken by a guess.

A transaction of a known path departs from it by taking a lock its steps lack, a lock in a
mode its steps do not take it in, or two locks in the order its steps reverse. A lock the path
takes only on a row it inserted itself (`inserted: true`) is one the analysis gives no order:
a transaction of the path that takes it departs from nothing, and orders nothing by it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple, assert_never

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.diagnostics import Location
from lockdocs.observe.sessions import Take, Transaction

PATH_TAG = "lockdocs_path"


@dataclass
class Declared:
    """One transaction of one declared path, as the analysis flattens it."""

    path: str
    transaction: int
    modes: dict[str, set[str]] = field(default_factory=dict)  # lock -> the modes taken in
    where: dict[str, Location] = field(default_factory=dict)  # lock -> its first step
    pairs: set[tuple[str, str]] = field(default_factory=set)  # (held, then taken)
    # the locks the path takes only on rows it inserted (inserted: true): no event, no order
    private: frozenset[str] = frozenset()


class First(NamedTuple):
    """A lock class's first take in a transaction, with the declared lock chosen for it (a
    named tuple: a few are made per transaction)."""

    lock: str | None  # None: undeclared, or the log cannot tell which declared lock
    take: Take
    held: tuple[str, ...]  # the declared locks held then (chosen ones only)
    # "": a take that orders; "recheck": a foreign-key re-check the log cannot confirm;
    # "inserted": a row the path's steps say the transaction inserted itself. Neither is held
    # for an order, a departure or a deadlock.
    quiet: str = ""


@dataclass(frozen=True)
class Match:
    path: str | None
    how: str  # tag | mapping | application_name | exact | likely | partial | ambiguous | none
    sure: str  # the words for how sure: "tagged lockdocs_path='x'", "fits 3 of 3 locks", ...
    declared: Declared | None = None
    candidates: tuple[str, ...] = ()  # for a tie: the paths tied


@dataclass(frozen=True)
class Departure:
    kind: str  # lacks | mode | order
    lock: str
    other: str | None  # order: the lock it took before; mode: the declared modes
    take: Take
    step: Location | None  # the path's step it departs from


def profiles(model: m.Model, events: Iterable[Event]) -> dict[str, list[Declared]]:
    """Every declared transaction of every path: its locks, modes and orders."""
    out: dict[tuple[str, int], Declared] = {}
    for ev in events:
        if ev.kind not in ("acquire", "upgrade", "retake"):
            continue
        d = out.setdefault((ev.path, ev.transaction), Declared(ev.path, ev.transaction))
        d.modes.setdefault(ev.lock, set()).add(ev.mode)
        d.where.setdefault(ev.lock, ev.location)
        if ev.kind == "retake":
            continue  # the lock is held already: no order
        for h in ev.held:
            if h.lock != ev.lock:
                d.pairs.add((h.lock, ev.lock))
    by_path: dict[str, list[Declared]] = {}
    for (path, _), d in sorted(out.items()):
        if path in model.paths:
            by_path.setdefault(path, []).append(d)
    for path_id, declared in model.paths.items():
        inserted = _inserted(model, declared.steps, {path_id})
        if not inserted:
            continue
        if path_id not in by_path:
            by_path[path_id] = [Declared(path_id, 0)]
        for d in by_path[path_id]:
            d.private = frozenset(inserted - set(d.modes))
    return by_path


def _inserted(model: m.Model, steps: Iterable[m.Step], seen: set[str]) -> set[str]:
    """The locks of the `inserted: true` takes of some steps, `run:` paths included."""
    out: set[str] = set()
    for step in steps:
        match step:
            case m.Take():
                if step.inserted:
                    out.add(step.lock)
            case m.Loop():
                out |= _inserted(model, step.steps, seen)
            case m.Branches():
                out |= _inserted(model, step.statement, seen)
                for _, alternative in step.alternatives:
                    out |= _inserted(model, alternative, seen)
            case m.Run():
                if step.path in model.paths and step.path not in seen:
                    seen.add(step.path)
                    out |= _inserted(model, model.paths[step.path].steps, seen)
            case m.Leaf():
                pass
            case _:
                assert_never(step)
    return out


class PathMatcher:
    def __init__(self, model: m.Model | None, events: Iterable[Event]) -> None:
        self.model = model
        self.by_path = profiles(model, events) if model is not None else {}
        self.standalone = [
            d
            for path, ds in self.by_path.items()
            if model is not None and model.paths[path].standalone
            for d in ds
        ]
        self._matched: dict[tuple[object, ...], Match] = {}
        self._declared_of: dict[tuple[object, ...], Declared | None] = {}
        mapping = model.observe if model is not None else None
        self.tags = dict(mapping.tags) if mapping is not None else {}
        self.apps = dict(mapping.applications) if mapping is not None else {}

    def named(self, t: Transaction) -> tuple[str | None, str, str]:
        """(path, how, the words) when the transaction names its path; (None, "", "") when
        not; a name that is no declared path is returned with how "unknown"."""
        tag = t.tags.get(PATH_TAG)
        if tag is not None:
            how = "tag" if tag in self.by_path or self._declared(tag) else "unknown"
            return tag, how, f"tagged {PATH_TAG}='{tag}'"
        for (key, value), path in self.tags.items():
            if t.tags.get(key) == value:
                return path, "mapping", f"tagged {key}='{value}', which observe: maps to it"
        if t.application in self.apps:
            return (
                self.apps[t.application],
                "mapping",
                f"application_name '{t.application}', which observe: maps to it",
            )
        if t.application and self._declared(t.application):
            return t.application, "application_name", f"application_name '{t.application}'"
        return None, "", ""

    def _declared(self, path: str) -> bool:
        return self.model is not None and path in self.model.paths

    def match(self, t: Transaction, firsts: list[First], candidates: list[Take]) -> Match:
        path, how, words = self.named(t)
        if path is not None and how != "unknown":
            named = (path, tuple([(t.took.seen.locks, t.took.mode) for t in candidates]))
            if named not in self._declared_of:
                if len(self._declared_of) > 10_000:
                    self._declared_of.clear()
                best = self._best(self.by_path.get(path, []), candidates)
                self._declared_of[named] = best[1] if best else None
            return Match(path, how, words, self._declared_of[named])
        if path is not None:
            return Match(path, "unknown", words)
        takes = [f.take for f in firsts if f.take.took.seen.locks and not f.quiet]
        if not takes:
            return Match(None, "none", "it takes no declared lock")
        # One score per distinct sequence: a log repeats a few sequences many times.
        key = tuple([(t.took.seen.locks, t.took.mode) for t in takes])
        hit = self._matched.get(key)
        if hit is None:
            if len(self._matched) >= 10_000:
                self._matched.clear()
            hit = self._matched[key] = self._rank(takes)
        return hit

    def _rank(self, takes: list[Take]) -> Match:
        scored = []
        for d in self.standalone:
            score, words = _score(d, takes)
            scored.append((score, d, words))
        if not scored:
            return Match(None, "none", "no declared path takes locks")
        scored.sort(key=lambda x: x[0], reverse=True)
        top = scored[0][0]
        tied = sorted({d.path for s, d, _ in scored if s == top})
        if top[0] == 0:
            return Match(None, "none", "no declared path takes any of its locks")
        if len(tied) > 1:
            return Match(
                None,
                "ambiguous",
                f"a tie between {', '.join(tied[:5])}{', ...' if len(tied) > 5 else ''}: "
                f"each {scored[0][2]}",
                candidates=tuple(tied),
            )
        _, d, words = scored[0]
        exact = top[0] == 1 and top[1] == 0 and top[2] == 0
        fits = top[0] == 1 and top[1] == 0
        return Match(d.path, "exact" if exact else "likely" if fits else "partial", words, d)

    def _best(
        self, declared: list[Declared], takes: list[Take]
    ) -> tuple[tuple[float, int, int], Declared] | None:
        if not declared:
            return None
        scored = [(_score(d, takes)[0], d) for d in declared]
        return max(scored, key=lambda x: (x[0], -x[1].transaction))

    def departures(self, d: Declared, firsts: list[First]) -> list[Departure]:
        out: list[Departure] = []
        taken: list[str] = []
        for f in firsts:
            seen = f.take.took.seen
            if not seen.locks or f.quiet:
                continue
            lock = (
                f.lock
                if f.lock is not None
                else next((lk for lk in seen.locks if lk in d.modes), None)
            )
            if lock is None or lock not in d.modes:
                if len(seen.locks) == 1 or not any(lk in d.modes for lk in seen.locks):
                    out.append(Departure("lacks", seen.locks[0], None, f.take, None))
                continue
            modes = d.modes[lock]
            if f.take.took.mode not in modes:
                out.append(
                    Departure("mode", lock, ", ".join(sorted(modes)), f.take, d.where.get(lock))
                )
            for before in taken:
                if (lock, before) in d.pairs and (before, lock) not in d.pairs:
                    out.append(Departure("order", lock, before, f.take, d.where.get(lock)))
            taken.append(lock)
        return out


def _score(d: Declared, takes: list[Take]) -> tuple[tuple[float, int, int], str]:
    """(share of its locks the declared transaction takes, -order reversals, -locks it takes
    that the transaction did not), and the words for it."""
    fit = 0
    chosen: list[str] = []
    for t in takes:
        hit = next((lk for lk in t.took.seen.locks if lk in d.modes), None)
        if hit is not None:
            fit += 1
            chosen.append(hit)
        elif any(lk in d.private for lk in t.took.seen.locks):
            fit += 1  # a row the path inserts itself: it fits, in no order
    reversed_ = sum(
        1
        for i, a in enumerate(chosen)
        for b in chosen[i + 1 :]
        if (b, a) in d.pairs and (a, b) not in d.pairs
    )
    extra = len(set(d.modes) - set(chosen))
    words = f"fits {fit} of its {len(takes)} declared lock{'s' if len(takes) != 1 else ''}"
    if reversed_:
        words += f", {reversed_} in another order"
    if extra:
        words += f"; the path takes {extra} more"
    return (fit / len(takes), -reversed_, -extra), words
