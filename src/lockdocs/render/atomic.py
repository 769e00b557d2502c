"""Writing the generated files all or nothing: each through a temporary file beside its target
and `os.replace`, the manifest last, with an undo journal that a killed build leaves for the
next run to restore from, and a lock so builds of one project write one at a time.

Neither the manifest nor the journal can make a build delete or replace a file a person wrote:
a stale file is removed, and a file the journal says a build added is deleted, only when it
bears lockdocs' mark and still has the content hash recorded for it; a file the journal would
restore over is one lockdocs wrote, or already the copy. Anything else is kept, and said."""

from __future__ import annotations

import contextlib
import fcntl  # POSIX, as the build lock is
import functools
import json
import os
import re
import signal
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from lockdocs.render.journal import JOURNAL, discard, interrupted, recover
from lockdocs.render.manifest import DOCS, MANIFEST, inside_docs, manifest_text, sha
from lockdocs.render.syncs import Syncer, fsync
from lockdocs.render.targets import (
    BuildRefused,
    Confinement,
    confined,
    manifest_hashes,
    read_or_none,
    written_by_lockdocs,
)

# The journal's reading lives in journal.py; these names stay importable from here.
__all__ = [
    "JOURNAL",
    "LOCK",
    "BuildLock",
    "Later",
    "interrupted",
    "recover",
    "remove_stale_temps",
    "write_files",
]


@functools.cache
def _umask() -> int:
    """The process's umask (read without changing it where Linux allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The mode `open` would leave: an existing file keeps its own, a new one gets what the
    umask allows (mkstemp alone makes every file 0600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _write_temp(target: Path, content: bytes, mode: int | None = None) -> Path:
    """Write content to a new temporary file beside target (same folder, so os.replace is an
    atomic rename) and return its path. Not yet on disk: sync it (`syncs.Syncer`) before any
    rename."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _mode_for(target) if mode is None else mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
    except OSError as exc:
        Path(name).unlink(missing_ok=True)
        if exc.filename is None:  # a failed write names no file; say which one
            exc.filename = str(target)
        raise
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def _mkdirs(folder: Path, created: list[Path]) -> None:
    """Create the missing folders of `folder`, recording them for a rollback."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    for p in reversed(missing):
        p.mkdir()
        created.append(p)


def _prune(folder: Path, stop: Path) -> None:
    """Remove folders left empty, up to (not including) stop."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


def _entry(
    root: Path, target: Path, backup: Path | None, tmp: Path | None, digest: str | None
) -> dict[str, str | None]:
    """One file a build replaces, adds or removes: `digest` is the sha256 of what it puts at
    the target (None for a removal)."""

    def rel(p: Path | None) -> str | None:
        return None if p is None else p.relative_to(root).as_posix()

    return {"target": rel(target), "backup": rel(backup), "temp": rel(tmp), "sha": digest}


