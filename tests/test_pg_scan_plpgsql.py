"""PL/pgSQL that PostgreSQL 15 compiles is read (issue 25 item 3): a function that SELECTs INTO
an enum-typed variable among others, and one that takes an array of a composite type. pglast's
PL/pgSQL reader knows no database, so it refused both ("record variable cannot be part of
multiple-item INTO list", "PL/pgSQL functions cannot accept type _record", "LookupExplicitNamespace
only supports pg_catalog and public"); lockdocs read the bodies as skipped, and reported a
false LD701 ("takes no row lock") while coverage counted every statement read.

The functions are created on the live server (check_function_bodies is on: the server compiles
them), and the locks they take are measured there: which NOWAIT probe another session's row lock
refuses tells FOR UPDATE from FOR NO KEY UPDATE. Then lockdocs must find exactly those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import errors

from conftest import write_project
from lockdocs.api import check
from lockdocs.scan.collect import scan_text

SCHEMA = """\
CREATE SCHEMA app;
CREATE TYPE app.job_state AS ENUM ('queued', 'running', 'done');
CREATE TYPE app.job_item AS (job_id bigint, priority int);
CREATE TYPE public.job_state AS ENUM ('queued', 'running', 'done');
CREATE TYPE public.job_item AS (job_id bigint, priority int);
CREATE TABLE app.jobs (
  id bigint PRIMARY KEY,
  state app.job_state NOT NULL DEFAULT 'queued',
  attempts int NOT NULL DEFAULT 0
);
INSERT INTO app.jobs (id) VALUES (1), (2);
"""
FUNCTIONS = """\
-- Qualified types: the reader does not look up a schema but pg_catalog and public.
CREATE FUNCTION app.claim_job(p_id bigint) RETURNS app.job_state LANGUAGE plpgsql AS $$
DECLARE
  v_state app.job_state;
  v_attempts int;
  r record;
BEGIN
  SELECT state, attempts INTO v_state, v_attempts FROM app.jobs WHERE id = p_id FOR UPDATE;
  SELECT * INTO r FROM app.jobs WHERE id = p_id;
  UPDATE app.jobs SET state = 'running', attempts = v_attempts + 1 WHERE id = p_id;
  RETURN v_state;
END
$$;

