"""The resolved model: frozen, typed objects with every reference checked.

Built once by `project.build.build_model` from validated documents; the analysis, the rules
and the renderers only read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from lockdocs.diagnostics import Location

# --- locks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyText:
    """hashtextextended / hashtext input: a fixed text, or a prefix and runtime parts."""

    text: str | None = None
    prefix: str | None = None
    parts: tuple[str, ...] = ()
    separator: str = ""
    seed: int = 0
    cardinality: int | None = None

    @property
    def fixed(self) -> bool:
        return self.text is not None and not self.parts


@dataclass(frozen=True)
class IntegerPart:
    """A raw integer used as (part of) a key as it is: an oid, a serial id."""

    of: str
    bits: int = 64


@dataclass(frozen=True)
class Key:
    """How an advisory key is built; `value` is the exact bigint when it is computable."""

    # hashtextextended | hashtext | constant | integer | int4pair | application
    construction: str
    text: KeyText | None = None
    integer: IntegerPart | None = None  # integer keys
    constant_value: int | None = None
    constant_bytes: str | None = None
    constant_name: str | None = None
    function: str | None = None  # application keys
    algorithm: str | None = None
    declared_bits: int | None = None
    multiplier: int | None = None
    signed: bool | None = None
    first: KeyText | IntegerPart | int | None = None
    second: KeyText | IntegerPart | int | None = None
    # Derived: the bigint (or for int4pair, None) and the Postgres lock tag when fixed.
    value: int | None = None
    pair: tuple[int, int] | None = None
    tag: tuple[int, int, int] | None = None

    @property
    def fixed(self) -> bool:
        return self.tag is not None

    @property
    def space(self) -> str:
        return "int4 pair" if self.construction == "int4pair" else "bigint"

    @property
    def bits(self) -> int:
        """Bits of entropy a family of this key spreads over."""
        if self.construction == "hashtext":
            return 32
        if self.construction == "integer" and self.integer is not None:
            return self.integer.bits
        if self.construction == "application":
            width = {"crc32": 32, "fnv-1a 32": 32}.get(self.algorithm or "", 64)
            return min(self.declared_bits or 64, width)
        return 64


@dataclass(frozen=True)
class Backend:
    name: str
    kind: str
    table: str | None = None
    mode: str | None = None
    how: str | None = None
    isolation: str | None = None
    scope: str | None = None  # derived: the lock's scope on this backend


@dataclass(frozen=True)
class Taker:
    name: str
    kind: str | None = None
    mode: str | None = None
    via: tuple[str, ...] = ()
    called_by: tuple[str, ...] = ()
    module: str | None = None
    note: str | None = None
    location: Location | None = None


@dataclass(frozen=True)
class Reference:
    """A foreign key into the lock's table: rows of `table` point at it through `column`.
    Inserting such a row, or updating the column, takes FOR KEY SHARE on the parent row."""

    table: str
    column: str | None = None  # None: not declared (an update is taken to set it)


@dataclass(frozen=True)
class Lock:
    id: str
    title: str
    kind: str  # advisory | row | table | memory
    scope: str  # transaction | session | process (memory locks only)
    location: Location
    key: Key | None = None
    table: str | None = None
    row: str | None = None
    modes: tuple[tuple[str, str], ...] = ()
    mode_text: str | None = None
    options: tuple[str, ...] = ()
    queue: bool = False
    referenced_by_foreign_keys: bool = False
    references: tuple[Reference, ...] = ()
    singleton: bool = False
    instance_order: str | None = None
    # instances: {within: P}: every instance belongs to one instance of lock P (a job to a run).
    within: str | None = None
    # The key names an object of the whole cluster (a role), not of one database.
    cluster_wide: bool = False
    backends: tuple[Backend, ...] = ()
    takers: tuple[Taker, ...] = ()
    serializes: str | None = None
    notes: str | None = None
    issues: tuple[int, ...] = ()

    @cached_property
    def mode_names(self) -> tuple[str, ...]:
        return tuple(m for m, _ in self.modes)

    @property
    def default_mode(self) -> str | None:
        """The mode a step means when it names none: the lock's only declared mode."""
        if len(self.modes) == 1:
            return self.modes[0][0]
        return None

    def on(self, backend: str | None) -> tuple[str, str]:
        """The lock's (kind, scope) on a backend."""
        for b in self.backends:
            if b.name == backend:
                return b.kind, b.scope or self.scope
        return self.kind, self.scope


@dataclass(frozen=True)
class TransactionKind:
    id: str
    location: Location
    title: str | None = None
    opened_by: str | None = None
    first_lock: str | None = None
    first_mode: str | None = None
    isolation: str | None = None
    lock_timeout: str | None = None  # None: no bound ("none")
    on_timeout: str | None = None
    notes: str | None = None
    database: str | None = None  # None: the one default database


