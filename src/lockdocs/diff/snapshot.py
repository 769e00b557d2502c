"""A project as it is at a git revision, written into a scratch folder: everything `check`
reads there (locks.yaml, the paths folder, templates/, pyproject.toml and every file the
`code:` globs match), so a side of `lockdocs diff` gives the findings `check` gives at that
commit.

Nothing the tree holds can lead out of the scratch folder: a symlink or submodule is never
taken, a name with an empty, `.` or `..` part is refused, and every file is created afresh
(O_EXCL, O_NOFOLLOW) in folders this module made. A blob over its reader's size limit is written
as a sparse file of its size (or one byte over the scanner's limit), so the reader refuses it as
it would at that commit, without its bytes being read; what a revision may make lockdocs read in
all is bounded (`MAX_FILES`, `MAX_BYTES`).
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import IO

from lockdocs.diff.gitread import (
    BlobReader,
    Entry,
    Repository,
    RevisionError,
    git,
    list_tree,
    parse_entry,
)
from lockdocs.inputs import MAX_TEMPLATE_BYTES, TEMPLATE_DIR
from lockdocs.load import MAX_FILE_BYTES, parse_text
from lockdocs.scan.collect import MAX_BYTES as MAX_CODE_BYTES

LOCKS_FILE = "locks.yaml"
SETTINGS_FILE = "pyproject.toml"
# What a revision may make lockdocs read: far above a real project's declarations and code,
# far below what fills a disk or memory.
MAX_FILES = 100_000
MAX_BYTES = 512 * 1024 * 1024
_REGULAR = ("100644", "100755")

# --- which files ------------------------------------------------------------------------------


def _parts(pattern: str) -> tuple[str, ...] | None:
    """A `code:` pattern as components (None for one the loader refuses: it leaves the
    project)."""
    parts = tuple(p for p in pattern.split("/") if p not in ("", "."))
    if pattern.startswith(("/", "\\")) or ".." in parts or not parts:
        return None
    return parts


def glob_match(pattern: tuple[str, ...], name: tuple[str, ...]) -> bool:
    """Whether `name` may be a file the pattern matches, as pathlib's glob walks: `**` is any
    number of folders, other parts match one name each (fnmatch). It errs towards yes (case
    folded, `**` inside a part read as `*`): the scratch folder is globbed again by the scan
    itself, so an extra file costs a write and a file too few would change the findings."""
    pat = tuple(p.lower() for p in pattern)
    parts = tuple(p.lower() for p in name)
    # Positions (i in pat, j in name) still possible: a linear sweep, never a backtrack.
    states = {0}
    for part in parts:
        nxt: set[int] = set()
        for i in _closure(pat, states):
            if i >= len(pat):
                continue
            if pat[i] == "**":
                nxt.add(i)  # `**` takes this folder and stays
            elif fnmatchcase(part, pat[i].replace("**", "*")):
                nxt.add(i + 1)
        if not nxt:
            return False
        states = nxt
    return len(pat) in _closure(pat, states)


def _closure(pat: tuple[str, ...], states: set[int]) -> set[int]:
    """The states plus those reached by letting a `**` match no folder."""
    out = set(states)
    todo = list(states)
    while todo:
        i = todo.pop()
        if i < len(pat) and pat[i] == "**" and i + 1 not in out:
            out.add(i + 1)
            todo.append(i + 1)
    return out


@dataclass(frozen=True)
class Wanted:
    """What a project at a revision makes `check` read, from its locks.yaml."""

    paths_folder: str = "paths"
    code: tuple[tuple[str, ...], ...] = ()

    def kind(self, name: str) -> str | None:
        """How lockdocs reads this project file ('declarations', 'templates', 'code'), or
        None when it does not."""
        if name in (LOCKS_FILE, SETTINGS_FILE):
            return "declarations"
        if name.startswith(TEMPLATE_DIR + "/"):
            return "templates"
        folder = self.paths_folder
        if (folder == "" or name.startswith(folder + "/")) and name.endswith((".yaml", ".yml")):
            return "declarations"
        parts = tuple(name.split("/"))
        if any(glob_match(p, parts) for p in self.code):
            return "code"
        return None


def wanted(locks_text: bytes) -> Wanted:
    """The paths folder and `code:` globs locks.yaml names, read with the loader's own parser
    and limits; a locks.yaml it cannot read names the defaults (the load then says why)."""
    try:
        text = locks_text.decode("utf-8")
    except UnicodeDecodeError:
        return Wanted()
    doc, _ = parse_text(text, LOCKS_FILE)
    data = doc.data if doc is not None and isinstance(doc.data, dict) else {}
    folder = data.get("paths", "paths")
    folder = folder.strip("/") if isinstance(folder, str) else "paths"
    folder = "" if folder in (".", "./") else folder.removeprefix("./")
    code = data.get("code")
    patterns = code if isinstance(code, list) else []
    globs = tuple(p for p in (_parts(x) for x in patterns if isinstance(x, str)) if p)
    return Wanted(folder, globs)


def safe_name(name: str) -> bool:
    """A name that stays inside the folder it is written under: no empty, `.` or `..` part
    (git refuses them, but a tree can be written by hand), nothing absolute."""
    parts = name.split("/")
    return bool(name) and all(p not in ("", ".", "..") for p in parts) and "\0" not in name


# --- the project at a revision, written out -----------------------------------------------------

_LIMIT = {"declarations": MAX_FILE_BYTES, "templates": MAX_TEMPLATE_BYTES, "code": MAX_CODE_BYTES}


def _create(dest: Path, name: str) -> int | None:
    """A new file at dest/name, its descriptor; None when a file of that name is already
    there (two names one case-insensitive file system takes for one, as a checkout would)."""
    target = dest / name
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(target, flags, 0o644)
    except FileExistsError:
        return None


def _link(dest: Path, first: str, name: str) -> None:
    """dest/name with the content of dest/first: a hard link, or a copy where there is none."""
    try:
        os.link(dest / first, dest / name)
    except FileExistsError:
        return
    except OSError:
        fd = _create(dest, name)
        if fd is not None:
            with os.fdopen(fd, "wb") as out, (dest / first).open("rb") as src:
                shutil.copyfileobj(src, out)


def _sparse(dest: Path, name: str, size: int) -> None:
    """A file of `size` bytes that takes no room: what a reader's size check sees."""
    fd = _create(dest, name)
    if fd is not None:
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)


