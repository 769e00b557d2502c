"""What issue 24's verdicts rely on, measured on a live PostgreSQL 15.

- A foreign key is checked again (FOR KEY SHARE on the parent) when an update writes a row
  version the transaction created itself, by an insert or by an earlier update of the row,
  whatever columns it sets; an update of a row version another transaction wrote, or of
  another row, is not (shape 4; project/steps.py foreign_key_takes derives it).
- A row request waits, and so queues behind a request already waiting for the row, exactly
  when it conflicts with a current holder; one that conflicts only with the waiter is granted
  at once (shape 3), cell by cell. And a request that conflicts with no holder takes a row its
  holder just freed before the woken waiter looks at it again, which then waits for it: the
  race a four-transaction queue cycle needs (analysis/proof.py race), forced here by pausing
  the waiter's server process, ends in 40P01.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from lockdocs.modes import conflicts
from lockdocs.schema.vocabulary import ROW_MODES


@pytest.fixture
def db(pg_database: str) -> Iterator[str]:
    with psycopg.connect(pg_database, autocommit=True) as setup:
        setup.execute("create table parent (id int primary key)")
        setup.execute("insert into parent values (1), (2)")
        setup.execute(
            "create table child (id int primary key, parent_id int references parent (id), "
            "status int not null default 0, amount int not null default 0)"
        )
        setup.execute("insert into child (id, parent_id) values (1, 1), (2, 1)")
    yield pg_database


def _session(dsn: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("set lock_timeout = '200ms'")
    conn.execute("begin")
    return conn


def _waits(conn: psycopg.Connection[Any], sql: str) -> bool:
    """Run `sql`; True when it waited out the lock_timeout (55P03)."""
    try:
        conn.execute(sql)
    except psycopg.errors.LockNotAvailable:
        return True
    return False


@pytest.mark.parametrize(
    ("first", "second", "rechecks"),
    [
        # an earlier update of the same row: its version is this transaction's
        (
            "update child set status = 1 where id = 1",
            "update child set amount = 1 where id = 1",
            True,
        ),
        # an update that sets the key to its own value checks nothing, but writes a version
        (
            "update child set parent_id = 1 where id = 1",
            "update child set amount = 1 where id = 1",
            True,
        ),
        # another row: the version the second update writes over is not this transaction's
        (
            "update child set status = 1 where id = 2",
            "update child set amount = 1 where id = 1",
            False,
        ),
        # a row lock writes no version
        (
            "select 1 from child where id = 1 for update",
            "update child set amount = 1 where id = 1",
            False,
        ),
    ],
)
def test_an_update_of_a_row_version_the_transaction_wrote_checks_the_key_again(
    db: str, first: str, second: str, rechecks: bool
) -> None:
    holder = _session(db)
    writer = _session(db)
    try:
        holder.execute("select 1 from parent where id = 1 for update")
        started = time.monotonic()
        assert not _waits(writer, first), "the first statement takes no lock on the parent"
        assert time.monotonic() - started < 0.15
        assert _waits(writer, second) == rechecks
    finally:
        writer.rollback()
        holder.rollback()
        writer.close()
        holder.close()


def test_an_update_after_an_insert_rechecks_the_parent_the_insert_locked(db: str) -> None:
    # The re-check after an insert takes the same FOR KEY SHARE the insert's check took: it
    # never waits on its own, so lockdocs' derived take there is a re-take.
    writer = _session(db)
    other = _session(db)
    try:
        writer.execute("insert into child (id, parent_id) values (3, 2)")
        writer.execute("update child set amount = 1 where id = 3")
        # the parent is held FOR KEY SHARE by the writer: FOR UPDATE elsewhere waits
        assert _waits(other, "select 1 from parent where id = 2 for update")
    finally:
        other.rollback()
        writer.rollback()
        other.close()
        writer.close()


def _waiting(observer: psycopg.Connection[Any], pid: int) -> str | None:
    row = observer.execute(
        "select wait_event from pg_stat_activity where pid = %s and wait_event_type = 'Lock'",
        (pid,),
    ).fetchone()
    return str(row[0]) if row else None


def _until(check: Any, timeout: float = 3.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        found = check()
        if found:
            return found
        time.sleep(0.005)
    return None


CELLS = [(h, w, r) for h, w, r in itertools.product(ROW_MODES, repeat=3) if conflicts("row", w, h)]


def test_a_row_request_queues_behind_a_waiter_only_when_it_conflicts_with_a_holder(
    db: str,
) -> None:
    """Every (holder, waiter, request) of the row modes where the waiter waits: the request
    waits exactly when it conflicts with the holder, whatever it is to the waiter."""
    observer = psycopg.connect(db, autocommit=True)
    got: dict[tuple[str, str, str], bool] = {}
    try:
        for h, w, r in CELLS:
            holder, waiter, request = (_session(db) for _ in range(3))
            request.execute("set local lock_timeout = '150ms'")
            holder.execute(f"select 1 from parent where id = 1 {h}")
            waiting = threading.Thread(
                target=lambda c=waiter, m=w: c.execute(f"select 1 from parent where id = 1 {m}")
            )
            waiter.execute("set local lock_timeout = '5s'")
            waiting.start()
            assert _until(lambda c=waiter: _waiting(observer, c.info.backend_pid)), (h, w)
            got[(h, w, r)] = _waits(request, f"select 1 from parent where id = 1 {r}")
            for c in (request, holder):
                c.rollback()
            waiting.join(5)
            waiter.rollback()
            for c in (holder, waiter, request):
                c.close()
    finally:
        observer.close()
    assert got == {(h, w, r): conflicts("row", r, h) for h, w, r in CELLS}


def test_a_freed_row_goes_to_a_new_request_before_the_woken_waiter(db: str) -> None:
    """The race of a four-transaction queue cycle (fixture report-row-queue-through-a-race): a
    FOR UPDATE holder (another close) ends while the FOR UPDATE waiter first in the queue is
    paused; the FOR NO KEY UPDATE request of update-balance takes the row at once, the waiter
    then waits for it, and with post-entry queued behind the waiter and update-balance wanting
    post-entry's lock, Postgres finds the cycle (40P01)."""
    observer = psycopg.connect(db, autocommit=True)
    witness, waiter, queued, holder = (_session(db) for _ in range(4))
    for c in (witness, waiter, queued, holder):
        c.execute("set local lock_timeout = '0'")
        # (the session that closes the cycle runs the detector first: the same one every run)
        c.execute("set local deadlock_timeout = '60s'" if c is not holder else "select 1")
    holder.execute("set local deadlock_timeout = '100ms'")
    answers: dict[str, str] = {}

    def run(name: str, conn: psycopg.Connection[Any], sql: str) -> threading.Thread:
        def go() -> None:
            try:
                conn.execute(sql)
                answers[name] = "ok"
            except psycopg.Error as exc:
                answers[name] = exc.sqlstate or "error"

        t = threading.Thread(target=go)
        t.start()
        return t

    paused = waiter.info.backend_pid
    threads = []
    try:
        queued.execute("select pg_advisory_xact_lock(42)")  # post-entry holds posting
        witness.execute("select 1 from parent where id = 1 for update")
        threads.append(run("waiter", waiter, "select 1 from parent where id = 1 for update"))
        assert _until(lambda: _waiting(observer, paused)) == "transactionid"
        threads.append(run("queued", queued, "insert into child (id, parent_id) values (9, 1)"))
        assert _until(lambda: _waiting(observer, queued.info.backend_pid)) == "tuple"
        os.kill(paused, signal.SIGSTOP)
        witness.commit()
        started = time.monotonic()
        holder.execute("select 1 from parent where id = 1 for no key update")  # at once
        assert time.monotonic() - started < 0.5
        os.kill(paused, signal.SIGCONT)
        assert _until(lambda: _waiting(observer, paused)) == "transactionid"
        threads.append(run("holder", holder, "select pg_advisory_xact_lock(42)"))
        threads[-1].join(10)
    finally:
        os.kill(paused, signal.SIGCONT)
        for c in (witness, waiter, queued, holder):
            c.cancel_safe()
        for t in threads:
            t.join(10)
        observer.close()
    assert answers.get("holder") == "40P01", answers
    for c in (witness, waiter, queued, holder):
        c.close()


def test_a_row_another_transaction_inserted_and_has_not_committed_is_not_there(db: str) -> None:
    """Item 7's private rows: another transaction's FOR UPDATE and UPDATE of a row inserted and
    not yet committed find no row, at once; nothing waits for it. (An INSERT of the same key
    would wait: such a row is not private, which the format's inserted: says.)"""
    writer = _session(db)
    other = _session(db)
    try:
        writer.execute("insert into parent values (7)")
        writer.execute("select 1 from parent where id = 7 for update")
        started = time.monotonic()
        assert other.execute("select 1 from parent where id = 7 for update").fetchall() == []
        assert other.execute("update parent set id = 7 where id = 7").rowcount == 0
        assert time.monotonic() - started < 0.15
        assert _waits(other, "insert into parent values (7)")  # the same key: it waits
    finally:
        other.rollback()
        writer.rollback()
        other.close()
        writer.close()
