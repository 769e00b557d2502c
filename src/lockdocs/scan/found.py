"""What a scan finds, as frozen data: statements, locks, writes, key columns, waivers, warnings.

A `FileScan` depends on one file's bytes only, so it can be cached by content hash (its JSON
form round-trips exactly); what depends on other files or on the declarations (the mode of an
UPDATE, the FOR KEY SHARE of a foreign key) is resolved later, in `project`.
"""

from __future__ import annotations

from typing import Any

from lockdocs.records import field, fields, record


@record
class KeyShape:
    """How an advisory key expression is built, as far as the SQL text tells."""

    # hashtextextended | hashtext | constant | int4pair | parameter | expression
    construction: str
    literal: str | None = None  # the whole hashed text, when it is one literal
    prefix: str | None = None  # the literal before the first runtime part
    parts: int = 0  # runtime parts (parameters, columns, expressions)
    separators: tuple[str, ...] = ()  # the literal text between parts
    suffix: str | None = None  # a literal after the last part
    seed: int | None = None  # hashtextextended's seed, when a literal
    value: int | None = None  # a constant key
    function: str | None = None  # the function of an 'expression' key
    pair: tuple[KeyShape, KeyShape] | None = None  # the two int4 halves

    def to_json(self) -> dict[str, Any]:
        # 0 is kept: a seed or a constant key of 0 is not an unknown one
        out = {
            k: v
            for k, v in ((f.name, getattr(self, f.name)) for f in fields(self))
            if v not in (None, ()) and k != "pair" and (k != "parts" or v)
        }
        out["construction"] = self.construction
        if self.pair:
            out["pair"] = [self.pair[0].to_json(), self.pair[1].to_json()]
        if self.separators:
            out["separators"] = list(self.separators)
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> KeyShape:
        pair = raw.get("pair")
        return KeyShape(
            construction=raw["construction"],
            literal=raw.get("literal"),
            prefix=raw.get("prefix"),
            parts=raw.get("parts", 0),
            separators=tuple(raw.get("separators", ())),
            suffix=raw.get("suffix"),
            seed=raw.get("seed"),
            value=raw.get("value"),
            function=raw.get("function"),
            pair=(KeyShape.from_json(pair[0]), KeyShape.from_json(pair[1])) if pair else None,
        )


@record
class Site:
    """A statement that can take locks: a top-level statement, or one statement of a PL/pgSQL
    body. Waivers attach to sites; `span` is (first line, last line)."""

    line: int
    column: int
    end_line: int
    name: str | None = None
    aliases: tuple[str, ...] = ()  # every name the statement answers to (dot suffixes)
    kind: str = "statement"  # query (sqlc) | function | statement | source
    unread: bool = False  # lines of it could not be read (an `Unread` says which)


@record
class FoundLock:
    """One lock a statement takes (or, for `write`, a write whose locks depend on other
    files: an UPDATE's strength and the FOR KEY SHARE of a foreign key)."""

    site: int
    line: int
    column: int
    kind: str  # row | table | advisory | write
    mode: str = ""  # for update ... | shared / exclusive | a LOCK TABLE mode
    option: str | None = None  # nowait | skip locked
    of: tuple[str, ...] = ()  # the OF list as written
    table: str | None = None
    function: str | None = None  # the advisory function as called
    scope: str | None = None  # advisory: transaction | session
    try_: bool = False
    key: str | None = None  # the advisory key as written
    shape: KeyShape | None = None
    implicit: str | None = None  # update | delete | upsert | insert | foreign key
    columns: tuple[str, ...] = ()  # the columns an UPDATE sets or an INSERT fills
    loop: bool = False  # inside a PL/pgSQL loop

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "site": self.site,
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
        }
        for k in _OPTIONAL:
            v = getattr(self, k)
            if v not in (None, False, (), ""):
                out[k] = list(v) if isinstance(v, tuple) else v
        if self.shape is not None:
            out["shape"] = self.shape.to_json()
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> FoundLock:
        shape = raw.get("shape")
        return FoundLock(
            site=raw["site"],
            line=raw["line"],
            column=raw["column"],
            kind=raw["kind"],
            mode=raw.get("mode", ""),
            option=raw.get("option"),
            of=tuple(raw.get("of", ())),
            table=raw.get("table"),
            function=raw.get("function"),
            scope=raw.get("scope"),
            try_=raw.get("try_", False),
            key=raw.get("key"),
            shape=KeyShape.from_json(shape) if shape else None,
            implicit=raw.get("implicit"),
            columns=tuple(raw.get("columns", ())),
            loop=raw.get("loop", False),
        )


