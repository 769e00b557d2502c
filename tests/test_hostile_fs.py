"""Hostile and careless file systems: crafted state files, symlinks out of the project, a
read-only or full docs folder, the wrong kind of file where docs go. Each must hold (nothing
outside the project read, written or deleted) or be refused with exit 2 and a plain message
saying what to do; none exits 3. Real CLI, real files, real mounts (as root)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
JOURNAL = "docs/.lockdocs-journal"
MANIFEST = "docs/.lockdocs-manifest"

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and mounts are POSIX")


def _tree(folder: Path) -> dict[str, str]:
    """Every file under folder (symlinks not followed) with the sha256 of its bytes."""
    out: dict[str, str] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[p.relative_to(folder).as_posix()] = "-> " + str(p.readlink())
        elif p.is_file():
            out[p.relative_to(folder).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """(a built project, a folder beside it holding the user's other files)."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    built = run_cli("build", "--root", str(root))
    assert built.code == 0, built.err
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("the user's file\n")
    return root, outside


def _clean(result_err: str) -> None:
    assert "Traceback" not in result_err and "internal error" not in result_err, result_err


# --- the undo journal ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "journal",
    [
        [{"target": "../outside/victim.txt", "backup": "docs/payload", "temp": None}],
        [{"target": "{outside}/victim.txt", "backup": None, "temp": "docs/x.tmp"}],
        [{"target": "docs/database-locks.md", "backup": "../outside/victim.txt", "temp": None}],
        [{"target": "docs/database-locks.md", "backup": None, "temp": "../outside/victim.txt"}],
        [{"target": "docs/database-locks.md", "backup": "docs/payload", "temp": None}],
        [{"target": "docs/evil/victim.txt", "backup": None, "temp": None}],
        {"a": 1},
        [1, 2],
        None,
        [{"target": "docs/database-locks.md"}],
        [{"target": "docs/database-locks.md", "backup": None, "temp": None, "more": 1}],
        "not json at all",
        "[" * 100_000 + "]" * 100_000,  # json.loads: RecursionError, was exit 3
    ],
)
def test_a_crafted_journal_is_reported_and_never_followed(
    world: tuple[Path, Path], journal: object
) -> None:
    root, outside = world
    (root / "docs" / "payload").write_text("attacker's bytes\n")
    (root / "docs" / "evil").symlink_to(outside, target_is_directory=True)
    text = journal if isinstance(journal, str) else json.dumps(journal)
    (root / JOURNAL).write_text(text.replace("{outside}", str(outside)))
    before_outside = _tree(outside)
    page = (root / "docs" / "database-locks.md").read_bytes()
    result = run_cli("build", "--root", str(root))
    _clean(result.err)
    assert result.code == 0, result.err
    assert f"ignored {JOURNAL}" in result.err and "nothing in it was followed" in result.err
    assert _tree(outside) == before_outside
    assert (root / "docs" / "database-locks.md").read_bytes() == page
    assert not (root / JOURNAL).exists()
    assert run_cli("build", "--root", str(root)).code == 0  # and every later build too


def test_a_malformed_journal_does_not_stop_check(world: tuple[Path, Path]) -> None:
    root, _ = world
    (root / JOURNAL).write_text("[1, 2]")
    check = run_cli("check", "--root", str(root))
    _clean(check.err)
    assert check.code == 1 and "interrupted" in check.out


# --- the manifest and symlinked folders in docs/ ---------------------------------------------


@posix_only
def test_a_manifest_line_through_a_symlinked_folder_removes_nothing_outside(
    world: tuple[Path, Path],
) -> None:
    root, outside = world
    (root / "docs" / "evil").symlink_to(outside, target_is_directory=True)
    with (root / MANIFEST).open("a") as fh:
        fh.write("docs/evil/victim.txt\n../outside/victim.txt\n/etc/hostname\n")
    before = _tree(outside)
    result = run_cli("build", "--root", str(root))
    _clean(result.err)
    assert result.code == 0
    assert _tree(outside) == before
    assert "docs/evil" not in (root / MANIFEST).read_text()


@posix_only
@pytest.mark.parametrize("link", ["docs", "docs/database-locks"])
def test_a_symlinked_docs_folder_leading_outside_is_refused(
    world: tuple[Path, Path], link: str
) -> None:
    root, outside = world
    shutil.rmtree(root / link)
    (root / link).symlink_to(outside, target_is_directory=True)
    before = _tree(outside)
    result = run_cli("build", "--root", str(root))
    _clean(result.err)
    assert result.code == 2, result.err
    assert "leads outside" in result.err and "nothing written" in result.err
    assert "hint:" in result.err
    assert _tree(outside) == before
    check = run_cli("check", "--root", str(root))
    assert check.code == 1 and "leads outside" in check.out
    assert "victim" not in check.out


@posix_only
def test_a_docs_file_symlinked_outside_is_neither_read_nor_written(
    world: tuple[Path, Path],
) -> None:
    root, outside = world
    page = root / "docs" / "database-locks.md"
    page.unlink()
    page.symlink_to(outside / "victim.txt")
    result = run_cli("build", "--root", str(root))
    assert result.code == 2 and "leads outside docs/" in result.err
    assert (outside / "victim.txt").read_text() == "the user's file\n"
    check = run_cli("check", "--root", str(root))
    assert check.code == 1 and "the user's file" not in check.out


