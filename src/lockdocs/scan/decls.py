"""What the declarations say the code takes, and how a scanned lock answers to it: one `Decl`
per declared name that names code (a taker, a name in a `via`), a found lock matched to a
declared lock by its table or its key's shape, and the shape of the coverage report.
"""

from __future__ import annotations

from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Location
from lockdocs.records import field, record
from lockdocs.scan.collect import Item, same_table
from lockdocs.scan.keyshape import key_differences

SQL_KINDS = ("query", "sql-function", "statement")
_ROW_ORDER = ["for key share", "for share", "for no key update", "for update"]
STRENGTH = {
    **{mode: i for i, mode in enumerate(_ROW_ORDER)},
    "shared": 0,
    "exclusive": 1,
}


@record
class Decl:
    """One declaration that names code for a lock: a taker, or a take step's via."""

    lock: str
    names: tuple[str, ...]
    location: Location
    mode: str | None = None
    option: str | None = None
    taker: m.Taker | None = None
    tries: bool = False  # a take step declared try: (it never waits)
    path: str | None = None  # a take step's path


@record(frozen=False)
class LockCoverage:
    takers: int = 0
    takers_found: int = 0
    statements: int = 0
    statements_declared: int = 0
    statements_waived: int = 0
    missing: list[str] = field(default_factory=list)  # takers not found
    unchecked: list[str] = field(default_factory=list)  # takers whose code was not read

    def to_json(self) -> dict[str, Any]:
        return {
            "takers": self.takers,
            "takers_found": self.takers_found,
            "statements": self.statements,
            "statements_declared": self.statements_declared,
            "statements_waived": self.statements_waived,
            "takers_missing": self.missing,
            "takers_not_checked": self.unchecked,
        }


@record(frozen=False)
class Coverage:
    patterns: tuple[str, ...]
    files: int
    locks: dict[str, LockCoverage]
    unmatched: int = 0  # locking statements on no declared lock
    unread: int = 0  # statements (or bodies) the scan could not read (LD709, LD712)

    def total(self, attr: str) -> int:
        return sum(int(getattr(c, attr)) for c in self.locks.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "patterns": list(self.patterns),
            "files": self.files,
            "takers": self.total("takers"),
            "takers_found": self.total("takers_found"),
            "statements": self.total("statements"),
            "statements_declared": self.total("statements_declared"),
            "statements_waived": self.total("statements_waived"),
            "statements_on_no_lock": self.unmatched,
            "statements_not_read": self.unread,
            "takers_not_checked": sum(len(c.unchecked) for c in self.locks.values()),
            "locks": {lid: c.to_json() for lid, c in sorted(self.locks.items())},
        }


def plain_name(name: str) -> str:
    """Go's method notation pkg.(*T).M is the same name as pkg.T.M."""
    return name.replace("(*", "").replace("(", "").replace(")", "")


def declarations(model: m.Model) -> tuple[dict[str, list[Decl]], dict[str, list[Decl]]]:
    """(takers by lock, take steps with a via by lock)."""
    takers: dict[str, list[Decl]] = {}
    steps: dict[str, list[Decl]] = {}
    for lid, lock in model.locks.items():
        takers[lid] = [
            Decl(lid, (t.name, *t.via), t.location or lock.location, t.mode, None, t)
            for t in lock.takers
        ]
    for path in model.paths.values():
        for s in m.walk_steps(path.steps):
            if isinstance(s, m.Take) and s.via:
                steps.setdefault(s.lock, []).append(
                    Decl(
                        s.lock,
                        s.via,
                        s.location,
                        s.mode,
                        s.option,
                        tries=s.attempt is not None,
                        path=path.id,
                    )
                )
    return takers, steps


def same_via(steps: list[Decl]) -> list[list[Decl]]:
    """The take steps of one lock, grouped: the steps of one path through the same via, in
    the path's order (a function that takes the lock twice, FOR UPDATE and then UPDATE)."""
    groups: dict[tuple[str | None, tuple[str, ...]], list[Decl]] = {}
    for d in steps:
        groups.setdefault((d.path, tuple(plain_name(n) for n in d.names)), []).append(d)
    return list(groups.values())


def tables_of(lock: m.Lock) -> list[str]:
    out = [lock.table] if lock.table else []
    out += [b.table for b in lock.backends if b.table and b.kind in ("row", "table")]
    return out


def matches_shape(item: Item, lock: m.Lock) -> bool | None:
    """Whether a found lock is an instance of a declared one; None when the SQL cannot say
    (an advisory key passed in as a parameter)."""
    lk = item.lock
    if lk.kind != lock.kind:
        return False
    if lk.kind in ("row", "table"):
        return any(same_table(lk.table or "", t) for t in tables_of(lock))
    if lock.key is None or lk.shape is None:
        return None
    diffs = key_differences(lk.shape, lock.key)
    return None if diffs is None else not diffs


def statement_of(item: Item) -> str:
    return f"'{item.site.name}'" if item.site.name else "this statement"


_IMPLICIT = {
    "update": ", the row lock of an UPDATE",
    "upsert": ", the row lock of INSERT ... ON CONFLICT DO UPDATE",
    "delete": ", the row lock of a DELETE",
    "foreign key": ", the foreign-key check of a write",
}


def describe_lock(item: Item) -> str:
    lk = item.lock
    if lk.kind == "advisory":
        return f"{lk.function}({lk.key or ''})"
    if lk.kind == "table":
        return f"LOCK TABLE {lk.table} IN {lk.mode.upper()} MODE"
    option = f" {lk.option.upper()}" if lk.option else ""
    return f"{lk.mode.upper()}{option} on {lk.table}{_IMPLICIT.get(lk.implicit or '', '')}"


def location_of(item: Item) -> Location:
    return Location(item.file, item.lock.line, item.lock.column)


_MARKS = {"python": "#", "go": "//"}


def waiver_how(kind: str, code: str, reason: str = "<reason>") -> str:
    """How to waive a finding in a file of this kind (sql, python, go)."""
    mark = _MARKS.get(kind)
    if mark is None:
        return f"waive it here with '-- lockdocs: ignore {code} {reason}'"
    return (
        f"waive it with '{mark} lockdocs: ignore {code} {reason}' on the line above the statement"
    )
