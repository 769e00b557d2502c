"""Declared locks -> the SQL that takes them on a server, with the real keys.

A `Target` is one concrete lock: an advisory key (the expression the application would write,
so the server computes the hash itself), a row of a table named after the declared one, or a
whole table. Memory locks live in the application, where Postgres cannot see them; a replay
models one as a session advisory lock in a reserved two-int4 namespace and says so.

Nothing a declaration holds is escaped into SQL. A key text is written into a statement only
when it is plain (printable ASCII with no quote, backslash, brace or dollar): a literal the
server reads the same under every setting (`standard_conforming_strings`, `backslash_quote`,
any client encoding), which a server log then shows as the application's would, so `explain`
reads a replay's log. Any other text is a bound parameter (`$1`: `Target.params`, sent apart
from the statement). Numbers are ints checked to fit their type, in decimal; names are quoted
identifiers. `inline` writes a statement with its parameters in place for a reader or an
isolation spec (which has no parameters), in hex digits.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from pglast import ast
from pglast.keywords import RESERVED_KEYWORDS, TYPE_FUNC_NAME_KEYWORDS

from lockdocs import keys, pgparse
from lockdocs import model as m

# The two-int4 namespace of stand-ins: memory locks and keys lockdocs cannot compute.
STAND_IN_NAMESPACE = "lockdocs stand-in"
FOREIGN_KEY_CHILD = "__lockdocs_fk"  # suffix of the child table a FOR KEY SHARE take inserts into
# Postgres truncates a longer identifier, so two long names could meet.
NAMEDATALEN = 63
BIGINT = (-(1 << 63), (1 << 63) - 1)
INTEGER = (-(1 << 31), (1 << 31) - 1)

_ADVISORY_FUNCTIONS = {
    # (scope, mode) -> the blocking function, its pg_try_ twin, and the unlock function
    ("transaction", "exclusive"): "pg_advisory_xact_lock",
    ("transaction", "shared"): "pg_advisory_xact_lock_shared",
    ("session", "exclusive"): "pg_advisory_lock",
    ("session", "shared"): "pg_advisory_lock_shared",
}


TEXT = 25  # the type a bound key text is sent as
_PLACEHOLDER = re.compile(r"\$([0-9]+)")


def plain(text: str) -> bool:
    """Can `text` be a literal that every setting reads alike? Printable ASCII only, and no
    quote or backslash (which `standard_conforming_strings` would change), no brace (which
    ends an isolation spec's SQL block) and no dollar (which could end a dollar-quoted body)."""
    return all(" " <= c <= "~" and c not in "'\\{}$" for c in text)


@dataclass(frozen=True)
class Param:
    """One bound parameter: a key text that is not `plain`."""

    value: str
    oid: int = TEXT  # the type libpq sends with it

    def inline(self) -> str:
        """The text as SQL that reads the same whatever the session's settings, in hex digits:
        for a DO block's body (which takes no parameters), a spec, a reader."""
        return f"convert_from(decode('{self.value.encode().hex()}', 'hex'), 'UTF8')"


def params_for(sql: str, t: Target | None) -> tuple[Param, ...]:
    """The parameters statement `sql` (built here from target `t`) is sent with: as many of
    the target's as it has placeholders (a DO block has none: its body cannot take any)."""
    used = max((int(x) for x in _PLACEHOLDER.findall(sql)), default=0)
    if t is None or used == 0:
        return ()
    return t.params[:used]


def inline(sql: str, params: tuple[Param, ...]) -> str:
    """`sql` (built here, so a `$n` in it is always a placeholder) with its parameters in
    place, for a DO block, a reader or an isolation spec."""
    if not params:
        return sql
    return _PLACEHOLDER.sub(lambda mt: params[int(mt.group(1)) - 1].inline(), sql)


def quote_ident(name: str) -> str:
    plain = name and (name[0].isascii() and (name[0].isalpha() or name[0] == "_"))
    plain = plain and all(c.isascii() and (c.isalnum() or c == "_") for c in name)
    if plain and name == name.lower() and name not in RESERVED_KEYWORDS | TYPE_FUNC_NAME_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _fit(name: str, room: int = NAMEDATALEN) -> str:
    """`name`, or when it is longer than Postgres keeps (in bytes), its start and a digest of
    the whole, so two long names never become one."""
    if len(name.encode()) <= room:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    head = name
    while len(head.encode()) > room - 13:
        head = head[:-1]
    return f"{head}_{digest}"


def _plain(name: str) -> str:
    """A name of lowercase letters, digits and underscores only (a spec's tables, which must
    hold no brace, quote or newline): other characters become `_`, with a digest of the
    original so two names never meet."""
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name.lower())
    if out != name:
        out += "_" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return out


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
    every table moves into that one schema as <schema>_<table>, in plain characters (an
    isolation spec cannot hold a brace or a newline in a name). A name longer than Postgres
    keeps is shortened with a digest of the whole, leaving room for the child table's suffix."""
    t = _declared_table(declared, lock_id)
    if into:
        return Table(
            into, _fit(_plain(f"{t.schema}_{t.name}"), NAMEDATALEN - len(FOREIGN_KEY_CHILD))
        )
    return Table(_fit(t.schema), _fit(t.name, NAMEDATALEN - len(FOREIGN_KEY_CHILD)))


