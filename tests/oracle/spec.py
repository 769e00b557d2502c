"""The oracle's own spec language: locks, and paths as small nondeterministic programs.

Nothing here comes from lockdocs. A spec is plain frozen data, so hypothesis can build it and a
failing example prints as readable Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("advisory", "row", "memory", "table")
SHARED_EXCLUSIVE = ("shared", "exclusive")
ROW_MODES = ("for key share", "for share", "for no key update", "for update")
TABLE_MODES = (
    "access share",
    "row share",
    "row exclusive",
    "share update exclusive",
    "share",
    "share row exclusive",
    "exclusive",
    "access exclusive",
)


@dataclass(frozen=True)
class Lock:
    """A lock class. `singleton`: one lock for the whole database; otherwise one per instance."""

    name: str
    kind: str = "advisory"  # advisory | row | memory | table (a table is one lock: singleton)
    singleton: bool = False
    modes: tuple[str, ...] = ("exclusive",)
    scope: str = "transaction"  # transaction | session (memory locks are always session)
    # Each instance belongs to one instance of this other class (a job to its run): the
    # instances of this class under parent p are its own, shared with no other parent.
    within: str | None = None
    # The columns that name an instance (issue 24): its instances are the tuples of their values
    # (Spec.columns), and inside a loop over rows with those columns a take is the current
    # row's.
    key: tuple[str, ...] = ()

    @property
    def held_across_commit(self) -> bool:
        return self.kind == "memory" or self.scope == "session"


@dataclass(frozen=True)
class Take:
    """Take `lock` in `mode`.

    - `label` ('a', 'b') names one of two distinct instances the transaction works on, the same
      in every loop iteration;
    - inside a loop, an unlabelled take of the loop's `by` class is the current element; of any
      other class it is an instance chosen for the iteration (any instance: two iterations may
      get the same one), the same for every take of that class in the iteration;
    - outside a loop, an unlabelled take is the transaction's one instance of the class (chosen
      once, any instance: it may be one a loop took);
    - `again`: an instance the transaction already holds (any of them), else its one instance.
    - `claimed`: every instance of the class the transaction holds (one statement over the rows
      it claimed before), each requested again in `mode`; nothing when it holds none.
    - of a class `within` a parent: the instance is one of the parent's own, the parent being
      the instance of it taken last and still held, or the one labelled `under`; with none
      held (or the label not bound yet), any parent's, chosen at the first such take and the
      same for the transaction's later ones (the label `under` is bound to it). A labelled
      one is one row from its first take on, whatever parent is held when it is taken again.

    `option` try: a take that never waits; when the lock is not free the path gives up (the
    transaction ends, releasing what it holds), as NOWAIT's error does.
    """

    lock: str
    mode: str
    label: str | None = None
    option: str | None = None  # None | nowait | skip locked | try
    again: bool = False
    under: str | None = None  # for a class within a parent: the parent's label ('a' or 'b')
    # every instance of the class the transaction holds (the rows it claimed), each requested
    # again in `mode`, in ascending order; none when it holds none
    claimed: bool = False


@dataclass(frozen=True)
class Set:
    """One statement that takes every one of `takes` (distinct locks, or the instances a and b
    of one class), granted one at a time in an order the statement picks: any order. It waits
    where its next take conflicts, holding the ones it was granted."""

    takes: tuple[Take, ...]


@dataclass(frozen=True)
class Loop:
    """Repeat `body` once per element of a set of instances of class `by` (any subset, the
    empty one too): `sorted` visits them in ascending order, `arbitrary` in any order."""

    order: str  # sorted | arbitrary
    body: tuple[Step, ...]
    by: str | None = None  # the class whose instances are the elements
    # A loop over rows (issue 24): any subset of the rows that these columns' values make
    # (Spec.columns), visited sorted by `sort` (lexicographically, rows equal on it in any
    # order; all the columns by default) or in any order. A take of a class keyed by some of
    # these columns is the current row's instance.
    columns: tuple[str, ...] = ()
    sort: tuple[str, ...] = ()


@dataclass(frozen=True)
class Branch:
    """Exactly one alternative runs."""

    alternatives: tuple[tuple[Step, ...], ...]


@dataclass(frozen=True)
class Call:
    """Run another path inline, in this transaction."""

    path: str


@dataclass(frozen=True)
class Commit:
    """End the transaction (its transaction-scoped locks go) and go on in a new one."""


Step = Take | Set | Loop | Branch | Call | Commit


@dataclass(frozen=True)
class Path:
    name: str
    steps: tuple[Step, ...]
    standalone: bool = True  # False: only ever runs inside another path (Call)


@dataclass(frozen=True)
class Spec:
    locks: tuple[Lock, ...]
    paths: tuple[Path, ...]
    note: str = field(default="", compare=False)
    # the values of each column keyed classes and row loops use (issue 24)
    columns: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def lock(self, name: str) -> Lock:
        for lk in self.locks:
            if lk.name == name:
                return lk
        raise KeyError(name)

    def path(self, name: str) -> Path:
        for p in self.paths:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def standalone(self) -> tuple[Path, ...]:
        return tuple(p for p in self.paths if p.standalone)
