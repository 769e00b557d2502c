"""Run sessions' statements on a live server in a given order, and record what it answered.

One libpq connection per session, driven without threads: a statement is sent, and the driver
waits until it has finished (granted, or an error) or is seen waiting in `pg_locks`, before it
sends the next one. A step of a session that is still waiting, or whose transaction has failed,
is held back until the session is free (and dropped when the transaction has failed), the way
PostgreSQL's isolation tester treats a blocked session. Everything ends within a hard time
limit: what is still waiting then is cancelled and reported as such.

A statement's values travel as bound parameters (the extended protocol), never inside its text.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import pq

from lockdocs.postgres.statements import Param

if TYPE_CHECKING:
    from psycopg.pq.abc import PGconn, PGresult


@dataclass(frozen=True)
class Statement:
    session: int
    sql: str
    label: str = ""
    params: tuple[Param, ...] = ()  # the values of the statement's $n, sent apart from it
    # Not a statement: a signal to the session's server process (SIGSTOP, SIGCONT), for a race
    # replay must force (a waiter that, woken, has not looked at the row again). The caller
    # checks that it may signal the server's processes.
    signal: int = 0


@dataclass
class Answer:
    """What the server answered one statement."""

    statement: int  # index in the schedule
    session: int
    sent: bool = False
    waited: bool = False  # seen waiting in pg_locks before it finished
    done: bool = False
    value: str | None = None  # the first column of the first row, when there is one
    sqlstate: str = ""
    message: str = ""
    detail: str = ""
    hint: str = ""
    context: str = ""
    dropped: str = ""  # why it was never sent
    seconds: float = 0.0
    left_waiting: bool = False  # still waiting, for sessions that only end when we end them
    sent_at: float = 0.0  # monotonic clock
    finished_at: float = 0.0

    @property
    def error(self) -> bool:
        return bool(self.sqlstate)


@dataclass
class Run:
    answers: list[Answer]
    pids: list[int]
    timed_out: bool = False
    elapsed: float = 0.0
    # What each session held, as pg_locks rows seen after each step: (locktype, transactionid,
    # classid, objid, objsubid, relation); a replay maps the server's words back with them.
    held: dict[int, set[tuple[Any, ...]]] = field(default_factory=dict)

    def errors(self) -> list[Answer]:
        return [a for a in self.answers if a.error]


class DriverError(Exception):
    """The server could not be reached or refused the session setup."""


def _connect(dsn: str) -> PGconn:
    conn = pq.PGconn.connect(dsn.encode())
    if conn.status != pq.ConnStatus.OK:
        msg = conn.get_error_message()
        conn.finish()
        raise DriverError(f"cannot connect: {msg.strip()}")
    return conn


def _exec(conn: PGconn, sql: str) -> str | None:
    res = conn.exec_(sql.encode())
    if res.status == pq.ExecStatus.FATAL_ERROR:
        raise DriverError(f"{sql}: {res.get_error_message().strip()}")
    if res.status == pq.ExecStatus.TUPLES_OK and res.ntuples:
        v = res.get_value(0, 0)
        return None if v is None else bytes(v).decode()
    return None


def _values(params: tuple[Param, ...]) -> tuple[list[bytes | None], list[int]]:
    return [p.value.encode() for p in params], [p.oid for p in params]


def query(conn: psycopg.Connection[Any], sql: str, params: tuple[Param, ...]) -> tuple[Any, ...]:
    """The first row of `sql` run with bound `params` on an idle autocommit connection."""
    values, types = _values(params)
    res = conn.pgconn.exec_params(sql.encode(), values, types)
    if res.status != pq.ExecStatus.TUPLES_OK or not res.ntuples:
        raise DriverError(f"{sql}: {res.get_error_message().strip() or 'no row'}")
    row = (res.get_value(0, c) for c in range(res.nfields))
    return tuple(None if v is None else bytes(v).decode() for v in row)


def _field(res: PGresult, name: str) -> str:
    raw = res.error_field(getattr(pq.DiagnosticField, name))
    return bytes(raw).decode(errors="replace") if raw else ""


def run(
    dsn: str,
    setups: list[list[str]],
    schedule: list[Statement],
    time_limit: float = 10.0,
    observer: Any = None,
    snapshots: bool = True,
    sessions: list[PGconn] | None = None,
) -> Run:
    """Open one session per entry of `setups` (its statements run first, at once), then send the
    schedule's statements in order; returns every answer. With `snapshots`, what each session
    holds is read from pg_locks after every step (a replay names the server's numbers with it).
    `sessions`: connections to reuse (from `connect_sessions`); they are reset, not closed.
    """

    start = time.monotonic()
    deadline = start + time_limit
    own_observer = observer is None
    obs = observer or psycopg.connect(dsn, autocommit=True)
    conns: list[PGconn] = list(sessions or [])
    finished = False
    paused: set[int] = set()
    try:
        for k, setup in enumerate(setups):
            if k >= len(conns):
                conns.append(_connect(dsn))
            if setup:  # one round trip: the simple query protocol takes several statements
                _exec(conns[k], "; ".join(setup))
        pids = [c.backend_pid for c in conns]
        answers = [Answer(i, s.session) for i, s in enumerate(schedule)]
        queues: list[deque[int]] = [deque() for _ in conns]
        busy: list[int | None] = [None] * len(conns)  # the statement each session is running
        failed = [False] * len(conns)
        sent_at: dict[int, float] = {}

        def send(i: int) -> None:
            s = schedule[i]
            if s.params:
                values, types = _values(s.params)
                conns[s.session].send_query_params(s.sql.encode(), values, types)
            else:
                conns[s.session].send_query(s.sql.encode())
            answers[i].sent = True
            busy[s.session] = i
            sent_at[i] = answers[i].sent_at = time.monotonic()

        def collect(session: int) -> bool:
            """Read what has arrived for `session`; True when its statement has finished."""

            c = conns[session]
            c.consume_input()
            if c.is_busy():
                return False
            i = busy[session]
            assert i is not None
            a = answers[i]
            while (res := c.get_result()) is not None:
                if res.status == pq.ExecStatus.FATAL_ERROR:
                    a.sqlstate = _field(res, "SQLSTATE")
                    a.message = _field(res, "MESSAGE_PRIMARY")
                    a.detail = _field(res, "MESSAGE_DETAIL")
                    a.hint = _field(res, "MESSAGE_HINT")
                    a.context = _field(res, "CONTEXT")
                elif res.status == pq.ExecStatus.TUPLES_OK and res.ntuples and a.value is None:
                    v = res.get_value(0, 0)
                    a.value = None if v is None else bytes(v).decode()
            a.done = True
            a.finished_at = time.monotonic()
            a.seconds = a.finished_at - sent_at[i]
            busy[session] = None
            if a.error:
                failed[session] = True
            return True

        def waiting() -> set[int]:
            pending = [pids[k] for k, b in enumerate(busy) if b is not None]
            if not pending:
                return set()
            rows = obs.execute(
                "select distinct pid from pg_locks where not granted and pid = any(%s)",
                (pending,),
            ).fetchall()
            return {r[0] for r in rows}

        def stuck() -> bool:
            """Is every busy session waiting for sessions that are idle in their transaction?
            Then nothing moves until the replay ends those transactions (a cycle of three, say,
            after one of them was aborted)."""
            running = [k for k, b in enumerate(busy) if b is not None]
            rows = obs.execute(
                "select p, pg_blocking_pids(p) from unnest(%s::int[]) as p",
                ([pids[k] for k in running],),
            ).fetchall()
            idle = {pids[k] for k, b in enumerate(busy) if b is None}
            if not all(blockers and set(blockers) <= idle for _, blockers in rows):
                return False
            for k in running:
                b = busy[k]
                assert b is not None
                answers[b].waited = answers[b].left_waiting = True
            return True

        def feed(session: int) -> None:
            """Send the session's next held-back statement, if it is free."""
            while queues[session] and busy[session] is None:
                i = queues[session].popleft()
                if failed[session]:
                    answers[i].dropped = "its transaction had already failed"
                    continue
                send(i)

        def settle(target: int | None) -> bool:
            """Poll until statement `target` has finished or waits (None: until every session is
            idle); False when the time limit came first."""
            if target is not None and answers[target].sent:
                # Most statements are granted at once: give the answer a moment to arrive
                # before asking pg_locks whether it waits.
                select.select([conns[schedule[target].session].socket], [], [], 0.002)
            while time.monotonic() < deadline:
                for k in range(len(conns)):
                    if busy[k] is not None and collect(k):
                        feed(k)
                if target is not None:
                    a = answers[target]
                    if a.done or not a.sent:
                        return True
                elif (all(b is None for b in busy) and not any(queues)) or stuck():
                    return True
                seen = waiting()
                for k, b in enumerate(busy):
                    if b is not None and pids[k] in seen:
                        answers[b].waited = True
                if target is not None and answers[target].waited:
                    return True
                socks = [conns[k].socket for k, b in enumerate(busy) if b is not None]
                if socks:
                    select.select(socks, [], [], 0.003)
            return False

        held: dict[int, set[tuple[Any, ...]]] = {pid: set() for pid in pids}

        def snapshot() -> None:
            rows = obs.execute(
                "select pid, locktype, transactionid::text::bigint, classid::bigint, "
                "objid::bigint, objsubid, relation::bigint from pg_locks "
                "where granted and pid = any(%s) and locktype in "
                "('advisory', 'transactionid', 'relation', 'tuple')",
                (pids,),
            ).fetchall()
            for r in rows:
                held[r[0]].add(tuple(r[1:]))

        timed_out = False
        for i, s in enumerate(schedule):
            if s.signal:
                os.kill(pids[s.session], s.signal)
                if s.signal == signal.SIGSTOP:
                    paused.add(pids[s.session])
                else:
                    paused.discard(pids[s.session])
                answers[i].sent = answers[i].done = True
                continue
            queues[s.session].append(i)
            feed(s.session)
            if not answers[i].sent and not answers[i].dropped:
                continue  # held back behind a waiting statement of its session
            if not settle(i):
                timed_out = True
                break
            if snapshots:
                snapshot()
        if not timed_out and not settle(None):
            timed_out = True
        if timed_out:
            for k, b in enumerate(busy):
                if b is not None:
                    cancel = conns[k].get_cancel()
                    cancel.cancel()
            for k, b in enumerate(busy):
                if b is not None:
                    while conns[k].is_busy():
                        select.select([conns[k].socket], [], [], 0.05)
                        conns[k].consume_input()
                    collect(k)
            for q in queues:
                for i in q:
                    answers[i].dropped = "the time limit came first"
        finished = True
        return Run(answers, pids, timed_out, time.monotonic() - start, held)
    finally:
        for pid in paused:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)
        # Stopped halfway (an error, a signal): what still runs is cancelled at once.
        _finish(conns, close=sessions is None, cancel=not finished)
        if own_observer:
            obs.close()


def connect_sessions(dsn: str, n: int) -> list[PGconn]:
    """Connections for `run(..., sessions=)`, when many short runs would each pay for new
    backends; close them with `close_sessions`."""
    return [_connect(dsn) for _ in range(n)]


def close_sessions(conns: list[PGconn]) -> None:
    for c in conns:
        c.finish()


def _finish(conns: list[PGconn], close: bool = True, cancel: bool = False) -> None:
    """End every session: idle ones first (that frees what the others wait for), then the
    rest once their statement has come back; a statement that does not within 10 s (or at
    once, with `cancel`) is cancelled."""
    pending = list(conns)
    deadline = time.monotonic() + (0 if cancel else 10)
    while pending:
        still: list[PGconn] = []
        for c in pending:
            c.consume_input()
            if c.is_busy():
                still.append(c)
                continue
            while c.get_result() is not None:
                pass
            with contextlib.suppress(DriverError):
                _exec(c, "rollback; select pg_advisory_unlock_all()")
            if close:
                c.finish()
        if still and time.monotonic() > deadline:
            for c in still:
                c.get_cancel().cancel()
            deadline = time.monotonic() + 10
        if still:
            select.select([c.socket for c in still], [], [], 0.01)
        pending = still
