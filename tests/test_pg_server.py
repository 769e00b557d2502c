"""The throwaway server: a private cluster on a Unix socket, and scratch databases on it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lockdocs.postgres.server import Server, ServerUnavailable, scratch_database, throwaway_server


def test_the_server_listens_on_its_private_socket_only(pg_server: Server) -> None:
    with pg_server.connect() as conn:
        row = conn.execute(
            "select current_setting('listen_addresses'), current_setting('server_encoding'), "
            "current_setting('unix_socket_directories'), current_user"
        ).fetchone()
    assert row == ("", "UTF8", str(pg_server.socket_dir), "postgres")
    assert (pg_server.socket_dir / ".s.PGSQL.5432").exists()
    assert pg_server.socket_dir.is_relative_to(pg_server.root)


def test_the_server_runs_as_the_postgres_user_when_we_are_root(pg_server: Server) -> None:
    owner = pg_server.data_dir.stat().st_uid
    if os.geteuid() == 0:
        import pwd

        assert owner == pwd.getpwnam("postgres").pw_uid
    else:
        assert owner == os.geteuid()


def test_it_logs_in_all_three_formats(pg_server: Server) -> None:
    with pg_server.connect() as conn:
        conn.execute("select 1")
    for fmt in ("stderr", "csvlog", "jsonlog"):
        assert pg_server.log_path(fmt).is_file(), fmt


def test_a_scratch_database_is_created_and_dropped(pg_server: Server) -> None:
    with scratch_database(pg_server.dsn, prefix="lockdocs_t") as dsn:
        import psycopg

        with psycopg.connect(dsn) as conn:
            (name,) = conn.execute("select current_database()").fetchone() or ("",)
        assert name.startswith("lockdocs_t_")
    with pg_server.connect() as conn:
        left = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchall()
    assert left == []


def test_the_folder_and_the_server_are_gone_after_an_error() -> None:
    seen: dict[str, object] = {}
    with pytest.raises(RuntimeError, match="boom"), throwaway_server() as server:
        seen["root"] = server.root
        seen["pid"] = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        raise RuntimeError("boom")
    assert not Path(str(seen["root"])).exists()
    stat = Path(f"/proc/{seen['pid']}/stat")
    # Stopped: gone, or a zombie that its new parent (init) has not reaped yet.
    assert not stat.exists() or stat.read_text().split()[2] == "Z"


def test_missing_binaries_name_the_debian_package(tmp_path: Path) -> None:
    with pytest.raises(ServerUnavailable, match="apt-get install postgresql"):  # noqa: SIM117
        with throwaway_server(bindir=tmp_path):
            pass


@pytest.mark.skipif(os.geteuid() != 0, reason="only root hands the folder to another user")
def test_a_folder_the_postgres_user_cannot_reach_is_a_clear_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o700)
    with pytest.raises(ServerUnavailable, match="cannot enter"):  # noqa: SIM117
        with throwaway_server(parent=tmp_path):
            pass
    assert list(tmp_path.iterdir()) == []


def test_a_parent_folder_that_is_missing_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ServerUnavailable, match=r"cannot make the server's folder in .*missing"):  # noqa: SIM117
        with throwaway_server(parent=tmp_path / "missing"):
            pass
