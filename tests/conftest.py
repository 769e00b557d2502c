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

import contextlib
import gc
import importlib.util
import io
import json
import locale
import os
import subprocess
import sys
import tempfile
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

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


# --- the CLI, in this process or in a new one -----------------------------------------------
#
# Most tests run the CLI only to read what it prints and the files it writes. Starting a Python
# process for each run cost about 0.3 s of CPU (the interpreter, then typer, jinja2, jsonschema);
# with ~1,500 runs that was a third of the suite. `run_cli` therefore calls the console entry
# (lockdocs.entry.main) in this process, exactly as `python -m lockdocs` does: the same argv and
# sys.argv[0], the working folder, the environment (os.environ swapped, so children such as dot
# see it too), file descriptors 0, 1 and 2 redirected to files (so output written by a child
# process is captured as a pipe would), the exit code from SystemExit, Python's default warning
# filters, and the output decoded as subprocess.run(text=True) decodes it.
# tests/test_cli_inprocess.py runs a sample of commands both ways and compares the bytes.
#
# A run starts a process instead when the process itself is under test:
# - the test is marked `cli_process` (signals, determinism across processes, the fast route of
#   lockdocs.entry against typer's, import-time behaviour);
# - `env` sets a variable read when Python or lockdocs starts (PYTHON*, LC_*, LANG, the shell
#   completion variable) or one that ends the process (LOCKDOCS_CRASH_AFTER kills it);
# - it is called from another thread than the main one, or while another in-process run is on;
# - LOCKDOCS_TEST_SUBPROCESS=1 is set (every run in a process, as before: for comparison).

_PROCESS_ENV_PREFIXES = ("PYTHON", "LC_", "LANG")
_PROCESS_ENV = {"_LOCKDOCS_COMPLETE", "LOCKDOCS_CRASH_AFTER", "LOCKDOCS_NO_FAST"}
_FORCE_PROCESS = os.environ.get("LOCKDOCS_TEST_SUBPROCESS") == "1"
_in_process_busy = threading.Lock()
_marked_process = False  # set by pytest_runtest_setup for tests marked cli_process


