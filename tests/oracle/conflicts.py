"""Conflict tables, copied by hand from shared/reference/postgres-lock-semantics.md (§1.1 for
row locks, §2.2 for advisory locks), not imported from lockdocs, so the oracle stays independent.

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


def waits(kind: str, requested: str, held: str) -> bool:
    if kind == "row":
        return _ROW_MATRIX[requested][_ROW_COLUMNS.index(held)]
    return _SHARED_EXCLUSIVE_MATRIX[requested][held]


def self_compatible(kind: str, mode: str) -> bool:
    """Can two transactions hold `mode` at once?"""
    return not waits(kind, mode, mode)
