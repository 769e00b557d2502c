"""Where the project is: the nearest folder upward that holds locks.yaml, and never one that
belongs to someone else. Light on purpose (no YAML): a check answered from the result cache
finds its project here and reads nothing else of the pipeline.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path as FsPath

LOCKS_FILE = "locks.yaml"


class RootNotFound(Exception):
    """No locks.yaml in the folder or above it (a usage error, exit 2)."""


def _stranger(path: FsPath) -> str | None:
    """Why a folder (or its locks.yaml) found upward is not this user's project, or None."""

    try:
        info = path.stat()
    except OSError:
        return "it cannot be read"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return "it belongs to another user"
    if path.is_dir() and info.st_mode & stat.S_IWOTH:
        return "anyone may write to the folder"
    return None


GONE = "the working folder no longer exists (deleted or moved); cd into the project again"


def working_folder() -> FsPath:
    """The working folder, or RootNotFound in plain words when it was deleted or moved away
    (os.getcwd fails there: a usage error, not an internal one)."""
    try:
        return FsPath.cwd()
    except OSError:
        raise RootNotFound(GONE) from None


def find_root(start: FsPath) -> FsPath:
    """The nearest folder upward that holds locks.yaml. The walk stops at the repository's
    top (a folder with .git) and at the user's home, and never takes a folder, or a
    locks.yaml, that another user owns or anyone may write to (a shared /tmp): someone
    else's locks.yaml would bring its templates and journal with it."""
    here = start.resolve()
    try:
        home: FsPath | None = FsPath.home().resolve()
    except (RuntimeError, KeyError, OSError):
        home = None
    for folder in (here, *here.parents):
        candidate = folder / LOCKS_FILE
        if candidate.is_file():
            why = _stranger(folder) or _stranger(candidate)
            if why is not None:
                raise RootNotFound(
                    f"found {candidate}, but {why}; lockdocs does not take it as the project"
                )
            return folder
        if (folder / ".git").exists() or folder == home:
            break
    raise RootNotFound(
        f"no {LOCKS_FILE} in {here} or above it (up to the repository top or your home)"
    )
