"""The schema of locks.yaml's other sections: transaction kinds, rules, exceptions, the page
settings, differences, planned work, the checks to run and the project limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockdocs.schema.vocabulary import (
    ALL_MODES,
    ID_PATTERN,
    KINDS,
    issue_numbers,
    obj,
    string,
    strings,
)

TRANSACTION = obj(
    "A kind of transaction: how it is opened and what bounds its lock waits.",
    {
        "title": string("The kind's name in the code, e.g. entitlements.Materializing."),
        "opened_by": string("The helper that opens it, e.g. BeginMaterializing."),
        "first": obj(
            "The lock the kind takes as its first statement.",
            {"lock": string("A lock id."), "mode": string("The mode.", enum=ALL_MODES)},
            ["lock"],
        ),
        "isolation": string(
            "The isolation level.",
            enum=["read committed", "repeatable read", "serializable"],
        ),
        "lock_timeout": string(
            "The bound on each lock wait, e.g. '5s', or 'none' (waits until the context ends).",
            pattern=r"^(none|[0-9]+(ms|s|min))$",
        ),
        "on_timeout": string("What a wait past the bound surfaces as (e.g. SQLSTATE 55P03)."),
        "database": string(
            "The database this kind's transactions connect to, when the application uses "
            "several. Database locks (advisory, row, table) exclude only within one database; "
            "kinds that name none share one default database. `per call`: each call picks its "
            "database (a tenant's, say), so two runs of one path may be on two databases."
        ),
        "pooler": string(
            "`transaction` when a connection pooler between the application and Postgres "
            "hands out a server connection per transaction (PgBouncer's pool_mode = "
            "transaction). A session-scoped lock taken in this kind stays on that server "
            "connection when the transaction ends: the path no longer holds it (the analysis "
            "drops it there), the next client given that connection does, and an unlock sent "
            "later runs on another connection and unlocks nothing (LD303 says so).",
            enum=["transaction", "session"],
        ),
        "notes": string("Further prose."),
    },
)

RULE = obj(
    "An invariant every path keeps. Give exactly one check, or none for a rule the tool cannot check.",
    {
        "title": string("One line naming the rule."),
        "text": string("The rule in prose, as the page shows it."),
        "first": obj(
            "The lock a transaction must take first.",
            {
                "lock": string("A lock id."),
                "mode": string("The mode.", enum=ALL_MODES),
                "when_writes": strings("Only transactions that write one of these."),
                "transactions": strings("Only transactions of these kinds."),
            },
            ["lock"],
        ),
        "before": obj(
            "In one transaction, lock `first` is taken before lock `then`, never after.",
            {"first": string("A lock id."), "then": string("A lock id.")},
            ["first", "then"],
        ),
        "sorted": obj(
            "Several instances of the lock in one transaction follow its declared order.",
            {"lock": string("A lock id.")},
            ["lock"],
        ),
        "scope": obj(
            "Every lock of a kind has this scope.",
            {
                "kind": string("A lock kind.", enum=KINDS),
                "scope": string("The scope.", enum=["transaction", "session"]),
            },
            ["kind", "scope"],
        ),
        "order": obj(
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
        "lock_before_write": obj(
            "A write happens only while the lock is held.",
            {"lock": string("A lock id."), "writes": strings("Write names the rule covers.")},
            ["lock", "writes"],
        ),
        "issues": issue_numbers(),
        "example": {
            "type": "array",
            "description": (
                "Code that shows the rule, each shown as a code block under it (the pattern to "
                "follow, or a do and a don't)."
            ),
            "items": obj(
                "One piece of code.",
                {
                    "title": string("A caption, e.g. 'Do this' or 'Lock a unique name'."),
                    "language": string(
                        "The language, for highlighting, e.g. python.",
                        pattern=r"^[A-Za-z0-9_+-]{1,30}$",
                    ),
                    "code": string("The code, as it is.", minLength=1),
                },
                ["code"],
            ),
        },
    },
    ["title"],
)

EXCEPTION = obj(
    "A known deviation of a path from a rule: the finding it matches is reported as waived.",
    {
        "rule": string("A declared rule id or a check code (e.g. LD202)."),
        "path": string("The path id the deviation is in."),
        "lock": string("Narrows the waiver to findings about this lock."),
        "branch": string("Narrows the waiver to findings in this branch of the path."),
        "taker": string(
            "Narrows the waiver to findings about this taker (or statement) of the scanned "
            "code (LD7xx): its name as declared in taken_by or a via, or as the code names it."
        ),
        "issue": {"type": "integer", "minimum": 1, "description": "The issue that tracks it."},
        "title": string("One line for the page."),
        "why": string("Why it is safe, or what is planned."),
    },
    ["rule", "why"],
)

PAGE = obj(
    "The generated page.",
    {
        "title": string("The page title."),
        "audience": string("Who the page is for."),
        "summary": string("One sentence under the title."),
        "intro": string(
            "Prose before the tables: paragraphs and '-' lists, with `code` and "
            "[links](https://...) kept (http, https, mailto and #anchors only); any other "
            "markup shows literally."
        ),
        "output": string(
            "The page's file under docs/, e.g. database-locks.md.",
            pattern=r"^[A-Za-z0-9_./-]+\.md$",
        ),
        "key_intro": string("Prose before the key constructions (as intro)."),
        "order_intro": string("Prose before the paths (as intro)."),
    },
    ["title"],
)

DIFFERENCE = obj(
    "A way the paths differ that breaks no checked rule, recorded for the reader.",
    {
        "title": string("One line for the page."),
        "why": string("What differs, and why it is safe or what is planned."),
        "issue": {"type": "integer", "minimum": 1, "description": "The issue that tracks it."},
        "paths": strings("The path ids it concerns."),
        "locks": strings("The lock ids it concerns."),
    },
    ["title", "why"],
)

PLANNED = obj(
    "Planned work the page names.",
    {
        "issue": {"type": "integer", "minimum": 1, "description": "The issue number."},
        "title": string("What the work does."),
        "affects": strings("Lock ids or path ids the work changes."),
        "adds": {
            "type": "array",
            "description": (
                "The takes the work adds, so the build can tell when it has landed: once the "
                "paths already take them, the page would call done work planned, and the build "
                "stops until the item leaves planned:."
            ),
            "items": obj(
                "A lock a path will take.",
                {
                    "path": string("The path id."),
                    "lock": string("The lock id it will take."),
                    "mode": string("The mode it will take it in.", enum=ALL_MODES),
                    "holding": string("A lock id it will hold when it takes it."),
                },
                ["path", "lock"],
            ),
        },
    },
    ["issue", "title"],
)

SEVERITY = {
    "description": "error, warning, info or off (YAML reads a bare off as false: off too).",
    "enum": ["error", "warning", "info", "off", False],
}


def checks_schema(
    options: Mapping[str, Mapping[str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """`checks:`: per check code, a severity, or a mapping of its severity and its options.
    Loading accepts any option (it cannot know them); `options` (code -> option -> its
    schema, from the rule registry) gives each check the options it has and no other: the
    schema editors and the format reference read, and the one `lockdocs.config` checks the
    options against."""
    other = {"severity": SEVERITY}
    value = {
        "description": "The check's severity, or its severity and options.",
        "oneOf": [
            SEVERITY,
            {
                "type": "object",
                "description": (
                    "The check's severity (severity:) and its options, as the rules reference "
                    "lists them."
                ),
                "properties": other,
                **({"additionalProperties": False} if options is not None else {}),
            },
        ],
    }
    out: dict[str, Any] = {
        "type": "object",
        "description": (
            "Severity per check code (LD301: info): error, warning, info or off (YAML reads a "
            "bare off as false, which means off too); or a mapping of the severity and the "
            "check's options (LD103: {min_odds: 0.01}). A code that names no check is a warning "
            "(LD020)."
        ),
        "additionalProperties": value,
    }
    if options:
        out["properties"] = {
            code: {
                "description": f"{code}'s severity, or its severity and options.",
                "oneOf": [
                    SEVERITY,
                    obj(
                        f"{code}'s severity (severity:) and its options.",
                        {**other, **dict(sorted(opts.items()))},
                    ),
                ],
            }
            for code, opts in sorted(options.items())
        }
    return out


CHECKS = checks_schema()


OBSERVE = {
    "type": "object",
    "additionalProperties": False,
    "description": (
        "How `lockdocs observe` tells a logged transaction's path when it carries no "
        "lockdocs_path tag: sqlcommenter tags and application names mapped to path ids."
    ),
    "properties": {
        "tags": {
            "type": "object",
            "description": (
                "sqlcommenter keys (route, action, controller, ...) -> each value -> the path "
                "a transaction with that tag runs."
            ),
            "additionalProperties": {
                "type": "object",
                "additionalProperties": {"type": "string", "pattern": ID_PATTERN},
            },
        },
        "application_name": {
            "type": "object",
            "description": "application_name values -> the path such a session's transactions run.",
            "additionalProperties": {"type": "string", "pattern": ID_PATTERN},
        },
    },
}


LIMITS = obj(
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
        "analysis_work": {
            "type": "integer",
            "minimum": 1,
            "description": (
                "Work units the whole analysis of one run may take: flattening every path, "
                "the lock-order graph (an edge each), the graph of waits (its hops and arcs) "
                "and every cycle search (eight arcs followed each), each unit a few "
                "microseconds; 2,000,000 by default, six times what the 3,600 paths of "
                "bench/run.py's 100x synthetic project take, and a run of a few seconds to "
                "half a minute on the worst declarations. The page's comparison of the two "
                "ways of each pair of locks taken in both orders may make a tenth as many "
                "comparisons in all (past them it says it did not work a pair out)."
            ),
        },
        "analysis_seconds": {
            "type": "integer",
            "minimum": 0,
            "description": (
                "Seconds the whole analysis may run, a backstop to analysis_work (which stops "
                "at the same place on every machine; this depends on the machine's speed); "
                "120 by default, 0 for no bound on time."
            ),
        },
    },
)
