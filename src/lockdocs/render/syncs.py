"""Getting the files a build wrote onto the disk before it renames any of them: many `fsync`s
at a time, in background threads, while the build goes on writing and drawing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor


def fsync(path: Path) -> None:
    """`fsync` a file by its path."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_SYNC_THREADS = 16
_SYNC_GROUP = 8  # files one thread syncs in a row


def _fsync_all(paths: list[Path]) -> None:
    for path in paths:
        fsync(path)


class Syncer:
    """`fsync`s files in background threads as they are written (`add`), many at a time, so
    the file system commits concurrent syncs together (ext4: 7,203 files in under a second,
    against 26 s one after another) and mostly while the build still draws its diagrams.
    `wait` returns once each file is on disk: before the journal is written and before any
    rename, as when each file was synced as it was written."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def add(self, paths: list[Path]) -> None:
        if not paths:
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor  # the lazy boundary of the threads

            self._pool = ThreadPoolExecutor(max_workers=_SYNC_THREADS)
        for i in range(0, len(paths), _SYNC_GROUP):
            self._pending.append(self._pool.submit(_fsync_all, paths[i : i + _SYNC_GROUP]))

    def wait(self) -> None:
        """Every file added is on disk; raises the first failure."""
        try:
            for fut in self._pending:
                fut.result()
        finally:
            self.close()

    def close(self) -> None:
        """Drop the syncs not yet started and wait for the running ones."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending = []
