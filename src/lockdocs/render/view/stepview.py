"""One line of a path's list, as data (`StepView`), and the facts a line is annotated with that
need no walk of the path: whether a take finds its lock already held (`held_mark`), the
backend a release is about, whether a transaction is open after some steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.render.escape import Link


@dataclass(frozen=True)
class StepView:
    """One line of a path's nested list; `indent` and `marker` place it."""

    kind: str
    indent: str
    marker: str
    lock: Link | None = None
    mode: str | None = None
    via: tuple[str, ...] = ()
    note: str | None = None
    instance: str | None = None
    order: str | None = None  # "in ascending pool_id order", or a sequence as it is
    implicit: str | None = None
    # for a take whose statement changes a unique key's column: why it is FOR UPDATE, in words
    changes_key: str | None = None
    backend: str | None = None
    held: str = "never"  # never | always | later | maybe: the lock was already held
    held_words: str | None = None
    upgrade_from: str | None = None
    claimed: bool = False  # the rows an earlier take of the path claimed, and no others
    inserted: bool = False  # a row the transaction inserted: no other one sees it yet
    connection: str | None = None  # another connection of the worker the take runs on
    label: str | None = None
    target: Link | None = None
    target_title: str | None = None
    first_lock: Link | None = None
    first_mode: str | None = None
    tx_before: str = ""  # the words before a kind's link ("a second", "a new transaction of the")
    tx_after: str = ""  # and after it ("kind" for a kind named as in the code)
    holding: tuple[Link, ...] = ()  # for a call out, a commit that keeps locks: what is held
    held_known: bool = True
    in_transaction: bool = True  # for a run: a transaction is open where it runs
    opens_own: bool = False  # for a run: the path it runs opens transactions of its own
    code_like: bool = False  # for a call: the label is an identifier, not words
    # for a take a foreign-key check implies: the write it comes from, in words
    derived: str | None = None
    recheck: bool = False  # that check is one Postgres makes again (the row was written before)
    attempt: str | None = None  # for a try: what the code does when the lock is not free
    under: tuple[Link, str] | None = None  # for a take within a parent: (parent lock, instance)
    # for a write: what it inserts into or updates, and the foreign keys it leaves alone
    table: str | None = None
    write_how: str | None = None  # "inserts into" | "updates"
    columns: tuple[str, ...] = ()
    fk_untouched: tuple[tuple[Link, str], ...] = ()  # (parent lock, referencing column)
    # for a set take: its elements, each a take line's facts (lock, instance, mode, marks)
    elements: tuple[StepView, ...] = ()
    memory: bool = False  # a take of an in-process lock (a lockset entry): no SQL mode words


def held_mark(
    evs: list[Event], step: m.Take, in_loop: bool, elsewhere: Callable[[int], bool] | None = None
) -> str:
    """never | always | later | maybe, from what the analysis saw at the take. An acquisition
    of an instance held as a "maybe" (a loop that may run zero times took it) counts as held
    when the declarations say the take is a re-take (`again: true`). `elsewhere(line)` says a
    hold taken at that line was taken on another backend only (a Postgres advisory lock is no
    hold of the SQLite lockset entry that stands for it)."""
    held = first = 0
    for e in evs:
        if e.kind not in ("acquire", "retake", "upgrade"):
            continue
        mine = [
            h
            for h in e.held
            if h.lock == e.lock and not (elsewhere is not None and elsewhere(h.acquired_at))
        ]
        if elsewhere is not None and e.kind == "retake" and not mine:
            first += 1
            continue
        again = step.again and any(h.instance == e.instance for h in mine)
        if e.kind == "retake" or again:
            held += 1
        elif e.kind == "acquire":
            first += 1
    if not held:
        return "never"
    if not first:
        return "always"
    return "later" if in_loop else "maybe"


def next_marker(marker: str) -> str:
    """The marker after '3.': '4.'."""
    return f"{int(marker.rstrip('.')) + 1}."


def memory_backend(lock: m.Lock | None) -> str | None:
    """The backend on which a lock lives in memory (the one a release is about), if one."""
    if lock is None:
        return None
    names = [b.name for b in lock.backends if b.kind == "memory"]
    return names[0] if len(names) == 1 and len(lock.backends) > 1 else None


def ends_open(
    steps: tuple[m.Step, ...],
    open_tx: bool,
    at_run: Callable[[m.Run, bool], bool] | None = None,
) -> bool:
    """Whether a transaction is open after these steps (structurally; branches: any).
    `at_run` sees each run: step with whether a transaction is open there, and says whether
    one is open after it (by default the run changes nothing)."""
    for s in steps:
        match s:
            case m.Begin():
                open_tx = True
            case m.End():
                open_tx = s.how == "leave_open"
            case m.Loop():
                open_tx = ends_open(s.steps, open_tx, at_run)
            case m.Branches():
                after = [ends_open(alt, open_tx, at_run) for _, alt in s.alternatives]
                open_tx = any(after) if after else open_tx
            case m.Run():
                if at_run is not None:
                    open_tx = at_run(s, open_tx)
            case m.Leaf():
                pass
            case _:
                assert_never(s)
    return open_tx