CREATE FUNCTION app.requeue(p_items app.job_item[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  it app.job_item;
  n int := 0;
BEGIN
  FOREACH it IN ARRAY p_items LOOP
    PERFORM 1 FROM app.jobs WHERE id = it.job_id FOR NO KEY UPDATE;
    n := n + it.priority;
  END LOOP;
  RETURN n;
END
$$;

-- Unqualified types of public: the reader takes them for records.
CREATE FUNCTION app.claim_job_public(p_id bigint) RETURNS job_state LANGUAGE plpgsql AS $$
DECLARE
  v_state job_state;
  v_attempts int;
BEGIN
  SELECT state::text::job_state, attempts INTO v_state, v_attempts
  FROM app.jobs WHERE id = p_id FOR UPDATE;
  RETURN v_state;
END
$$;

CREATE FUNCTION app.requeue_public(p_items job_item[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM app.jobs WHERE id = p_items[1].job_id FOR NO KEY UPDATE;
END
$$;
"""
LOCKS = """\
lockdocs: 1
page: {title: Jobs}
code: ["db/*.sql"]
locks:
  job-row:
    title: Job row
    kind: row
    table: app.jobs
    modes: {for update: claiming a job, for no key update: requeueing}
    taken_by:
      - {name: app.claim_job, kind: sql-function, mode: for update}
      - {name: app.requeue, kind: sql-function, mode: for no key update}
      - {name: app.claim_job_public, kind: sql-function, mode: for update}
      - {name: app.requeue_public, kind: sql-function, mode: for no key update}
"""
CALLS = {
    "app.claim_job": "SELECT app.claim_job(1)",
    "app.requeue": "SELECT app.requeue(ARRAY[ROW(1, 5)]::app.job_item[])",
    "app.claim_job_public": "SELECT app.claim_job_public(1)",
    "app.requeue_public": "SELECT app.requeue_public(ARRAY[ROW(1, 5)]::job_item[])",
}


def _refused(conn: Any, probe: str) -> bool:
    try:
        conn.execute(f"SELECT 1 FROM app.jobs WHERE id = 1 {probe} NOWAIT")
    except errors.LockNotAvailable:
        return True
    return False


def _strongest_mode(dsn: str, call: str) -> str:
    """The row lock `call` holds on job 1 at its commit, measured: FOR KEY SHARE conflicts only
    with FOR UPDATE, FOR SHARE with FOR NO KEY UPDATE too."""
    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as probe:
        holder.execute(call)
        probe.execute("SET lock_timeout = '100ms'")
        mode = (
            "for update"
            if _refused(probe, "FOR KEY SHARE")
            else "for no key update"
            if _refused(probe, "FOR SHARE")
            else "none"
        )
        holder.rollback()
    return mode


def test_postgres_compiles_them_and_lockdocs_reads_the_locks_it_measures(
    pg_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(pg_database, autocommit=True) as conn:
        assert conn.execute("SHOW check_function_bodies").fetchone() == ("on",)
        conn.execute(SCHEMA)
        conn.execute(FUNCTIONS)  # the server compiles every body: valid PL/pgSQL
    measured = {name: _strongest_mode(pg_database, call) for name, call in CALLS.items()}
    assert measured == {
        "app.claim_job": "for update",
        "app.requeue": "for no key update",
        "app.claim_job_public": "for update",
        "app.requeue_public": "for no key update",
    }
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")
    root = write_project(
        tmp_path / "p", {"locks.yaml": LOCKS, "db/schema.sql": SCHEMA, "db/jobs.sql": FUNCTIONS}
    )
    result = check(root, drift=False)
    assert [d for d in result.diagnostics if d.code.startswith("LD7")] == []
    assert result.coverage is not None
    doc = result.coverage.to_json()
    assert (doc["takers"], doc["takers_found"], doc.get("statements_not_read")) == (4, 4, 0)
    fs = scan_text("db/jobs.sql", "sql", FUNCTIONS.encode())
    assert fs.unread == ()
    named = {fs.sites[lk.site].name for lk in fs.locks}
    assert named == set(CALLS)
    strongest = {
        name: max(
            (lk.mode or "for no key update" for lk in fs.locks if fs.sites[lk.site].name == name),
            key=["for no key update", "for update"].index,
        )
        for name in CALLS
    }
    assert strongest == measured  # the UPDATE's row lock is resolved later; FOR UPDATE wins


def test_what_the_server_refuses_too_is_reported_never_passed(pg_database: str) -> None:
    # LD712's example: an exception condition that does not exist (the one for a lock that
    # cannot be taken is lock_not_available). The server refuses the function as well.
    body = """\
CREATE FUNCTION debit(p_id bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM pg_class WHERE oid = p_id FOR UPDATE NOWAIT;
EXCEPTION WHEN lock_timeout THEN
  RAISE NOTICE 'busy';
END
$$;
"""
    with psycopg.connect(pg_database, autocommit=True) as conn, pytest.raises(psycopg.Error) as exc:
        conn.execute(body)
    assert 'unrecognized exception condition "lock_timeout"' in str(exc.value)
    fs = scan_text("db/f.sql", "sql", body.encode())
    (unread,) = fs.unread
    assert unread.code == "LD712" and 'unrecognized exception condition "lock_timeout"' in (
        unread.reason
    )
    assert (unread.first, unread.last) == (1, 6) and fs.sites[unread.site].name == "debit"
    fixed = body.replace("lock_timeout", "lock_not_available")
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(fixed)
    assert scan_text("db/f.sql", "sql", fixed.encode()).unread == ()
