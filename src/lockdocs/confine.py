"""Confinement: every file lockdocs reads or writes lies inside the project, symlinks resolved,
and a file is measured before it is read (`read_capped`).

A repository is input like any other: a symlink in it (`paths/x.yaml -> /etc/shadow`,
`docs/evil -> /elsewhere`) must not make lockdocs read, write or delete anything outside it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def resolved(path: Path) -> Path | None:
    """The path with every symlink resolved, or None when it cannot be (a loop, no access)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte in the name
        return None


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, symlinks resolved, is `root` (resolved) or lies below it."""
    base, target = resolved(root), resolved(path)
    if base is None or target is None:
        return False
    return target == base or base in target.parents


class TooLarge(Exception):
    """A file past the size it may have: refused before its bytes are read."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the file is {size:,} bytes; the limit is {limit:,}")
        self.size = size
        self.limit = limit


class NotAFile(OSError):
    """A name that is not a regular file (a FIFO, a device, a socket): never read, since a
    FIFO would wait for a writer and a device may never end."""


def read_capped(path: Path, limit: int) -> bytes:
    """A file's bytes, measured before they are read: past `limit` bytes it raises TooLarge,
    having read at most `limit` + 1 of them (a file that grows while it is read cannot run
    on). Opened without blocking, so a FIFO planted under a declaration's name is refused
    rather than waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(0, "not a regular file", str(path))
        if info.st_size > limit:
            raise TooLarge(info.st_size, limit)
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(len(data), limit)
    return data
