"""The oracle (tests/oracle) against a live PostgreSQL 15: its own conflict tables, cell by cell,
and its deadlocks for the classes of issue 17, replayed statement by statement until the server
aborts one transaction with 40P01; the analysis reports each of them.

A replay runs each transaction of the oracle's deadlock on a session of its own (a thread), in
the order of the oracle's trace: a request is sent when the transaction asks for the lock, and
the replay waits until the statement has either finished or is waiting for a lock (as
pg_stat_activity shows) before the next one. Once every transaction waits, the server's deadlock
detector must end one of them with 40P01 (deadlock_timeout is 100 ms on the test server).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from oracle import Lock, Path, Spec, Take, explore
from oracle.compare import compare, lockdocs_findings
from oracle.conflicts import waits
from oracle.explore import Explorer
from oracle.spec import ROW_MODES, SHARED_EXCLUSIVE, TABLE_MODES
from test_oracle import FIXED_FN

# The specs of issue 17's classes (test_oracle.FIXED_FN holds them with the earlier ones).
ISSUE_17 = (
    "second-class-instances-across-iterations",
    "take-after-sorted-loop",
    "upgrade-after-skip-locked",
    "table-share-then-row-exclusive",
    "table-share-then-share-update-exclusive",
    "three-through-sorted-loop",
    "row-queue-behind-waiter",
    "named-instance-in-sorted-loop",
    "named-instances-in-sorted-loop-body",
    "gate-only-in-loop",
)


@pytest.fixture
def db(pg_database: str) -> Iterator[str]:
    yield pg_database


class Session:
    """One connection on a thread of its own, so a statement may wait for a lock."""

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.pid = self.conn.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        self.todo: queue.Queue[sql.Composable | str | None] = queue.Queue()
        self.outcomes: list[str] = []
        self.busy = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            stmt = self.todo.get()
            if stmt is None:
                return
            try:
                self.conn.execute(stmt)  # type: ignore[arg-type]
                self.outcomes.append("ok")
            except psycopg.Error as exc:
                self.outcomes.append(exc.sqlstate or "error")
                self.conn.execute("rollback")
            finally:
                self.busy.clear()

    def send(self, stmt: sql.Composable | str) -> None:
        self.busy.set()
        self.todo.put(stmt)

    def close(self) -> None:
        self.todo.put(None)
        self.thread.join(10)
        self.conn.close()


def _settle(observer: psycopg.Connection[Any], s: Session, timeout: float = 5.0) -> None:
    """Until the session's statement has finished, or waits for a lock."""
    end = time.monotonic() + timeout
    while s.busy.is_set() and time.monotonic() < end:
        row = observer.execute(
            "select wait_event_type from pg_stat_activity where pid = %s", (s.pid,)
        ).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.005)


def _tables(spec: Spec) -> list[sql.Composable]:
    out: list[sql.Composable] = []
    for lk in spec.locks:
        if lk.kind in ("row", "table"):
            name = sql.Identifier(lk.name)
            out.append(sql.SQL("create table {} (id int primary key)").format(name))
            out.append(sql.SQL("insert into {} values (0), (1), (2), (3)").format(name))
    return out


def _take(spec: Spec, li: int, inst: int, mode: str, option: str) -> sql.Composable:
    lk = spec.locks[li]
    if lk.kind == "row":
        opt = sql.SQL(" " + option) if option else sql.SQL("")
        return sql.SQL("select 1 from {} where id = {} {}{}").format(
            sql.Identifier(lk.name), sql.Literal(inst), sql.SQL(mode), opt
        )
    if lk.kind == "table":
        return sql.SQL("lock table {} in {} mode").format(sql.Identifier(lk.name), sql.SQL(mode))
    if lk.kind == "advisory":
        fn = {
            ("transaction", "exclusive"): "pg_advisory_xact_lock",
            ("transaction", "shared"): "pg_advisory_xact_lock_shared",
            ("session", "exclusive"): "pg_advisory_lock",
            ("session", "shared"): "pg_advisory_lock_shared",
        }[(lk.scope, mode)]
        return sql.SQL("select {}({})").format(sql.Identifier(fn), sql.Literal(1000 * li + inst))
    raise AssertionError(f"{lk.kind} locks do not replay on Postgres")


def replay(dsn: str, spec: Spec, explorer: Explorer, deadlock: Any) -> list[str]:
    """Every statement's outcome ("ok", or a SQLSTATE such as 40P01), per transaction."""
    with psycopg.connect(dsn, autocommit=True) as setup:
        for stmt in _tables(spec):
            setup.execute(stmt)
    cfg, _chain = explorer.trace(deadlock)
    sessions = [Session(dsn) for _ in cfg]
    observer = psycopg.connect(dsn, autocommit=True)
    try:
        for s in sessions:
            s.send("begin")
            _settle(observer, s)
        for i, what, args in explorer.actions(deadlock):
            s = sessions[i]
            _settle(observer, s)
            if what == "request":
                li, inst, mode, option = args
                s.send(_take(spec, int(li), int(inst), str(mode), str(option)))  # type: ignore[call-overload]
            else:
                s.send("commit")
                _settle(observer, s)
                s.send("begin")
            _settle(observer, s)
        end = time.monotonic() + 5
        while time.monotonic() < end and not any("40P01" in s.outcomes for s in sessions):
            time.sleep(0.02)
        return list(itertools.chain.from_iterable(s.outcomes for s in sessions))
    finally:
        for s in sessions:
            if not s.busy.is_set():
                s.send("rollback")
        for s in sessions:
            s.conn.cancel_safe() if s.busy.is_set() else None
            s.close()
        observer.close()


