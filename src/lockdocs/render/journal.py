"""The undo journal a build leaves while it replaces files, read back: a build killed half way
is undone from it before anything else runs. Only the exact shape a build writes is followed,
and it never deletes or replaces a file a person wrote: a file it says a build added goes only
when it bears lockdocs' mark and the hash recorded for it, a restore lands only on a file
lockdocs wrote (or on the copy itself). Anything else is kept, and said."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import TextIO

from lockdocs.render.manifest import DOCS, MANIFEST
from lockdocs.render.targets import confined, written_by_lockdocs

JOURNAL = f"{DOCS}/.lockdocs-journal"


def discard(root: Path, entries: list[dict[str, str | None]]) -> None:
    for e in entries:
        for key in ("backup", "temp"):
            if e[key]:
                (root / str(e[key])).unlink(missing_ok=True)


def interrupted(root: Path) -> bool:
    """A build was killed while it replaced files (its journal is still there)."""
    return (root / JOURNAL).is_file() or (root / JOURNAL).is_symlink()


_MAX_JOURNAL_BYTES = 16 * 1024 * 1024


def _journal_entries(root: Path) -> tuple[list[dict[str, str | None]], str]:
    """The journal's entries, or ([], why it cannot be trusted). A journal names files to
    restore and delete, so only the exact shape a build writes is followed: a list of
    {target, backup, temp, sha}, every name inside docs/ (symlinks resolved) and none of
    lockdocs' own files, each backup and temporary file a `.NAME.XXXXXXXX.tmp` sibling of its
    target, each sha a sha256."""
    journal = root / JOURNAL
    if journal.is_symlink() or not confined(root, JOURNAL):
        return [], "it is a symlink"
    try:
        if journal.stat().st_size > _MAX_JOURNAL_BYTES:
            return [], "it is far larger than any journal a build writes"
        entries = json.loads(journal.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # a planted one may nest deeply
        return [], "it is not JSON"
    if not isinstance(entries, list):
        return [], "it is not a list of entries"
    for e in entries:
        if not isinstance(e, dict) or set(e) != {"target", "backup", "temp", "sha"}:
            return [], "an entry is not {target, backup, temp, sha}"
        target = e["target"]
        if (
            not isinstance(target, str)
            or not confined(root, target)
            or (target != MANIFEST and PurePosixPath(target).name.startswith(".lockdocs-"))
        ):
            return [], f"an entry's target {target!r} is not a generated file inside {DOCS}/"
        digest = e["sha"]
        if digest is not None and (
            not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest)
        ):
            return [], f"an entry's sha {digest!r} is not a sha256"
        for key in ("backup", "temp"):
            value = e[key]
            if value is None:
                continue
            name = PurePosixPath(target).name
            if (
                not isinstance(value, str)
                or PurePosixPath(value).parent != PurePosixPath(target).parent
                or not re.fullmatch(
                    re.escape(f".{name}.") + r"[A-Za-z0-9_]+\.tmp", PurePosixPath(value).name
                )
                or not confined(root, value)
            ):
                return [], f"an entry's {key} {value!r} is not a temporary file beside {target}"
    return entries, ""


def recover(root: Path, err: TextIO | None = None) -> bool:
    """Undo a build that did not finish: put back every file it replaced or removed and
    delete what it added. Returns whether there was anything to undo. A journal that is not
    exactly what a build writes is reported (to `err`), removed and never followed."""
    journal = root / JOURNAL
    if not interrupted(root):
        return False
    try:
        entries, problem = _journal_entries(root)
    except OSError as exc:
        entries, problem = [], f"it cannot be read ({exc.strerror})"
    if problem:
        if err is not None:
            err.write(
                f"lockdocs: ignored {JOURNAL}: {problem}; nothing in it was followed, "
                "and it is removed\n"
            )
        journal.unlink(missing_ok=True)
        return False
    complete = all((root / str(e["backup"])).is_file() for e in entries if e.get("backup"))
    kept: list[str] = []
    if complete:  # the copies are all there: restore them
        for e in entries:
            rel = str(e["target"])
            target = root / rel
            if e.get("backup"):
                backup = root / str(e["backup"])
                if _may_replace(target, rel, e["sha"], backup):
                    backup.replace(target)
                else:
                    kept.append(rel)
            elif e.get("temp"):  # a file this build added: only the very file it wrote goes
                if written_by_lockdocs(target, rel, e["sha"] or "-"):
                    target.unlink(missing_ok=True)
                elif target.exists():
                    kept.append(rel)
    discard(root, entries)  # otherwise the build had finished and was only tidying up
    journal.unlink(missing_ok=True)
    if kept and err is not None:
        for rel in kept:
            err.write(
                f"lockdocs: kept {rel}: {JOURNAL} names it, but it is not a file lockdocs "
                "wrote, so it was neither removed nor replaced\n"
            )
    return complete


def _may_replace(target: Path, rel: str, digest: str | None, backup: Path) -> bool:
    """Whether restoring `backup` over `target` touches only what lockdocs wrote: the target
    is gone (a removal to undo), is the copy already, or is the file the build put there."""
    if not target.exists() and not target.is_symlink():
        return True
    if target.is_symlink() or not target.is_file():
        return False
    try:
        if target.read_bytes() == backup.read_bytes():
            return True
    except OSError:
        return False
    return digest is not None and written_by_lockdocs(target, rel, digest)
