"""The build's syncs (render/syncs.py): every file on disk before any rename, by one `syncfs` of
the project's file system on Linux and by `fsync`s elsewhere; a failed sync is the build's
failure, with the previous files left as they were."""

from __future__ import annotations

import ctypes
import io
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from lockdocs.api import build as api_build
from lockdocs.render import syncs

HERE = Path(__file__).parent


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `fsync`ed one by one (they still are)."""
    out: list[Path] = []
    real = syncs.fsync
    monkeypatch.setattr(syncs, "fsync", lambda p: (out.append(p), real(p)))
    return out


def _files(folder: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        p = folder / f"f{i}.txt"
        p.write_text(f"{i}\n" * 100)
        out.append(p)
    return out


@pytest.mark.skipif(sys.platform != "linux", reason="syncfs is Linux's")
def test_files_on_the_folders_file_system_wait_for_one_syncfs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsynced: list[Path]
) -> None:
    calls: list[int] = []
    real_syncfs = syncs._syncfs()
    assert real_syncfs is not None  # glibc has it: the fast way is the one taken here

    def counted(fd: int) -> int:
        calls.append(fd)
        return int(real_syncfs(fd))

    monkeypatch.setattr(syncs, "_syncfs", lambda: counted)
    s = syncs.Syncer(tmp_path)
    s.add(_files(tmp_path, 50))
    s.add(_files(tmp_path / ".." / tmp_path.name, 3))
    assert calls == []  # nothing synced before wait
    s.wait()
    assert len(calls) == 1 and fsynced == []


def test_without_a_folder_each_file_is_fsynced(tmp_path: Path, fsynced: list[Path]) -> None:
    files = _files(tmp_path, 20)
    s = syncs.Syncer()
    s.add(files)
    s.wait()
    assert sorted(fsynced) == sorted(files)


def test_where_there_is_no_syncfs_each_file_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsynced: list[Path]
) -> None:
    monkeypatch.setattr(syncs, "_syncfs", lambda: None)
    files = _files(tmp_path, 20)
    s = syncs.Syncer(tmp_path)
    s.add(files)
    s.wait()
    assert sorted(fsynced) == sorted(files)


@pytest.mark.skipif(sys.platform != "linux", reason="syncfs is Linux's")
def test_a_failed_syncfs_fails_the_build_and_leaves_the_previous_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An I/O error while the files go to disk (a disk that fails write-back): exit 2, the
    error named, every previous file as it was and no temporary file left."""
    root = tmp_path / "p"
    shutil.copytree(HERE / "fixtures" / "render_project", root)
    assert api_build(root, out=io.StringIO(), err=io.StringIO(), svg=False) == 0
    before = {p: p.read_bytes() for p in sorted((root / "docs").rglob("*")) if p.is_file()}
    locks = root / "locks.yaml"
    text = locks.read_text(encoding="utf-8")
    assert "title: Stock row" in text
    locks.write_text(text.replace("title: Stock row", "title: Stock level row"), encoding="utf-8")

    def failing(fd: int) -> int:
        ctypes.set_errno(5)
        return -1

    failing_any: Any = failing
    monkeypatch.setattr(syncs, "_syncfs", lambda: failing_any)
    err = io.StringIO()
    assert api_build(root, out=io.StringIO(), err=err, svg=False) == 2
    assert "Input/output error" in err.getvalue()
    after = {p: p.read_bytes() for p in sorted((root / "docs").rglob("*")) if p.is_file()}
    assert after == before
    assert not [p for p in (root / "docs").rglob("*") if p.name.endswith(".tmp")]
