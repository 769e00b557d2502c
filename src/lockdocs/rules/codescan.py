"""LD7xx: the declarations against the code. With `code:` set, `lockdocs check` scans the SQL
it names (lockdocs.scan) and compares every lock found with the declarations.

The comparison lives in lockdocs/scan/compare.py (the scanner sits above the rules); the codes,
their docs and their examples are registered here like every other rule's. A finding located in
the SQL can be waived there with `-- lockdocs: ignore LD7xx reason`.
"""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.registry import describe

_LOCKS = """\
lockdocs: 1
page: {title: Locks}
code: ["db/*.sql"]
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for update: every writer}
    taken_by:
      - {name: LockAccount, kind: query}
"""

_QUERIES = """\
-- name: LockAccount :one
SELECT id, balance FROM app.accounts WHERE id = $1 FOR UPDATE;
"""

_ADVISORY = """\
lockdocs: 1
page: {title: Locks}
code: ["db/*.sql"]
locks:
  ledger:
    title: Ledger
    kind: advisory
    key: {hashtextextended: {prefix: "ledger:", parts: [ledger id]}}
    modes: {exclusive: posting}
    taken_by:
      - {name: LockLedger, kind: query}
"""

_LEDGER_SQL = """\
-- name: LockLedger :exec
SELECT pg_advisory_xact_lock(hashtextextended('ledger:' || $1::text, 0));
"""


describe(
    "LD701",
    "stale-taker",
    Severity.ERROR,
    summary="A declared taker names no code that takes the lock.",
    what="Looks up every taker in `taken_by` (its name and its `via`) in the scanned code: a sqlc "
    "query name, a SQL function, or the Python or Go function around a literal. Reports a taker "
    "that names nothing there, or names code that takes no lock of that kind; a take step's "
    "`via` is checked the same way when no taker of the lock covers it. A taker of kind "
    "`function` with no `via` is only looked up when source files are scanned.",
    why="A query that was renamed or deleted leaves the page naming code that no longer exists, and "
    "the lock order it documents is then a guess.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES.replace("LockAccount :one", "LockAccountForUpdate :one"),
    },
    use_instead={"locks.yaml": ("name: LockAccount,", "name: LockAccountForUpdate,")},
)

describe(
    "LD702",
    "undeclared-lock",
    Severity.ERROR,
    summary="The code takes a declared lock (or an explicit row lock) that no declaration names.",
    what="Reports, at the statement, a lock whose table or key belongs to a declared lock when no "
    "taker and no step's `via` names the statement, and an explicit locking clause on a table "
    "no lock declares. UPDATE and DELETE count with the row locks they take implicitly; on a "
    "table that no lock declares they are left alone.",
    why="A new `FOR UPDATE`, or a second writer of a serializing row, that the page does not list "
    "is exactly the lock a reader of the page will not think of when the next deadlock comes.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES
        + "\n-- name: DebitAccount :exec\n"
        + "UPDATE app.accounts SET balance = balance - $2 WHERE id = $1;\n",
    },
    use_instead={
        "locks.yaml": (
            "    modes: {for update: every writer}\n    taken_by:\n      - {name: LockAccount, kind: query}\n",
            "    modes: {for update: LockAccount, for no key update: DebitAccount}\n"
            "    taken_by:\n      - {name: LockAccount, kind: query, mode: for update}\n"
            "      - {name: DebitAccount, kind: statement, mode: for no key update}\n",
        )
    },
)

describe(
    "LD703",
    "mode-mismatch",
    Severity.ERROR,
    summary="The code takes the lock in another mode than declared.",
    what="Compares the strongest mode a statement takes a lock in with the taker's `mode:` (or the "
    "lock's modes, or the step's mode); also NOWAIT and SKIP LOCKED against `option:` and "
    "`options:`, a session-level advisory call against a transaction-scoped lock, and a "
    "`pg_try_advisory_*` call (which never waits) against a step that waits, or a waiting call "
    "against a step declared `try:`.",
    why="The lock-order analysis decides what waits for what from the declared modes: FOR UPDATE "
    "blocks a foreign-key check that FOR NO KEY UPDATE lets through, so a wrong mode gives a "
    "wrong answer.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES.replace("FOR UPDATE", "FOR NO KEY UPDATE"),
    },
    use_instead={"db/queries.sql": ("FOR NO KEY UPDATE", "FOR UPDATE")},
)

