"""The files a `code:` glob names, found in one walk of the tree whatever the pattern.

`Path.glob` gives every `**` a walk of its own below the one before it, so `**/**/**/*.sql`
walks the tree once per way of splitting each path into three (six nested `**` over a deep
tree took 269 s). Here the pattern is an automaton over the parts of a path: each folder is
read once, with the set of pattern positions the parts above it can have reached, and a
folder no position can go on from is not read at all. The work is the entries read times the
pattern's length.

The matches are those of `Path.glob` on POSIX: parts match case-sensitively with fnmatch (`*`
matches names starting with a dot too), `**` matches any number of folders (none too) and
does not go down a symlink to a folder (a part written out, or a wildcard, does), and only
files are returned (a pattern ending in `**` names folders, which the scan does not read).
Unlike `Path.glob`, a folder the walk needed but could not read is returned too, so the scan
can say so instead of "matches no file".
"""

from __future__ import annotations

import os
from fnmatch import fnmatchcase
from pathlib import Path

_ANY = "**"


def _parts(pattern: str) -> tuple[str, ...]:
    """The pattern's parts, `.` and empty ones dropped and `**/**` read as one `**`."""
    out: list[str] = []
    for part in pattern.split("/"):
        if part in ("", "."):
            continue
        if part == _ANY and out and out[-1] == _ANY:
            continue
        out.append(part)
    return tuple(out)


def _closure(parts: tuple[str, ...], states: set[int]) -> frozenset[int]:
    """`states` with every position a `**` may skip to (it matches no folder, too)."""
    out = set(states)
    for i in sorted(states):
        while i < len(parts) and parts[i] == _ANY:
            i += 1
            out.add(i)
    return frozenset(out)


def _after(parts: tuple[str, ...], states: frozenset[int], name: str, walk: bool) -> set[int]:
    """The positions after one more part, `name`; `walk`: it is a folder `**` may go down."""
    out: set[int] = set()
    for i in states:
        if i >= len(parts):
            continue
        part = parts[i]
        if part == _ANY:
            if walk:
                out.add(i)
        elif fnmatchcase(name, part):
            out.add(i + 1)
    return out


def glob(base: Path, pattern: str) -> list[Path]:
    """The files under `base` that `pattern` matches, sorted."""
    return walk(base, pattern)[0]


def walk(base: Path, pattern: str) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files under `base` that `pattern` matches, sorted, and each folder the walk had to
    read but could not, with why (sorted)."""
    parts = _parts(pattern)
    if not parts:
        return [], []
    end = len(parts)
    found: list[Path] = []
    unread: list[tuple[Path, str]] = []
    pending: list[tuple[Path, frozenset[int]]] = [(base, _closure(parts, {0}))]
    while pending:
        folder, states = pending.pop()
        if all(i >= end for i in states):
            continue
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone or replaced meanwhile
        except OSError as exc:
            unread.append((folder, exc.strerror or type(exc).__name__))
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                link = entry.is_symlink()
            except OSError:
                continue
            here = folder / entry.name
            if is_dir:
                nxt = _closure(parts, _after(parts, states, entry.name, walk=not link))
                if nxt:
                    pending.append((here, nxt))
            elif end in _closure(parts, _after(parts, states, entry.name, walk=False)):
                found.append(here)
    return sorted(found), sorted(unread)