def _write_journal(root: Path, entries: list[dict[str, str | None]]) -> None:
    target = root / JOURNAL
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _write_temp(target, json.dumps(entries, sort_keys=True).encode("utf-8"))
    try:
        fsync(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(target)


def _crash_point(renamed: int) -> None:
    """For the crash test only: LOCKDOCS_CRASH_AFTER=N kills the process after N renames."""
    limit = os.environ.get("LOCKDOCS_CRASH_AFTER")
    if limit and renamed >= int(limit):
        os.kill(os.getpid(), signal.SIGKILL)


_TEMP = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.tmp")


def remove_stale_temps(root: Path, names: list[str]) -> list[str]:
    """Delete the temporary files killed builds left beside the files lockdocs writes
    (`.NAME.XXXXXXXX.tmp`, NAME one of `names`); only while holding the build lock, after
    recover() has used the journal's. Returns what was removed."""
    by_folder: dict[Path, set[str]] = {}
    confined_here = Confinement(root)
    for rel in names:
        if confined_here(rel):
            target = root / rel
            by_folder.setdefault(target.parent, set()).add(target.name)
    removed = []
    for folder, wanted in sorted(by_folder.items()):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in sorted(entries):
            m = _TEMP.fullmatch(entry.name)
            if m and m.group(1) in wanted and entry.is_file() and not entry.is_symlink():
                entry.unlink(missing_ok=True)
                removed.append(entry.relative_to(root).as_posix())
    return removed


LOCK = f"{DOCS}/.lockdocs-lock"
LOCK_WAIT = 60.0  # seconds a build waits for another one (LOCKDOCS_LOCK_SECONDS overrides)


def _lock_wait() -> float:
    try:
        value = float(os.environ.get("LOCKDOCS_LOCK_SECONDS", ""))
    except ValueError:
        return LOCK_WAIT
    return value if value >= 0 else LOCK_WAIT


class BuildLock:
    """One build at a time per docs folder: an flock on docs/.lockdocs-lock, removed when the
    build ends (a killed build's file is taken over: the kernel drops its lock)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fd: int | None = None

    def acquire(self, wait: float | None = None) -> BuildRefused | None:
        wait = _lock_wait() if wait is None else wait
        path = self.root / LOCK
        if not confined(self.root, LOCK) or path.is_symlink():
            return BuildRefused(f"{LOCK} is a symlink", "remove it; lockdocs creates it itself")
        deadline = time.monotonic() + wait
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        while True:
            fd = os.open(path, flags, 0o666 & ~_umask())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() > deadline:
                    return BuildRefused(
                        f"another lockdocs build is running in this project ({LOCK} is held "
                        f"for more than {wait:g} s)",
                        "wait for it to finish, then build again",
                    )
                time.sleep(0.05)
                continue
            try:
                same = os.fstat(fd).st_ino == path.stat().st_ino
            except OSError:
                same = False
            if same:  # not a file the previous holder removed meanwhile
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self.fd = fd
                return None
            os.close(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            (self.root / LOCK).unlink()
        os.close(self.fd)
        self.fd = None


class Later(NamedTuple):
    """Files still being made (the SVGs being drawn): their names now, their contents from
    `contents()` a few at a time as they are made (it may raise); the other files' temporary
    copies are written meanwhile, and each part's as it comes."""

    names: tuple[str, ...]
    contents: Callable[[], Iterable[dict[str, str]]]


def _stage(
    root: Path,
    files: dict[str, str],
    created: list[Path],
    temps: list[tuple[str, Path]],
    syncer: Syncer,
) -> None:
    """A temporary file beside each of `files` whose content changes, on its way to disk."""
    first = len(temps)
    try:
        for rel, text in files.items():
            if read_or_none(root / rel) != text:
                target = root / rel
                _mkdirs(target.parent, created)
                temps.append((rel, _write_temp(target, text.encode("utf-8"))))
    finally:
        syncer.add([tmp for _, tmp in temps[first:]])


def write_files(
    root: Path, files: dict[str, str], inputs: str = "", later: Later | None = None
) -> tuple[list[str], list[str], list[str]]:
    """Write `files` and `later`'s (and the manifest, sealed with `inputs`:
    `manifest.inputs_digest`) all or nothing; remove what the last build wrote and this one
    does not, when it is still the file lockdocs wrote. Returns (written, removed, kept)
    paths: kept, the stale ones the manifest names that a person wrote or changed. What
    `later.contents()` raises leaves everything as it was, and is raised."""
    names = [*files, *(later.names if later is not None else ())]
    for rel in names:
        if not inside_docs(rel):  # pragma: no cover - render_outputs never makes one
            raise ValueError(f"refusing to write {rel} outside {DOCS}/")
    confined_here = Confinement(root)
    for rel in [*names, MANIFEST, JOURNAL]:
        if not confined_here(rel):
            raise BuildRefused(
                f"{rel} leads outside {DOCS}/ (a symlink on the way)",
                f"remove the symlink or point it inside {DOCS}/: lockdocs writes only there",
            )
        if (root / rel).is_dir():
            raise BuildRefused(
                f"{rel} is a folder, where lockdocs writes a file", "move the folder away"
            )
    previous = manifest_hashes(root)
    wanted = dict(files)
    created: list[Path] = []
    temps: list[tuple[str, Path]] = []
    syncer = Syncer(root)  # opened before the first file is written (see Syncer)
    try:
        _stage(root, files, created, temps, syncer)
        if later is not None:
            extra: dict[str, str] = {}
            for part in later.contents():
                _stage(root, part, created, temps, syncer)
                extra.update(part)
            if sorted(extra) != sorted(later.names):  # pragma: no cover - a bug, not input
                raise ValueError("the files made later are not the ones named")
            wanted.update(extra)
        files = dict(sorted(wanted.items()))
        manifest = manifest_text(list(files), files, inputs)
        if read_or_none(root / MANIFEST) != manifest:
            wanted[MANIFEST] = manifest
            _stage(root, {MANIFEST: manifest}, created, temps, syncer)
        stale: list[str] = []
        kept: list[str] = []
        for rel, digest in previous.items():
            if rel in files or not (root / rel).is_file():
                continue
            (stale if written_by_lockdocs(root / rel, rel, digest) else kept).append(rel)
    except BaseException:
        syncer.close()
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    temps.sort(key=lambda t: (t[0] == MANIFEST, t[0]))  # in path order, the manifest last
    changed = [rel for rel, _ in temps]

    # Undo journal: every file this build replaces or removes is first copied beside itself,
    # and the list is written (atomically) before the first rename. A failure inside the
    # process restores the copies at once; a killed process leaves the journal, and the next
    # `lockdocs build` restores the previous files before it writes (`check` reports it).
    docs = root / DOCS
    entries: list[dict[str, str | None]] = []
    try:
        for rel, tmp in temps:
            target = root / rel
            backup = _write_temp(target, target.read_bytes()) if target.exists() else None
            entries.append(_entry(root, target, backup, tmp, sha(wanted[rel])))
        for rel in stale:
            target = root / rel
            backup = _write_temp(target, target.read_bytes())
            entries.append(_entry(root, target, backup, None, None))
        syncer.add([root / str(e["backup"]) for e in entries if e["backup"] is not None])
        syncer.wait()
        _write_journal(root, entries)
    except BaseException:
        syncer.close()
        discard(root, entries)
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        raise
    try:
        for n, (rel, tmp) in enumerate(temps, start=1):
            tmp.replace(root / rel)
            _crash_point(n)
        for rel in stale:
            (root / rel).unlink(missing_ok=True)
    except BaseException:
        recover(root)
        raise
    # The build is in place: drop the copies (the temporary files are renamed), then the journal.
    discard(root, [e for e in entries if e["backup"] is not None])
    (root / JOURNAL).unlink(missing_ok=True)
    for rel in stale:
        _prune((root / rel).parent, docs)
    return sorted(r for r in changed if r != MANIFEST), sorted(stale), sorted(kept)