describe(
    "LD704",
    "table-mismatch",
    Severity.ERROR,
    summary="A taker's statement locks rows of another table than the lock's.",
    what="Reports, at the statement, a taker whose code takes row (or table) locks, none of them on "
    "the declared table.",
    why="The declaration then documents a lock the code does not take, and misses the one it does.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES.replace("app.accounts", "app.account_holds"),
    },
    use_instead={"db/queries.sql": ("app.account_holds", "app.accounts")},
)

describe(
    "LD705",
    "key-mismatch",
    Severity.ERROR,
    summary="A taker builds its advisory key differently from the declaration.",
    what="Reads the key expression of every advisory call (the hash function, the literal prefix, "
    "the runtime parts and the separators between them, the seed, a constant, the two-int4 "
    "form) and reports each way it differs from the declared `key:`, at the call.",
    why="Two families are kept apart only by their prefix and hash; a key built with 'ledger-' "
    "where 'ledger:' is declared is a different lock from the one the page analyses.",
    example={
        "locks.yaml": _ADVISORY,
        "db/queries.sql": _LEDGER_SQL.replace("'ledger:'", "'ledger-'"),
    },
    use_instead={"db/queries.sql": ("'ledger-'", "'ledger:'")},
)

describe(
    "LD706",
    "unknown-key",
    Severity.ERROR,
    summary="An advisory key matches no declared lock.",
    what="Reports an advisory call whose key construction matches no declared advisory lock and "
    "whose statement no declaration names; a key passed in as a parameter is reported the "
    "same way, since nothing ties it to a family.",
    why="An advisory lock the declarations do not know is invisible to the key-collision and "
    "lock-order checks.",
    example={
        "locks.yaml": _ADVISORY,
        "db/queries.sql": _LEDGER_SQL
        + "\n-- name: LockReport :exec\n"
        + "SELECT pg_advisory_xact_lock(hashtextextended('report:' || $1::text, 0));\n",
    },
    use_instead={
        "locks.yaml": _ADVISORY
        + """\
  report:
    title: Report
    kind: advisory
    key: {hashtextextended: {prefix: "report:", parts: [report id]}}
    modes: {exclusive: rendering}
    taken_by:
      - {name: LockReport, kind: query}
""",
    },
)

describe(
    "LD707",
    "bad-waiver",
    Severity.ERROR,
    summary="A waiver comment in the SQL gives no reason or names no LD7xx code.",
    what="Reads every `-- lockdocs:` comment; it must say `ignore`, one or more LD7xx codes, and "
    "why the finding does not apply.",
    why="A waiver without a reason hides a finding without telling the next reader why it is safe.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES
        + "\n-- name: DebitAccount :exec\n-- lockdocs: ignore LD702\n"
        + "UPDATE app.accounts SET balance = balance - $2 WHERE id = $1;\n",
    },
    use_instead={
        "db/queries.sql": (
            "ignore LD702\n",
            "ignore LD702 the debit only runs under LockAccount, which is declared\n",
        )
    },
)

describe(
    "LD708",
    "unused-waiver",
    Severity.ERROR,
    summary="A waiver comment in the code waives nothing.",
    what="Reports a `lockdocs: ignore` comment (in the SQL, or above a Python or Go call) whose "
    "statement has no finding of the codes it names, like an unused `noqa`. It weighs what a "
    "stale exception in locks.yaml (LD401) weighs.",
    why="A waiver left behind after a fix would silently cover the next, different problem of the "
    "same statement.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": "-- lockdocs: ignore LD703 written before the mode was fixed\n"
        + _QUERIES,
    },
    use_instead={
        "db/queries.sql": ("-- lockdocs: ignore LD703 written before the mode was fixed\n", "")
    },
)