_OPTIONAL = (
    "mode",
    "option",
    "of",
    "table",
    "function",
    "scope",
    "try_",
    "key",
    "implicit",
    "columns",
    "loop",
)


@record
class SqlWaiver:
    """`-- lockdocs: ignore LD7xx reason` in the SQL (or `#` / `//` above a Python or Go
    call); `sites` are the statements it covers."""

    line: int
    column: int
    codes: tuple[str, ...]
    reason: str
    sites: tuple[int, ...]
    problem: str | None = None  # why the comment is not a valid waiver


@record
class Unread:
    """Lines the scan could not read, so the locks they take are not checked: a statement
    Postgres's parser refuses (LD709), or a PL/pgSQL body or statement lockdocs cannot follow
    (LD712). `site` is the statement (or function) they belong to; (line, column) is where
    the parser stopped; `first`..`last` are the lines not read."""

    site: int
    line: int
    column: int
    first: int
    last: int
    code: str
    reason: str  # the parser's own words


@record
class Warning:
    line: int
    column: int
    code: str
    message: str
    hint: str


@record
class FileScan:
    kind: str  # sql | python | go
    sites: tuple[Site, ...] = ()
    locks: tuple[FoundLock, ...] = ()
    # table -> the column sets of its unique keys (CREATE TABLE, ALTER TABLE, CREATE UNIQUE
    # INDEX), for telling FOR UPDATE from FOR NO KEY UPDATE in an UPDATE.
    keys: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = ()
    waivers: tuple[SqlWaiver, ...] = ()
    warnings: tuple[Warning, ...] = ()
    names: tuple[str, ...] = field(default=())  # every statement name defined in the file
    unread: tuple[Unread, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sites": [
                [s.line, s.column, s.end_line, s.name, list(s.aliases), s.kind, s.unread]
                for s in self.sites
            ],
            "locks": [lk.to_json() for lk in self.locks],
            "keys": [[t, [list(c) for c in cols]] for t, cols in self.keys],
            "waivers": [
                [w.line, w.column, list(w.codes), w.reason, list(w.sites), w.problem]
                for w in self.waivers
            ],
            "warnings": [[w.line, w.column, w.code, w.message, w.hint] for w in self.warnings],
            "names": list(self.names),
            "unread": [
                [u.site, u.line, u.column, u.first, u.last, u.code, u.reason] for u in self.unread
            ],
        }

    @staticmethod
    def from_json(raw: dict[str, Any]) -> FileScan:
        return FileScan(
            kind=raw["kind"],
            sites=tuple(
                Site(a, b, c, d, tuple(e), f, bool(g)) for a, b, c, d, e, f, g in raw["sites"]
            ),
            locks=tuple(FoundLock.from_json(x) for x in raw["locks"]),
            keys=tuple((t, tuple(tuple(c) for c in cols)) for t, cols in raw["keys"]),
            waivers=tuple(
                SqlWaiver(a, b, tuple(c), d, tuple(e), f) for a, b, c, d, e, f in raw["waivers"]
            ),
            warnings=tuple(Warning(*w) for w in raw["warnings"]),
            names=tuple(raw["names"]),
            unread=tuple(Unread(*u) for u in raw["unread"]),
        )
