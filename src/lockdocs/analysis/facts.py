"""What the analysis reads about one model, computed once: the flattened events and refusals
per backend, whether any lock has a parent gate, each lock's kind per backend, and the cache of
singleton guards the cycle search asks for constantly.

It lives here, below the graph and the cycle search that take it, so the analysis never imports
the rules layer; `lockdocs.rules.context.CheckContext` extends it with the graph and the cycles each
check shares.
"""

from __future__ import annotations

from functools import cached_property

from lockdocs import model as m
from lockdocs.analysis.budget import Budget
from lockdocs.analysis.events import Event, Held, Refusal
from lockdocs.analysis.flatten import backends, flatten_all
from lockdocs.diagnostics import Location
from lockdocs.records import field, record


@record(frozen=False)
class Facts:
    model: m.Model
    _events: dict[str | None, list[Event]] = field(default_factory=dict)
    _refusals: dict[str | None, list[Refusal]] = field(default_factory=dict)
    # each loop's order by its id, over every backend walked (see WalkBase.loop_orders)
    loop_orders: dict[str, str | None] = field(default_factory=dict)
    # Singleton guards of a held set, by the held set's id (kept beside its result, so the id
    # cannot be reused while cached): gate checks ask for them constantly.
    guard_cache: dict[int, tuple[tuple[Held, ...], dict[str, str]]] = field(default_factory=dict)
    # The whole analysis's budget (budget.py): every phase charges it.
    budget: Budget = field(init=False)

    def __post_init__(self) -> None:
        self.budget = Budget.of(self.model.limits)

    @cached_property
    def has_parents(self) -> bool:
        """Does any lock declare instances: {within: ...} (a parent gate)?"""
        return any(lock.within for lock in self.model.locks.values())

    @cached_property
    def set_statements(self) -> dict[Location, tuple[m.Take, ...]]:
        """The takes of each set take (`set: [a, b]`), by the location of each of them."""
        out: dict[Location, tuple[m.Take, ...]] = {}
        stack = [p.steps for p in self.model.paths.values()]
        while stack:
            for s in stack.pop():
                if isinstance(s, m.Loop):
                    stack.append(s.steps)
                elif isinstance(s, m.Branches):
                    for t in s.statement:
                        out[t.location] = s.statement
                    if not s.statement:
                        stack.extend(alt for _, alt in s.alternatives)
        return out

    @cached_property
    def backends(self) -> tuple[str | None, ...]:
        return backends(self.model)

    def events(self, backend: str | None) -> list[Event]:
        if backend not in self._events:
            done = flatten_all(self.model, backend, budget=self.budget)
            self._events[backend] = done.events
            self._refusals[backend] = done.refusals
            self.loop_orders.update(done.loop_orders)
        return self._events[backend]

    def refusals(self, backend: str | None) -> list[Refusal]:
        """Paths too large to analyse on this backend (the analysis is then incomplete)."""
        self.events(backend)
        return self._refusals[backend]

    @property
    def refused(self) -> bool:
        return any(self.refusals(b) for b in self.backends)

    @cached_property
    def all_events(self) -> list[Event]:
        """Events of every backend; an event seen on two backends appears once."""
        seen: set[Event] = set()
        out: list[Event] = []
        for b in self.backends:
            for ev in self.events(b):
                before = len(seen)
                seen.add(ev)  # one hash an event (see Walk.emit)
                if len(seen) != before:
                    out.append(ev)
        return out

    def lock_kind(self, lock_id: str, backend: str | None) -> str:
        lock = self.model.locks[lock_id]
        if backend:
            for b in lock.backends:
                if b.name == backend:
                    return b.kind
        return lock.kind
