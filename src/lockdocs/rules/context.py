"""What every check reads: the model and its flattened events per backend, computed once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from lockdocs import model as m
from lockdocs.analysis.flatten import Event, Held, backends, flatten
from lockdocs.diagnostics import Diagnostic, Location, Severity

if TYPE_CHECKING:
    from lockdocs.analysis.graph import LockGraph


@dataclass
class Context:
    model: m.Model
    _events: dict[str | None, list[Event]] = field(default_factory=dict)
    _graphs: dict[str | None, LockGraph] = field(default_factory=dict)
    # Singleton guards of a held set, by held set: gate checks ask for them constantly.
    guard_cache: dict[tuple[Held, ...], dict[str, str]] = field(default_factory=dict)

    @cached_property
    def backends(self) -> tuple[str | None, ...]:
        return backends(self.model)

    def events(self, backend: str | None) -> list[Event]:
        if backend not in self._events:
            self._events[backend] = flatten(self.model, backend)
        return self._events[backend]

    def graph(self, backend: str | None) -> LockGraph:
        """The lock-order graph of one backend, built once per run."""
        if backend not in self._graphs:
            from lockdocs.analysis.graph import build_graph

            self._graphs[backend] = build_graph(self, backend)
        return self._graphs[backend]

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


def once_per_step(events: Iterable[Event]) -> Iterator[Event]:
    """One event per step: a step seen through several held states (branches, the two passes
    of a loop, several callers) is one finding, not one per state."""
    seen: set[tuple[str, Location]] = set()
    for ev in events:
        key = (ev.path, ev.location)
        if key not in seen:
            seen.add(key)
            yield ev


def step_finding(
    code: str, severity: Severity, ev: Event, message: str, hint: str, locks: tuple[str, ...]
) -> Diagnostic:
    """A finding about one step of one path, where exceptions can find it by path, branch and
    lock."""
    return Diagnostic(
        code,
        severity,
        message,
        ev.location,
        hint,
        paths=(ev.path,),
        branches=ev.branch,
        locks=locks,
    )