def _locks_entry(commit: str, repo: Repository) -> Entry | None:
    listing = git(["ls-tree", "-z", "-l", commit, "--", repo.prefix + LOCKS_FILE], repo.top)
    for record in listing.stdout.split(b"\0"):
        entry = parse_entry(record, repo.prefix)
        if entry is not None and entry.name == LOCKS_FILE and entry.mode in _REGULAR:
            return entry
    return None


def materialize(spec: str, commit: str, repo: Repository, dest: Path) -> bool:
    """Write what `check` reads of the project at `commit` into `dest`; False, writing
    nothing, when the commit has no locks.yaml there. RevisionError when the revision holds
    more than lockdocs reads, or a file cannot be written."""
    locks = _locks_entry(commit, repo)
    if locks is None:
        return False
    try:
        with BlobReader(repo) as reader:
            if locks.size > MAX_FILE_BYTES:
                _sparse(dest, LOCKS_FILE, locks.size)
                want = Wanted()
            else:
                text = reader.read(locks.oid, MAX_FILE_BYTES)
                want = wanted(text)
                _write(dest, LOCKS_FILE, text)
            names, jobs = _plan(spec, commit, repo, want, dest)
            first = {oid: found[0] for oid, found in names.items()}

            def open_out(oid: str) -> IO[bytes]:
                fd = _create(dest, first[oid])
                return os.fdopen(fd, "wb") if fd is not None else io.BytesIO()

            reader.copy_all(jobs, open_out)
        for found in names.values():
            for name in found[1:]:  # the same content under another name: a link
                _link(dest, found[0], name)
    except OSError as exc:
        raise RevisionError(
            f"cannot write the files of revision {spec}: {exc.strerror or exc}"
        ) from None
    return True


def _write(dest: Path, name: str, data: bytes) -> None:
    fd = _create(dest, name)
    if fd is not None:
        with os.fdopen(fd, "wb") as out:
            out.write(data)


def _plan(
    spec: str, commit: str, repo: Repository, want: Wanted, dest: Path
) -> tuple[dict[str, list[str]], list[tuple[str, int]]]:
    """The files to read: object id -> the names it is written to, and the reads (object id,
    size limit) in order. A file over its reader's limit is written now, sparse."""
    names: dict[str, list[str]] = {}
    jobs: list[tuple[str, int]] = []
    files = total = 0
    hint = "narrow the code: globs, or compare folders with --base-dir"
    for entry in list_tree(commit, repo):
        kind = want.kind(entry.name) if entry.name != LOCKS_FILE else None
        # Regular files only: a symlink's blob is where it points, never followed; a
        # submodule is another repository.
        if kind is None or entry.mode not in _REGULAR or not safe_name(entry.name):
            continue
        files += 1
        if files > MAX_FILES:
            raise RevisionError(
                f"revision {spec} has more than {MAX_FILES:,} files that lockdocs would read", hint
            )
        limit = _LIMIT[kind]
        if entry.size > limit:
            _sparse(dest, entry.name, entry.size if kind != "code" else limit + 1)
            continue
        if entry.oid not in names:
            total += entry.size
            if total > MAX_BYTES:
                raise RevisionError(
                    f"the files lockdocs would read at revision {spec} hold more than "
                    f"{MAX_BYTES // (1024 * 1024):,} MiB",
                    hint,
                )
            names[entry.oid] = []
            jobs.append((entry.oid, limit))
        names[entry.oid].append(entry.name)
    return names, jobs