describe(
    "LD709",
    "sql-syntax",
    Severity.ERROR,
    summary="A statement in the scanned SQL does not parse: its lines are not read.",
    what="Parses every statement with Postgres's own parser (pglast), function bodies included, and "
    "reports one that fails at the place it fails, naming the lines that are therefore not "
    "read. A lexer error (an unterminated quote, `1x`, a bad escape) costs only the statement "
    "that holds it; an unterminated quote or comment runs, as in Postgres, to the end of the "
    "file. The statement's sqlc name still counts: a taker of that name is 'not checked', not "
    "missing. It is an error, because a check must never pass on SQL it did not read; waive it "
    "above the statement (`-- lockdocs: ignore LD709 <reason>`) to accept that.",
    why="A statement lockdocs cannot read is a statement whose locks it cannot compare: an "
    "undeclared FOR UPDATE in it would pass unseen.",
    example={
        "locks.yaml": _LOCKS,
        "db/queries.sql": _QUERIES + "\n-- name: Broken :exec\nSELEC 1;\n",
    },
    use_instead={"db/queries.sql": ("SELEC 1;", "SELECT 1;")},
)

_PLPGSQL_LOCKS = _LOCKS.replace(
    "    taken_by:\n      - {name: LockAccount, kind: query}\n",
    "    options: [nowait]\n    taken_by:\n      - {name: app.debit, kind: sql-function}\n",
)
_PLPGSQL = """\
CREATE FUNCTION app.debit(p_id bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM app.accounts WHERE id = p_id FOR UPDATE NOWAIT;
EXCEPTION WHEN lock_timeout THEN
  RAISE NOTICE 'account % is busy', p_id;
END
$$;
"""

describe(
    "LD712",
    "unread-plpgsql",
    Severity.ERROR,
    summary="lockdocs cannot read a PL/pgSQL body (or a statement in one): its lines are not read.",
    what="Reads every PL/pgSQL body with pglast's PL/pgSQL parser, which compiles it as the server "
    "does but knows none of the database's types and tables; a body it refuses is read again "
    "with stand-in types for every parameter, result and variable (text or record, text[] for "
    "an array). What it still cannot read is reported at the function, naming the lines not "
    "read and the declared takers this leaves 'not checked' (never a false 'takes no lock'). "
    "Either the body has an error the server reports too (here an exception condition that "
    "does not exist: the one for a lock that cannot be taken is `lock_not_available`), or it "
    "needs what only the database knows; for the latter, waive it above the CREATE FUNCTION "
    "(`-- lockdocs: ignore LD712 <reason>`) once its locks are checked by hand. A syntax error "
    "in a body is LD709.",
    why="A body lockdocs cannot read is code whose locks it cannot compare: the declarations of "
    "that function are unverified, and the check must say so rather than pass.",
    example={
        "locks.yaml": _PLPGSQL_LOCKS,
        "db/functions.sql": _PLPGSQL,
    },
    use_instead={"db/functions.sql": ("WHEN lock_timeout", "WHEN lock_not_available")},
)

describe(
    "LD710",
    "unreadable-code",
    Severity.WARNING,
    summary="A file that `code:` matches cannot be scanned; it is skipped.",
    what="Reports a file that is not .sql, .py or .go, is not UTF-8, holds a NUL byte, is larger "
    "than 4 MiB, or (Python) does not parse.",
    why="A pattern that sweeps in other files reads nothing from them; saying so keeps the "
    "coverage figures honest.",
    example={
        "locks.yaml": _LOCKS.replace('["db/*.sql"]', '["db/*"]'),
        "db/queries.sql": _QUERIES,
        "db/README.md": "Queries for the accounts service.\n",
    },
    use_instead={"locks.yaml": ('["db/*"]', '["db/*.sql"]')},
)

describe(
    "LD711",
    "empty-code-glob",
    Severity.WARNING,
    summary="A `code:` pattern matches no file.",
    what="Reports, at the pattern in locks.yaml, a glob that matches no file under the project.",
    why="A misspelt folder would make the check compare the declarations with no code at all.",
    example={
        "locks.yaml": _LOCKS.replace('["db/*.sql"]', '["db/*.sql", "sql/*.sql"]'),
        "db/queries.sql": _QUERIES,
    },
    use_instead={"locks.yaml": ('["db/*.sql", "sql/*.sql"]', '["db/*.sql"]')},
)
