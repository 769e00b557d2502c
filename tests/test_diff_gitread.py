"""Reading a project at a git revision (lockdocs/diff/gitread.py and snapshot.py): the files `check` reads there
and no others, from one `ls-tree` and one `cat-file --batch`, within bounds."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lockdocs.diff import gitread, snapshot
from lockdocs.diff.gitread import RevisionError, repository, resolve
from lockdocs.diff.snapshot import glob_match, materialize

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
LOCKS = 'lockdocs: 1\npage: {title: T}\npaths: decl\ncode: ["db/**/*.sql", "app/*.py"]\n'


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    _git("init", "-q", cwd=repo)
    _git("add", "-A", cwd=repo)
    _git("commit", "-q", "-m", "one", cwd=repo)
    return repo


def _materialize(repo: Path, dest: Path) -> bool:
    info = repository(repo)
    assert info is not None
    commit = resolve("HEAD", info)
    assert commit is not None
    return materialize("HEAD", commit, info, dest)


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_exactly_what_check_reads_is_written(tmp_path: Path) -> None:
    repo = _repo(
        tmp_path,
        {
            "locks.yaml": LOCKS,
            "pyproject.toml": "[tool.lockdocs]\n",
            "decl/a.yaml": "group: A\n",
            "decl/notes.txt": "not a path file\n",
            "paths/ignored.yaml": "the folder locks.yaml does not name\n",
            "templates/page.md.j2": "{{ page.title }}\n",
            "db/q.sql": "SELECT 1;\n",
            "db/deep/er/q.sql": "SELECT 2;\n",
            "db/q.txt": "not matched\n",
            "app/jobs.py": "x = 1\n",
            "app/sub/jobs.py": "not matched: * is one folder level\n",
            "docs/page.md": "generated docs are not compared by diff\n",
            "README.md": "no\n",
        },
    )
    dest = tmp_path / "dest"
    assert _materialize(repo, dest)
    assert _files(dest) == [
        "app/jobs.py",
        "db/deep/er/q.sql",
        "db/q.sql",
        "decl/a.yaml",
        "locks.yaml",
        "pyproject.toml",
        "templates/page.md.j2",
    ]
    assert (dest / "db" / "deep" / "er" / "q.sql").read_text(encoding="utf-8") == "SELECT 2;\n"


def test_blobs_are_read_in_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ls-tree and one cat-file --batch for 300 files (12,000 took 78 s at one git process
    per blob); the same content twice is read once."""
    files = {"locks.yaml": LOCKS, **{f"db/q{i:03}.sql": f"SELECT {i};\n" for i in range(300)}}
    files["db/again.sql"] = "SELECT 7;\n"  # the content of q007.sql
    repo = _repo(tmp_path, files)
    calls: list[list[str]] = []
    popen = subprocess.Popen

    def spy(args: Any, *a: Any, **k: Any) -> Any:  # subprocess.run starts a Popen too
        calls.append(list(args))
        return popen(args, *a, **k)

    monkeypatch.setattr(gitread.subprocess, "Popen", spy)
    dest = tmp_path / "dest"
    assert _materialize(repo, dest)
    assert len(_files(dest)) == 302
    verbs = [next(a for a in c if a in ("rev-parse", "ls-tree", "cat-file", "show")) for c in calls]
    assert verbs.count("cat-file") == 1
    assert verbs.count("ls-tree") == 2  # locks.yaml alone, then the project
    assert "show" not in verbs
    assert (dest / "db" / "again.sql").read_text(encoding="utf-8") == "SELECT 7;\n"


def test_a_revision_that_holds_too_much_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(
        tmp_path, {"locks.yaml": LOCKS, **{f"db/q{i}.sql": f"-- {i}\n" for i in range(20)}}
    )
    monkeypatch.setattr(snapshot, "MAX_FILES", 10)
    with pytest.raises(RevisionError, match="more than 10 files that lockdocs would read"):
        _materialize(repo, tmp_path / "a")
    monkeypatch.setattr(snapshot, "MAX_FILES", 100)
    monkeypatch.setattr(snapshot, "MAX_BYTES", 50)
    with pytest.raises(RevisionError, match="hold more than 0 MiB"):
        _materialize(repo, tmp_path / "b")


def test_an_oversized_file_is_written_sparse_never_read(tmp_path: Path) -> None:
    big = "-- padding\n" * 500_000  # 5.5 MB: over the scanner's 4 MiB
    repo = _repo(tmp_path, {"locks.yaml": LOCKS, "db/big.sql": big})
    dest = tmp_path / "dest"
    assert _materialize(repo, dest)
    placeholder = dest / "db" / "big.sql"
    assert placeholder.stat().st_size == snapshot.MAX_CODE_BYTES + 1
    assert placeholder.stat().st_blocks * 512 < 64 * 1024  # takes no room
    assert placeholder.read_bytes()[:16] == b"\0" * 16


@pytest.mark.parametrize(
    ("pattern", "name", "matched"),
    [
        ("db/*.sql", "db/a.sql", True),
        ("db/*.sql", "db/x/a.sql", False),
        ("db/**/*.sql", "db/a.sql", True),  # ** is zero folders too
        ("db/**/*.sql", "db/x/y/a.sql", True),
        ("**/*.sql", "a.sql", True),
        ("**/**/**/**/**/**/*.sql", "a/b/c/d/e/f/g/h/i.sql", True),
        ("**/**/**/**/**/**/*.sql", "a/b/c/d/e/f/g/h/i.py", False),
        ("db/q?.sql", "db/q1.sql", True),
        ("db/[ab].sql", "db/b.sql", True),
        ("*.sql", ".hidden.sql", True),  # pathlib's glob takes dotfiles
        ("DB/*.sql", "db/a.sql", True),  # case folded: a superset, globbed again by the scan
        ("db/*.sql", "other/a.sql", False),
    ],
)
def test_glob_match(pattern: str, name: str, matched: bool) -> None:
    parts = tuple(p for p in pattern.split("/") if p)
    assert glob_match(parts, tuple(name.split("/"))) is matched


def test_glob_match_takes_every_file_pathlib_takes(tmp_path: Path) -> None:
    """The selection errs towards yes: each file pathlib's glob finds, it takes too."""
    names = ["a.sql", ".b.sql", "db/c.sql", "db/x/d.sql", "db/x/y/e.py", "q1.sql", "Db/f.sql"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    patterns = ["*.sql", "**/*.sql", "db/**/*", "db/*/*.sql", "q?.sql", "**/x/**/*.py", "db/**"]
    for pattern in patterns:
        found = {p.relative_to(tmp_path).as_posix() for p in tmp_path.glob(pattern) if p.is_file()}
        parts = tuple(pattern.split("/"))
        mine = {n for n in names if glob_match(parts, tuple(n.split("/")))}
        assert found <= mine, (pattern, found - mine)
