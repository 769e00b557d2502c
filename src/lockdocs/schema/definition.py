"""The JSON Schema (draft 2020-12) of `locks.yaml` and of each `paths/*.yaml`, built in code.

Written once, here and in the modules it assembles (vocabulary, locks, sections, steps), so both
shipped schema files, the format reference page and the editor completion come from one source;
`tests/test_schema.py` keeps the shipped JSON files equal to it and the model in step with it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lockdocs.schema.locks import BACKEND, KEY, KEY_TEXT, LOCK
from lockdocs.schema.sections import (
    CHECKS,
    DIFFERENCE,
    EXCEPTION,
    LIMITS,
    OBSERVE,
    PAGE,
    PLANNED,
    RULE,
    TRANSACTION,
    checks_schema,
)
from lockdocs.schema.steps import PATH, step_schema
from lockdocs.schema.vocabulary import DRAFT, ID_PATTERN, string


def defs() -> dict[str, Any]:
    return {
        "key": KEY,
        "key_text": KEY_TEXT,
        "backend": BACKEND,
        "step": step_schema(),
        "id": {"type": "string", "pattern": ID_PATTERN, "description": "A short slug id."},
    }


# The options of each check (code -> option -> its schema), which only the rule registry knows:
# given, `checks:` lists them (the schema editors and the format reference read); loading
# validates without them, and lockdocs.config checks the options against them.
CheckOptions = Mapping[str, Mapping[str, dict[str, Any]]]


def locks_schema(check_options: CheckOptions | None = None) -> dict[str, Any]:
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
            "issues": string(
                "A link template for issue numbers, with {number} (an http, https or mailto "
                "URL; anything else leaves the numbers unlinked).",
                pattern=r"\{number\}",
            ),
            "checks": checks_schema(check_options) if check_options is not None else CHECKS,
            "rules_url": string(
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
            "paths": string("The folder of path files, relative to locks.yaml; paths/ by default."),
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
            "code_placeholders": {
                "enum": ["psycopg"],
                "description": (
                    "How the .sql files of code: write query parameters, when not as Postgres "
                    "reads them: psycopg (%s and %(name)s, %% for a percent sign), read as $1. "
                    "Python literals are read this way always."
                ),
            },
            "observe": OBSERVE,
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
        "$defs": defs(),
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
            "group": string("The group's title on the page."),
            "order": {
                "type": "integer",
                "description": "Where the group stands on the page (ascending).",
            },
            "intro": string("Prose before the group's paths (as page.intro)."),
            "transaction": string("The default transaction kind of the paths in this file."),
            "paths": {
                "type": "object",
                "description": "Paths by id; ids are unique across all files.",
                "propertyNames": {"pattern": ID_PATTERN},
                "additionalProperties": PATH,
                "minProperties": 1,
            },
        },
        "$defs": defs(),
    }


def shipped_files(check_options: CheckOptions | None = None) -> dict[str, str]:
    """The schema files shipped in the package, for editors (`$schema=` lines) to point at;
    `python -m lockdocs.devdocs` writes them."""

    return {
        name: json.dumps(schema, indent=2, sort_keys=True) + "\n"
        for name, schema in (
            ("locks.schema.json", locks_schema(check_options)),
            ("paths.schema.json", paths_schema()),
        )
    }
