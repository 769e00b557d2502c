"""The schema of a lock class: its key (hashed text, integer or pair), who may take it, and its
backends.

The key forms are the most detailed part of the format because a key decides which advisory
locks collide; the format reference page documents them from here.
"""

from __future__ import annotations

from typing import Any

from lockdocs.schema.vocabulary import ALL_MODES, KINDS, VIA, issue_numbers, obj, string, strings

KEY_TEXT = obj(
    "A hashed key: a fixed text, or a prefix followed by runtime parts.",
    {
        "text": string(
            "A fixed name hashed as it stands; the key is then one value for the database."
        ),
        "prefix": string("The family prefix written before the runtime parts, e.g. 'lifecycle:'."),
        "parts": strings("The runtime values joined after the prefix, in order (prose names)."),
        "separator": string("The text written between parts (e.g. ':'); none by default."),
        "seed": {"type": "integer", "description": "The seed of hashtextextended; 0 by default."},
        "cardinality": {
            "type": "integer",
            "minimum": 1,
            "description": "How many distinct keys the family may hold at once; gives collision odds.",
        },
    },
)

INTEGER_KEY = obj(
    "A raw integer used as the key as it is: an OID, a serial id (oid::bigint, a tenant id).",
    {
        "of": string("What the integer is, in prose, e.g. 'the role's oid'."),
        "bits": {
            "type": "integer",
            "enum": [32, 64],
            "description": (
                "How wide the integer is: 32 for an oid or an int4 (it fills [0, 2^32) or "
                "[-2^31, 2^31) of the bigint space), 64 for a bigint; 64 by default."
            ),
        },
    },
    ["of"],
)

PAIR_HALF_TEXT = (
    "a number, a hashtext key (a text or a prefix with parts, 32 bits), or a raw integer "
    "({integer: {of: ...}})."
)
PAIR_HALF: dict[str, Any] = {
    "description": "One int4 of the pair: " + PAIR_HALF_TEXT,
    "oneOf": [
        {"type": "integer"},
        {"$ref": "#/$defs/key_text"},
        obj(
            "A raw int4, used as it is.",
            {"integer": obj("The integer.", {"of": string("What the integer is.")}, ["of"])},
            ["integer"],
        ),
    ],
}

KEY = {
    "description": (
        "How the advisory key is built. Exactly one of: hashtextextended, hashtext (32-bit, "
        "widened to bigint), constant (a bigint, given as a number or as the bytes of a string), "
        "integer (a raw integer such as an oid), application (a hash the application "
        "computes), or int4pair (the separate two-int4 key space)."
    ),
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "hashtextextended": KEY_TEXT,
        "hashtext": KEY_TEXT,
        "constant": obj(
            "A literal bigint key.",
            {
                "value": {"type": "integer", "description": "The key as a number."},
                "bytes": string(
                    "The key as the big-endian bytes of this ASCII string (at most 8)."
                ),
                "name": string(
                    "The name of the constant in the code, e.g. registryAllocationLock."
                ),
            },
        ),
        "integer": INTEGER_KEY,
        "application": obj(
            "A key the application computes itself (not with a Postgres hash). With a named "
            "algorithm its fixed keys are computed exactly; with any other, shown as written.",
            {
                "function": string("The application function that builds the key."),
                "algorithm": string(
                    "How it maps the text to a bigint: 'sha256 mod 2^63' (the integer of the "
                    "SHA-256 hex digest modulo 2^63), 'crc32' (zlib's CRC-32 of the UTF-8 "
                    "bytes), 'fnv-1a 32' or 'fnv-1a 64' are computed exactly for fixed texts; "
                    "any other text is shown as written."
                ),
                "multiplier": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "The hash is multiplied by this number (what Rails and golang-migrate "
                        "call the salt: crc32(name) * salt), modulo 2^bits."
                    ),
                },
                "signed": {
                    "type": "boolean",
                    "description": (
                        "Read the bits as a signed integer (a cast to int64 or int32); true "
                        "by default for 64 bits, false below."
                    ),
                },
                "text": string("A fixed name, for one key."),
                "prefix": string("The family prefix written before the runtime parts."),
                "parts": strings("The runtime values joined after the prefix."),
                "separator": string("The text written between parts."),
                "cardinality": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "How many distinct keys the family may hold at once; gives collision "
                        "odds for a 32-bit hash."
                    ),
                },
                "bits": {
                    "type": "integer",
                    "minimum": 1,
                    "description": (
                        "The width of the application's arithmetic: the hash (times the "
                        "multiplier) is taken modulo 2^bits; 64 by default (golang-migrate's "
                        "uint32 is 32). Also the key's entropy when below the hash's own."
                    ),
                },
            },
            ["function"],
        ),
        "int4pair": obj(
            "The two-int4 form pg_advisory_xact_lock(int, int): a key space apart from bigints.",
            {
                "first": {
                    **PAIR_HALF,
                    "description": "The first int4 (a class id): " + PAIR_HALF_TEXT,
                },
                "second": {**PAIR_HALF, "description": "The second int4: " + PAIR_HALF_TEXT},
            },
            ["first", "second"],
        ),
    },
    "minProperties": 1,
    "maxProperties": 1,
}