@pytest.mark.parametrize("name", ISSUE_17)
def test_issue_17_deadlocks_replay_as_40p01_and_are_reported(db: str, name: str) -> None:
    spec = FIXED_FN[name]
    explorer = Explorer(spec)
    found = explorer.run().deadlocks
    assert found, "the oracle finds the deadlock"
    deadlock = min(found, key=lambda d: (len(d.config), d.describe()))
    outcomes = replay(db, spec, explorer, deadlock)
    assert outcomes.count("40P01") == 1, (
        deadlock.describe(),
        explorer.schedule(deadlock),
        outcomes,
    )
    cmp = compare(found, lockdocs_findings(spec))
    assert not cmp.missed and not cmp.wrong_paths


def test_the_same_queue_on_a_table_is_resolved_by_the_detector(db: str) -> None:
    """The row-queue shape on a table lock: the server queues the row exclusive request behind
    the waiting exclusive one as well, but the deadlock detector reorders the queue, so nobody
    gets 40P01; the oracle (waits for holders only, for heavyweight locks) finds nothing."""
    t = Lock("t", "table", True, ("row share", "row exclusive", "share", "exclusive"))
    y = Lock("y", "advisory", True, ("exclusive",))
    spec = Spec(
        (t, y),
        (
            Path("share-t", (Take("t", "share"),)),
            Path("rs-then-y", (Take("t", "row share"), Take("y", "exclusive"))),
            Path("exclusive-t", (Take("t", "exclusive"),)),
            Path("y-then-re", (Take("y", "exclusive"), Take("t", "row exclusive"))),
        ),
    )
    assert [d for d in explore(spec).deadlocks if "y-then-re" in d.paths] == []
    with psycopg.connect(db, autocommit=True) as setup:
        for stmt in _tables(spec):
            setup.execute(stmt)
    names = ("share-t", "rs-then-y", "exclusive-t", "y-then-re")
    sessions = {n: Session(db) for n in names}
    observer = psycopg.connect(db, autocommit=True)
    try:
        plan = [
            ("share-t", "begin"),
            ("rs-then-y", "begin"),
            ("exclusive-t", "begin"),
            ("y-then-re", "begin"),
            ("share-t", "lock table t in share mode"),
            ("rs-then-y", "lock table t in row share mode"),
            ("exclusive-t", "lock table t in exclusive mode"),  # waits
            ("y-then-re", "select pg_advisory_xact_lock(1)"),
            ("y-then-re", "lock table t in row exclusive mode"),  # waits, queued
            ("rs-then-y", "select pg_advisory_xact_lock(1)"),  # waits for y-then-re
        ]
        for who, stmt in plan:
            sessions[who].send(stmt)
            _settle(observer, sessions[who])
        time.sleep(0.5)  # several deadlock_timeouts: the detector has run
        sessions["share-t"].send("commit")
        _settle(observer, sessions["share-t"])
        time.sleep(0.5)
        outcomes = [o for s in sessions.values() for o in s.outcomes]
        assert "40P01" not in outcomes, outcomes
        # the queue was reordered: y-then-re got ROW EXCLUSIVE ahead of the exclusive waiter
        assert not sessions["y-then-re"].busy.is_set()
    finally:
        for s in sessions.values():
            if s.busy.is_set():
                s.conn.cancel_safe()
        time.sleep(0.1)
        for s in sessions.values():
            s.send("rollback")
        for s in sessions.values():
            s.close()
        observer.close()


def _blocks(
    a: psycopg.Connection[Any], b: psycopg.Connection[Any], take_a: Any, take_b: Any
) -> bool:
    a.execute("begin")
    b.execute("begin")
    try:
        a.execute(take_a)
        b.execute("set local lock_timeout = '50ms'")
        try:
            b.execute(take_b)
        except psycopg.errors.LockNotAvailable:
            return True
        return False
    finally:
        b.execute("rollback")
        a.execute("rollback")


@pytest.mark.parametrize("kind", ["row", "table", "advisory"])
def test_oracle_conflict_tables_match_the_server(db: str, kind: str) -> None:
    modes = {"row": ROW_MODES, "table": TABLE_MODES, "advisory": SHARED_EXCLUSIVE}[kind]
    lk = Lock("c", kind, True, tuple(modes))
    spec = Spec((lk,), ())
    with psycopg.connect(db, autocommit=True) as setup:
        for stmt in _tables(spec):
            setup.execute(stmt)
    a = psycopg.connect(db, autocommit=True)
    b = psycopg.connect(db, autocommit=True)
    try:
        for held, requested in itertools.product(modes, modes):
            got = _blocks(a, b, _take(spec, 0, 0, held, ""), _take(spec, 0, 0, requested, ""))
            assert got == waits(kind, requested, held), (kind, held, requested)
    finally:
        a.close()
        b.close()
