"""State that cannot lie: the check's result cache and the manifest's seal record what the run
read (never what it finds on disk afterwards), concurrent builds
take turns, killed builds leave no temporary files behind for good, and written files get the
mode `open` would give. Real CLI, real files, real processes."""

from __future__ import annotations

import fcntl
import io
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import lockdocs.render.current as current_mod
import lockdocs.render.pages as pages_mod
import lockdocs.render.write as build_mod
from conftest import REPO, run_cli
from lockdocs.api import build as api_build

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"


@pytest.fixture
def built(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    assert run_cli("build", "--root", str(root)).code == 0
    return root


def _edit(root: Path, n: int = 1) -> None:
    locks = root / "locks.yaml"
    text = locks.read_text()
    locks.write_text(text.replace("title: Shop Locks", f"title: Shop Locks {n}", 1))


# --- the result cache and the seal ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "build"])
def test_an_edit_during_a_run_is_not_recorded_as_clean(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """locks.yaml is edited after the run read it (a build: while it renders; a check: while
    the manifest is read). The result cache and the seal must record what was checked, so the
    next check sees the stale docs, as it does uncached."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("LOCKDOCS_CACHE", raising=False)
    render, vouch = pages_mod.page_files, current_mod.vouch

    def render_then_edit(*args: object, **kwargs: object) -> dict[str, str]:
        files = render(*args, **kwargs)  # type: ignore[arg-type]
        _edit(built)  # the user saves an edit meanwhile
        return files

    def vouch_then_edit(*args: object, **kwargs: object) -> bool:
        vouched = vouch(*args, **kwargs)  # type: ignore[arg-type]
        _edit(built)
        return vouched

    monkeypatch.setattr(pages_mod, "page_files", render_then_edit)  # its templates: a build
    # draws the diagrams meanwhile
    monkeypatch.setattr(current_mod, "vouch", vouch_then_edit)
    if command == "check":
        from lockdocs.api import check

        assert check(built).exit_code == 0  # the docs matched what it read
    else:
        assert api_build(built, out=io.StringIO(), err=io.StringIO()) == 0
    monkeypatch.undo()
    env = {"XDG_CACHE_HOME": str(cache)}
    cached = run_cli("check", "--root", str(built), env=env)
    uncached = run_cli("check", "--root", str(built), env={**env, "LOCKDOCS_CACHE": "off"})
    assert uncached.code == 1
    assert cached.code == 1, cached.out
    assert (cache / "lockdocs").is_dir()  # the cache was in use


def test_an_edited_template_during_a_check_is_not_recorded_as_clean(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    (built / "templates").mkdir()
    (built / "templates" / "planned.md.j2").write_text("## Planned\n")
    assert run_cli("build", "--root", str(built), env={"LOCKDOCS_CACHE": "off"}).code == 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    real = current_mod.vouch

    def edit_after(*args: object, **kwargs: object) -> bool:
        out = real(*args, **kwargs)  # type: ignore[arg-type]
        (built / "templates" / "planned.md.j2").write_text("## Planned, edited\n")
        return out

    monkeypatch.setattr(current_mod, "vouch", edit_after)
    from lockdocs.api import check

    assert check(built).exit_code == 0
    monkeypatch.undo()
    assert "edited" in (built / "templates" / "planned.md.j2").read_text()
    assert run_cli("check", "--root", str(built), env={"XDG_CACHE_HOME": str(cache)}).code == 1


# --- concurrent builds -------------------------------------------------------------------------


def test_concurrent_builds_take_turns_and_the_last_inputs_win(built: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("LOCKDOCS_DEBUG", None)
    procs = []
    for n in range(6):
        _edit(built, n + 2)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "lockdocs", "build", "--root", str(built)],
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = [(p.communicate(timeout=300)[1], p.returncode) for p in procs]
    for err, code in results:
        assert code == 0, err
        assert "internal error" not in err
    assert run_cli("build", "--root", str(built)).code == 0
    assert run_cli("check", "--root", str(built), env={"LOCKDOCS_CACHE": "off"}).code == 0
    assert not list(built.rglob("*.tmp")) and not (built / build_mod.LOCK).exists()


def test_a_build_waits_for_the_one_holding_the_lock(built: Path) -> None:
    _edit(built)
    path = built / build_mod.LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    released = threading.Event()

    def release_later() -> None:
        time.sleep(1.5)
        released.set()
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    threading.Thread(target=release_later, daemon=True).start()
    result = run_cli("build", "--root", str(built))
    assert released.is_set()  # it did not write before the holder let go
    assert result.code == 0, result.err


def test_a_build_that_cannot_get_the_lock_says_so(built: Path) -> None:
    _edit(built)
    before = (built / "docs" / "database-locks.md").read_bytes()
    fd = os.open(built / build_mod.LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        result = run_cli("build", "--root", str(built), env={"LOCKDOCS_LOCK_SECONDS": "0.5"})
    finally:
        os.close(fd)
    assert result.code == 2, result.err
    assert "another lockdocs build is running" in result.err and "hint:" in result.err
    assert (built / "docs" / "database-locks.md").read_bytes() == before


# --- killed builds and file modes -----------------------------------------------------------------


def test_killed_builds_leave_no_temporary_files_for_good(built: Path) -> None:
    """Killed after a rename (the journal covers it), or while writing its temporary files
    (before any journal: these stayed for good, 80 after 50 kills)."""
    for n in range(1, 6):
        _edit(built, n)
        killed = run_cli("build", "--root", str(built), env={"LOCKDOCS_CRASH_AFTER": "1"})
        assert killed.code != 0
    for name in ("database-locks.md", "database-locks/legend.svg", ".lockdocs-journal"):
        target = built / "docs" / name
        (target.parent / f".{target.name}.k1ll3d_x.tmp").write_text("half a file")
    mine = built / "docs" / ".notes.abcdefgh.tmp"  # not a name lockdocs writes: kept
    mine.write_text("mine\n")
    assert list(built.rglob(".*.tmp"))
    assert run_cli("build", "--root", str(built)).code == 0
    assert [p.name for p in built.rglob(".*.tmp")] == [mine.name]
    assert run_cli("check", "--root", str(built), env={"LOCKDOCS_CACHE": "off"}).code == 0


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_get_the_mode_the_umask_gives(tmp_path: Path, mask: int) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURE, root)
    code = (
        "import os, sys; os.umask(int(sys.argv[1])); sys.argv[1:] = ['build', '--root', "
        "sys.argv[2]]; from lockdocs.entry import main; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(mask), str(root)], capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    files = [p for p in (root / "docs").rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask, p


def test_a_replaced_file_keeps_its_own_mode(built: Path) -> None:
    page = built / "docs" / "database-locks.md"
    page.chmod(0o640)
    _edit(built)
    assert run_cli("build", "--root", str(built)).code == 0
    assert stat.S_IMODE(page.stat().st_mode) == 0o640
