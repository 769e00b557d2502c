"""Declared locks -> the SQL that takes them on a server, with the real keys.

A `Target` is one concrete lock: an advisory key (the expression the application would write,
so the server computes the hash itself), a row of a table named after the declared one, or a
whole table. Memory locks live in the application, where Postgres cannot see them; a replay
models one as a session advisory lock in a reserved two-int4 namespace and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from pglast import ast
from pglast.keywords import RESERVED_KEYWORDS, TYPE_FUNC_NAME_KEYWORDS

from lockdocs import keys, pgparse
from lockdocs import model as m

# The two-int4 namespace of stand-ins: memory locks and keys lockdocs cannot compute.
STAND_IN_NAMESPACE = "lockdocs stand-in"
FOREIGN_KEY_CHILD = "__lockdocs_fk"  # suffix of the child table a FOR KEY SHARE take inserts into

_ADVISORY_FUNCTIONS = {
    # (scope, mode) -> the blocking function, its pg_try_ twin, and the unlock function
    ("transaction", "exclusive"): "pg_advisory_xact_lock",
    ("transaction", "shared"): "pg_advisory_xact_lock_shared",
    ("session", "exclusive"): "pg_advisory_lock",
    ("session", "shared"): "pg_advisory_lock_shared",
}


def literal(text: str) -> str:
    """A SQL string literal (standard_conforming_strings is on since PostgreSQL 9.1)."""
    return "'" + text.replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    plain = name and (name[0].isascii() and (name[0].isalpha() or name[0] == "_"))
    plain = plain and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    if plain and name == name.lower() and name not in RESERVED_KEYWORDS | TYPE_FUNC_NAME_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Table:
    schema: str
    name: str

    @property
    def sql(self) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(self.name)}"

    @property
    def child(self) -> Table:
        return Table(self.schema, self.name + FOREIGN_KEY_CHILD)

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"


def table_of(declared: str | None, lock_id: str, into: str | None = None) -> Table:
    """The declared table as (schema, name), parsed by PostgreSQL's own grammar (pglast); a
    name that is not a plain qualified name gets a stand-in named after the lock. With `into`,
    every table moves into that one schema as <schema>_<table>."""
    t = _declared_table(declared, lock_id)
    return Table(into, f"{t.schema}_{t.name}") if into else t


def _declared_table(declared: str | None, lock_id: str) -> Table:
    if declared:
        try:
            stmts = pgparse.parse(f"select from {declared}")
        except pgparse.ParseError:
            stmts = ()
        select = stmts[0].stmt if len(stmts) == 1 else None
        if isinstance(select, ast.SelectStmt) and select.fromClause:
            rv = select.fromClause[0]
            ok = len(select.fromClause) == 1 and isinstance(rv, ast.RangeVar) and not rv.alias
            if ok and isinstance(rv, ast.RangeVar) and rv.relname:
                return Table(rv.schemaname or "public", rv.relname)
    return Table("lockdocs", lock_id.replace("-", "_"))


@dataclass(frozen=True)
class Target:
    """One concrete lock on the server."""

    lock: str
    kind: str  # advisory | row | table | memory
    instance: int  # 1, 2, ...: which row or which key of a family; 1 for a single one
    key_args: str = ""  # advisory/memory: the argument list of pg_advisory_*(...)
    table: Table | None = None  # row/table
    stand_in: str = ""  # why the server sees something other than the application's lock

    @property
    def label(self) -> str:
        return f"{self.lock}#{self.instance}"


def _sample_text(kt: m.KeyText, instance: int) -> str:
    if kt.fixed:
        return kt.text or ""
    values = [str(instance)] * max(1, len(kt.parts))
    return (kt.prefix or "") + kt.separator.join(values)


def _text_call(fn: str, kt: m.KeyText, instance: int) -> str:
    text = literal(_sample_text(kt, instance))
    if fn == "hashtextextended":
        return f"hashtextextended({text}, {kt.seed})"
    return f"hashtext({text})"


def _stand_in(lock_id: str, instance: int) -> str:
    return f"hashtext({literal(STAND_IN_NAMESPACE)}), hashtext({literal(f'{lock_id}#{instance}')})"


def advisory_args(lock: m.Lock, instance: int) -> tuple[str, str]:
    """(argument list, stand-in note): the key as the application computes it."""
    key = lock.key
    if key is None:
        return _stand_in(lock.id, instance), "the lock declares no key"
    if key.construction in ("hashtextextended", "hashtext") and key.text is not None:
        return _text_call(key.construction, key.text, instance), ""
    if key.construction == "constant" and key.value is not None:
        return str(key.value), ""
    if key.construction == "int4pair":
        halves = []
        for part in (key.first, key.second):
            if isinstance(part, int):
                halves.append(str(part))
            elif isinstance(part, m.IntegerPart):
                halves.append(str(instance))
            elif part is not None:
                halves.append(_text_call("hashtext", part, instance))
        if len(halves) == 2:
            return ", ".join(halves), ""
    if key.construction == "integer":
        return str(instance), ""
    if key.construction == "application" and key.text is not None:
        if key.algorithm in keys.APPLICATION_HASHES:
            value = keys.application_value(
                key.algorithm,
                _sample_text(key.text, instance),
                key.multiplier,
                key.declared_bits,
                key.signed,
            )
            if value is not None:
                return str(value), ""
        return _stand_in(lock.id, instance), (
            f"the application's key function {key.function or '?'} is not one lockdocs computes"
        )
    return _stand_in(lock.id, instance), "the key cannot be computed"


def target(lock: m.Lock, kind: str, instance: int, schema: str | None = None) -> Target:
    """Lock `lock` (of `kind` on the replayed backend), instance `instance`; tables in their
    declared schema, or all in `schema`."""
    if kind in ("row", "table"):
        return Target(lock.id, kind, instance, table=table_of(lock.table, lock.id, schema))
    if kind == "memory":
        return Target(
            lock.id,
            kind,
            instance,
            key_args=_stand_in(lock.id, instance),
            stand_in="a memory lock lives in the application; the server holds a session "
            "advisory lock in its place",
        )
    args, note = advisory_args(lock, instance)
    return Target(lock.id, kind, instance, key_args=args, stand_in=note)


def take_sql(t: Target, mode: str, scope: str = "transaction", option: str | None = None) -> str:
    """The statement that takes `t` in `mode` (and waits, unless `option` says otherwise).
    A `try` gives up as the declared code does when the lock is not free: the advisory form
    raises lock_not_available (55P03, as NOWAIT does) when pg_try_* returns false, and a row or
    table is taken NOWAIT."""
    if t.kind in ("advisory", "memory"):
        scope = "session" if t.kind == "memory" else scope
        fn = _ADVISORY_FUNCTIONS[(scope, mode)]
        tried = f"{fn.replace('pg_', 'pg_try_', 1)}({t.key_args})"
        if option == "try":
            return (
                f"do $$ begin if not {tried} then raise exception 'the lock is not free' "
                "using errcode = 'lock_not_available'; end if; end $$"
            )
        if option in ("nowait", "skip locked"):
            return f"select {tried}"
        return f"select {fn}({t.key_args})"
    assert t.table is not None
    if option == "try":
        option = "nowait"
    if t.kind == "table":
        nowait = " nowait" if option == "nowait" else ""
        return f"lock table {t.table.sql} in {mode} mode{nowait}"
    suffix = {"nowait": " nowait", "skip locked": " skip locked"}.get(option or "", "")
    return f"select id from {t.table.sql} where id = {t.instance} {mode}{suffix}"


def foreign_key_sql(t: Target) -> str:
    """FOR KEY SHARE as Postgres takes it itself: the foreign-key check of a child insert."""
    assert t.table is not None
    return f"insert into {t.table.child.sql} (parent_id) values ({t.instance})"


def release_sql(t: Target, mode: str) -> str:
    fn = "pg_advisory_unlock_shared" if mode == "shared" else "pg_advisory_unlock"
    return f"select {fn}({t.key_args})"


def setup_sql(targets: list[Target], rows: int = 2) -> list[str]:
    """Schemas and tables for the row and table targets, each row lock's table with `rows`
    rows (ids 1..rows) and a child table whose foreign key points at it."""
    out: list[str] = []
    schemas: list[str] = []
    tables: list[Table] = []
    for t in targets:
        if t.table is not None and t.table not in tables:
            tables.append(t.table)
            if t.table.schema not in schemas:
                schemas.append(t.table.schema)
    out.extend(f"create schema if not exists {quote_ident(s)}" for s in schemas)
    for tb in tables:
        top = max([rows, *(t.instance for t in targets if t.table == tb)])
        out.append(f"create table {tb.sql} (id int primary key, v int not null default 0)")
        out.append(f"insert into {tb.sql} (id) select generate_series(1, {top})")
        out.append(
            f"create table {tb.child.sql} (id serial primary key, "
            f"parent_id int not null references {tb.sql} (id))"
        )
    return out