# Every clause a SELECT can have besides FROM: a declared table is a name and nothing else.
_CLAUSES = (
    *("distinctClause", "intoClause", "targetList", "whereClause", "groupClause"),
    *("havingClause", "windowClause", "valuesLists", "sortClause", "limitOffset"),
    *("limitCount", "lockingClause", "withClause", "larg", "rarg"),
)


def _declared_table(declared: str | None, lock_id: str) -> Table:
    """The table, when `declared` is a table name and nothing else: `select from <it>` has
    one plain relation and no other clause (no WHERE, join or alias)."""
    if declared:
        try:
            stmts = pgparse.parse(f"select from {declared}")
        except pgparse.ParseError:
            stmts = ()
        select = stmts[0].stmt if len(stmts) == 1 else None
        if isinstance(select, ast.SelectStmt) and select.fromClause:
            rv = select.fromClause[0]
            ok = len(select.fromClause) == 1 and isinstance(rv, ast.RangeVar) and not rv.alias
            ok = ok and not any(getattr(select, k, None) for k in _CLAUSES)
            if ok and isinstance(rv, ast.RangeVar) and rv.relname:
                return Table(rv.schemaname or "public", rv.relname)
    return Table("lockdocs", lock_id.replace("-", "_"))


@dataclass(frozen=True)
class Target:
    """One concrete lock on the server."""

    lock: str
    kind: str  # advisory | row | table | memory
    instance: int  # 1, 2, ...: which row or which key of a family; 1 for a single one
    key_args: str = ""  # advisory/memory: the argument list of pg_advisory_*(...), with $n
    table: Table | None = None  # row/table
    stand_in: str = ""  # why the server sees something other than the application's lock
    params: tuple[Param, ...] = ()  # the values of key_args' placeholders

    @property
    def label(self) -> str:
        return f"{self.lock}#{self.instance}"


class _Args:
    """An argument list being built: a plain text is a literal, any other the next
    placeholder; a number (an int, checked by the caller) is written in decimal."""

    def __init__(self) -> None:
        self.params: list[Param] = []

    def text(self, value: str) -> str:
        if plain(value):
            return "'" + value + "'"
        self.params.append(Param(value))
        return f"${len(self.params)}"

    @staticmethod
    def number(value: int) -> str:
        assert type(value) is int
        return str(value)


def _storable(text: str) -> bool:
    """Can the server hold this text? Not with a NUL, and not with a lone surrogate (which no
    encoding writes)."""
    if "\x00" in text:
        return False
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _in(value: object, bounds: tuple[int, int]) -> bool:
    return type(value) is int and bounds[0] <= value <= bounds[1]


def _sample_text(kt: m.KeyText, instance: int) -> str:
    if kt.fixed:
        return kt.text or ""
    values = [str(instance)] * max(1, len(kt.parts))
    return (kt.prefix or "") + kt.separator.join(values)


def _text_call(fn: str, kt: m.KeyText, instance: int, args: _Args) -> str | None:
    text = _sample_text(kt, instance)
    if not _storable(text) or (fn == "hashtextextended" and not _in(kt.seed, BIGINT)):
        return None
    if fn == "hashtextextended":
        return f"hashtextextended({args.text(text)}, {args.number(kt.seed)})"
    return f"hashtext({args.text(text)})"


def _stand_in(lock_id: str, instance: int) -> tuple[str, tuple[Param, ...]]:
    args = _Args()
    sql = (
        f"hashtext({args.text(STAND_IN_NAMESPACE)}), hashtext({args.text(f'{lock_id}#{instance}')})"
    )
    return sql, tuple(args.params)