# --- paths -------------------------------------------------------------------------------------

# How a take can avoid waiting: NOWAIT fails at once (55P03), SKIP LOCKED skips the row, and a
# try (pg_try_advisory_*, an error the code handles, an in-process check) returns "not free".
NEVER_WAITS = ("nowait", "skip locked", "try")


@dataclass(frozen=True)
class Take:
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

    @property
    def how_it_avoids_waiting(self) -> str | None:
        """nowait | skip locked | try, or None for a take that waits."""
        return self.option or ("try" if self.attempt is not None else None)


@dataclass(frozen=True)
class Loop:
    label: str
    location: Location
    steps: tuple[Step, ...]
    order: str | None = None
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class Branches:
    alternatives: tuple[tuple[str, tuple[Step, ...]], ...]
    location: Location
    note: str | None = None
    backend: str | None = None
    # A set take (`set: [a, b]`): the takes of one statement, in no order the code controls.
    # The alternatives are then every order of them, which is all the analysis looks at; the
    # page and the other views show the statement as one step.
    statement: tuple[Take, ...] = ()


@dataclass(frozen=True)
class Run:
    path: str
    location: Location
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class Call:
    name: str
    location: Location
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class External:
    name: str
    location: Location
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class Write:
    what: str
    location: Location
    via: tuple[str, ...] = ()
    note: str | None = None
    backend: str | None = None
    insert: str | None = None  # the table it inserts into
    update: str | None = None  # the table it updates
    columns: tuple[str, ...] = ()  # with update: the columns it sets
    instance: str | None = None  # the parent row it references, by instance name


@dataclass(frozen=True)
class Begin:
    transaction: str
    location: Location
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class End:
    """commit, rollback or leave_open."""

    how: str  # commit | rollback | leave_open
    location: Location
    note: str | None = None
    backend: str | None = None


@dataclass(frozen=True)
class Release:
    lock: str
    location: Location
    via: tuple[str, ...] = ()
    note: str | None = None
    backend: str | None = None


Step = Take | Loop | Branches | Run | Call | External | Write | Begin | End | Release


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Group:
    title: str
    file: str
    order: int
    paths: tuple[str, ...]
    intro: str | None = None
    transaction: str | None = None


# --- rules, exceptions, page ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    location: Location
    check: str | None  # first | before | sorted | scope | order | lock_before_write | None
    params: tuple[tuple[str, object], ...] = ()
    text: str | None = None
    issues: tuple[int, ...] = ()

    def param(self, name: str) -> object:
        return dict(self.params).get(name)


@dataclass(frozen=True)
class Waiver:
    """An exception in the declarations (named Waiver to keep clear of Python's Exception)."""

    index: int
    rule: str
    why: str
    location: Location
    path: str | None = None
    lock: str | None = None
    issue: int | None = None
    title: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class Difference:
    title: str
    why: str
    issue: int | None = None
    paths: tuple[str, ...] = ()
    locks: tuple[str, ...] = ()


@dataclass(frozen=True)
class Planned:
    issue: int
    title: str
    affects: tuple[str, ...] = ()


@dataclass(frozen=True)
class Page:
    title: str
    audience: str | None = None
    summary: str | None = None
    intro: str | None = None
    output: str = "database-locks.md"
    key_intro: str | None = None
    order_intro: str | None = None


@dataclass(frozen=True)
class CodeGlob:
    """One `code:` pattern: where the project's SQL lives, relative to locks.yaml."""

    pattern: str
    location: Location


@dataclass(frozen=True)
class Limits:
    """Bounds on the analysis's work (locks.yaml `limits:`)."""

    path_work: int = 250_000
    cycle_search: int = 200_000


@dataclass(frozen=True)
class Model:
    root: str
    page: Page
    locks: dict[str, Lock]
    transactions: dict[str, TransactionKind]
    paths: dict[str, Path]
    groups: tuple[Group, ...]
    rules: dict[str, Rule]
    waivers: tuple[Waiver, ...]
    planned: tuple[Planned, ...]
    differences: tuple[Difference, ...] = ()
    issue_url: str | None = None
    checks: dict[str, str] = field(default_factory=dict)
    rules_url: str | None = None  # the rules reference page, for links per rule (SARIF)
    files: tuple[str, ...] = ()
    code: tuple[CodeGlob, ...] = ()
    # Server processes per backend (None: every backend); 1 unless locks.yaml says replicas:.
    replicas: tuple[tuple[str | None, int], ...] = ()
    limits: Limits = field(default_factory=Limits)

    def replicas_on(self, backend: str | None) -> int:
        found = dict(self.replicas)
        return found.get(backend, found.get(None, 1))

    def issue_link(self, number: int) -> str | None:
        if not self.issue_url:
            return None
        return self.issue_url.replace("{number}", str(number))