@posix_only
def test_a_docs_symlink_inside_the_project_is_followed(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    (root / "site-docs").mkdir()
    (root / "docs").symlink_to(root / "site-docs", target_is_directory=True)
    assert run_cli("build", "--root", str(root)).code == 0
    assert (root / "site-docs" / "database-locks.md").is_file()
    assert run_cli("check", "--root", str(root)).code == 0


# --- the wrong kind of file where the docs go --------------------------------------------------


@posix_only
@pytest.mark.parametrize("kind", ["file", "dangling", "entry-is-a-folder"])
def test_the_wrong_kind_of_docs_is_exit_2(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    if kind == "file":
        (root / "docs").write_text("not a folder\n")
        words = "docs is a file, not a folder"
    elif kind == "dangling":
        (root / "docs").symlink_to(tmp_path / "gone", target_is_directory=True)
        words = "which does not exist"
    else:
        (root / "docs" / "database-locks.md").mkdir(parents=True)
        words = "docs/database-locks.md is a folder"
    before = _tree(root)
    result = run_cli("build", "--root", str(root))
    _clean(result.err)
    assert result.code == 2, result.err
    assert words in result.err and "nothing written" in result.err and "hint:" in result.err
    assert _tree(root) == before


# --- read-only and full file systems (real mounts; root only) --------------------------------


@contextlib.contextmanager
def _mount(args: list[str], where: Path) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs or a read-only bind mount needs root")
    proc = subprocess.run(["mount", *args, str(where)], capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here: {proc.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(where)], check=True)


@posix_only
@pytest.mark.parametrize("journal", [False, True])
def test_a_read_only_docs_folder_is_exit_2(world: tuple[Path, Path], journal: bool) -> None:
    root, _ = world
    if journal:  # recover() must remove it: EROFS
        (root / JOURNAL).write_text("[]")
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text().replace("title: Shop Locks", "title: Shop Locks Two"))
    docs = root / "docs"
    before = _tree(docs)
    with _mount(["--bind", str(docs)], docs):
        subprocess.run(["mount", "-o", "remount,ro,bind", str(docs)], check=True)
        result = run_cli("build", "--root", str(root))
        after = _tree(docs)
    _clean(result.err)
    assert result.code == 2, result.err
    assert "Read-only file system (EROFS)" in result.err
    assert "hint: the file system is read-only" in result.err
    assert after == before


@posix_only
def test_a_full_disk_is_exit_2_and_leaves_the_previous_docs(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    with _mount(["-t", "tmpfs", "-o", "size=512k", "tmpfs"], root):
        shutil.copy(FIXTURE / "locks.yaml", root)
        shutil.copytree(FIXTURE / "paths", root / "paths")
        assert run_cli("build", "--root", str(root)).code == 0
        locks = root / "locks.yaml"
        locks.write_text(locks.read_text().replace("title: Shop Locks", "title: Shop Locks 2"))
        before = _tree(root / "docs")
        free = shutil.disk_usage(root).free
        (root / "filler").write_bytes(b"\0" * max(free - 24 * 1024, 0))
        result = run_cli("build", "--root", str(root))
        after = _tree(root / "docs")
        leftovers = [p.name for p in (root / "docs").rglob(".*.tmp")]
    _clean(result.err)
    assert result.code == 2, result.err
    assert "No space left on device (ENOSPC)" in result.err and "docs/" in result.err
    assert "hint: the disk is full" in result.err
    assert after == before and not leftovers


# --- reading: declarations or settings symlinked out of the project -------------------------------


@posix_only
@pytest.mark.parametrize("what", ["locks.yaml", "pyproject.toml"])
def test_declarations_or_settings_symlinked_outside_are_refused(tmp_path: Path, what: str) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    real = tmp_path / what
    if what == "locks.yaml":
        shutil.move(root / what, real)
    else:
        real.write_text("[tool.lockdocs.checks]\nLD302 = 'SECRET'\n")
    (root / what).symlink_to(real)
    result = run_cli("check", "--root", str(root))
    _clean(result.err)
    assert result.code == 2, result.out + result.err
    assert f"{what}: LD012 error" in result.out and "SECRET" not in result.out


# --- init -------------------------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize(
    "link", ["docs", "paths", ".lockdocs", "docs/database-locks", "locks.yaml"]
)
def test_init_never_writes_through_a_symlink(tmp_path: Path, link: str) -> None:
    here = tmp_path / "new"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (here / link).parent.mkdir(parents=True, exist_ok=True)
    (here / link).symlink_to(elsewhere / "x" if link == "locks.yaml" else elsewhere)
    result = run_cli("init", str(here))
    _clean(result.err)
    assert result.code == 2, result.out + result.err
    assert "symlink" in result.err or "already exists" in result.err
    assert list(elsewhere.iterdir()) == []
    assert not (here / "locks.yaml").is_file()
