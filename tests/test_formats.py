"""The format for real systems (issue 14): keys the application computes or takes raw, foreign
keys whose FOR KEY SHARE is derived, databases, process-local locks and replicas. Bad input gets a
located error; good input resolves to what Postgres and the application would do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli, write_project
from lockdocs.keys import application_value, fnv1a

LOCKS = """\
lockdocs: 1
page: {title: Locks}
transactions:
  app: {database: app}
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: posting}
    references:
      - {table: app.entries, column: account_id}
  fleet:
    title: Fleet lockset
    kind: memory
    modes: {exclusive: processing}
  role:
    title: Role
    kind: advisory
    key: {integer: {of: the role's oid, bits: 32}}
    modes: {exclusive: grant changes}
"""

PATHS = """\
group: Money
paths:
  post:
    title: Post an entry
    transaction: app
    steps:
      - write: entry
        insert: app.entries
      - write: entry memo
        update: app.entries
        columns: [memo]
      - write: entry account
        update: app.entries
        columns: [account_id]
"""


# --- application hashes, computed exactly ----------------------------------------------------


def test_golang_migrate_key_is_its_own_test_vector() -> None:
    # golang-migrate's GenerateAdvisoryLockId: crc32.ChecksumIEEE(name) * uint32(1486364155),
    # in uint32; its test expects 1764327054 for "database_name".
    assert application_value("crc32", "database_name", 1486364155, 32, None) == 1764327054


def test_rails_key_does_not_wrap() -> None:
    # Rails: MIGRATOR_SALT * Zlib.crc32(database name), Ruby integers (no wrap below 2^63).
    import zlib

    expected = 2053462845 * zlib.crc32(b"app_production")
    assert expected < 2**63
    assert application_value("crc32", "app_production", 2053462845, None, None) == expected


def test_crc32_and_fnv_check_values() -> None:
    assert application_value("crc32", "123456789", None, None, None) == 0xCBF43926
    # The FNV reference vectors (Fowler, Noll, Vo): "a" and "foobar".
    assert fnv1a(b"a", 32) == 0xE40C292C
    assert fnv1a(b"foobar", 32) == 0xBF9CF968
    assert fnv1a(b"a", 64) == 0xAF63DC4C8601EC8C
    assert fnv1a(b"foobar", 64) == 0x85944171F73967E8
    # 64 bits are read signed by default, as a cast to int64 does
    assert application_value("fnv-1a 64", "a", None, None, None) == 0xAF63DC4C8601EC8C - 2**64
    assert application_value("fnv-1a 64", "a", None, None, False) is None


def _project(tmp_path: Path, locks: str = LOCKS, paths: str = PATHS) -> Path:
    return write_project(tmp_path / "p", {"locks.yaml": locks, "paths/p.yaml": paths})


def _export(root: Path) -> dict[str, object]:
    result = run_cli("export", "--root", str(root))
    assert result.code == 0, result.out + result.err
    data = json.loads(result.out)
    assert isinstance(data, dict)
    return data


def test_fixed_application_keys_are_exported_with_their_tag(tmp_path: Path) -> None:
    locks = LOCKS + (
        "  migrations:\n    title: Migrations\n    kind: advisory\n"
        "    key: {application: {function: GenerateAdvisoryLockId, algorithm: crc32, "
        "multiplier: 1486364155, bits: 32, text: database_name}}\n"
        "    modes: {exclusive: the migrator}\n"
    )
    data = _export(_project(tmp_path, locks))
    key = next(lk for lk in data["locks"] if lk["id"] == "migrations")["key"]  # type: ignore[index]
    assert key["value"] == 1764327054
    assert key["tag"] == [0, 1764327054, 1]
    assert key["sql"] == "GenerateAdvisoryLockId('database_name') * 1486364155"
    role = next(lk for lk in data["locks"] if lk["id"] == "role")["key"]  # type: ignore[index]
    assert role["sql"] == "<the role's oid>::bigint"
    assert role["bits"] == 32


# --- foreign keys --------------------------------------------------------------------------------


def test_foreign_key_share_is_derived_where_postgres_takes_it(tmp_path: Path) -> None:
    data = _export(_project(tmp_path))
    path = data["paths"][0]  # type: ignore[index]
    steps = path["steps"]
    kinds = [(s["type"], s.get("lock"), s.get("derived"), s.get("recheck")) for s in steps]
    assert kinds == [
        ("write", None, None, None),
        ("take", "account", "insert into app.entries (account_id references app.accounts)", None),
        # the memo leaves the key column alone, but the row is the one inserted above: Postgres
        # checks the key again (tests/test_pg_verdicts.py measures it)
        ("write", None, None, None),
        (
            "take",
            "account",
            "re-check by the update of app.entries (account_id references app.accounts), "
            "a row version this transaction already wrote",
            "app.entries",
        ),
        ("write", None, None, None),
        ("take", "account", "update of app.entries (account_id references app.accounts)", None),
    ]
    acq = path["acquisitions"]
    assert [(a["lock"], a["mode"], a["event"]) for a in acq] == [
        ("account", "for key share", "acquire"),
        ("account", "for key share", "retake"),  # the memo's re-check
        ("account", "for key share", "retake"),
    ]


def test_foreign_key_share_only_on_backends_with_row_locks(tmp_path: Path) -> None:
    locks = LOCKS.replace(
        "    references:\n",
        "    backends:\n      sqlite: {kind: memory, mode: exclusive}\n"
        "      postgres: {kind: row, mode: for no key update}\n    references:\n",
    )
    data = _export(_project(tmp_path, locks))
    takes = [s for s in data["paths"][0]["steps"] if s["type"] == "take"]  # type: ignore[index]
    assert {t["backend"] for t in takes} == {"postgres"}


# --- bad input -----------------------------------------------------------------------------------

# (id, locks, paths, code, file, line, column, words the message must contain)
BAD: list[tuple[str, str, str, str, str, int, int, str]] = [
    (
        "process-scope-on-a-row-lock",
        LOCKS.replace("    table: app.accounts\n", "    table: app.accounts\n    scope: process\n"),
        PATHS,
        "LD003",
        "locks.yaml",
        10,
        12,
        "lives in the database",
    ),
    (
        "memory-lock-transaction-scoped",
        LOCKS.replace("    kind: memory\n", "    kind: memory\n    scope: transaction\n"),
        PATHS,
        "LD003",
        "locks.yaml",
        16,
        12,
        "not released by a commit",
    ),
    (
        "cluster-wide-row-lock",
        LOCKS.replace(
            "    table: app.accounts\n", "    table: app.accounts\n    cluster_wide: true\n"
        ),
        PATHS,
        "LD003",
        "locks.yaml",
        10,
        5,
        "lives in one database",
    ),
    (
        "columns-without-update",
        LOCKS,
        PATHS.replace(
            "        insert: app.entries\n", "        insert: app.entries\n        columns: [x]\n"
        ),
        "LD003",
        "paths/p.yaml",
        9,
        9,
        "updates no table",
    ),
    (
        "insert-and-update",
        LOCKS,
        PATHS.replace(
            "        insert: app.entries\n",
            "        insert: app.entries\n        update: app.entries\n",
        ),
        "LD003",
        "paths/p.yaml",
        9,
        9,
        "not both",
    ),
    (
        "replicas-of-an-unknown-backend",
        LOCKS.replace("page: {title: Locks}\n", "page: {title: Locks}\nreplicas: {postgress: 2}\n"),
        PATHS,
        "LD004",
        "locks.yaml",
        3,
        12,
        "no lock has a backend 'postgress'",
    ),
    (
        "application-bits-over-64",
        LOCKS + "  big:\n    title: Big\n    kind: advisory\n"
        "    key: {application: {function: f, algorithm: crc32, bits: 65, text: x}}\n",
        PATHS,
        "LD003",
        "locks.yaml",
        25,
        62,
        "at most 64 bits",
    ),
    (
        "unsigned-64-bit-key",
        LOCKS + "  big:\n    title: Big\n    kind: advisory\n"
        "    key: {application: {function: f, algorithm: fnv-1a 64, signed: false, text: a}}\n",
        PATHS,
        "LD003",
        "locks.yaml",
        25,
        11,
        "no bigint holds it",
    ),
    (
        "try-and-option",
        LOCKS,
        PATHS.replace(
            "    steps:\n",
            "    steps:\n      - take: account\n        option: nowait\n        try: skip it\n",
        ),
        "LD006",
        "paths/p.yaml",
        9,
        9,
        "both option: nowait and try:",
    ),
    (
        "nowait-on-advisory-names-try",
        LOCKS,
        PATHS.replace("    steps:\n", "    steps:\n      - take: role\n        option: nowait\n"),
        "LD006",
        "paths/p.yaml",
        8,
        17,
        "applies to row locks only",
    ),
    (
        "try-without-words",
        LOCKS,
        PATHS.replace("    steps:\n", "    steps:\n      - take: role\n        try: ''\n"),
        "LD003",
        "paths/p.yaml",
        8,
        14,
        "must not be empty",
    ),
    (
        "integer-bits-not-32-or-64",
        LOCKS.replace("bits: 32}", "bits: 16}"),
        PATHS,
        "LD003",
        "locks.yaml",
        20,
        47,
        "16",
    ),
]


@pytest.mark.parametrize(
    ("locks", "paths", "code", "file", "line", "column", "words"),
    [c[1:] for c in BAD],
    ids=[c[0] for c in BAD],
)
def test_bad_input_is_located(
    tmp_path: Path,
    locks: str,
    paths: str,
    code: str,
    file: str,
    line: int,
    column: int,
    words: str,
) -> None:
    root = _project(tmp_path, locks, paths)
    result = run_cli("check", "--root", str(root), "--format", "json")
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    diags = [d for d in result.json()["diagnostics"] if d["code"] == code]
    assert diags, result.out
    d = diags[0]
    assert (d["file"], d["line"], d["column"]) == (file, line, column), d
    assert words in d["message"], d["message"]
    assert d["hint"], "every error carries a hint"
    assert not (root / "docs").exists()


# --- on the page ---------------------------------------------------------------------------------

PAGE_LOCKS = """\
lockdocs: 1
page: {title: Locks}
replicas: 3
transactions:
  app: {database: app, lock_timeout: 2s}
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: posting}
    references:
      - {table: app.entries, column: account_id}
  fleet:
    title: Fleet lockset
    kind: memory
    modes: {exclusive: processing}
  role:
    title: Role
    kind: advisory
    cluster_wide: true
    key: {int4pair: {first: 7, second: {integer: {of: the role's oid}}}}
    modes: {exclusive: grant changes}
  migrations:
    title: Migrations
    kind: advisory
    key:
      application:
        function: GenerateAdvisoryLockId
        algorithm: crc32
        multiplier: 1486364155
        bits: 32
        text: database_name
    modes: {exclusive: the migrator}
"""

PAGE_PATHS = """\
group: Money
paths:
  post:
    title: Post an entry
    transaction: app
    steps:
      - take: role
      - write: entry
        insert: app.entries
      - write: entry memo
        update: app.entries
        columns: [memo]
  sweep:
    title: Sweep the grants
    transaction: app
    steps:
      - take: role
        via: pg_try_advisory_xact_lock
        try: the sweep leaves the role to its next round
"""


def test_the_page_shows_what_is_derived_and_where_it_holds(tmp_path: Path) -> None:
    root = _project(tmp_path, PAGE_LOCKS, PAGE_PATHS)
    result = run_cli("build", "--root", str(root), "--no-svg")
    assert result.code == 0, result.out + result.err
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    for line in (
        "3 server processes run at once, so an in-process lock keeps out the tasks of its own "
        "process only.",
        "- **Database:** the key names an object of the whole cluster, but an advisory lock "
        "excludes only within one database",
        "- **Foreign keys:** `app.entries.account_id` references it. Postgres takes FOR KEY "
        "SHARE on the row when a referencing row is inserted, updated with a new key, or updated "
        "again by the transaction that wrote it, as the writes of [Post an entry](#path-post) do.",
        "- **Key:** `1764327054`; in `pg_locks` classid 0, objid 1764327054, objsubid 1; built "
        "as [an application hash of a fixed name](#keys-application-fixed)",
        "| **app**{#tx-app} | — | — | `lock_timeout` `2s` | On the database `app`. |",
        "2. Writes entry (inserts into `app.entries`)\n",
        "3. Takes [Account row](#lock-account) **FOR KEY SHARE** in the foreign-key check of that "
        "write, which Postgres makes itself\n",
        # the memo leaves account_id alone, but on the row inserted above: Postgres checks again
        "4. Writes entry memo (updates `app.entries`: `memo`)\n",
        "5. Takes [Account row](#lock-account) **FOR KEY SHARE** in the foreign-key check "
        "Postgres repeats because this transaction already wrote the row, already held\n",
        "1. Takes [Role](#lock-role) **exclusive** through `pg_try_advisory_xact_lock`, **only "
        "if it is free** (it never waits; when it is not, the sweep leaves the role to its next "
        "round)",
    ):
        assert line in page, line
    exported = json.loads(run_cli("export", "--root", str(root)).out)
    sweep = next(p for p in exported["paths"] if p["id"] == "sweep")
    assert sweep["steps"][0]["try"] == "the sweep leaves the role to its next round"
    assert [a["option"] for a in sweep["acquisitions"] if a["lock"] == "role"] == ["try"]


# --- try: against the code ---------------------------------------------------------------------

TRY_LOCKS = """\
lockdocs: 1
page: {title: Locks}
code: [db/*.sql]
locks:
  tenant:
    title: Tenant
    kind: advisory
    key: {hashtextextended: {prefix: "tenant:", parts: [tenant id]}}
    modes: {exclusive: changes to the tenant}
"""

TRY_PATHS = """\
group: Tenants
paths:
  sweep:
    title: Sweep a tenant
    steps:
      - take: tenant
        via: TrySweepTenant
        try: the sweep leaves the tenant to its next round
"""

TRY_SQL = """\
-- name: TrySweepTenant :one
SELECT pg_try_advisory_xact_lock(hashtextextended('tenant:' || $1::text, 0));
"""


def test_try_is_compared_with_the_code(tmp_path: Path) -> None:
    files = {"locks.yaml": TRY_LOCKS, "paths/p.yaml": TRY_PATHS, "db/q.sql": TRY_SQL}
    agreed = write_project(tmp_path / "agreed", files)
    result = run_cli("check", "--no-drift", "--root", str(agreed))
    assert result.code == 0, result.out
    # the step waits, the code tries: the analysis would invent waits
    waits = write_project(
        tmp_path / "waits",
        {
            **files,
            "paths/p.yaml": TRY_PATHS.replace("        try: the sweep leaves", "        note:"),
        },
    )
    result = run_cli("check", "--no-drift", "--root", str(waits), "--format", "json")
    found = [d for d in result.json()["diagnostics"] if d["code"] == "LD703"]
    assert [(d["file"], d["line"]) for d in found] == [("db/q.sql", 2)], result.out
    assert "never waits" in found[0]["message"] and "try:" in found[0]["hint"]
    # the step tries, the code waits
    blocking = write_project(
        tmp_path / "blocking",
        {
            **files,
            "db/q.sql": TRY_SQL.replace("pg_try_advisory_xact_lock", "pg_advisory_xact_lock"),
        },
    )
    result = run_cli("check", "--no-drift", "--root", str(blocking), "--format", "json")
    found = [d for d in result.json()["diagnostics"] if d["code"] == "LD703"]
    assert len(found) == 1 and "declared try:" in found[0]["message"], result.out


# --- parent gates --------------------------------------------------------------------------------

PARENT_LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  run:
    title: Run row
    kind: row
    table: app.runs
    modes: {for no key update: processing}
  job:
    title: Job row
    kind: row
    table: app.jobs
    modes: {for no key update: processing}
    instances: {within: run}
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: billing}
"""

PARENT_PATHS = """\
group: Runs
paths:
  finish-job:
    title: Finish a job, then bill it
    steps:
      - take: run
        instance: this run
      - take: job
        under: this run
      - take: ledger
  bill-run:
    title: Bill a run, then close its job
    steps:
      - take: run
      - take: ledger
      - take: job
"""

PARENT_BAD: list[tuple[str, str, str, str, str, int, int, str]] = [
    (
        "within-an-unknown-lock",
        PARENT_LOCKS.replace("within: run", "within: rnu"),
        PARENT_PATHS,
        "LD004",
        "locks.yaml",
        14,
        25,
        "unknown lock 'rnu'",
    ),
    (
        "within-comes-back",
        PARENT_LOCKS.replace(
            "    modes: {for no key update: processing}\n  job:",
            "    modes: {for no key update: processing}\n    instances: {within: job}\n  job:",
        ),
        PARENT_PATHS,
        "LD003",
        "locks.yaml",
        9,
        25,
        "within: comes back to 'run': run -> job -> run",
    ),
    (
        "within-a-singleton",
        PARENT_LOCKS.replace("    table: app.runs\n", "    table: app.runs\n    singleton: true\n"),
        PARENT_PATHS,
        "LD003",
        "locks.yaml",
        15,
        25,
        "one lock for the whole database",
    ),
    (
        "under-without-within",
        PARENT_LOCKS,
        PARENT_PATHS.replace(
            "      - take: ledger\n  bill", "      - take: ledger\n        under: x\n  bill"
        ),
        "LD003",
        "paths/p.yaml",
        11,
        9,
        "declares no parent",
    ),
]


@pytest.mark.parametrize(
    ("locks", "paths", "code", "file", "line", "column", "words"),
    [c[1:] for c in PARENT_BAD],
    ids=[c[0] for c in PARENT_BAD],
)
def test_bad_parent_is_located(
    tmp_path: Path,
    locks: str,
    paths: str,
    code: str,
    file: str,
    line: int,
    column: int,
    words: str,
) -> None:
    root = _project(tmp_path, locks, paths)
    result = run_cli("check", "--root", str(root), "--format", "json")
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    diags = [d for d in result.json()["diagnostics"] if d["code"] == code]
    assert diags, result.out
    d = diags[0]
    assert (d["file"], d["line"], d["column"]) == (file, line, column), d
    assert words in d["message"], d["message"]
    assert d["hint"]


def test_a_parent_gate_on_the_page_and_in_the_export(tmp_path: Path) -> None:
    root = _project(tmp_path, PARENT_LOCKS, PARENT_PATHS)
    assert run_cli("check", "--no-drift", "--root", str(root)).code == 0
    # the same paths without the parent: job and ledger the other way round is a deadlock
    bare = _project(
        tmp_path / "bare",
        PARENT_LOCKS.replace("    instances: {within: run}\n", ""),
        PARENT_PATHS.replace("        under: this run\n", ""),
    )
    found = run_cli("check", "--no-drift", "--root", str(bare), "--format", "json").json()
    assert [d["code"] for d in found["diagnostics"]] == ["LD201"]
    assert run_cli("build", "--root", str(root), "--no-svg").code == 0
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    for line in (
        "- **Belongs to:** one [Run row](#lock-run) each.",
        "- **Owns:** the instances of [Job row](#lock-job);",
        "2. Takes [Job row](#lock-job) of [Run row](#lock-run) (this run) **FOR NO KEY UPDATE**",
        "They never deadlock: each takes Job row only while holding the Run row it belongs to, "
        "in modes that conflict, so both would have to hold that Run row at once.",
    ):
        assert line in page, line
    exported = json.loads(run_cli("export", "--root", str(root)).out)
    job = next(lk for lk in exported["locks"] if lk["id"] == "job")
    assert job["within"] == "run"
    finish = next(p for p in exported["paths"] if p["id"] == "finish-job")
    assert finish["steps"][1]["under"] == "this run"


# --- set takes: one statement, several locks, no order ------------------------------------------

SET_LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    instances: {order: ascending id}
    modes: {for no key update: posting, for share: reports}
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: posting}
  pool:
    title: Pool key
    kind: advisory
    key: {hashtextextended: {prefix: "pool:", parts: [pool_id]}}
    instances: {order: ascending pool_id}
    modes: {exclusive: settlement}
"""

SET_PATHS = """\
group: Money
paths:
  close:
    title: Close a ledger
    steps:
      - set: [ledger, {take: account, mode: for no key update}]
        via: close_ledger
        note: one join without OF
  sweep:
    title: Sweep pools
    steps:
      - loop: each pool key the subquery returns
        order: none
        steps:
          - take: pool
"""

SET_BAD: list[tuple[str, str, str, str, str, int, int, str]] = [
    (
        "set-of-five",
        SET_LOCKS,
        SET_PATHS.replace(
            "      - set: [ledger, {take: account, mode: for no key update}]\n",
            "      - set:\n"
            + "".join(f"          - {{take: account, instance: a{i}}}\n" for i in range(5)),
        ),
        "LD030",
        "paths/p.yaml",
        6,
        9,
        "takes 5 locks in one statement; lockdocs follows at most 4",
    ),
    (
        "set-names-an-element-twice",
        SET_LOCKS,
        SET_PATHS.replace("set: [ledger, {take", "set: [ledger, ledger, {take"),
        "LD030",
        "paths/p.yaml",
        6,
        23,
        "element 2 of this set takes the same instance of 'ledger' as element 1",
    ),
    (
        "set-of-one",
        SET_LOCKS,
        SET_PATHS.replace(
            "set: [ledger, {take: account, mode: for no key update}]", "set: [ledger]"
        ),
        "LD003",
        "paths/p.yaml",
        6,
        14,
        "a set takes several locks in one statement; this one lists 1",
    ),
    (
        "set-element-without-take",
        SET_LOCKS,
        SET_PATHS.replace("{take: account, mode: for no key update}", "{mode: for share}"),
        "LD003",
        "paths/p.yaml",
        6,
        23,
        "missing required field 'take'",
    ),
    (
        "set-element-a-number",
        SET_LOCKS,
        SET_PATHS.replace("{take: account, mode: for no key update}", "7"),
        "LD003",
        "paths/p.yaml",
        6,
        23,
        "a number is not an element of a set",
    ),
    (
        "set-of-an-unknown-lock",
        SET_LOCKS,
        SET_PATHS.replace("set: [ledger,", "set: [ledgre,"),
        "LD004",
        "paths/p.yaml",
        6,
        15,
        "unknown lock 'ledgre'",
    ),
    (
        "set-element-in-an-undeclared-mode",
        SET_LOCKS,
        SET_PATHS.replace("mode: for no key update}", "mode: for update}"),
        "LD006",
        "paths/p.yaml",
        6,
        45,
        "not declared with mode 'for update'",
    ),
    (
        "instance-order-none",
        SET_LOCKS.replace("{order: ascending id}", "{order: none}"),
        SET_PATHS,
        "LD003",
        "locks.yaml",
        8,
        24,
        "declares its instance order as 'none'",
    ),
]


@pytest.mark.parametrize(
    ("locks", "paths", "code", "file", "line", "column", "words"),
    [c[1:] for c in SET_BAD],
    ids=[c[0] for c in SET_BAD],
)
def test_bad_set_is_located(
    tmp_path: Path,
    locks: str,
    paths: str,
    code: str,
    file: str,
    line: int,
    column: int,
    words: str,
) -> None:
    root = _project(tmp_path, locks, paths)
    result = run_cli("check", "--root", str(root), "--format", "json")
    assert result.code == 2, result.out + result.err
    assert "Traceback" not in result.err
    diags = [d for d in result.json()["diagnostics"] if d["code"] == code]
    assert diags, result.out
    d = diags[0]
    assert (d["file"], d["line"], d["column"]) == (file, line, column), d
    assert words in d["message"], d["message"]
    assert d["hint"]
    assert not (root / "docs").exists()


def test_a_set_take_is_one_step_on_the_page(tmp_path: Path) -> None:
    """The analysis walks every order of a set; the page, the export and the diagram show the
    one statement the code runs."""
    root = _project(tmp_path, SET_LOCKS, SET_PATHS)
    found = run_cli("check", "--no-drift", "--root", str(root), "--format", "json").json()
    by_code = {d["code"]: d for d in found["diagnostics"]}
    # two closes meet in opposite orders; the sweep's pool keys come in no order
    assert sorted(by_code) == ["LD201", "LD202"], found
    assert "takes ledger, account in one statement, in no order" in by_code["LD201"]["hint"]
    assert "in no order (order: none)" in by_code["LD202"]["message"]
    assert run_cli("build", "--root", str(root)).code == 0
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert (
        "1. Takes [Ledger row](#lock-ledger) **FOR NO KEY UPDATE** and [Account row](#lock-account) "
        "**FOR NO KEY UPDATE** in one statement, **in no order** (the statement locks them as it "
        "finds them) through `close_ledger` — one join without OF"
    ) in page
    assert "1. For each pool key the subquery returns, in no particular order:" in page
    # no trace of the orders the analysis walks
    assert "ledger then account" not in page and "One of" not in page
    exported = json.loads(run_cli("export", "--root", str(root)).out)
    close = next(p for p in exported["paths"] if p["id"] == "close")
    (step,) = close["steps"]
    assert step["type"] == "set"
    assert [(t["lock"], t["mode"]) for t in step["takes"]] == [
        ("ledger", "for no key update"),
        ("account", "for no key update"),
    ]
    dots = "".join(p.read_text(encoding="utf-8") for p in (root / "docs").rglob("*.dot"))
    if dots:
        assert "in one statement," in dots


def test_a_re_check_no_walk_reaches_is_not_on_the_page(tmp_path: Path) -> None:
    """An update that leaves the key alone on a row its transaction has not written: Postgres
    takes no foreign-key lock, so the page, the lock's entry and the diagram show none (they
    once said "no lock" in the title and "Takes FOR KEY SHARE" in the step below it)."""
    paths = (
        "group: Money\npaths:\n  memo:\n    title: Change a memo\n    transaction: app\n"
        "    steps:\n      - write: entry memo\n        update: app.entries\n"
        "        columns: [memo]\n"
    )
    root = _project(tmp_path, LOCKS, paths)
    assert run_cli("build", "--root", str(root)).code == 0
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert '"**Change a memo**: no lock"' in page
    assert (
        "1. Writes entry memo (updates `app.entries`: `memo`); it leaves `account_id` alone on a "
        "row this transaction has not written before, so Postgres takes no foreign-key lock on "
        "[Account row](#lock-account)\n"
    ) in page
    assert "FOR KEY SHARE**" not in page
    assert "Taken with no other lock in" not in page
    assert "as the writes of" not in page
    dot = (root / "docs" / "database-locks" / "paths" / "memo.dot").read_text(encoding="utf-8")
    assert "Account row" not in dot
    # the export still lists the take the declarations imply, with the table it depends on
    steps = _export(root)["paths"][0]["steps"]  # type: ignore[index]
    assert [(s["type"], s.get("recheck")) for s in steps] == [
        ("write", None),
        ("take", "app.entries"),
    ]
    assert _export(root)["paths"][0]["acquisitions"] == []  # type: ignore[index]