def _computed(lock: m.Lock, instance: int) -> tuple[str, tuple[Param, ...]] | None:
    """The key's argument list as the application computes it, or None when it cannot be
    written (no key, an application hash lockdocs does not compute, a value out of range)."""
    key = lock.key
    if key is None:
        return None
    args = _Args()
    sql: str | None = None
    if key.construction in ("hashtextextended", "hashtext") and key.text is not None:
        sql = _text_call(key.construction, key.text, instance, args)
    elif key.construction == "constant" and _in(key.value, BIGINT):
        sql = args.number(key.value)  # type: ignore[arg-type]
    elif key.construction == "int4pair":
        halves: list[str | None] = []
        for part in (key.first, key.second):
            if isinstance(part, m.IntegerPart):
                halves.append(args.number(instance))
            elif isinstance(part, m.KeyText):
                halves.append(_text_call("hashtext", part, instance, args))
            elif _in(part, INTEGER):
                halves.append(args.number(part))  # type: ignore[arg-type]
            else:
                halves.append(None)
        if all(h is not None for h in halves):
            sql = ", ".join(h for h in halves if h is not None)
    elif key.construction == "integer":
        sql = args.number(instance)
    elif key.construction == "application" and key.text is not None:
        text = _sample_text(key.text, instance)
        if key.algorithm in keys.APPLICATION_HASHES and _storable(text):
            value = keys.application_value(
                key.algorithm, text, key.multiplier, key.declared_bits, key.signed
            )
            if _in(value, BIGINT):
                sql = args.number(value)  # type: ignore[arg-type]
    return (sql, tuple(args.params)) if sql is not None else None


def advisory_args(lock: m.Lock, instance: int) -> tuple[str, tuple[Param, ...], str]:
    """(argument list with $n placeholders, their values, stand-in note): the key as the
    application computes it, or a stand-in key that says why not."""
    found = _computed(lock, instance)
    if found is not None:
        return found[0], found[1], ""
    sql, params = _stand_in(lock.id, instance)
    key = lock.key
    if key is None:
        why = "the lock declares no key"
    elif key.construction == "application" and key.algorithm not in keys.APPLICATION_HASHES:
        why = f"the application's key function {key.function or '?'} is not one lockdocs computes"
    else:
        why = "the key cannot be computed"
    return sql, params, why


def target(lock: m.Lock, kind: str, instance: int, schema: str | None = None) -> Target:
    """Lock `lock` (of `kind` on the replayed backend), instance `instance`; tables in their
    declared schema, or all in `schema`."""
    if kind == "table" and not lock.singleton:
        # one table per instance (the same table in per-tenant schemas): a schema each
        t = table_of(lock.table, lock.id, schema)
        return Target(lock.id, kind, instance, table=Table(f"{t.schema}_{instance}", t.name))
    if kind in ("row", "table"):
        return Target(lock.id, kind, instance, table=table_of(lock.table, lock.id, schema))
    if kind == "memory":
        sql, params = _stand_in(lock.id, instance)
        return Target(
            lock.id,
            kind,
            instance,
            key_args=sql,
            stand_in="a memory lock lives in the application; the server holds a session "
            "advisory lock in its place",
            params=params,
        )
    args, params, note = advisory_args(lock, instance)
    return Target(lock.id, kind, instance, key_args=args, stand_in=note, params=params)


def take_sql(t: Target, mode: str, scope: str = "transaction", option: str | None = None) -> str:
    """The statement that takes `t` in `mode` (and waits, unless `option` says otherwise), with
    the target's parameters as $n (send it with `params_for`).
    A `try` gives up as the declared code does when the lock is not free: the advisory form
    raises lock_not_available (55P03, as NOWAIT does) when pg_try_* returns false, and a row or
    table is taken NOWAIT. That form is a DO block, whose body can take no parameters: a key
    text that is not plain is written into it by `inline`, in hex digits."""
    if t.kind in ("advisory", "memory"):
        scope = "session" if t.kind == "memory" else scope
        fn = _ADVISORY_FUNCTIONS[(scope, mode)]
        tried = f"{fn.replace('pg_', 'pg_try_', 1)}({t.key_args})"
        if option == "try":
            return (
                f"do $$ begin if not {inline(tried, t.params)} then raise exception "
                "'the lock is not free' using errcode = 'lock_not_available'; end if; end $$"
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
