"""The locks of the model: advisory keys, backends, takers, the foreign keys into a row lock's
table, the locks themselves, and the transaction kinds locks.yaml declares.
"""

from __future__ import annotations

from functools import cached_property

from lockdocs.diagnostics import Location
from lockdocs.records import field, fields, record


@record
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


@record
class IntegerPart:
    """A raw integer used as (part of) a key as it is: an oid, a serial id."""

    of: str
    bits: int = 64


@record
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
    def one_lock(self) -> bool:
        """Does the key name one lock for the whole database, whether or not lockdocs can
        compute its value? A fixed text (any algorithm, a hash the application computes too), a
        constant, or a pair of fixed halves; a family with runtime parts, or a raw integer,
        names many."""
        if self.construction in ("hashtextextended", "hashtext", "application"):
            return self.text is not None and self.text.fixed
        if self.construction == "constant":
            return self.constant_value is not None or self.constant_bytes is not None
        if self.construction == "int4pair":
            return all(
                isinstance(h, int) or (isinstance(h, KeyText) and h.fixed)
                for h in (self.first, self.second)
            )
        return False

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


@record
class Backend:
    name: str
    kind: str
    table: str | None = None
    mode: str | None = None
    how: str | None = None
    scope: str | None = None  # derived: the lock's scope on this backend


@record
class Taker:
    name: str
    kind: str | None = None
    mode: str | None = None
    via: tuple[str, ...] = ()
    called_by: tuple[str, ...] = ()
    module: str | None = None
    note: str | None = None
    location: Location | None = None


@record
class Reference:
    """A foreign key into the lock's table: rows of `table` point at it through `column`.
    Inserting such a row, or updating the column, takes FOR KEY SHARE on the parent row."""

    table: str
    column: str | None = None  # None: not declared (an update is taken to set it)


# A field marked AS_DECLARED is text taken from the document as it is written: the resolver reads
# it, the export writes it and the page's view carries it (LockView.declared) by its name, so a
# new one is a field here and one in the schema (tests/test_schema.py keeps them together).
AS_DECLARED = {"as_declared": True}


def as_declared(cls: type) -> tuple[str, ...]:
    """The fields of a model class that are text as declared, in order."""
    return tuple(f.name for f in fields(cls) if f.metadata.get("as_declared"))


@record
class Lock:
    id: str
    title: str = field(metadata=AS_DECLARED)
    kind: str  # advisory | row | table | memory
    scope: str  # transaction | session | process (memory locks only)
    location: Location
    key: Key | None = None
    table: str | None = field(default=None, metadata=AS_DECLARED)
    row: str | None = field(default=None, metadata=AS_DECLARED)
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
    # The columns that name one instance (instances: {key: [...]}, or the key's parts where
    # each names a column): a take in a loop over rows is the current row's (model/columns).
    columns: tuple[str, ...] = ()
    # The key names an object of the whole cluster (a role), not of one database.
    cluster_wide: bool = False
    backends: tuple[Backend, ...] = ()
    takers: tuple[Taker, ...] = ()
    serializes: str | None = field(default=None, metadata=AS_DECLARED)
    notes: str | None = field(default=None, metadata=AS_DECLARED)
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


@record
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
    # transaction: a pooler hands out a server connection per transaction (PgBouncer's
    # pool_mode = transaction), so a session lock does not stay with the path past its end
    pooler: str | None = None
