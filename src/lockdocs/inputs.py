"""What a run read, hashed as it read it.

The check's result cache (`checkcache.py`) says "these inputs gave these findings", and the
manifest's seal says "these inputs gave these docs"; each may only record what the run actually
read. Re-reading the files at the end (as an earlier cache did) let an edit made while `check`
or `build` ran be recorded as checked: the next check then passed on stale results. The loader,
the settings, the scan and the template snapshot record each file's sha256 here when they read
it, and each folder walk records the folder's tree (names and kinds) before it walks; the
cache and the seal are made of these.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from pathlib import Path

from lockdocs.confine import TooLarge, inside, read_capped

_SEEN: dict[str, dict[str, str]] = {}


def _key(root: Path) -> str:
    return str(root.resolve())


def start(root: Path) -> None:
    """A new run over this project: forget what an earlier one read."""
    _SEEN[_key(root)] = {}


def record(root: Path, label: str, data: bytes | None) -> None:
    """This run read `data` (None: found nothing) as `label`."""
    digest = "<missing>" if data is None else hashlib.sha256(data).hexdigest()
    _SEEN.setdefault(_key(root), {})[label] = digest


def record_digest(root: Path, label: str, digest: str) -> None:
    """Like `record`, for a reader that hashed the bytes itself."""
    _SEEN.setdefault(_key(root), {})[label] = digest


# A walk that met something the result cache cannot re-check on its own (a symlink, a folder
# it could not list): the run's result is not cached.
UNCACHEABLE = "<uncacheable>"
MAX_LISTED = 200_000


def listing(folder: Path, keep: str | None = None) -> str:
    """The digest of a folder's tree as names and kinds, without following anything: equal
    listings mean every walk of the folder finds the same files. With `keep` (a glob's last
    part) only the files whose names match it are listed, and every folder. UNCACHEABLE when the tree
    holds a symlink (where it leads may change while the tree does not) or cannot be read;
    "<missing>" and "<not a folder>" for what stands there instead of a folder."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return "<missing>"
    except OSError:
        return UNCACHEABLE
    if stat.S_ISLNK(mode):
        return UNCACHEABLE
    if not stat.S_ISDIR(mode):
        return "<not a folder>"
    h = hashlib.sha256()
    pending = [""]
    count = 0
    while pending:
        rel = pending.pop()
        try:
            with os.scandir(folder / rel if rel else folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return UNCACHEABLE
        count += len(entries)
        if count > MAX_LISTED:
            return UNCACHEABLE
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_symlink():
                return UNCACHEABLE
            if entry.is_dir(follow_symlinks=False):
                kind = "d"
                pending.append(name)
            else:
                if keep is not None and not fnmatch.fnmatchcase(entry.name, keep):
                    continue
                kind = "f" if entry.is_file(follow_symlinks=False) else "o"
            h.update(f"{kind}{name}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def record_listing(root: Path, label: str, folder: Path, keep: str | None = None) -> None:
    """A walk of `folder` is about to start: record its tree (`listing`) under `label`."""
    _SEEN.setdefault(_key(root), {})[label] = listing(folder, keep)


def glob_listing(root: Path, pattern: str) -> str:
    """The `listing` a `code:` pattern's walk depends on: its fixed leading folders, with only
    the files its last part can match; UNCACHEABLE for a pattern that leaves the project."""
    parts = pattern.split("/")
    if pattern.startswith("/") or ".." in parts or "\\" in pattern:
        return UNCACHEABLE
    fixed: list[str] = []
    for part in parts[:-1]:
        if any(c in part for c in "*?["):
            break
        fixed.append(part)
    last = parts[-1]
    return listing(root.joinpath(*fixed), None if "**" in last else last)


def record_glob(root: Path, pattern: str) -> None:
    """A `code:` pattern is about to be globbed: record what its walk depends on."""
    _SEEN.setdefault(_key(root), {})[f"glob:{pattern}"] = glob_listing(root, pattern)


def uncacheable(root: Path, why: str) -> None:
    """This run read something the result cache could not re-check: it is not cached."""
    _SEEN.setdefault(_key(root), {})[f"!{why}"] = UNCACHEABLE


def seen(root: Path) -> dict[str, str]:
    """label -> sha256 of everything this run read, so far."""
    return dict(_SEEN.get(_key(root), {}))


TEMPLATE_DIR = "templates"
MAX_TEMPLATE_FILES = 500
MAX_TEMPLATE_BYTES = 4 * 1024 * 1024


def template_snapshot(root: Path) -> tuple[dict[str, str], str]:
    """The project's templates/ read once: ({name: source}, problem). The renderer renders
    these very texts and the cache hashes them, so an edit made meanwhile can be neither
    half-used nor recorded as checked. A file that leads outside the project (a symlink),
    is too large or is not UTF-8 makes `problem` name it; nothing else is read then."""

    folder = root / TEMPLATE_DIR
    out: dict[str, str] = {}
    if not folder.is_dir() and not folder.is_symlink():
        record(root, TEMPLATE_DIR + "/", None)
        return out, ""
    if not inside(root, folder):
        record(root, TEMPLATE_DIR + "/", b"<outside>")
        return out, f"{TEMPLATE_DIR}/ leads outside the project (a symlink?)"
    names: list[str] = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(here) / name
            rel = path.relative_to(folder).as_posix()
            names.append(rel)
            if len(names) > MAX_TEMPLATE_FILES:
                return {}, f"{TEMPLATE_DIR}/ holds more than {MAX_TEMPLATE_FILES} files"
            if not inside(root, path):
                record(root, f"{TEMPLATE_DIR}/{rel}", b"<outside>")
                return {}, f"{TEMPLATE_DIR}/{rel} leads outside the project (a symlink?)"
            try:
                data = read_capped(path, MAX_TEMPLATE_BYTES)
            except TooLarge:
                return {}, f"{TEMPLATE_DIR}/{rel} is over {MAX_TEMPLATE_BYTES:,} bytes"
            except OSError as exc:
                return {}, f"{TEMPLATE_DIR}/{rel} cannot be read ({exc.strerror})"
            record(root, f"{TEMPLATE_DIR}/{rel}", data)
            try:
                out[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                return {}, f"{TEMPLATE_DIR}/{rel} is not UTF-8"
    record(root, TEMPLATE_DIR + "/", "\n".join(names).encode("utf-8", "surrogateescape"))
    return out, ""