def _cli_env(env: dict[str, str | None] | None, hash_seed: bool = True) -> dict[str, str]:
    full_env = dict(os.environ)
    if hash_seed:
        full_env["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
    full_env.pop("LOCKDOCS_DEBUG", None)
    for k, v in (env or {}).items():
        if v is None:
            full_env.pop(k, None)
        else:
            full_env[k] = v
    return full_env


def needs_process(env: dict[str, str | None] | None = None) -> bool:
    """Whether a run with `env` (the variables a test sets) must start its own process."""
    if _FORCE_PROCESS or _marked_process:
        return True
    if threading.current_thread() is not threading.main_thread():
        return True
    return any(k.startswith(_PROCESS_ENV_PREFIXES) or k in _PROCESS_ENV for k in env or {})


def _stdio_encoding() -> str:
    """The encoding a child's standard streams get (what subprocess.run(text=True) decodes
    with, too, in an environment whose locale the test did not change)."""
    if os.environ.get("PYTHONIOENCODING"):
        return os.environ["PYTHONIOENCODING"].partition(":")[0] or locale.getpreferredencoding()
    return "utf-8" if sys.flags.utf8_mode else locale.getpreferredencoding(False)


def _decode(data: bytes, encoding: str) -> str:
    """As subprocess.run(text=True) reads a pipe: strict decoding, universal newlines."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _exit_status(exc: SystemExit, stderr: TextIO) -> int:
    """The status Python exits with for this SystemExit (as Py_Exit and handle_system_exit)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    stderr.write(f"{code}\n")
    return 1


def _writer(fd: int, unbuffered: bool) -> io.RawIOBase | io.BufferedWriter:
    raw = io.FileIO(fd, "w", closefd=False)
    return raw if unbuffered else io.BufferedWriter(raw)


def typer_command_once() -> None:
    """typer builds the click command from the app's signatures on every call of `app()` and of
    its CliRunner's invoke: 20 ms of get_type_hints and inspect, as long as a small check takes.
    A process builds it once; the runs made in this process share one build per app too."""
    import typer.main
    import typer.testing

    if getattr(typer.main.get_command, "lockdocs_once", False):
        return
    build = typer.main.get_command
    built: dict[int, tuple[Any, Any]] = {}

    def get_command(typer_instance: Any) -> Any:
        hit = built.get(id(typer_instance))
        if hit is None or hit[0] is not typer_instance:
            hit = built[id(typer_instance)] = (typer_instance, build(typer_instance))
        return hit[1]

    get_command.lockdocs_once = True  # type: ignore[attr-defined]
    typer.main.get_command = get_command
    typer.testing._get_command = get_command  # type: ignore[attr-defined]


def cli_in_process(
    args: Sequence[str], cwd: Path, env: dict[str, str], stdin: bytes = b""
) -> tuple[int, bytes, bytes]:
    """lockdocs's console entry run in this process as `python -m lockdocs *args` would run:
    (exit status, stdout bytes, stderr bytes). The caller checks `needs_process` first."""
    from lockdocs import entry

    sys.audit("lockdocs.tests.in_process", list(args))
    typer_command_once()
    encoding = _stdio_encoding()
    main_spec = importlib.util.find_spec("lockdocs.__main__")
    assert main_spec is not None and main_spec.origin is not None
    main_module = types.ModuleType("__main__")
    main_module.__package__ = "lockdocs"
    main_module.__spec__ = main_spec
    main_module.__file__ = main_spec.origin

    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_streams = (
        sys.stdin,
        sys.stdout,
        sys.stderr,
        sys.__stdin__,
        sys.__stdout__,
        sys.__stderr__,
    )
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    saved_argv = sys.argv
    saved_main = sys.modules["__main__"]
    saved_gc = gc.get_threshold()
    saved_gc_on = gc.isenabled()
    saved_recursion = sys.getrecursionlimit()
    for stream in saved_streams[1:3]:
        with contextlib.suppress(Exception):
            stream.flush()
    with (
        tempfile.TemporaryFile() as inp,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        warnings.catch_warnings(),
    ):
        inp.write(stdin)
        inp.seek(0)
        status = 0
        try:
            for f, fd in ((inp, 0), (out, 1), (err, 2)):
                os.dup2(f.fileno(), fd)
            # The streams Python makes for a pipe or file (pylifecycle.c: create_stdio).
            unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
            errors = (
                "surrogateescape" if encoding.lower() in ("ascii", "ansi_x3.4-1968") else "strict"
            )
            sys.stdin = io.TextIOWrapper(
                io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                encoding=encoding,
                errors=errors,
            )
            sys.stdout = io.TextIOWrapper(
                _writer(1, unbuffered),
                encoding=encoding,
                errors=errors,
                newline="\n",
                write_through=unbuffered,
            )
            sys.stderr = io.TextIOWrapper(
                _writer(2, unbuffered),
                encoding=encoding,
                errors="backslashreplace",
                newline="\n",
                line_buffering=True,
                write_through=unbuffered,
            )
            sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            sys.argv = [main_spec.origin, *args]
            sys.modules["__main__"] = main_module
            _default_warnings()
            try:
                entry.main()
            except SystemExit as exc:
                status = _exit_status(exc, sys.stderr)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
        finally:
            for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
                os.dup2(saved, fd)
                os.close(saved)
            (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__) = (
                saved_streams
            )
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            sys.argv = saved_argv
            sys.modules["__main__"] = saved_main
            gc.set_threshold(*saved_gc)
            if saved_gc_on:  # check, validate and build turn the collector off
                gc.enable()
            sys.setrecursionlimit(saved_recursion)
        out.seek(0)
        err.seek(0)
        return status, out.read(), err.read()


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Python's own way of showing a warning (pytest records them instead while a test runs)."""
    msg = warnings.WarningMessage(message, category, filename, lineno, file, line)
    with contextlib.suppress(OSError):
        (file or sys.stderr).write(warnings._formatwarnmsg(msg))  # type: ignore[attr-defined]


def _default_warnings() -> None:
    """The warning filters and display of a Python started without -W or PYTHONWARNINGS."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)  # each goes first: the last one is tried first
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = _show_warning


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str | None] | None = None,
    input: str | None = None,
) -> Run:
    """The real command line, as a user runs it (python -m lockdocs); an `env` value of None
    removes that variable; `input` is its standard input (default: empty)."""
    full_env = _cli_env(env)
    if needs_process(env):
        proc = subprocess.run(
            [sys.executable, "-m", "lockdocs", *args],
            capture_output=True,
            text=True,
            cwd=cwd or REPO,
            env=full_env,
            input=input or "",
            timeout=300,
            check=False,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)
    with _in_process_busy:
        encoding = _stdio_encoding()
        code, out, err = cli_in_process(args, cwd or REPO, full_env, (input or "").encode(encoding))
    return Run(code, _decode(out, encoding), _decode(err, encoding))


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
    """The real CLI in `cwd`, as a CompletedProcess (for tests that read returncode/stdout);
    in this process unless the run needs its own (see run_cli)."""
    env = _cli_env(None, hash_seed=False)
    argv = [sys.executable, "-m", "lockdocs", *args]
    if needs_process():
        return subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
    with _in_process_busy:
        encoding = _stdio_encoding()
        code, out, err = cli_in_process(args, cwd, env)
    return subprocess.CompletedProcess(argv, code, _decode(out, encoding), _decode(err, encoding))


# `lockdocs ARGS` in a process of its own that writes its own peak memory last on stderr
# (VmHWM: since the process started Python). The peak getrusage gives for a child (wait4's,
# RUSAGE_CHILDREN) also counts what the test worker held when it forked it: a worker that had
# grown to 500 MiB made a 97 MiB check look 500 MiB.
_PEAK_RUN = (
    "import sys\n"
    "from lockdocs.entry import main\n"
    "sys.argv = ['lockdocs', *sys.argv[1:]]\n"
    "code = 0\n"
    "try:\n    main()\nexcept SystemExit as done:\n    code = done.code\n"
    "sys.stdout.flush()\n"
    "peak = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
    "sys.stderr.write(f'\\nlockdocs-test-peak-kB: {peak}\\n')\n"
    "sys.exit(code)\n"
)


@dataclass
class Measured:
    code: int
    out: bytes
    err: str  # without the peak line
    seconds: float
    peak_mib: float


def measured_process(*args: str, timeout: float = 120) -> Measured:
    """`lockdocs ARGS` in a process of its own: its exit code, output, wall time and peak
    memory (its own alone, see _PEAK_RUN)."""
    import time

    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK_RUN, *args],
        capture_output=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - start
    err, _, peak = proc.stderr.decode(errors="replace").rpartition("\nlockdocs-test-peak-kB: ")
    return Measured(proc.returncode, proc.stdout, err, seconds, int(peak.split()[0]) / 1024)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _marked_process  # noqa: PLW0603 (read by run_cli, which tests import directly)
    _marked_process = item.get_closest_marker("cli_process") is not None


def pytest_runtest_logfinish() -> None:
    global _marked_process  # noqa: PLW0603
    _marked_process = False


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


# --- made once per run, shared by pytest-xdist's workers ----------------------------------


def shared_folder(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder `name`, made once by `make` for every worker of this run: the workers share
    the folder above their own temporary folders (without xdist, the run's own), and the first
    to take the lock makes it while the others wait. A `make` that fails leaves no mark of
    success, so the next worker to ask makes it again (and fails the same way)."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / name
    done = base / f"{name}.done"
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


# --- the repository's site, built once per run ----------------------------------------------
#
# Several tests read the built site; each generator builds it once (MkDocs about 10 s,
# ProperDocs as long, Zensical 5 s on this machine), in a copy of the files the site reads, so
# nothing is written into the repository. The copy and MkDocs' build are shared by the workers.

SITE_INPUTS = ("mkdocs.yml", "docs", "examples", "locks.yaml", "paths", "code", "pyproject.toml")


def _copy_site_inputs(root: Path) -> None:
    import shutil

    for name in SITE_INPUTS:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, root / name)


@pytest.fixture(scope="session")
def site_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_folder(tmp_path_factory, "site-source", _copy_site_inputs)


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
def scaffold_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `lockdocs init shop` writes, and its site built by MkDocs, strict: the folder
    holding shop/ and site/ (built once per run; the page and browser tests read it)."""

    def make(folder: Path) -> None:
        init = run_cli("init", str(folder / "shop"))
        assert init.code == 0, init.err
        build_site("mkdocs", folder / "shop", folder / "site")

    return shared_folder(tmp_path_factory, "scaffold-site", make)


@pytest.fixture(scope="session")
def repo_site(site_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's site built by MkDocs (with the lockdocs plugin), strict."""
    built = shared_folder(
        tmp_path_factory, "site-mkdocs", lambda out: build_site("mkdocs", site_source, out / "site")
    )
    return built / "site"
