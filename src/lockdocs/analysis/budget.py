"""The budget of one run's whole analysis: the work it may do, in units counted by every phase
(flattening, the lock-order graph, the graph of waits and the cycle searches), and the time it
may take.

Each phase already has a bound of its own (a path's work, one cycle search's states); this one
bounds their sum, so that no input, however it spreads its weight over many paths or many
searches, makes `check` run for minutes. Work is the bound that decides: it is counted, so the
same declarations stop at the same place on every machine. Time is the backstop for what the
units may not foresee; a run stopped by it says so, and that it depends on the machine. Either
way the analysis reports where it stopped (LD209 while flattening, LD204 for each part of the
graph not searched), never silence.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from lockdocs import model as m

# Units between two looks at the clock: a look costs far more than a unit.
CLOCK_EVERY = 4096
# What the steps of each phase charge, so that a unit takes about as long in every phase
# (a few microseconds; measured on random dense declarations, run: chains and the synthetic
# projects of bench/generate.py): a state through a step of a path and an edge of the lock-order
# graph are a unit each; a hop of the graph of waits (its guards, its gate checks, its place in
# the search's tables) eight; the gate check of a row's waiter against one of its holders two;
# and a search follows ARCS arcs (a cached gate check each) for a unit.
HOP = 8
PAIR = 2
ARCS = 8
# ... and each event a path's walk records costs this much more than its units of path work
# (limits.path_work counts a state through a step and each held lock an event records; the
# event itself, made at each take of a run: chain walked once per caller, costs more).
EVENT = 3


def now() -> float:
    """The clock the time budget reads (a test may stand in another)."""
    return time.monotonic()


class Budget:
    """What is left of one run's analysis budget; `spend` says whether there was enough."""

    def __init__(
        self,
        units: int,
        seconds: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.limit = units
        self.seconds = seconds
        self.spent = 0
        self._clock = clock or now
        self._deadline = self._clock() + seconds if seconds else None
        self._next_look = CLOCK_EVERY
        # None while there is budget left; "work" or "time" once it ran out.
        self.out: str | None = None

    @classmethod
    def of(cls, limits: m.Limits) -> Budget:
        return cls(limits.analysis_work, float(limits.analysis_seconds) or None)

    def spend(self, units: int) -> bool:
        """Charge `units`; False once the budget ran out (and on every call after)."""
        if self.out is not None:
            return False
        self.spent += units
        if self.spent > self.limit:
            self.out = "work"
            return False
        if self._deadline is not None and self.spent >= self._next_look:
            self._next_look = self.spent + CLOCK_EVERY
            if self._clock() > self._deadline:
                self.out = "time"
                return False
        return True

    @property
    def left(self) -> int:
        """Units that may still be spent (0 once the budget ran out)."""
        return 0 if self.out is not None else max(0, self.limit - self.spent)

    def words(self) -> str:
        """What ran out, as a finding says it."""
        if self.out == "time":
            return (
                f"the analysis's time budget ({self.seconds:g} s, limits.analysis_seconds) ran "
                "out; where it stops depends on the machine's speed"
            )
        return f"the analysis's work budget ({self.limit:,} units, limits.analysis_work) ran out"
