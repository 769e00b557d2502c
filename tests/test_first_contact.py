"""First contact, as a new team meets lockdocs before it is on PyPI (issue 25, item 7): the
install forms docs/getting-started.md gives work on a fresh environment, the sdist and the wheel
ship the LICENSE, and the pre-commit `repo:` form docs/ci.md gives works with a clone and fails
a code-only commit that adds an undeclared locking statement.

The "clone" is a git repository made of this working tree's package files, so the tests read
what is being tested, committed or not. Each install builds lockdocs in a fresh environment
from the local package index, so these tests are slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, run_cli

pytestmark = pytest.mark.slow

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
PACKAGE_FILES = ["pyproject.toml", "README.md", "LICENSE", ".pre-commit-hooks.yaml"]


def git(*args: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A repository holding this lockdocs, one commit: (its folder, the commit)."""
    top = tmp_path_factory.mktemp("lockdocs-clone") / "lockdocs"
    top.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy(REPO / name, top / name)
    shutil.copytree(
        REPO / "src", top / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    git("init", "-q", cwd=top)
    git("add", "-A", cwd=top)
    git("commit", "-q", "-m", "lockdocs", cwd=top)
    return top, git("rev-parse", "HEAD", cwd=top)


def test_the_sdist_and_the_wheel_ship_the_license(clone: tuple[Path, str], tmp_path: Path) -> None:
    """`python -m build` makes the sdist, then the wheel from it: both carry LICENSE, and the
    metadata names the MIT licence and the file."""
    top, _ = clone
    dist = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(top)],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [sdist] = dist.glob("*.tar.gz")
    [wheel] = dist.glob("*.whl")
    license_text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n")
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/LICENSE")
        assert member is not None and member.read().decode("utf-8") == license_text
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        [licence] = [n for n in names if n.endswith("/licenses/LICENSE")]
        assert whl.read(licence).decode("utf-8") == license_text
        [meta] = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(meta).decode("utf-8")
    assert "License-Expression: MIT\n" in metadata
    assert "License-File: LICENSE\n" in metadata


def test_pip_installs_from_the_repository_url(clone: tuple[Path, str], tmp_path: Path) -> None:
    """`pip install "git+URL@COMMIT"` (getting-started's second form) resolves and builds."""
    top, commit = clone
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--no-deps",
            "--ignore-installed",
            "--report",
            str(report),
            f"git+file://{top}@{commit}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [item] = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert item["metadata"]["name"] == "lockdocs"
    assert item["download_info"]["vcs_info"]["commit_id"] == commit


def _commit(
    app: Path, home: Path, files: dict[str, str], message: str
) -> subprocess.CompletedProcess[str]:
    for name, text in files.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_text(text, encoding="utf-8")
    git("add", "-A", cwd=app)
    return subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "commit", "-m", message],
        cwd=app,
        env={
            **os.environ,
            **GIT_ENV,
            "PRE_COMMIT_HOME": str(home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def test_the_hook_from_a_clone_fails_a_code_only_commit(
    clone: tuple[Path, str], tmp_path: Path
) -> None:
    """The `repo:` form of docs/ci.md with a clone: pre-commit installs lockdocs from it into an
    environment of its own; a commit that touches only a .sql file of `code:` and adds an
    undeclared FOR UPDATE fails, and one that touches only the README runs the hook and passes."""
    top, commit = clone
    app = tmp_path / "app"
    assert run_cli("init", str(app)).code == 0
    locks = app / "locks.yaml"
    locks.write_text(
        locks.read_text(encoding="utf-8").replace(
            "lockdocs: 1\n", 'lockdocs: 1\ncode: ["db/*.sql"]\n'
        ),
        encoding="utf-8",
    )
    queries = "-- name: LockAccount :one\nSELECT id FROM public.accounts WHERE id = $1 FOR NO KEY UPDATE;\n"
    (app / "db").mkdir()
    (app / "db" / "queries.sql").write_text(queries, encoding="utf-8")
    assert run_cli("build", "--root", str(app)).code == 0
    config = f"repos:\n  - repo: {top}\n    rev: {commit}\n    hooks:\n      - id: lockdocs-check\n"
    (app / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    home = tmp_path / "pre-commit-home"
    git("init", "-q", cwd=app)
    installed = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=app,
        env={**os.environ, "PRE_COMMIT_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert installed.returncode == 0, installed.stderr
    first = _commit(app, home, {}, "adopt lockdocs")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "lockdocs check" in first.stderr + first.stdout
    bad = _commit(
        app,
        home,
        {
            "db/queries.sql": queries + "\n-- name: AuditAccount :one\n"
            "SELECT id FROM public.accounts WHERE id = $1 FOR UPDATE;\n"
        },
        "a code-only commit",
    )
    out = bad.stdout + bad.stderr
    assert bad.returncode != 0, out
    assert "LD702" in out and "db/queries.sql:5:" in out
    git("checkout", "-q", "--", ".", cwd=app)
    git("reset", "-q", "--hard", cwd=app)
    readme = _commit(app, home, {"README.md": "An app.\n"}, "README only")
    assert readme.returncode == 0, readme.stdout + readme.stderr
    assert "lockdocs check" in readme.stdout + readme.stderr
    assert "Skipped" not in readme.stdout + readme.stderr
    # the environment pre-commit made from the clone is a working lockdocs install
    [exe] = home.glob("repo*/py_env-*/bin/lockdocs")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True, check=False)
    assert version.stdout == "lockdocs 0.1.0\n"
