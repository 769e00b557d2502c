"""The JSON Schema (draft 2020-12) of `locks.yaml` and of each `paths/*.yaml`, built in code.

Written once here so both shipped schema files, the format reference page and the editor
completion come from one source; `tests/test_schema.py` keeps the shipped JSON files equal to it
and the model in step with it.
"""

from __future__ import annotations

import json
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


def _s(desc: str, **kw: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **kw}


def _obj(desc: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "description": desc,
        "properties": props,
        "additionalProperties": False,
    }
    if required:
        out["required"] = required
    return out


def _strings(desc: str) -> dict[str, Any]:
    return {"type": "array", "description": desc, "items": {"type": "string"}}


def _issues(desc: str = "Issue numbers that track this item.") -> dict[str, Any]:
    return {"type": "array", "description": desc, "items": {"type": "integer", "minimum": 1}}


VIA = {
    "description": (
        "The function, query or SQL function through which the lock is taken; a list is a chain "
        "of calls, outermost first (settlePool -> LockPools -> LockResourcePool)."
    ),
    "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    ],
}

KEY_TEXT = _obj(
    "A hashed key: a fixed text, or a prefix followed by runtime parts.",
    {
        "text": _s("A fixed name hashed as it stands; the key is then one value for the database."),
        "prefix": _s("The family prefix written before the runtime parts, e.g. 'lifecycle:'."),
        "parts": _strings("The runtime values joined after the prefix, in order (prose names)."),
        "separator": _s("The text written between parts (e.g. ':'); none by default."),
        "seed": {"type": "integer", "description": "The seed of hashtextextended; 0 by default."},
        "cardinality": {
            "type": "integer",
            "minimum": 1,
            "description": "How many distinct keys the family may hold at once; gives collision odds.",
        },
    },
)

