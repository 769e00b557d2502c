"""PostgreSQL's lock words, as its messages print them: wait lines and lock tags.

`Process 123 waits for ShareLock on transaction 745; blocked by process 122.` is how a deadlock
report names each wait (deadlock.c); the lock tag after "on" is one of lmgr.c's descriptions.
These are fixed message formats of the server (in English, lc_messages=C or en), not SQL, so
they are matched as text here; statements are left to pglast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lockdocs import pghash

_WAIT = re.compile(
    r"^Process (?P<pid>\d+) waits for (?P<mode>\w+) on (?P<tag>.+); "
    r"blocked by process (?P<blocker>\d+)\.$"
)
_STATEMENT = re.compile(r"^Process (?P<pid>\d+): (?P<sql>.*)$")

_TAGS: list[tuple[str, re.Pattern[str]]] = [
    ("advisory", re.compile(r"^advisory lock \[(\d+),(\d+),(\d+),(\d+)\]$")),
    ("tuple", re.compile(r"^tuple \((\d+),(\d+)\) of relation (\d+) of database (\d+)$")),
    ("transaction", re.compile(r"^transaction (\d+)$")),
    ("relation", re.compile(r"^relation (\d+) of database (\d+)$")),
    ("extend", re.compile(r"^extension of relation (\d+) of database (\d+)$")),
    ("page", re.compile(r"^page (\d+) of relation (\d+) of database (\d+)$")),
    ("virtualxid", re.compile(r"^virtual transaction (\d+)/(\d+)$")),
    ("spectoken", re.compile(r"^speculative token (\d+) of transaction (\d+)$")),
    ("object", re.compile(r"^object (\d+) of class (\d+) of database (\d+)$")),
    ("userlock", re.compile(r"^user lock \[(\d+),(\d+),(\d+)\]$")),
]

# lock.c's mode names -> the words lockdocs declares (table modes; advisory uses two of them).
TABLE_MODE_NAMES = {
    "AccessShareLock": "access share",
    "RowShareLock": "row share",
    "RowExclusiveLock": "row exclusive",
    "ShareUpdateExclusiveLock": "share update exclusive",
    "ShareLock": "share",
    "ShareRowExclusiveLock": "share row exclusive",
    "ExclusiveLock": "exclusive",
    "AccessExclusiveLock": "access exclusive",
}
ADVISORY_MODE_NAMES = {"ShareLock": "shared", "ExclusiveLock": "exclusive"}


@dataclass(frozen=True)
class LockTag:
    kind: str  # advisory | tuple | transaction | relation | ... | unknown
    fields: tuple[int, ...] = ()
    text: str = ""

    @property
    def advisory_tag(self) -> tuple[int, int, int] | None:
        if self.kind != "advisory":
            return None
        return self.fields[1], self.fields[2], self.fields[3]

    @property
    def relation(self) -> int | None:
        if self.kind in ("tuple",):
            return self.fields[2]
        if self.kind in ("relation", "extend"):
            return self.fields[0]
        if self.kind == "page":
            return self.fields[1]
        return None


def parse_tag(text: str) -> LockTag:
    for kind, pattern in _TAGS:
        hit = pattern.match(text)
        if hit and all(len(g) < 21 for g in hit.groups()):
            return LockTag(kind, tuple(int(g) for g in hit.groups()), text)
    return LockTag("unknown", (), text)


@dataclass(frozen=True)
class Wait:
    pid: int
    mode: str  # as Postgres names it: ShareLock, ExclusiveLock, ...
    tag: LockTag
    blocker: int


@dataclass(frozen=True)
class DeadlockDetail:
    waits: tuple[Wait, ...]
    statements: tuple[tuple[int, str], ...]  # (pid, statement), in the server log only


def parse_detail(detail: str) -> DeadlockDetail:
    """A deadlock report's DETAIL: the wait lines, then (server log only) each process's
    statement, which may run over several lines. Linear in the DETAIL's length: a report of
    20,000 processes is read in one pass."""
    waits: list[Wait] = []
    pids: set[int] = set()
    statements: list[tuple[int, list[str]]] = []
    for raw in detail.split("\n"):
        line = raw[1:] if raw.startswith("\t") else raw
        hit = _WAIT.match(line) if not statements else None
        if hit:
            try:
                wait = Wait(
                    int(hit["pid"]), hit["mode"], parse_tag(hit["tag"]), int(hit["blocker"])
                )
            except ValueError:  # a number too long to be a process id or a tag field
                continue
            waits.append(wait)
            pids.add(wait.pid)
            continue
        st = _STATEMENT.match(line)
        if st and len(st["pid"]) < 12 and int(st["pid"]) in pids:
            statements.append((int(st["pid"]), [st["sql"]]))
        elif statements:
            statements[-1][1].append(line)
    return DeadlockDetail(tuple(waits), tuple((p, "\n".join(s)) for p, s in statements))


_RELATION_CONTEXT = re.compile(
    r"^while (?:updating|locking|deleting|inserting index|checking uniqueness of|rechecking "
    r'updated|rechecking) tuple(?: \(\d+,\d+\))? in (?:relation|index) "(?P<rel>(?:[^"]|"")+)"'
)


def context_relation(context: str) -> str | None:
    """The relation a row wait is on, as the report's CONTEXT names it (heapam's and
    nbtinsert's "while updating tuple (12,7) in relation \"accounts\"", unqualified)."""
    for line in context.split("\n"):
        hit = _RELATION_CONTEXT.match(line.strip())
        if hit:
            return hit["rel"].replace('""', '"')
    return None


def advisory_tag_of(values: tuple[int, ...]) -> tuple[int, int, int]:
    """The tag of pg_advisory_*(values): one bigint or two int4."""
    if len(values) == 1:
        return pghash.bigint_to_tag(values[0])
    return pghash.int4pair_to_tag(values[0], values[1])
