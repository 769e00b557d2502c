"""A throwaway PostgreSQL cluster: initdb and pg_ctl in a temporary folder, Unix socket only.

    with throwaway_server() as server:
        with server.connect() as conn:       # a psycopg connection, autocommit
            conn.execute("select 1")
        server.dsn                            # "host=/tmp/lockdocs-pg-... port=5432 ..."

Postgres refuses to run as root; as root the binaries run as the `postgres` user through
`runuser`, and the folder is handed to that user. The server listens on no TCP address, only on
a socket in the private folder; it is stopped (immediate mode) and the folder removed when the
block ends, also on an error. The binaries are found through `pg_config --bindir`, then
/usr/lib/postgresql/<version>/bin (Debian), newest first.

Within `stopping.stop_on_signals()`, a signal raises an exception, so those cleanups run on a
signal too; while a cleanup runs, further signals wait until it is done (`stopping.shielded`).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lockdocs.postgres.stopping import shielded

if TYPE_CHECKING:
    import psycopg

DEBIAN_PACKAGE = "postgresql"
PORT = 5432  # the socket lives in a private folder, so the number can never clash
# A server for tests and replays: durability off (nothing here outlives it), short deadlock
# detection so a replayed cycle is seen quickly, every log format on.
DEFAULT_SETTINGS: dict[str, str] = {
    "listen_addresses": "''",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "40",
    "shared_buffers": "16MB",
    "deadlock_timeout": "100ms",
    "logging_collector": "on",
    "log_destination": "'stderr,csvlog,jsonlog'",
    "log_directory": "'log'",
    "log_filename": "'server'",
    "log_file_mode": "0644",
    "log_line_prefix": "'%m [%p] '",
    "lc_messages": "'C'",
}


class ServerUnavailable(Exception):
    """No server can be started here; the message says why and what to install."""


def find_bindir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder with initdb, pg_ctl and postgres, or None when they are not installed."""
    env = os.environ if environ is None else environ
    candidates: list[Path] = []
    if env.get("LOCKDOCS_PG_BINDIR"):
        candidates.append(Path(env["LOCKDOCS_PG_BINDIR"]))
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            )
            candidates.append(Path(out.stdout.strip()))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [p for p in debian.iterdir() if p.name.isdigit()]
        for p in sorted(versions, key=lambda p: int(p.name), reverse=True):
            candidates.append(p / "bin")
    for c in candidates:
        if all((c / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return c
    return None


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Server:
    """A running cluster: where its socket is, how to connect, where it logs."""

    root: Path
    bindir: Path
    user: str = "postgres"
    dbname: str = "postgres"
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "log"

    def dsn_for(self, dbname: str) -> str:
        return f"host={self.socket_dir} port={PORT} user={self.user} dbname={dbname}"

    @property
    def dsn(self) -> str:
        return self.dsn_for(self.dbname)

    def connect(self, dbname: str | None = None) -> psycopg.Connection[tuple[Any, ...]]:
        """An autocommit connection to the server (to `dbname`, default postgres)."""

        return psycopg.connect(self.dsn_for(dbname or self.dbname), autocommit=True)

    def log_path(self, fmt: str) -> Path:
        """The server's log file in one format: stderr, csvlog or jsonlog."""
        suffix = {"stderr": "", "csvlog": ".csv", "jsonlog": ".json"}[fmt]
        return self.log_dir / f"server{suffix}"

    def reload(self, **settings: str) -> None:
        """Change settings that a reload applies (log_line_prefix, say) and wait until a new
        session sees them."""

        with self.connect() as conn:
            for name, value in settings.items():
                conn.execute(
                    sql.SQL("alter system set {} = {}").format(sql.Identifier(name), sql.SQL(value))
                )
            conn.execute("select pg_reload_conf()")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with self.connect() as conn:
                seen = [
                    conn.execute("select current_setting(%s)", (name,)).fetchone()
                    for name in settings
                ]
            if seen == [(value.strip("'"),) for value in settings.values()]:
                return
            time.sleep(0.02)
        raise ServerUnavailable(f"the server did not apply {sorted(settings)} within 10 s")


def _run(cmd: list[str], as_postgres: bool, timeout: float = 120) -> None:
    if as_postgres:
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    # The user's PG* variables are for their own server, not this one (PGPORT= breaks initdb).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    # A session of its own: a Ctrl-C at the terminal reaches lockdocs, which cleans up, and
    # not initdb halfway through; and when lockdocs stops it, the whole group goes (killing
    # runuser alone would leave initdb writing into a folder being removed).
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode != 0:
        raise ServerUnavailable(
            f"{Path(cmd[4] if as_postgres else cmd[0]).name} failed (exit {proc.returncode}): "
            + (err.strip() or out.strip())[-2000:]
        )


@contextlib.contextmanager
def throwaway_server(
    settings: Mapping[str, str] | None = None,
    bindir: Path | None = None,
    parent: Path | None = None,
) -> Iterator[Server]:
    """Start a private cluster, yield it, then stop it and remove its folder.

    `settings` are added to (and override) DEFAULT_SETTINGS in postgresql.conf; values are SQL
    literals as the file takes them ("'%m [%p] '", "on", "100ms").
    """
    found = bindir or find_bindir()
    if found is not None and not all((found / t).is_file() for t in ("initdb", "pg_ctl")):
        found = None
    if found is None:
        raise ServerUnavailable(
            "PostgreSQL's server binaries (initdb, pg_ctl, postgres) are not installed; "
            f"on Debian: apt-get install {DEBIAN_PACKAGE}"
        )
    root_user = _as_root()
    if root_user:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise ServerUnavailable(
                "running as root, and there is no 'postgres' user to run the server as "
                f"(Debian's {DEBIAN_PACKAGE} package creates it)"
            ) from None
        if shutil.which("runuser") is None:
            raise ServerUnavailable("running as root, and runuser (util-linux) is missing")
    root: Path | None = None
    started = False
    try:
        try:
            root = Path(tempfile.mkdtemp(prefix="lockdocs-pg-", dir=parent))
        except OSError as exc:
            raise ServerUnavailable(
                f"cannot make the server's folder in {parent or os.environ.get('TMPDIR', '/tmp')}: "
                f"{exc.strerror or exc}; set TMPDIR to a folder that exists and can be written"
            ) from None
        server = Server(root, found, settings={**DEFAULT_SETTINGS, **(settings or {})})
        server.socket_dir.mkdir()
        if root_user:
            for p in (root, server.socket_dir):
                os.chown(p, pw.pw_uid, pw.pw_gid)
            reach = subprocess.run(
                ["runuser", "-u", "postgres", "--", "test", "-w", str(root)], check=False
            )
            if reach.returncode != 0:
                raise ServerUnavailable(
                    f"the postgres user cannot enter {root.parent}; the server's folder must be "
                    "somewhere it can reach (set TMPDIR to such a folder, /tmp for one)"
                )
        _run(
            [
                str(found / "initdb"),
                "--pgdata",
                str(server.data_dir),
                "--username",
                server.user,
                "--auth",
                "trust",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
                "--no-instructions",
            ],
            root_user,
        )
        conf = server.data_dir / "postgresql.conf"
        extra = "".join(f"{k} = {v}\n" for k, v in server.settings.items())
        extra += f"unix_socket_directories = '{server.socket_dir}'\nport = {PORT}\n"
        with conf.open("a", encoding="utf-8") as f:
            f.write("\n# lockdocs throwaway server\n" + extra)
        started = True
        _run(
            [
                str(found / "pg_ctl"),
                "--pgdata",
                str(server.data_dir),
                "--log",
                str(server.root / "startup.log"),
                "--wait",
                "--timeout",
                "60",
                "--silent",
                "start",
            ],
            root_user,
        )
        yield server
    finally:
        with shielded():
            if started and root is not None:
                _stop(found, root / "data", root_user)
            if root is not None:
                shutil.rmtree(root, ignore_errors=True)


def _stop(bindir: Path, data_dir: Path, root_user: bool) -> None:
    """Stop the server (immediate mode: nothing in it is kept). A server that pg_ctl start
    had launched but not yet seen up writes its postmaster.pid a moment later: wait for that
    (up to 10 s) and stop it then, so no postmaster outlives its folder."""
    pid_file = data_dir / "postmaster.pid"
    deadline = time.monotonic() + 10
    while True:
        if pid_file.exists():
            with contextlib.suppress(ServerUnavailable, subprocess.SubprocessError, OSError):
                _run(
                    [
                        str(bindir / "pg_ctl"),
                        "--pgdata",
                        str(data_dir),
                        "--mode",
                        "immediate",
                        "--wait",
                        "--silent",
                        "stop",
                    ],
                    root_user,
                    timeout=60,
                )
            return
        if time.monotonic() > deadline or not _starting(data_dir):
            return
        time.sleep(0.05)


def _starting(data_dir: Path) -> bool:
    """Is a postmaster for `data_dir` running (one whose command line names the folder)?"""
    needle = str(data_dir).encode()
    procs = Path("/proc")
    if not procs.is_dir():
        return False
    for proc in procs.iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if needle in (proc / "cmdline").read_bytes():
                    return True
    return False


@contextlib.contextmanager
def scratch_database(connect_dsn: str, prefix: str = "lockdocs_scratch") -> Iterator[str]:
    """Create a database of its own on the server at `connect_dsn`, yield its DSN, drop it
    (also after an error or a signal: see `stop_on_signals`).

    A database, not a schema: advisory locks are per database, so real keys taken here never
    meet the locks of an application that uses the server.
    """

    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    params = conninfo_to_dict(connect_dsn)
    params["dbname"] = name
    asked = False  # from the moment the server may have made it, it is dropped again
    try:
        with psycopg.connect(connect_dsn, autocommit=True) as conn:
            asked = True
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        yield make_conninfo(**params)  # type: ignore[arg-type]
    finally:
        if asked:
            with shielded(), psycopg.connect(connect_dsn, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name))
                )
