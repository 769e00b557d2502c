"""`run_cli` runs the CLI in the test process (tests/conftest.py: cli_in_process); a run there
must be indistinguishable from `python -m lockdocs` in a process of its own. A sample of
commands (every command, each output format, usage errors, bad input, stdin, colour forced,
files written) runs both ways; the exit code, the stdout and stderr bytes and the files written
must be identical. Then the test process must be as it was before the run.
"""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import conftest
from conftest import REPO, _cli_env, cli_in_process, needs_process, run_cli, write_project

HERE = Path(__file__).resolve().parent
DIFF = HERE / "fixtures" / "diff" / "edge-new-cycle"
SHOP = HERE / "fixtures" / "explain" / "shop"
LOG = HERE / "data" / "explain" / "production.log"
BAD = {
    "locks.yaml": "version: 1\nlocks:\n  account:\n    kind: row\n    table: [\n",
    "paths/a.yaml": "paths: {}\n",
}
CYCLE = {
    "locks.yaml": (
        "version: 1\nlocks:\n"
        "  a: {kind: advisory, key: 'app:a:{id}', modes: [exclusive], title: A}\n"
        "  b: {kind: advisory, key: 'app:b:{id}', modes: [exclusive], title: B}\n"
    ),
    "paths/p.yaml": (
        "paths:\n"
        "  one: {title: One, steps: [{take: a, mode: exclusive}, {take: b, mode: exclusive}]}\n"
        "  two: {title: Two, steps: [{take: b, mode: exclusive}, {take: a, mode: exclusive}]}\n"
    ),
}

# (id, argv, cwd, env, stdin); cwd None: the repository (the flagship project).
SAMPLE: list[tuple[str, list[str], Path | None, dict[str, str | None], bytes]] = [
    ("help", ["--help"], None, {}, b""),
    ("no-args", [], None, {}, b""),
    ("version", ["--version"], None, {}, b""),
    ("check", ["check"], None, {}, b""),
    ("check-json", ["check", "--format", "json"], None, {}, b""),
    ("check-sarif", ["check", "-f", "sarif", "--no-drift"], None, {}, b""),
    ("check-github", ["check", "--format=github"], None, {}, b""),
    ("check-typer-route", ["check", "--no-svg", "--no-drift", "-fjson"], None, {}, b""),
    ("validate", ["validate"], None, {}, b""),
    ("export", ["export"], None, {}, b""),
    ("schema", ["schema"], None, {}, b""),
    ("rules", ["rules"], None, {}, b""),
    ("scan", ["scan", "--coverage"], None, {"LOCKDOCS_CACHE": "off"}, b""),
    ("diff", ["diff", "base", "head", "-f", "markdown"], DIFF, {}, b""),
    ("explain", ["explain", str(LOG), "--root", str(SHOP), "-f", "json"], None, {}, b""),
    ("explain-stdin", ["explain", "-", "--root", str(SHOP)], None, {}, LOG.read_bytes()),
    ("completion", ["completion", "bash"], None, {}, b""),
    ("unknown-command", ["chekc"], None, {}, b""),
    ("bad-option", ["check", "--format", "xml"], None, {}, b""),
    ("missing-root", ["validate", "--root", "/nonexistent/project"], None, {}, b""),
    ("colour-forced", ["check", "--no-drift"], None, {"FORCE_COLOR": "1", "NO_COLOR": None}, b""),
    ("dot-missing", ["check"], None, {"PATH": "/nonexistent"}, b""),
]


def _process(
    args: list[str], cwd: Path, env: dict[str, str], stdin: bytes
) -> tuple[int, bytes, bytes]:
    proc = subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=300,
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    ("args", "cwd", "env", "stdin"), [s[1:] for s in SAMPLE], ids=[s[0] for s in SAMPLE]
)
def test_a_run_in_process_prints_what_a_process_prints(
    args: list[str], cwd: Path | None, env: dict[str, str | None], stdin: bytes
) -> None:
    assert not needs_process(env)
    full = _cli_env(env)
    alone = _process(args, cwd or REPO, full, stdin)
    here = cli_in_process(args, cwd or REPO, full, stdin)
    assert here == alone
    assert alone[1] or alone[2]  # the sample prints something


@pytest.mark.parametrize(
    ("name", "args", "files"),
    [
        ("build", ["build"], None),
        ("build-no-svg", ["build", "--no-svg"], None),
        ("init", ["init"], {}),
        ("bad-yaml", ["build"], BAD),
        ("cycle", ["build", "--no-svg"], CYCLE),
    ],
)
def test_a_run_in_process_writes_what_a_process_writes(
    tmp_path: Path, name: str, args: list[str], files: dict[str, str] | None
) -> None:
    trees = []
    results = []
    for way in ("process", "here"):
        root = tmp_path / way / "project"
        if files is None:
            shutil.copytree(REPO / "examples" / "dstack", root)
        else:
            write_project(root, dict(files)).mkdir(parents=True, exist_ok=True)
        full = _cli_env({"LOCKDOCS_CACHE": "off"})
        run = _process if way == "process" else cli_in_process
        code, out, err = run([*args, "--root", str(root)], root, full, b"")
        # the project's own path is in some messages: the same text, one folder apart
        here = str(root).encode()
        results.append((code, out.replace(here, b"<root>"), err.replace(here, b"<root>")))
        trees.append(_tree(root))
    assert results[0] == results[1]
    assert trees[0] == trees[1]


def _process_state() -> tuple[object, ...]:
    """What an in-process CLI run could leave changed in the test process."""
    return (
        dict(os.environ),
        Path.cwd(),
        list(sys.argv),
        sys.modules["__main__"],
        (sys.stdin, sys.stdout, sys.stderr),
        gc.get_threshold(),
        gc.isenabled(),
        sys.getrecursionlimit(),
        list(warnings.filters),
        warnings.showwarning,
        [os.fstat(fd).st_ino for fd in (0, 1, 2)],
    )


def test_the_test_process_is_as_it_was() -> None:
    before = _process_state()
    result = run_cli("check", "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["summary"]
    after = _process_state()
    assert after == before


def test_runs_that_need_a_process_get_one() -> None:
    """What Python reads at start (hash seed, locale, UTF-8 mode), the completion variable read
    at import and a run that kills itself stay in a process of their own."""
    for env in ({"PYTHONHASHSEED": "1"}, {"LC_ALL": "C"}, {"LANG": "C"}, {"PYTHONUTF8": "0"}):
        assert needs_process(env)
    assert needs_process({"_LOCKDOCS_COMPLETE": "bash_complete"})
    assert needs_process({"LOCKDOCS_CRASH_AFTER": "1"})
    assert not needs_process({"LOCKDOCS_CACHE": "off", "NO_COLOR": "1"})
    assert sys.modules["conftest"] is conftest  # the module whose flag the hooks set


@pytest.mark.cli_process
def test_a_test_marked_cli_process_starts_processes() -> None:
    assert needs_process()
