"""LD0xx: problems in the declaration files themselves.

These are found while loading (they stop the run with exit code 2); they are registered here so
they have codes, docs and examples like every other rule.
"""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.examples import LEDGER, LEDGER_PATH
from lockdocs.rules.registry import describe

_LOCKS = LEDGER

_PATH = LEDGER_PATH


# An advisory lock beside the ledger row, and a path that takes it (LD006's example).
_BOOKS = (
    _LOCKS
    + "  books:\n    title: Books lock\n    kind: advisory\n"
    + "    key: {hashtextextended: {text: books}}\n    modes: {exclusive: the nightly close}\n"
)
_CLOSE = "  close:\n    title: Close the books\n    steps:\n      - take: books\n"


def _replacing(bad: dict[str, str], good: dict[str, str]) -> dict[str, str | None]:
    """The fix as the whole project `good` (a file of `bad` that it lacks is removed)."""
    return {**dict.fromkeys(bad), **good}


def _doc(
    code: str,
    name: str,
    summary: str,
    what: str,
    why: str,
    bad: dict[str, str],
    good: dict[str, str] | None = None,
) -> None:
    describe(
        code,
        name,
        Severity.ERROR,
        summary=summary,
        what=what,
        why=why,
        example=bad,
        use_instead=_replacing(bad, good or {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH}),
    )


_doc(
    "LD001",
    "yaml-syntax",
    "The file is not valid YAML.",
    "Reports a YAML syntax error (including a tab used for indentation) at its line and column.",
    "Nothing else can be checked in a file that cannot be read.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH.replace("      - take", "\t- take")},
)
_doc(
    "LD002",
    "duplicate-key",
    "A mapping names the same key twice.",
    "Reports the second of two equal keys in one mapping.",
    "YAML keeps the last value silently, so a lock or path declared twice would lose one of "
    "its definitions without a word.",
    {
        "locks.yaml": _LOCKS + "  ledger:\n    title: Again\n    kind: row\n    table: t\n",
        "paths/ledger.yaml": _PATH,
    },
)
_doc(
    "LD003",
    "schema",
    "A value does not fit the format (wrong type, unknown field, missing field).",
    "Validates every file against the JSON Schema (`lockdocs schema`) and points at the value.",
    "A misspelt field would otherwise be ignored, and the page would silently miss a fact.",
    {
        "locks.yaml": _LOCKS.replace("title: Ledger row", "title: Ledger row\n    serialises: x"),
        "paths/ledger.yaml": _PATH,
    },
)
_doc(
    "LD004",
    "unknown-reference",
    "A step, rule or exception names a lock, path or kind that is not declared.",
    "Resolves every reference and suggests the closest declared name.",
    "A typo in a lock name would otherwise drop the step from the analysis.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH.replace("take: ledger", "take: ledgre")},
)
_doc(
    "LD005",
    "duplicate-id",
    "Two path files declare the same path id.",
    "Path ids are unique across all files, so links and exceptions name one path.",
    "Two paths with one id cannot be told apart on the page or in an exception.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH, "paths/more.yaml": _PATH},
)
_doc(
    "LD006",
    "invalid-mode",
    "A mode the lock's kind does not have, or the lock is not declared with.",
    "Checks every mode against the kind (advisory: shared/exclusive; row: FOR KEY SHARE ... FOR "
    "UPDATE; table: the eight LOCK TABLE modes; memory: shared/exclusive) and the lock's modes; "
    "also `option:` (NOWAIT, SKIP LOCKED) on a lock that is not a row lock, where a take that "
    "never waits is declared with `try:`, and `option:` and `try:` on one take.",
    "The analysis decides conflicts from modes; a wrong mode gives a wrong answer, and a "
    "NOWAIT on an advisory lock says nothing Postgres can do (pg_try_advisory_xact_lock is how "
    "such a take never waits).",
    {"locks.yaml": _BOOKS, "paths/ledger.yaml": _PATH + _CLOSE + "        option: nowait\n"},
    {
        "locks.yaml": _BOOKS,
        "paths/ledger.yaml": _PATH
        + _CLOSE
        + "        via: pg_try_advisory_xact_lock\n        try: the close waits for the next night\n",
    },
)
_doc(
    "LD007",
    "empty",
    "A file or a path holds nothing.",
    "Reports an empty file, a file with no document, or a path without steps.",
    "An empty file is almost always a mistake in a pull request.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH, "paths/empty.yaml": "\n"},
)
_doc(
    "LD008",
    "unreadable",
    "The file cannot be read as UTF-8 text.",
    "Reports the first byte that is not UTF-8, or a NUL byte.",
    "Declarations are text that people review; binary content has no place in them.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": "group: Caf\udce9\npaths: {}\n"},
)
_doc(
    "LD009",
    "too-large",
    "The file or the project is too large, nests too deeply, or expands an alias bomb.",
    "Refuses a file over 4 MiB, deeper than 64 levels, or expanding to more than 500,000 values, "
    "and a project beyond any real one: more than 10,000 path files, 32 MiB of declarations, "
    "50,000 paths or 500,000 steps (counted as the files are read, so the refusal comes "
    "before any analysis).",
    "The check runs in pre-commit hooks; hostile input must fail fast with bounded memory.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": "group: " + "[" * 70 + "]" * 70 + "\npaths: {}\n"},
)
_doc(
    "LD010",
    "run-cycle",
    "Paths run each other in a loop.",
    "Follows `run:` steps and reports a path that ends up running itself.",
    "Inlining such a path would never end; the code it describes would recurse forever.",
    {"locks.yaml": _LOCKS, "paths/ledger.yaml": _PATH + "      - run: post\n"},
)
_doc(
    "LD012",
    "outside-project",
    "A file or folder lockdocs would read or write leads outside the project.",
    "Refuses a `paths:` folder that is absolute, climbs out with '..' or resolves outside the "
    "project, a locks.yaml, path file, pyproject.toml or template that is a symlink to a "
    "file outside it (it is never read), and, in the drift check, a docs/ folder or generated "
    "file that leads outside (build writes only inside docs/).",
    "The check runs on pull requests: a symlink to /etc/shadow must not be read into an error "
    "message, and a build must not write or delete anything outside the project.",
    {"locks.yaml": _LOCKS + "paths: ../shared-paths\n", "paths/ledger.yaml": _PATH},
    {"locks.yaml": _LOCKS + "paths: paths\n", "paths/ledger.yaml": _PATH},
)
_doc(
    "LD030",
    "set-take",
    "A set take (`set:`) with more than four elements, or one that names an element twice.",
    "A `set:` step takes its elements in one statement, in no order the code controls, and the "
    "analysis follows every order of them: at most four elements (24 orders). Two elements "
    "are distinct locks, or distinct instances of one lock named with `instance:`.",
    "Five elements would be 120 orders per step; a statement that locks that many things is "
    "better declared as a loop with `order: none` over the instances of one lock. An element "
    "listed twice is one lock the statement takes once, which is a typo.",
    {
        "locks.yaml": _LOCKS,
        "paths/ledger.yaml": _PATH.replace("      - take: ledger", "      - set: [ledger, ledger]"),
    },
)
