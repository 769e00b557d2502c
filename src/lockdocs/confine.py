"""Confinement: every file lockdocs reads or writes lies inside the project, symlinks resolved.

A repository is input like any other: a symlink in it (`paths/x.yaml -> /etc/shadow`,
`docs/evil -> /elsewhere`) must not make lockdocs read, write or delete anything outside it.
"""

from __future__ import annotations

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
