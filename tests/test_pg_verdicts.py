"""What issue 24's verdicts rely on, measured on a live PostgreSQL 15.

- A foreign key is checked again (FOR KEY SHARE on the parent) when an update writes a row
  version the transaction created itself, by an insert or by an earlier update of the row,
  whatever columns it sets; an update of a row version another transaction wrote, or of
  another row, is not (shape 4; project/steps.py foreign_key_takes derives it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest


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
