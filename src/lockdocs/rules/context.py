"""What every check reads: the analysis facts of the model, its lock-order graph and its real
cycles per backend, each computed once; and the helpers that word a finding about one step."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import NamedTuple

from lockdocs.analysis.cycles import Cycle, Unfinished, find_cycles
from lockdocs.analysis.events import Event, Held
from lockdocs.analysis.facts import Facts
from lockdocs.analysis.graph import LockGraph, build_graph
from lockdocs.diagnostics import Diagnostic, Location
from lockdocs.records import field, record
from lockdocs.rules.finder import Finder


@record(frozen=False)
class CheckContext(Facts):
    """The facts every check reads, plus the graph and the cycles of each backend, built once
    per run and shared by the checks that need them."""

    _graphs: dict[str | None, LockGraph] = field(default_factory=dict)
    _cycles: dict[str | None, tuple[list[Cycle], list[Unfinished]]] = field(default_factory=dict)
    # Paths a change added or reordered (`lockdocs diff`): hints blame them first.
    blame: frozenset[str] = frozenset()

    def graph(self, backend: str | None) -> LockGraph:
        """The lock-order graph of one backend, built once per run."""
        if backend not in self._graphs:
            self._graphs[backend] = build_graph(self, backend)
        return self._graphs[backend]

    @cached_property
    def key_changing_takes(self) -> set[tuple[str, str, str, int]]:
        """(lock, path, file, line) of each FOR UPDATE take that says it changes a key column
        or deletes, indexed once (a hint asks for each hop of each cycle)."""
        return {
            (ev.lock, ev.path, ev.location.file, ev.location.line)
            for ev in self.all_events
            if ev.mode == "for update" and ev.changes_key
        }

    def cycles(self, backend: str | None) -> tuple[list[Cycle], list[Unfinished]]:
        """The real cycles of one backend's graph and the components the search could not
        finish, searched once per run."""
        if backend not in self._cycles:
            self._cycles[backend] = find_cycles(self, self.graph(backend))
        return self._cycles[backend]


class ReachedStep(NamedTuple):
    """One step of a declared path, as every flattened event that reaches it sees it: the path
    that declares it (`owner`) and the paths that run it (`callers`)."""

    event: Event  # the first event seen at the step
    owner: str
    callers: tuple[str, ...]
    held: tuple[Held, ...]  # what is held there, over every caller
    branches: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths exceptions can name: the declaring path, then its callers."""
        return (self.owner, *self.callers)

    @property
    def reached(self) -> str:
        return run_from(self.callers)


def run_from(callers: Iterable[str]) -> str:
    """How a message names the callers of a shared path ("" when there are none)."""
    names = [f"'{c}'" for c in callers]
    if not names:
        return ""
    shown = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    return f" (run from {shown})"


def once_per_step(events: Iterable[Event]) -> Iterator[ReachedStep]:
    """One finding per cause: a step seen through several held states (branches, the two
    passes of a loop) or several callers (a shared path that others run) is one step."""
    groups: dict[Location, list[Event]] = {}
    for ev in events:
        groups.setdefault(ev.location, []).append(ev)
    for evs in groups.values():
        first = evs[0]
        owner = first.through[-1] if first.through else first.path
        callers = tuple(sorted({e.path for e in evs} - {owner}))
        held = tuple(dict.fromkeys(h for e in evs for h in e.held))
        branches = tuple(dict.fromkeys(b for e in evs for b in e.branch))
        yield ReachedStep(first, owner, callers, held, branches)


def steps_holding(events: Iterable[Event], kind: str) -> Iterator[ReachedStep]:
    """The steps of one kind that run while a lock is held, one per cause."""
    return once_per_step(ev for ev in events if ev.kind == kind and ev.held)


def held_locks(step: ReachedStep) -> tuple[str, ...]:
    """The locks held at a step, sorted: the ones a finding about it names for exceptions."""
    return tuple(sorted({h.lock for h in step.held}))


def step_finding(
    finding: Finder, step: ReachedStep, message: str, hint: str, locks: tuple[str, ...]
) -> Diagnostic:
    """A finding about one step, where exceptions can find it by path (the declaring one or
    any caller), branch and lock; the message names the callers of a shared path."""
    return finding(
        message + step.reached,
        step.event.location,
        hint,
        paths=step.paths,
        branches=step.branches,
        locks=locks,
    )
