"""What every part of the walk shares: the model seen through one backend, the events recorded
so far (each once), and the work budget that stops a path too large to analyse.
"""

from __future__ import annotations

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.records import field, record


class Stop(Exception):
    """Internal: the budget ran out; turned into a Refusal by `flatten`."""


@record(frozen=False)
class WalkBase:
    model: m.Model
    backend: str | None = None
    events: list[Event] = field(default_factory=list)
    seen: set[Event] = field(default_factory=set)
    units: int = 0
    path_start: int = 0
    limit: int = 0
    # Each loop's order by its id (the instances a loop names carry its id): what a sorted loop
    # says about keyed instances (model/columns.py) is read from it.
    loop_orders: dict[str, str | None] = field(default_factory=dict)
    cap: int = 1 << 62  # where the whole analysis's budget (budget.py) stops the walk

    def lock_kind(self, lock_id: str) -> str:
        lock = self.model.locks[lock_id]
        if self.backend:
            for b in lock.backends:
                if b.name == self.backend:
                    return b.kind
        return lock.kind

    def lock_scope(self, lock_id: str) -> str:
        if self.lock_kind(lock_id) == "memory":
            return "session"
        return self.model.locks[lock_id].scope

    def outlives(self, lock_id: str, txkind: str | None) -> bool:
        """Does the path still hold `lock_id` once a transaction of kind `txkind` ends? A
        session lock does, unless a transaction-mode pooler takes the server connection (and
        the lock on it) back at the end; an in-process lock always does."""
        if self.lock_scope(lock_id) != "session":
            return False
        if self.lock_kind(lock_id) == "memory":
            return True
        tk = self.model.transactions.get(txkind) if txkind else None
        return tk is None or tk.pooler != "transaction"

    def spend(self, n: int) -> None:
        self.units += n
        if self.units > self.limit:
            raise Stop

    def emit(self, ev: Event) -> None:
        # One hash of the event, not two (`in`, then `add`): an event is a tuple of 25 fields,
        # two of them records with a hash of their own, and a walk emits one per take.
        seen = self.seen
        before = len(seen)
        seen.add(ev)
        if len(seen) != before:
            self.units += 1 + len(ev.held)
            if self.units > self.limit:
                raise Stop
            self.events.append(ev)

    def skip(self, step: m.Step) -> bool:
        return bool(self.backend and step.backend and step.backend != self.backend)

    def take_mode(self, step: m.Take) -> str:
        mode = step.mode
        if self.backend:
            lock = self.model.locks[step.lock]
            for b in lock.backends:
                if b.name == self.backend and b.mode and b.kind != lock.kind:
                    mode = b.mode
        return mode
