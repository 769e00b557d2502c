"""The words every part of the schema is built from: the draft, the id pattern, the lock modes
of each kind, and small constructors for strings, objects and issue lists.

The mode lists are the one place lockdocs spells a mode; `lockdocs.modes` builds its conflict
tables on them.
"""

from __future__ import annotations

from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,127}$"  # at most 128 characters: ids name DOT nodes

ADVISORY_MODES = ["shared", "exclusive"]
ROW_MODES = ["for key share", "for share", "for no key update", "for update"]
TABLE_MODES = [
    "access share",
    "row share",
    "row exclusive",
    "share update exclusive",
    "share",
    "share row exclusive",
    "exclusive",
    "access exclusive",
]
MEMORY_MODES = ["shared", "exclusive"]
ALL_MODES = sorted(set(ADVISORY_MODES + ROW_MODES + TABLE_MODES + MEMORY_MODES))
KINDS = ["advisory", "row", "table", "memory"]


def string(desc: str, **kw: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **kw}


def obj(desc: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "description": desc,
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        out["required"] = required
    return out


def strings(desc: str) -> dict[str, Any]:
    return {"type": "array", "description": desc, "items": {"type": "string"}}


def issue_numbers(desc: str = "Issue numbers that track this item.") -> dict[str, Any]:
    return {"type": "array", "description": desc, "items": {"type": "integer", "minimum": 1}}


def names(desc: str) -> dict[str, Any]:
    """A name of the code, or a list of them (a chain of calls, outermost first)."""
    return {
        "description": desc,
        "oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        ],
    }


VIA = names(
    "The function, query or SQL function through which the lock is taken; a list is a chain "
    "of calls, outermost first (settlePool -> LockPools -> LockResourcePool)."
)
ENTRY = names(
    "Where the path starts in the code: the function, handler or job that runs it; a list "
    "names several (swapActiveSite, withWorkspaceTx)."
)
WRITE_VIA = names(
    "The function, query or SQL function that makes the write; a list is a chain of calls, "
    "outermost first."
)
RELEASE_VIA = names(
    "The call that releases the lock (pg_advisory_unlock, a lockset's remove); a list is a "
    "chain of calls, outermost first."
)
