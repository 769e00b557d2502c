"""The schema of a path and of the steps it runs: takes and set takes, loops, branches, runs of
other paths, calls, writes, transaction boundaries and releases.

Steps nest (a call or a block holds steps), so the step is a `$defs` entry that refers to itself.
"""

from __future__ import annotations

from typing import Any

from lockdocs.schema.vocabulary import (
    ALL_MODES,
    ENTRY,
    RELEASE_VIA,
    VIA,
    WRITE_VIA,
    issue_numbers,
    obj,
    string,
    strings,
)


def step_schema() -> dict[str, Any]:
    steps = {"type": "array", "description": "Steps in order.", "items": {"$ref": "#/$defs/step"}}
    take = obj(
        "Take a lock (or take it again).",
        {
            "take": string("A lock id."),
            "mode": string("The mode; the lock's only mode when omitted.", enum=ALL_MODES),
            "via": VIA,
            "note": string("A note for the reader."),
            "instance": string(
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
            "connection": string(
                "The worker runs this take on another connection of its own (a second "
                "connection from the pool, a separate session), named here; its locks belong "
                "to that connection's transaction, which a commit: or rollback: with the same "
                "connection: ends. The worker waits while either connection does, but Postgres "
                "sees two sessions: a wait on one for a lock the other holds never ends, and a "
                "cycle through a hop that holds on one connection and waits on the other is a "
                "hang, not a 40P01."
            ),
            "inserted": {
                "type": "boolean",
                "description": (
                    "The row is one this transaction inserted itself (INSERT ... RETURNING, then "
                    "SELECT ... FOR UPDATE of it), with a key no other transaction can insert (a "
                    "sequence, a random UUID). Until the commit no other transaction can see it, "
                    "so the take never waits and nobody waits for it: it makes no lock-order "
                    "edge. (Two transactions that insert the same key do wait for each other: "
                    "that row is not private.)"
                ),
            },
            "claimed": {
                "type": "boolean",
                "description": (
                    "Exactly the instances an earlier take of the path locked, and no other: "
                    "the UPDATE ... FROM (SELECT ... ORDER BY id FOR UPDATE SKIP LOCKED) that "
                    "writes the rows its own subquery claimed. Every instance of the lock the "
                    "path holds is taken again in this mode (a row the claim skipped is not "
                    "touched); it never waits where the claim's mode covers this one, and is "
                    "never a new acquisition in some order."
                ),
            },
            "order": string(
                "The order this take follows relative to the path's other instances of the "
                "lock; inside a loop it overrides the loop's order. A named instance follows "
                "only its own order:, never the loop's."
            ),
            "under": string(
                "For a lock declared instances: {within: P}: the instance of P this one "
                "belongs to, by its instance: name, when the path holds several instances of "
                "P; by default the instance of P the path took last."
            ),
            "option": string("nowait or skip locked.", enum=["nowait", "skip locked"]),
            "try": string(
                "A take that never waits (pg_try_advisory_xact_lock, NOWAIT whose error the code "
                "handles, an in-process check that skips a held id): what the code does when "
                "the lock is not free (skips the run, retries later, gives up). The steps after "
                "it are what the path does once it has the lock. Never the waiting side of a "
                "deadlock; what it takes counts as held.",
                minLength=1,
            ),
            "implicit": string(
                "The statement that takes the lock implicitly (UPDATE, DELETE, a foreign-key check)."
            ),
            "changes_key": {
                "type": "boolean",
                "description": "The statement changes a key column or deletes, so FOR UPDATE is needed.",
            },
            "backend": string("Only on this backend."),
        },
        ["take"],
    )
    element = {
        "oneOf": [
            string("A lock id: taken in the set's mode."),
            obj(
                "One element with its own mode, instance or parent.",
                {
                    "take": string("A lock id."),
                    "mode": string("The mode; the set's mode when omitted.", enum=ALL_MODES),
                    "instance": string(
                        "Names one instance of the lock; two elements of one lock name two "
                        "distinct instances (SELECT ... WHERE id IN (a, b) FOR UPDATE)."
                    ),
                    "under": string(
                        "For a lock within a parent: the parent instance, as on take:."
                    ),
                },
                ["take"],
            ),
        ]
    }
    set_take = obj(
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
            "mode": string(
                "The mode of every element that names none; each lock's only mode when omitted.",
                enum=ALL_MODES,
            ),
            "via": VIA,
            "note": string("A note for the reader."),
            "option": string(
                "nowait or skip locked, for every element.", enum=["nowait", "skip locked"]
            ),
            "try": string(
                "As on take: a statement that never waits, and what the code does when a lock "
                "is not free.",
                minLength=1,
            ),
            "implicit": string("The statement that takes the locks implicitly (UPDATE ... FROM)."),
        },
        ["set"],
    )
    loop = obj(
        "Repeat steps for several instances.",
        {
            "loop": string("What is looped over, e.g. 'each carrying pool'."),
            "order": string(
                "The order of the iterations. The loop's element lock (the first lock taken in "
                "the body whose declared instance order this is) follows it; another lock's "
                "instances taken in the body come in no known order and may repeat (two "
                "elements can share one). `none`: the iterations come in no order at all, as "
                "the rows of one statement without ORDER BY do (`SELECT pg_advisory_xact_lock(k) "
                "FROM (subquery)`); ORDER BY on the lock's declared order makes it that order. "
                "Written as the sort's columns (`ascending (account_id, currency)`), it also "
                "orders every lock keyed by columns (the key's parts, or instances: {key: ...}) "
                "taken in the body: each take is the current row's, and a lock whose key is the "
                "sort's leading columns comes in that order."
            ),
            "note": string("A note."),
            "steps": steps,
        },
        ["loop", "steps"],
    )
    branches = obj(
        "Alternatives; exactly one runs.",
        {
            "branches": {
                "type": "object",
                "description": "Each alternative's name and its steps.",
                "additionalProperties": steps,
                "minProperties": 1,
            },
            "note": string("A note."),
        },
        ["branches"],
    )
    run = obj(
        "Run another declared path inline, in this transaction.",
        {"run": string("A path id."), "note": string("A note.")},
        ["run"],
    )
    call = obj(
        "A call that takes no lock of its own, or a step to name for the reader.",
        {"call": string("What is called."), "note": string("A note.")},
        ["call"],
    )
    external = obj(
        "A network call outside the database.",
        {
            "external": string("The call, e.g. 'Stripe: read the subscription'."),
            "note": string("A note."),
        },
        ["external"],
    )
    write = obj(
        "A write the rules care about. Naming the table it inserts into or the columns it "
        "updates lets lockdocs derive the FOR KEY SHARE a foreign-key check takes on the "
        "parent row (the parent lock declares references:).",
        {
            "write": string("What is written, e.g. 'positions'."),
            "insert": string("The table the write inserts rows into, e.g. core.entitlements."),
            "update": string("The table whose rows the write updates."),
            "columns": strings(
                "With update: the columns it sets; a foreign key is checked only when its "
                "column is among them."
            ),
            "instance": string(
                "Names the parent row the written row references, when the path takes the "
                "parent's lock under an instance name."
            ),
            "rewrites": {
                "type": "boolean",
                "description": (
                    "With update: whether it updates a row version this transaction already "
                    "created or updated (an insert, or an earlier update of the same row). "
                    "Postgres then checks every foreign key of the row again (FOR KEY SHARE on "
                    "each parent), even those whose column it leaves alone. By default lockdocs "
                    "derives that re-check where an earlier write of the same transaction "
                    "inserted into or updated the table; false says it is another row."
                ),
            },
            "via": WRITE_VIA,
            "note": string("A note."),
        },
        ["write"],
    )
    begin = obj(
        "Open a new transaction (after a commit, or as a second one).",
        {"begin": string("A transaction kind id."), "note": string("A note.")},
        ["begin"],
    )
    commit = obj(
        "End the transaction: commit, roll back, or return with it left open.",
        {
            "commit": string("A note on the commit (may be empty)."),
            "connection": string(
                "The other connection whose transaction this ends (take: ... connection:); the "
                "path's own when omitted."
            ),
        },
        ["commit"],
    )
    rollback = obj(
        "Roll back.",
        {
            "rollback": string("A note."),
            "connection": string("The other connection whose transaction this ends."),
        },
        ["rollback"],
    )
    leave_open = obj(
        "Return with the transaction still open; its locks stay held through later steps.",
        {"leave_open": string("Who ends it and when.")},
        ["leave_open"],
    )
    release = obj(
        "Release a session-scoped or in-memory lock.",
        {"release": string("A lock id."), "via": RELEASE_VIA, "note": string("A note.")},
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
    only = string("Only on this backend (e.g. sqlite); the step is skipped on the others.")
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


PATH = obj(
    "One code path: the locks it takes, in order.",
    {
        "title": string("The path's name on the page."),
        "entry": ENTRY,
        "transaction": string("The transaction kind it runs in; the file's default when omitted."),
        "standalone": {
            "type": "boolean",
            "description": "false for a path that only runs inside others (through run:).",
        },
        "summary": string("Prose shown before the steps."),
        "notes": string("Prose shown after the steps."),
        "issues": issue_numbers(),
        "steps": {
            "type": "array",
            "description": "Steps in order.",
            "items": {"$ref": "#/$defs/step"},
        },
    },
    ["title", "steps"],
)
