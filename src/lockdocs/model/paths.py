"""The paths of the model: each kind of step (takes, loops, branches and sets, runs, calls,
writes, transaction ends, releases), the `Step` union of them (its leaves, the kinds with no
steps inside, share the `Leaf` base), paths and their groups.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from lockdocs.diagnostics import Location
from lockdocs.records import record

# How a take can avoid waiting: NOWAIT fails at once (55P03), SKIP LOCKED skips the row, and a
# try (pg_try_advisory_*, an error the code handles, an in-process check) returns "not free".
NEVER_WAITS = ("nowait", "skip locked", "try")


class Leaf:
    """A step with no steps inside it: every kind but Loop, Branches and Run. A walk that only
    goes down into nested steps passes every leaf with one `case m.Leaf():`, so a new leaf kind
    needs no change there, while a new nesting kind still fails mypy at its `assert_never`."""


@record
class Take(Leaf):
    lock: str
    mode: str
    location: Location
    via: tuple[str, ...] = ()
    note: str | None = None
    instance: str | None = None
    again: bool = False
    order: str | None = None
    option: str | None = None
    implicit: str | None = None
    changes_key: bool = False
    backend: str | None = None
    # A take the declarations imply (a foreign-key check): what it is derived from.
    derived: str | None = None
    # try: a take that never waits; what the code does when the lock is not free.
    attempt: str | None = None
    # For a lock `within:` a parent: the parent instance (its instance: name) this one is under.
    under: str | None = None
    # A foreign-key re-check the declarations imply only when an earlier write of the same
    # transaction inserted into or updated this table (Postgres re-checks a row version the
    # transaction created itself): the child table. None: the take always happens.
    recheck: str | None = None
    # claimed: the rows an earlier take of the path locked (UPDATE ... FROM (SELECT ... FOR
    # UPDATE SKIP LOCKED)): every instance of the lock it holds, re-taken; never another one.
    claimed: bool = False
    # inserted: a row this transaction inserted itself, with a key no other transaction can
    # insert: invisible to the others until the commit, so it never waits and nobody waits
    # for it.
    inserted: bool = False
    # connection: the worker runs this take on another connection of its own (a second pool
    # connection), in a transaction of that connection's; None: the path's own connection.
    connection: str | None = None

    @property
    def is_recheck(self) -> bool:
        """A foreign-key check Postgres makes again on a row version this transaction already
        wrote (conditional, or declared with `rewrites: true`: its derived words say so)."""
        return self.recheck is not None or (self.derived or "").startswith("re-check")

    @property
    def how_it_avoids_waiting(self) -> str | None:
        """nowait | skip locked | try, or None for a take that waits."""
        return self.option or ("try" if self.attempt is not None else None)


@record
class Loop:
    label: str
    location: Location
    steps: tuple[Step, ...]
    order: str | None = None
    note: str | None = None
    backend: str | None = None


@record
class Branches:
    alternatives: tuple[tuple[str, tuple[Step, ...]], ...]
    location: Location
    note: str | None = None
    backend: str | None = None
    # A set take (`set: [a, b]`): the takes of one statement, in no order the code controls.
    # The alternatives are then every order of them, which is all the analysis looks at; the
    # page and the other views show the statement as one step.
    statement: tuple[Take, ...] = ()


@record
class Run:
    path: str
    location: Location
    note: str | None = None
    backend: str | None = None


@record
class Call(Leaf):
    name: str
    location: Location
    note: str | None = None
    backend: str | None = None


@record
class External(Leaf):
    name: str
    location: Location
    note: str | None = None
    backend: str | None = None


@record
class Write(Leaf):
    what: str
    location: Location
    via: tuple[str, ...] = ()
    note: str | None = None
    backend: str | None = None
    insert: str | None = None  # the table it inserts into
    update: str | None = None  # the table it updates
    columns: tuple[str, ...] = ()  # with update: the columns it sets
    instance: str | None = None  # the parent row it references, by instance name
    # With update: does it write a row version this transaction already created or updated
    # (so Postgres re-checks every foreign key of the row)? None: when an earlier write of the
    # transaction inserted into or updated the same table.
    rewrites: bool | None = None


@record
class Begin(Leaf):
    transaction: str
    location: Location
    note: str | None = None
    backend: str | None = None


@record
class End(Leaf):
    """commit, rollback or leave_open."""

    how: str  # commit | rollback | leave_open
    location: Location
    note: str | None = None
    backend: str | None = None
    connection: str | None = None  # the other connection whose transaction ends (Take.connection)


@record
class Release(Leaf):
    lock: str
    location: Location
    via: tuple[str, ...] = ()
    note: str | None = None
    backend: str | None = None


Step = Take | Loop | Branches | Run | Call | External | Write | Begin | End | Release


def walk_steps(steps: Iterable[Step]) -> Iterator[Step]:
    """Every step, nested ones included, in document order (not into run: targets)."""
    for s in steps:
        yield s
        if isinstance(s, Loop):
            yield from walk_steps(s.steps)
        elif isinstance(s, Branches) and s.statement:
            yield from s.statement  # a set take: each element once, not once per order
        elif isinstance(s, Branches):
            for _, alt in s.alternatives:
                yield from walk_steps(alt)


@record
class Path:
    id: str
    title: str
    group: str
    file: str
    location: Location
    steps: tuple[Step, ...]
    entry: tuple[str, ...] = ()
    transaction: str | None = None
    standalone: bool = True
    summary: str | None = None
    notes: str | None = None
    issues: tuple[int, ...] = ()


@record
class Group:
    title: str
    file: str
    order: int
    paths: tuple[str, ...]
    intro: str | None = None
    transaction: str | None = None
