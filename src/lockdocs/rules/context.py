"""What every check reads: the model and its flattened events per backend, computed once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from lockdocs import model as m
from lockdocs.analysis.flatten import Event, Held, Refusal, backends, flatten_all
from lockdocs.diagnostics import Diagnostic, Location, Severity

if TYPE_CHECKING:
    from lockdocs.analysis.cycles import Cycle, Unfinished
    from lockdocs.analysis.graph import LockGraph


@dataclass
class Context:
    model: m.Model
    _events: dict[str | None, list[Event]] = field(default_factory=dict)
    _refusals: dict[str | None, list[Refusal]] = field(default_factory=dict)
    _graphs: dict[str | None, LockGraph] = field(default_factory=dict)
    _cycles: dict[str | None, tuple[list[Cycle], list[Unfinished]]] = field(default_factory=dict)
    # Singleton guards of a held set, by the held set's id (kept beside its result, so the id
    # cannot be reused while cached): gate checks ask for them constantly.
    guard_cache: dict[int, tuple[tuple[Held, ...], dict[str, str]]] = field(default_factory=dict)
    # Paths a change added or reordered (`lockdocs diff`): hints blame them first.
    blame: frozenset[str] = frozenset()

    @cached_property
    def has_parents(self) -> bool:
        """Does any lock declare instances: {within: ...} (a parent gate)?"""
        return any(lock.within for lock in self.model.locks.values())

    @cached_property
    def backends(self) -> tuple[str | None, ...]:
        return backends(self.model)

    def events(self, backend: str | None) -> list[Event]:
        if backend not in self._events:
            done = flatten_all(self.model, backend)
            self._events[backend] = done.events
            self._refusals[backend] = done.refusals
        return self._events[backend]

    def refusals(self, backend: str | None) -> list[Refusal]:
        """Paths too large to analyse on this backend (the analysis is then incomplete)."""
        self.events(backend)
        return self._refusals[backend]

    @property
    def refused(self) -> bool:
        return any(self.refusals(b) for b in self.backends)

    def graph(self, backend: str | None) -> LockGraph:
        """The lock-order graph of one backend, built once per run."""
        if backend not in self._graphs:
            from lockdocs.analysis.graph import build_graph

            self._graphs[backend] = build_graph(self, backend)
        return self._graphs[backend]

    def cycles(self, backend: str | None) -> tuple[list[Cycle], list[Unfinished]]:
        """The real cycles of one backend's graph and the components the search could not
        finish, searched once per run."""
        if backend not in self._cycles:
            from lockdocs.analysis.cycles import find_cycles

            self._cycles[backend] = find_cycles(self, self.graph(backend))
        return self._cycles[backend]

    @cached_property
    def all_events(self) -> list[Event]:
        """Events of every backend; an event seen on two backends appears once."""
        seen: set[Event] = set()
        out: list[Event] = []
        for b in self.backends:
            for ev in self.events(b):
                if ev not in seen:
                    seen.add(ev)
                    out.append(ev)
        return out

    def lock_kind(self, lock_id: str, backend: str | None) -> str:
        lock = self.model.locks[lock_id]
        if backend:
            for b in lock.backends:
                if b.name == backend:
                    return b.kind
        return lock.kind


class Step(NamedTuple):
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


def once_per_step(events: Iterable[Event]) -> Iterator[Step]:
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
        yield Step(first, owner, callers, held, branches)


def step_finding(
    code: str, severity: Severity, step: Step, message: str, hint: str, locks: tuple[str, ...]
) -> Diagnostic:
    """A finding about one step, where exceptions can find it by path (the declaring one or
    any caller), branch and lock; the message names the callers of a shared path."""
    return Diagnostic(
        code,
        severity,
        message + step.reached,
        step.event.location,
        hint,
        paths=step.paths,
        branches=step.branches,
        locks=locks,
    )
