"""`lockdocs replay` stopped by a signal or its time limit leaves nothing behind: no postgres
process, no folder of a throwaway cluster, no scratch database. Each test sends the signal to a
real replay process at a moment it waits for (initdb running, the server starting, the sessions
waiting on the server), then looks for what is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from psycopg import sql

from conftest import REPO
from lockdocs.postgres.server import Server

CASE = REPO / "tests" / "fixtures" / "specs" / "report-opposite-orders"
PG_VARIABLES = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")


@pytest.fixture
def tmpdir_for_postgres() -> Iterator[Path]:
    """A TMPDIR the postgres user can enter (pytest's own is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="lockdocs-signals-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def _replay(*args: str, tmpdir: Path | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in PG_VARIABLES}
    env.pop("LOCKDOCS_DEBUG", None)
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.Popen(
        [sys.executable, "-m", "lockdocs", "replay", "--root", str(CASE), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"replay ended (exit {proc.returncode}) before {what}:\n{out}{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within 120 s")
        time.sleep(0.005)


def _processes_under(folder: Path) -> list[str]:
    """Command lines of running processes that name `folder` (a postmaster names its data
    folder; zombies, which hold no command line, are not running)."""
    needle = str(folder).encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            line = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in line:
            found.append(line.replace(b"\0", b" ").decode(errors="replace"))
    return found


def _stopped(proc: subprocess.Popen[str], sig: signal.Signals) -> str:
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, (proc.returncode, out, err)
    assert f"lockdocs: stopped by {sig.name}" in err, err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("sig", "moment"),
    [(signal.SIGTERM, "initdb"), (signal.SIGINT, "start"), (signal.SIGTERM, "up")],
)
def test_a_signal_stops_the_throwaway_server_and_removes_its_folder(
    sig: signal.Signals, moment: str, tmpdir_for_postgres: Path
) -> None:
    tmp = tmpdir_for_postgres

    def seen(name: str) -> bool:
        return any(tmp.glob(f"lockdocs-pg-*/{name}"))

    ready = {
        "initdb": lambda: seen("data"),  # initdb is writing the cluster
        "start": lambda: seen("data/postmaster.pid"),  # the postmaster is starting
        "up": lambda: seen("socket/.s.PGSQL.5432"),  # the server takes connections
    }[moment]
    proc = _replay(tmpdir=tmp)
    _wait_for(proc, ready, f"the moment '{moment}'")
    _stopped(proc, sig)
    assert list(tmp.iterdir()) == []
    assert _processes_under(tmp) == []


def _scratch_databases(server: Server) -> list[str]:
    with server.connect() as conn:
        rows = conn.execute(
            "select datname from pg_database where datname like 'lockdocs\\_replay\\_%'"
        ).fetchall()
    return [r[0] for r in rows]


def _replay_sessions(server: Server, waiting: bool = False) -> int:
    """The replay's sessions on the server (with `waiting`: those waiting for a lock)."""
    with server.connect() as conn:
        row = conn.execute(
            "select count(*) from pg_stat_activity where application_name like "
            "'lockdocs replay%%' and (not %s or wait_event_type = 'Lock')",
            (waiting,),
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def slow_role(pg_server: Server) -> Iterator[str]:
    """A DSN for a role that may create databases but is no superuser, and whose sessions
    detect deadlocks only after a minute: a replay as that role waits on the server (replay
    cannot shorten deadlock_timeout without superuser rights)."""
    name = f"lockdocs_slow_{os.getpid()}"
    with pg_server.connect() as conn:
        conn.execute(sql.SQL("create role {} login createdb").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("alter role {} set deadlock_timeout = '60s'").format(sql.Identifier(name))
        )
    try:
        yield f"host={pg_server.socket_dir} port=5432 user={name} dbname=postgres"
    finally:
        with pg_server.connect() as conn:
            for db in _scratch_databases(pg_server):  # left by a failing test
                conn.execute(
                    sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(db))
                )
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_drops_the_scratch_database_on_a_server_of_yours(
    sig: signal.Signals, slow_role: str, pg_server: Server
) -> None:
    proc = _replay("--dsn", slow_role, "--time-limit", "100")
    # Both sessions hold their first row and wait for the other's: the deadlock is there, and
    # the server will not see it for a minute.
    _wait_for(proc, lambda: _replay_sessions(pg_server, waiting=True) == 2, "the deadlock")
    assert len(_scratch_databases(pg_server)) == 1
    started = time.monotonic()
    _stopped(proc, sig)
    assert time.monotonic() - started < 8  # the waiting statements are cancelled, not awaited
    assert _scratch_databases(pg_server) == []
    assert _replay_sessions(pg_server) == 0


def test_the_time_limit_ends_a_replay_and_drops_the_scratch_database(
    slow_role: str, pg_server: Server
) -> None:
    proc = _replay("--dsn", slow_role, "--time-limit", "1")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    assert "no answer within the time limit: the sessions were still waiting (cancelled)" in out
    assert _scratch_databases(pg_server) == []
    assert _replay_sessions(pg_server) == 0