TAKER = obj(
    "Code that takes the lock.",
    {
        "name": string("The function, query, SQL function or transaction kind."),
        "kind": string(
            "What the taker is.",
            enum=["function", "query", "sql-function", "statement", "transaction-kind"],
        ),
        "mode": string("The mode this taker takes.", enum=ALL_MODES),
        "via": VIA,
        "called_by": strings("Callers of this taker that the page should name."),
        "module": string("Where the taker lives (a package or file)."),
        "note": string("Anything a reader needs to know about this taker."),
    },
    ["name"],
)

BACKEND = obj(
    "The lock as it is on one database backend.",
    {
        "kind": string("The lock's kind on this backend.", enum=KINDS),
        "scope": string(
            "The scope on this backend; a memory lock is process-scoped unless it says session.",
            enum=["transaction", "session", "process"],
        ),
        "table": string("The table, for a row lock."),
        "mode": string("The mode taken on this backend.", enum=ALL_MODES),
        "how": string('How the code takes it there (e.g. get_lockset("instances")).'),
    },
    ["kind"],
)

LOCK = obj(
    "One lock class: a family of locks that share a key shape or a table.",
    {
        "title": string("The lock's name on the page."),
        "kind": string(
            "advisory (pg_advisory_*), row (FOR UPDATE and implicit row locks), table (LOCK "
            "TABLE) or memory (an in-process lock).",
            enum=KINDS,
        ),
        "scope": string(
            "transaction (released at commit or rollback), session (held until released) or, "
            "for a memory lock, process (held until released and only inside one server "
            "process: the default for kind: memory; with replicas above 1 it keeps nothing "
            "apart across processes). A memory lock declared session is one every process "
            "shares (a lock server).",
            enum=["transaction", "session", "process"],
        ),
        "key": {"$ref": "#/$defs/key"},
        "cluster_wide": {
            "type": "boolean",
            "description": (
                "The key names an object of the whole cluster (a role, a database, a "
                "tablespace), not of one database. Advisory locks exclude only within one "
                "database, so taking it from transactions on different databases (LD106) "
                "keeps nothing apart."
            ),
        },
        "table": string("The table of a row or table lock."),
        "row": string("What one locked row stands for."),
        "modes": {
            "type": "object",
            "description": "The modes the lock is taken in, each with who takes it that way.",
            "propertyNames": {"enum": ALL_MODES},
            "additionalProperties": {"type": "string"},
        },
        "mode_text": string("The Mode column of the page, when the modes need words of their own."),
        "options": {
            "type": "array",
            "description": "Row-lock options used with this lock.",
            "items": {"enum": ["nowait", "skip locked"]},
        },
        "queue": {
            "type": "boolean",
            "description": "The rows form a work queue claimed with SKIP LOCKED.",
        },
        "referenced_by_foreign_keys": {
            "type": "boolean",
            "description": "Other tables reference this row through foreign keys.",
        },
        "references": {
            "type": "array",
            "description": (
                "The foreign keys into this lock's table: rows of a child table point at it "
                "through a column. Inserting a child row, or updating that column, takes FOR KEY "
                "SHARE on the parent row; lockdocs scan reports it at the statement."
            ),
            "items": obj(
                "One foreign key: child table T references this table through column C.",
                {
                    "table": string("The child table, e.g. core.entitlements."),
                    "column": string(
                        "The child's referencing column, e.g. resource_key_id. Without it, "
                        "an update of the child with columns: is taken to set it (the parent's "
                        "FOR KEY SHARE is derived anyway)."
                    ),
                },
                ["table"],
            ),
        },
        "singleton": {
            "type": "boolean",
            "description": (
                "One lock for the whole database: derived for every fixed key (a fixed text under "
                "any algorithm, including a hash the application computes, a constant, a pair of "
                "fixed halves) and for a table; only a singleton can keep two transactions apart "
                "as a gate."
            ),
        },
        "instances": obj(
            "How several instances of the lock are taken in one transaction.",
            {
                "order": string(
                    "The one declared order, e.g. 'ascending pool_id' ('none' is reserved for "
                    "a loop whose iterations come in no order). Written as `ascending` or "
                    "`descending` and a column or a parenthesised list of them, it names "
                    "columns: a loop sorted by those columns first (`order: ascending "
                    "(pool_id, tier)`) follows it too."
                ),
                "key": strings(
                    "The columns that name one instance, e.g. [account_id], when the key's "
                    "parts do not say it (a row lock, prose parts); parts such as "
                    "`account_id::text` name their columns already. Inside a loop, a take of "
                    "such a lock is the current row's: two locks that share a column agree on "
                    "it in one iteration, and a loop sorted by the key's columns first (its "
                    "`order:` written as `ascending (account_id, currency)`) takes its "
                    "instances in that order."
                ),
                "within": string(
                    "The lock whose instances own this lock's instances: each job belongs to "
                    "one run, so `within: run`. A path that takes a job while it holds the "
                    "job's run (the run it took last, or the one its take names with under:) "
                    "meets another such path only on a job of that same run, and then both "
                    "hold that run: where the two hold it in conflicting modes they cannot "
                    "interleave, so no cycle or unordered instances are reported there."
                ),
            },
        ),
        "backends": {
            "type": "object",
            "description": "The lock per database backend, when it differs (SQLite vs Postgres).",
            "additionalProperties": {"$ref": "#/$defs/backend"},
        },
        "taken_by": {"type": "array", "description": "Who takes the lock.", "items": TAKER},
        "serializes": string("What the lock serializes, in prose."),
        "notes": string("Further prose shown in the lock's own section."),
        "issues": issue_numbers(),
    },
    ["title", "kind"],
)
