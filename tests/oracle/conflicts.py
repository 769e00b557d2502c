"""Conflict tables, copied by hand from shared/reference/postgres-lock-semantics.md (§1.1 for
row locks, §2.2 for advisory locks) and from the PostgreSQL 15 documentation's Table 13.2
(Conflicting Lock Modes, for table locks), not imported from lockdocs, so the oracle stays
independent. tests/test_pg_oracle.py checks every cell against a live server.

`waits(kind, requested, held)`: does a request in `requested` mode wait while *another*
transaction holds `held` on the same lock? A transaction never conflicts with itself.
"""

from __future__ import annotations

# §1.1: rows are the requested mode, columns the mode held by another transaction; X = blocks.
#                        KEY SHARE  SHARE  NO KEY UPD  UPDATE
_ROW_MATRIX = {
    "for key share":     (False,    False, False,      True),
    "for share":         (False,    False, True,       True),
    "for no key update": (False,    True,  True,       True),
    "for update":        (True,     True,  True,       True),
}  # fmt: skip
_ROW_COLUMNS = ("for key share", "for share", "for no key update", "for update")

# §2.2: advisory shared/exclusive. In-memory locks (reader/writer locks) behave the same way.
_SHARED_EXCLUSIVE_MATRIX = {
    "shared": {"shared": False, "exclusive": True},
    "exclusive": {"shared": True, "exclusive": True},
}


# Table 13.2, row by row: the requested mode, then an X per held mode it conflicts with, in the
# order ACCESS SHARE, ROW SHARE, ROW EXCL., SHARE UPDATE EXCL., SHARE, SHARE ROW EXCL., EXCL.,
# ACCESS EXCL.
_TABLE_ROWS = {
    "access share":           ".......X",
    "row share":              "......XX",
    "row exclusive":          "....XXXX",
    "share update exclusive": "...XXXXX",
    "share":                  "..XX.XXX",
    "share row exclusive":    "..XXXXXX",
    "exclusive":              ".XXXXXXX",
    "access exclusive":       "XXXXXXXX",
}  # fmt: skip
_TABLE_COLUMNS = tuple(_TABLE_ROWS)


# The tables as dicts keyed (requested, held): the oracle asks millions of times per run.
_ROW_WAITS = {
    (req, held): row[i] for req, row in _ROW_MATRIX.items() for i, held in enumerate(_ROW_COLUMNS)
}
_TABLE_WAITS = {
    (req, held): row[i] == "X"
    for req, row in _TABLE_ROWS.items()
    for i, held in enumerate(_TABLE_COLUMNS)
}
_SHARED_EXCLUSIVE_WAITS = {
    (req, held): v for req, row in _SHARED_EXCLUSIVE_MATRIX.items() for held, v in row.items()
}


def waits(kind: str, requested: str, held: str) -> bool:
    if kind == "row":
        return _ROW_WAITS[requested, held]
    if kind == "table":
        return _TABLE_WAITS[requested, held]
    return _SHARED_EXCLUSIVE_WAITS[requested, held]


def self_compatible(kind: str, mode: str) -> bool:
    """Can two transactions hold `mode` at once?"""
    return not waits(kind, mode, mode)
