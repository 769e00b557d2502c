"""Shared test helpers: run the real CLI in a subprocess, write small projects to disk, and a
throwaway PostgreSQL server for the tests that need the real thing.

The server fixtures: `pg_server` (session-scoped) starts one private cluster for the whole run
(lockdocs.postgres.server.throwaway_server: a Unix socket in a temp folder, removed at the end)
and yields its `Server` (`.dsn`, `.connect()`, `.log_path(fmt)`); `pg_database` gives each test
a fresh database of its own on it and yields its DSN. Without PostgreSQL's binaries the tests
that use them are skipped with the reason; with LOCKDOCS_REQUIRE_POSTGRES=1 (.ci/run sets it)
that is a failure instead, so CI can never pass them silently.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from lockdocs.postgres.server import Server

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str | None] | None = None) -> Run:
    """The real command line, as a user runs it (python -m lockdocs); an `env` value of None
    removes that variable."""
    full_env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    full_env.pop("LOCKDOCS_DEBUG", None)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    proc = subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        capture_output=True,
        text=True,
        cwd=cwd or REPO,
        env=full_env,
        timeout=300,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def invoke(*args: str, cwd: Path | None = None) -> Run:
    """The command line in this process (typer's runner, in `cwd`): for tests of what a
    command reports, where starting Python again would only cost time. A traceback fails."""
    import contextlib

    from typer.testing import CliRunner

    from lockdocs.cli import app

    with contextlib.chdir(cwd or REPO):
        result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"lockdocs {' '.join(args)} raised {result.exception!r}") from (
            result.exception
        )
    return Run(result.exit_code, result.stdout, result.stderr)


def write_project(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_bytes(content.encode("utf-8", "surrogateescape"))
    return root


@pytest.fixture
def cli() -> Callable[..., Run]:
    return run_cli


@pytest.fixture
def project(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes]) -> Path:
        return write_project(tmp_path / "proj", files)

    return make


# The longest tests of the default suite (a minute or more each on CI's 2 cores), started
# first. pytest -n hands tests out in collection order, so one of these collected last would
# run alone at the end while the other worker idles: the suite's wall time is its tail.
LONGEST_FIRST = (
    "tests/test_oracle.py::test_every_oracle_deadlock_is_reported",
    "tests/test_oracle.py::test_reductions_keep_every_deadlock",
    "tests/test_oracle.py::test_every_queue_deadlock_is_reported",
    "tests/test_mutations.py::test_every_single_edit_is_caught",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        for i, prefix in enumerate(LONGEST_FIRST):
            if item.nodeid.startswith(prefix):
                return i
        return len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: every other test keeps its place


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files from the current output instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def lockdocs_process(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real CLI in `cwd`, as a CompletedProcess (for tests that read returncode/stdout)."""
    env = {k: v for k, v in os.environ.items() if k != "LOCKDOCS_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _no_postgres(reason: str) -> None:
    if os.environ.get("LOCKDOCS_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"LOCKDOCS_REQUIRE_POSTGRES=1 and {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """One throwaway PostgreSQL cluster for the whole test session."""
    from lockdocs.postgres.server import ServerUnavailable, throwaway_server

    try:
        ctx = throwaway_server()
        server = ctx.__enter__()
    except ServerUnavailable as exc:
        _no_postgres(f"no PostgreSQL server can run here: {exc}")
        raise AssertionError("unreachable") from None
    try:
        yield server
    finally:
        ctx.__exit__(None, None, None)


@pytest.fixture
def pg_database(pg_server: Server) -> Iterator[str]:
    """A fresh database on the session's server, dropped after the test; yields its DSN."""
    from lockdocs.postgres.server import scratch_database

    with scratch_database(pg_server.dsn, prefix="lockdocs_test") as dsn:
        yield dsn


# --- the repository's site, built once per session ------------------------------------------
#
# Several browser tests read the built site; each generator builds it once (MkDocs about 10 s,
# ProperDocs as long, Zensical 5 s on this machine), in a copy of the files the site reads, so
# nothing is written into the repository.

SITE_INPUTS = ("mkdocs.yml", "docs", "examples", "locks.yaml", "paths", "code", "pyproject.toml")


@pytest.fixture(scope="session")
def site_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    root = tmp_path_factory.mktemp("site-source")
    for name in SITE_INPUTS:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, root / name)
    return root


def build_site(generator: str, source: Path, site: Path) -> str:
    """Build the site in `source` with mkdocs, properdocs or zensical, strict; its log."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    if generator == "zensical":  # no --site-dir: it writes config's site_dir under the source
        cmd = [str(Path(sys.executable).parent / "zensical"), "build", "--strict"]
    else:
        cmd = [sys.executable, "-m", generator, "build", "--strict", "-d", str(site)]
    proc = subprocess.run(
        cmd, cwd=source, capture_output=True, text=True, env=env, check=False, timeout=600
    )
    assert proc.returncode == 0, f"{generator} build failed:\n{proc.stdout}{proc.stderr}"
    if generator == "zensical":
        import shutil

        shutil.move(str(source / "site"), str(site))
    return proc.stdout + proc.stderr


@pytest.fixture(scope="session")
def repo_site(site_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's site built by MkDocs (with the lockdocs plugin)."""
    site = tmp_path_factory.mktemp("site-mkdocs") / "site"
    build_site("mkdocs", site_source, site)
    return site
