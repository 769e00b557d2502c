"""The user's environment: a non-ASCII project path under LC_ALL=C with UTF-8 mode off, and a
git revision holding a blob far larger than any declaration. Located exit-2 errors or plain
success; never exit 3. Real CLI (a process of its own where the locale is what is tested),
real git."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"


def _cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    full = {k: v for k, v in os.environ.items() if k != "LOCKDOCS_DEBUG"}
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "lockdocs", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        timeout=300,
        check=False,
    )


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t.invalid", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}


@pytest.mark.skipif(os.name != "posix", reason="locale behaviour of POSIX systems")
def test_a_non_ascii_project_path_under_the_c_locale(tmp_path: Path) -> None:
    root = tmp_path / "dépôt" / "prøject"
    shutil.copytree(FIXTURE, root)
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text().replace("title: Shop Locks", "title: Bäckerei Locks"))
    _git("init", "-q", ".", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "one", cwd=root)
    for args in (
        ["validate"],
        ["build"],
        ["check"],
        ["export"],
        ["diff", "HEAD"],
        ["check", "--diff"],
    ):
        proc = _cli(*args, cwd=root / "paths", env=C_LOCALE)
        err = proc.stderr.decode("ascii", "replace")
        assert proc.returncode in (0, 1), (args, err)
        assert "internal error" not in err and "Traceback" not in err, (args, err)
    page = (root / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "Bäckerei Locks" in page  # files are UTF-8 whatever the locale


def test_a_huge_blob_in_a_diff_revision_is_refused_unread(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    _git("init", "-q", ".", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "one", cwd=root)
    with (root / "paths" / "big.yaml").open("wb") as fh:
        chunk = b"# " + b"x" * (1 << 20) + b"\n"
        for _ in range(64):  # 64 MiB, sixteen times the limit
            fh.write(chunk)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "big", cwd=root)
    (root / "paths" / "big.yaml").unlink()
    proc = run_cli("diff", "HEAD", cwd=root)
    err = proc.err
    assert proc.code == 2, err
    # The blob is written sparse, never read: the loader refuses the revision's declarations
    # by their size, as `check` refuses them at that commit.
    refusal = "paths: LD009 error: the declarations are 67,118,"
    assert refusal in err and "the limit is 33,554,432" in err
    assert err.endswith("lockdocs: the declarations at revision HEAD are not valid\n")
    _git("checkout", "-q", "HEAD", "--", "paths/big.yaml", cwd=root)
    at_commit = run_cli("check", cwd=root)
    assert refusal in at_commit.out + at_commit.err