INTEGER_KEY = _obj(
    "A raw integer used as the key as it is: an OID, a serial id (oid::bigint, a tenant id).",
    {
        "of": _s("What the integer is, in prose, e.g. 'the role's oid'."),
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
        _obj(
            "A raw int4, used as it is.",
            {"integer": _obj("The integer.", {"of": _s("What the integer is.")}, ["of"])},
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
        "constant": _obj(
            "A literal bigint key.",
            {
                "value": {"type": "integer", "description": "The key as a number."},
                "bytes": _s("The key as the big-endian bytes of this ASCII string (at most 8)."),
                "name": _s("The name of the constant in the code, e.g. registryAllocationLock."),
            },
        ),
        "integer": INTEGER_KEY,
        "application": _obj(
            "A key the application computes itself (not with a Postgres hash). With a named "
            "algorithm its fixed keys are computed exactly; with any other, shown as written.",
            {
                "function": _s("The application function that builds the key."),
                "algorithm": _s(
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
                "text": _s("A fixed name, for one key."),
                "prefix": _s("The family prefix written before the runtime parts."),
                "parts": _strings("The runtime values joined after the prefix."),
                "separator": _s("The text written between parts."),
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
        "int4pair": _obj(
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

TAKER = _obj(
    "Code that takes the lock.",
    {
        "name": _s("The function, query, SQL function or transaction kind."),
        "kind": _s(
            "What the taker is.",
            enum=["function", "query", "sql-function", "statement", "transaction-kind"],
        ),
        "mode": _s("The mode this taker takes.", enum=ALL_MODES),
        "via": VIA,
        "called_by": _strings("Callers of this taker that the page should name."),
        "module": _s("Where the taker lives (a package or file)."),
        "note": _s("Anything a reader needs to know about this taker."),
    },
    ["name"],
)

BACKEND = _obj(
    "The lock as it is on one database backend.",
    {
        "kind": _s("The lock's kind on this backend.", enum=KINDS),
        "scope": _s(
            "The scope on this backend; a memory lock is process-scoped unless it says session.",
            enum=["transaction", "session", "process"],
        ),
        "table": _s("The table, for a row lock."),
        "mode": _s("The mode taken on this backend.", enum=ALL_MODES),
        "how": _s('How the code takes it there (e.g. get_lockset("instances")).'),
    },
    ["kind"],
)

LOCK = _obj(
    "One lock class: a family of locks that share a key shape or a table.",
    {
        "title": _s("The lock's name on the page."),
        "kind": _s(
            "advisory (pg_advisory_*), row (FOR UPDATE and implicit row locks), table (LOCK "
            "TABLE) or memory (an in-process lock).",
            enum=KINDS,
        ),
        "scope": _s(
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
        "table": _s("The table of a row or table lock."),
        "row": _s("What one locked row stands for."),
        "modes": {
            "type": "object",
            "description": "The modes the lock is taken in, each with who takes it that way.",
            "propertyNames": {"enum": ALL_MODES},
            "additionalProperties": {"type": "string"},
        },
        "mode_text": _s("The Mode column of the page, when the modes need words of their own."),
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
            "items": _obj(
                "One foreign key: child table T references this table through column C.",
                {
                    "table": _s("The child table, e.g. core.entitlements."),
                    "column": _s(
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
                "One lock for the whole database (derived for fixed and constant keys); only a "
                "singleton can keep two transactions apart as a gate."
            ),
        },
        "instances": _obj(
            "How several instances of the lock are taken in one transaction.",
            {
                "order": _s(
                    "The one declared order, e.g. 'ascending pool_id' ('none' is reserved for "
                    "a loop whose iterations come in no order)."
                ),
                "within": _s(
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
        "serializes": _s("What the lock serializes, in prose."),
        "notes": _s("Further prose shown in the lock's own section."),
        "issues": _issues(),
    },
    ["title", "kind"],
)

TRANSACTION = _obj(
    "A kind of transaction: how it is opened and what bounds its lock waits.",
    {
        "title": _s("The kind's name in the code, e.g. entitlements.Materializing."),
        "opened_by": _s("The helper that opens it, e.g. BeginMaterializing."),
        "first": _obj(
            "The lock the kind takes as its first statement.",
            {"lock": _s("A lock id."), "mode": _s("The mode.", enum=ALL_MODES)},
            ["lock"],
        ),
        "isolation": _s(
            "The isolation level.",
            enum=["read committed", "repeatable read", "serializable"],
        ),
        "lock_timeout": _s(
            "The bound on each lock wait, e.g. '5s', or 'none' (waits until the context ends).",
            pattern=r"^(none|[0-9]+(ms|s|min))$",
        ),
        "on_timeout": _s("What a wait past the bound surfaces as (e.g. SQLSTATE 55P03)."),
        "database": _s(
            "The database this kind's transactions connect to, when the application uses "
            "several. Database locks (advisory, row, table) exclude only within one database; "
            "kinds that name none share one default database."
        ),
        "notes": _s("Further prose."),
    },
)

RULE = _obj(
    "An invariant every path keeps. Give exactly one check, or none for a rule the tool cannot check.",
    {
        "title": _s("One line naming the rule."),
        "text": _s("The rule in prose, as the page shows it."),
        "first": _obj(
            "The lock a transaction must take first.",
            {
                "lock": _s("A lock id."),
                "mode": _s("The mode.", enum=ALL_MODES),
                "when_writes": _strings("Only transactions that write one of these."),
                "transactions": _strings("Only transactions of these kinds."),
            },
            ["lock"],
        ),
        "before": _obj(
            "In one transaction, lock `first` is taken before lock `then`, never after.",
            {"first": _s("A lock id."), "then": _s("A lock id.")},
            ["first", "then"],
        ),
        "sorted": _obj(
            "Several instances of the lock in one transaction follow its declared order.",
            {"lock": _s("A lock id.")},
            ["lock"],
        ),
        "scope": _obj(
            "Every lock of a kind has this scope.",
            {
                "kind": _s("A lock kind.", enum=KINDS),
                "scope": _s("The scope.", enum=["transaction", "session"]),
            },
            ["kind", "scope"],
        ),
        "order": _obj(
            "A global written order: a lock may be taken only while holding locks of earlier levels.",
            {
                "levels": {
                    "type": "array",
                    "description": "Levels, first to last; each a list of lock ids.",
                    "items": {"type": "array", "items": {"type": "string"}},
                }
            },
            ["levels"],
        ),
        "lock_before_write": _obj(
            "A write happens only while the lock is held.",
            {"lock": _s("A lock id."), "writes": _strings("Write names the rule covers.")},
            ["lock", "writes"],
        ),
        "issues": _issues(),
    },
    ["title"],
)

EXCEPTION = _obj(
    "A known deviation of a path from a rule: the finding it matches is reported as waived.",
    {
        "rule": _s("A declared rule id or a check code (e.g. LD202)."),
        "path": _s("The path id the deviation is in."),
        "lock": _s("Narrows the waiver to findings about this lock."),
        "branch": _s("Narrows the waiver to findings in this branch of the path."),
        "issue": {"type": "integer", "minimum": 1, "description": "The issue that tracks it."},
        "title": _s("One line for the page."),
        "why": _s("Why it is safe, or what is planned."),
    },
    ["rule", "why"],
)

PAGE = _obj(
    "The generated page.",
    {
        "title": _s("The page title."),
        "audience": _s("Who the page is for."),
        "summary": _s("One sentence under the title."),
        "intro": _s(
            "Prose before the tables: paragraphs and '-' lists, with `code` and "
            "[links](https://...) kept (http, https, mailto and #anchors only); any other "
            "markup shows literally."
        ),
        "output": _s(
            "The page's file under docs/, e.g. database-locks.md.",
            pattern=r"^[A-Za-z0-9_./-]+\.md$",
        ),
        "key_intro": _s("Prose before the key constructions (as intro)."),
        "order_intro": _s("Prose before the paths (as intro)."),
    },
    ["title"],
)

DIFFERENCE = _obj(
    "A way the paths differ that breaks no checked rule, recorded for the reader.",
    {
        "title": _s("One line for the page."),
        "why": _s("What differs, and why it is safe or what is planned."),
        "issue": {"type": "integer", "minimum": 1, "description": "The issue that tracks it."},
        "paths": _strings("The path ids it concerns."),
        "locks": _strings("The lock ids it concerns."),
    },
    ["title", "why"],
)

PLANNED = _obj(
    "Planned work the page names.",
    {
        "issue": {"type": "integer", "minimum": 1, "description": "The issue number."},
        "title": _s("What the work does."),
        "affects": _strings("Lock ids or path ids the work changes."),
    },
    ["issue", "title"],
)

CHECKS = {
    "type": "object",
    "description": (
        "Severity per check code (LD301: info): error, warning, info or off (YAML reads a "
        "bare off as false, which means off too). A code that names no check is a warning "
        "(LD020)."
    ),
    "additionalProperties": {"enum": ["error", "warning", "info", "off", False]},
}


LIMITS = _obj(
    "Bounds on the analysis's work. Past one, lockdocs reports that it stopped (LD209 refuses a "
    "path too large to analyse, LD204 names a cycle search it could not finish) instead of "
    "running for ever or passing over a deadlock in silence. The defaults suit projects far "
    "larger than any hand-written one; raise them only for a project that needs it.",
    {
        "path_work": {
            "type": "integer",
            "minimum": 1,
            "description": (
                "Work units one path may take when it is flattened (each state through each "
                "step, and each held lock recorded); 250,000 by default (the largest path of "
                "a hand-written project needs a few hundred); all paths together may take "
                "twenty times that."
            ),
        },
        "cycle_search": {
            "type": "integer",
            "minimum": 1,
            "description": (
                "States one cycle search may visit (a hop with the gates claimed so far); "
                "200,000 by default."
            ),
        },
    },
)


def _step_schema() -> dict[str, Any]:
    steps = {"type": "array", "description": "Steps in order.", "items": {"$ref": "#/$defs/step"}}
    take = _obj(
        "Take a lock (or take it again).",
        {
            "take": _s("A lock id."),
            "mode": _s("The mode; the lock's only mode when omitted.", enum=ALL_MODES),
            "via": VIA,
            "note": _s("A note for the reader."),
            "instance": _s(
                "Names one instance of the lock (the same in every loop iteration); two names "
                "are two distinct instances. Without it, a take outside a loop is the path's "
                "one instance, which may or may not be one a loop took."
            ),
            "again": {
                "type": "boolean",
                "description": (
                    "A re-take of an instance the path already holds (one of the rows a loop "
                    "took, say), not another one; with none held, the path's one instance."
                ),
            },
            "order": _s(
                "The order this take follows relative to the path's other instances of the "
                "lock; inside a loop it overrides the loop's order. A named instance follows "
                "only its own order:, never the loop's."
            ),
            "under": _s(
                "For a lock declared instances: {within: P}: the instance of P this one "
                "belongs to, by its instance: name, when the path holds several instances of "
                "P; by default the instance of P the path took last."
            ),
            "option": _s("nowait or skip locked.", enum=["nowait", "skip locked"]),
            "try": _s(
                "A take that never waits (pg_try_advisory_xact_lock, NOWAIT whose error the code "
                "handles, an in-process check that skips a held id): what the code does when "
                "the lock is not free (skips the run, retries later, gives up). The steps after "
                "it are what the path does once it has the lock. Never the waiting side of a "
                "deadlock; what it takes counts as held.",
                minLength=1,
            ),
            "implicit": _s(
                "The statement that takes the lock implicitly (UPDATE, DELETE, a foreign-key check)."
            ),
            "changes_key": {
                "type": "boolean",
                "description": "The statement changes a key column or deletes, so FOR UPDATE is needed.",
            },
            "backend": _s("Only on this backend."),
        },
        ["take"],
    )
    element = {
        "oneOf": [
            _s("A lock id: taken in the set's mode."),
            _obj(
                "One element with its own mode, instance or parent.",
                {
                    "take": _s("A lock id."),
                    "mode": _s("The mode; the set's mode when omitted.", enum=ALL_MODES),
                    "instance": _s(
                        "Names one instance of the lock; two elements of one lock name two "
                        "distinct instances (SELECT ... WHERE id IN (a, b) FOR UPDATE)."
                    ),
                    "under": _s("For a lock within a parent: the parent instance, as on take:."),
                },
                ["take"],
            ),
        ]
    }
    set_take = _obj(
        "Take several locks, or several named instances of one lock, in one statement with no "
        "order the code controls (SELECT ... FROM a JOIN b ... FOR UPDATE without OF). The "
        "analysis takes the elements in every order; the page shows one step. At most four "
        "elements (LD030).",
        {
            "set": {
                "type": "array",
                "description": "The elements: lock ids, or mappings with take: and their own "
                "mode, instance or under.",
                "items": element,
                "minItems": 2,
            },
            "mode": _s(
                "The mode of every element that names none; each lock's only mode when omitted.",
                enum=ALL_MODES,
            ),
            "via": VIA,
            "note": _s("A note for the reader."),
            "option": _s(
                "nowait or skip locked, for every element.", enum=["nowait", "skip locked"]
            ),
            "try": _s(
                "As on take: a statement that never waits, and what the code does when a lock "
                "is not free.",
                minLength=1,
            ),
            "implicit": _s("The statement that takes the locks implicitly (UPDATE ... FROM)."),
        },
        ["set"],
    )
    loop = _obj(
        "Repeat steps for several instances.",
        {
            "loop": _s("What is looped over, e.g. 'each carrying pool'."),
            "order": _s(
                "The order of the iterations. The loop's element lock (the first lock taken in "
                "the body whose declared instance order this is) follows it; another lock's "
                "instances taken in the body come in no known order and may repeat (two "
                "elements can share one). `none`: the iterations come in no order at all, as "
                "the rows of one statement without ORDER BY do (`SELECT pg_advisory_xact_lock(k) "
                "FROM (subquery)`); ORDER BY on the lock's declared order makes it that order."
            ),
            "note": _s("A note."),
            "steps": steps,
        },
        ["loop", "steps"],
    )
    branches = _obj(
        "Alternatives; exactly one runs.",
        {
            "branches": {
                "type": "object",
                "description": "Each alternative's name and its steps.",
                "additionalProperties": steps,
                "minProperties": 1,
            },
            "note": _s("A note."),
        },
        ["branches"],
    )
    run = _obj(
        "Run another declared path inline, in this transaction.",
        {"run": _s("A path id."), "note": _s("A note.")},
        ["run"],
    )
    call = _obj(
        "A call that takes no lock of its own, or a step to name for the reader.",
        {"call": _s("What is called."), "note": _s("A note.")},
        ["call"],
    )
    external = _obj(
        "A network call outside the database.",
        {"external": _s("The call, e.g. 'Stripe: read the subscription'."), "note": _s("A note.")},
        ["external"],
    )
    write = _obj(
        "A write the rules care about. Naming the table it inserts into or the columns it "
        "updates lets lockdocs derive the FOR KEY SHARE a foreign-key check takes on the "
        "parent row (the parent lock declares references:).",
        {
            "write": _s("What is written, e.g. 'positions'."),
            "insert": _s("The table the write inserts rows into, e.g. core.entitlements."),
            "update": _s("The table whose rows the write updates."),
            "columns": _strings(
                "With update: the columns it sets; a foreign key is checked only when its "
                "column is among them."
            ),
            "instance": _s(
                "Names the parent row the written row references, when the path takes the "
                "parent's lock under an instance name."
            ),
            "via": VIA,
            "note": _s("A note."),
        },
        ["write"],
    )
    begin = _obj(
        "Open a new transaction (after a commit, or as a second one).",
        {"begin": _s("A transaction kind id."), "note": _s("A note.")},
        ["begin"],
    )
    commit = _obj(
        "End the transaction: commit, roll back, or return with it left open.",
        {
            "commit": _s("A note on the commit (may be empty)."),
        },
        ["commit"],
    )
    rollback = _obj("Roll back.", {"rollback": _s("A note.")}, ["rollback"])
    leave_open = _obj(
        "Return with the transaction still open; its locks stay held through later steps.",
        {"leave_open": _s("Who ends it and when.")},
        ["leave_open"],
    )
    release = _obj(
        "Release a session-scoped or in-memory lock.",
        {"release": _s("A lock id."), "via": VIA, "note": _s("A note.")},
        ["release"],
    )
    others = [
        set_take,
        loop,
        branches,
        run,
        call,
        external,
        write,
        begin,
        commit,
        rollback,
        leave_open,
        release,
    ]
    only = _s("Only on this backend (e.g. sqlite); the step is skipped on the others.")
    for shape in others:  # take declares its own backend
        shape["properties"]["backend"] = only
    return {
        "description": "One step of a path: a mapping named by its first key, or commit / rollback.",
        "oneOf": [
            {"enum": ["commit", "rollback"], "description": "End the transaction."},
            take,
            *others,
        ],
    }


PATH = _obj(
    "One code path: the locks it takes, in order.",
    {
        "title": _s("The path's name on the page."),
        "entry": VIA,
        "transaction": _s("The transaction kind it runs in; the file's default when omitted."),
        "standalone": {
            "type": "boolean",
            "description": "false for a path that only runs inside others (through run:).",
        },
        "summary": _s("Prose shown before the steps."),
        "notes": _s("Prose shown after the steps."),
        "issues": _issues(),
        "steps": {
            "type": "array",
            "description": "Steps in order.",
            "items": {"$ref": "#/$defs/step"},
        },
    },
    ["title", "steps"],
)


def _defs() -> dict[str, Any]:
    return {
        "key": KEY,
        "key_text": KEY_TEXT,
        "backend": BACKEND,
        "step": _step_schema(),
        "id": {"type": "string", "pattern": ID_PATTERN, "description": "A short slug id."},
    }


def locks_schema() -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "$id": "https://lockdocs.invalid/schema/locks.schema.json",
        "title": "lockdocs locks.yaml",
        "description": "The locks, transaction kinds, rules and exceptions of one application.",
        "type": "object",
        "additionalProperties": False,
        "required": ["lockdocs", "page", "locks"],
        "properties": {
            "lockdocs": {"const": 1, "description": "The format version; 1."},
            "page": PAGE,
            "issues": _s(
                "A link template for issue numbers, with {number} (an http, https or mailto "
                "URL; anything else leaves the numbers unlinked).",
                pattern=r"\{number\}",
            ),
            "checks": CHECKS,
            "rules_url": _s(
                "The URL of the lockdocs rules reference page: SARIF links each rule to its "
                "section (the URL plus #ld201, say). Omitted: no rule links.",
                pattern=r"^https?://",
            ),
            "replicas": {
                "description": (
                    "How many server processes run the paths at once: a number, or one per "
                    "backend ({sqlite: 1, postgres: 3}); 1 by default. With more than one, a "
                    "memory lock of scope process keeps nothing apart across processes."
                ),
                "oneOf": [
                    {"type": "integer", "minimum": 1},
                    {
                        "type": "object",
                        "propertyNames": {"pattern": ID_PATTERN},
                        "additionalProperties": {"type": "integer", "minimum": 1},
                    },
                ],
            },
            "limits": LIMITS,
            "paths": _s("The folder of path files, relative to locks.yaml; paths/ by default."),
            "code": {
                "type": "array",
                "description": (
                    "Where the project's SQL lives: glob patterns relative to locks.yaml (** "
                    "matches any depth). .sql files are read whole (sqlc query files, "
                    "migrations, function definitions); in .py and .go files every string "
                    "literal that parses as SQL is read. When set, lockdocs check compares the "
                    "locks this SQL takes with the declarations; nothing is scanned otherwise."
                ),
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
            },
            "transactions": {
                "type": "object",
                "description": "Transaction kinds by id.",
                "propertyNames": {"pattern": ID_PATTERN},
                "additionalProperties": TRANSACTION,
            },
            "locks": {
                "type": "object",
                "description": "Lock classes by id.",
                "propertyNames": {"pattern": ID_PATTERN},
                "additionalProperties": LOCK,
                "minProperties": 1,
            },
            "rules": {
                "type": "object",
                "description": "Rules every path keeps, by id.",
                "propertyNames": {"pattern": ID_PATTERN},
                "additionalProperties": RULE,
            },
            "exceptions": {
                "type": "array",
                "description": "Known deviations, each matching one finding or more.",
                "items": EXCEPTION,
            },
            "differences": {
                "type": "array",
                "description": "Differences between paths that break no rule (no finding to waive).",
                "items": DIFFERENCE,
            },
            "planned": {"type": "array", "description": "Planned work.", "items": PLANNED},
        },
        "$defs": _defs(),
    }


def paths_schema() -> dict[str, Any]:
    return {
        "$schema": DRAFT,
        "$id": "https://lockdocs.invalid/schema/paths.schema.json",
        "title": "lockdocs path file",
        "description": "One group of paths: the order each takes its locks.",
        "type": "object",
        "additionalProperties": False,
        "required": ["group", "paths"],
        "properties": {
            "lockdocs": {"const": 1, "description": "The format version; 1."},
            "group": _s("The group's title on the page."),
            "order": {
                "type": "integer",
                "description": "Where the group stands on the page (ascending).",
            },
            "intro": _s("Prose before the group's paths (as page.intro)."),
            "transaction": _s("The default transaction kind of the paths in this file."),
            "paths": {
                "type": "object",
                "description": "Paths by id; ids are unique across all files.",
                "propertyNames": {"pattern": ID_PATTERN},
                "additionalProperties": PATH,
                "minProperties": 1,
            },
        },
        "$defs": _defs(),
    }


def shipped_files() -> dict[str, str]:
    """The schema files shipped in the package, for editors (`$schema=` lines) to point at."""

    return {
        name: json.dumps(schema, indent=2, sort_keys=True) + "\n"
        for name, schema in (
            ("locks.schema.json", locks_schema()),
            ("paths.schema.json", paths_schema()),
        )
    }


if __name__ == "__main__":  # python -m lockdocs.schema.definition: rewrite the shipped files
    from pathlib import Path

    here = Path(__file__).parent
    for name, text in shipped_files().items():
        (here / name).write_text(text, encoding="utf-8")
