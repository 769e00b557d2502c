"""Lock modes per kind and Postgres's conflict tables.

The tables are the documented ones (row locks: Table 13.3; table locks: Table 13.2), and every
row-lock and advisory cell was verified on a live PostgreSQL 15 server (shared/reference/
postgres-lock-semantics.md). A transaction never conflicts with itself; these tables speak of two.
"""

from __future__ import annotations

from lockdocs.schema.vocabulary import ADVISORY_MODES, MEMORY_MODES, ROW_MODES, TABLE_MODES

_BY_KIND: dict[str, list[str]] = {
    "advisory": ADVISORY_MODES,
    "row": ROW_MODES,
    "table": TABLE_MODES,
    "memory": MEMORY_MODES,
}

# Row locks, weakest first: the set of held modes each requested mode waits for.
_ROW_CONFLICTS: dict[str, frozenset[str]] = {
    "for key share": frozenset({"for update"}),
    "for share": frozenset({"for no key update", "for update"}),
    "for no key update": frozenset({"for share", "for no key update", "for update"}),
    "for update": frozenset(ROW_MODES),
}

# Table 13.2 as the documentation draws it: a row per requested mode, a column per held mode,
# both in TABLE_MODES' order (access share ... access exclusive); X where the request waits.
_TABLE_MATRIX = {
    "access share":           ".......X",
    "row share":              "......XX",
    "row exclusive":          "....XXXX",
    "share update exclusive": "...XXXXX",
    "share":                  "..XX.XXX",
    "share row exclusive":    "..XXXXXX",
    "exclusive":              ".XXXXXXX",
    "access exclusive":       "XXXXXXXX",
}  # fmt: skip
_TABLE_CONFLICTS: dict[str, frozenset[str]] = {
    requested: frozenset(held for held, mark in zip(TABLE_MODES, row, strict=True) if mark == "X")
    for requested, row in _TABLE_MATRIX.items()
}

_SHARED_EXCLUSIVE: dict[str, frozenset[str]] = {
    "shared": frozenset({"exclusive"}),
    "exclusive": frozenset({"shared", "exclusive"}),
}


def modes_for_kind(kind: str) -> list[str]:
    return _BY_KIND.get(kind, [])


def conflicts(kind: str, requested: str, held: str) -> bool:
    """Does a request in `requested` mode wait for another transaction holding `held`?"""
    if kind == "row":
        table = _ROW_CONFLICTS
    elif kind == "table":
        table = _TABLE_CONFLICTS
    else:
        table = _SHARED_EXCLUSIVE
    return held in table.get(requested, frozenset())


def covers(kind: str, held: tuple[str, ...], mode: str) -> bool:
    """Does holding `held` already give everything a request in `mode` would: every mode that
    waits for `mode` waits for one of `held` too? Then the request never waits (a transaction
    never conflicts with itself) and changes nothing for others. For row and advisory locks
    that is "no stronger than the strongest held"; table modes are not totally ordered (SHARE
    does not cover ROW EXCLUSIVE, nor the other way round)."""
    if mode in held:
        return True
    modes = modes_for_kind(kind)
    return all(
        any(conflicts(kind, other, h) for h in held)
        for other in modes
        if conflicts(kind, other, mode)
    )


def strength(kind: str, mode: str) -> int:
    """Position in the kind's list, weakest first: used to tell an upgrade from a re-take."""
    modes = modes_for_kind(kind)
    return modes.index(mode) if mode in modes else 0
