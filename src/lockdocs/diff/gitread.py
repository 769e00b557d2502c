"""Git, read as lockdocs needs it for `lockdocs diff`: which commit a revision names, the
entries of a tree under the project's folder, and blob contents.

Three kinds of git process, each started once per side: `rev-parse` (the commit), `ls-tree`
(streamed, the project's entries with their sizes) and `cat-file --batch` (every blob through one
process: 12,000 files took 78 s at one `git show` each). Git never prompts and never pages;
pathspecs are literal; object ids are checked before they are sent.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

_GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class RevisionError(Exception):
    """The revision cannot be read: exit 2 with this message (and a hint)."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def _env() -> dict[str, str]:
    return {**os.environ, **_GIT_ENV}


def git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """One git command, its output as bytes; never a prompt, never a pager."""
    try:
        return subprocess.run(
            ["git", "--no-pager", "--literal-pathspecs", *args],
            cwd=cwd,
            capture_output=True,
            check=False,
            env=_env(),
        )
    except FileNotFoundError:
        raise RevisionError(
            "git is not installed", "install git, or compare folders with --base-dir"
        ) from None
    except OSError as exc:
        raise RevisionError(f"cannot run git: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class Repository:
    """Where the project sits in its repository: the top, and the project's folder below it
    (posix, "" or ending in "/")."""

    top: Path
    prefix: str


def repository(project: Path) -> Repository | None:
    """The repository the project folder is in, or None outside git."""
    top = git(["rev-parse", "--show-toplevel"], project)
    if top.returncode != 0 or not top.stdout.strip():
        return None
    prefix = git(["rev-parse", "--show-prefix"], project)
    # Paths from git as the file system spells them (os.fsdecode): under LC_ALL=C a non-ASCII
    # folder name must round-trip into the next git call and into open().
    return Repository(
        Path(os.fsdecode(top.stdout.rstrip(b"\n"))), os.fsdecode(prefix.stdout.rstrip(b"\n"))
    )


def resolve(spec: str, repo: Repository) -> str | None:
    """The commit a revision names (its full object id), or None when it names none."""
    if not spec or spec.startswith("-") or "\0" in spec:
        return None
    found = git(
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{spec}^{{commit}}"], repo.top
    )
    oid = found.stdout.decode("ascii", "replace").strip()
    if found.returncode != 0 or not oid:
        return None
    return oid


# --- the tree -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One file of the tree: its name relative to the project, object id, mode and size."""

    name: str
    oid: str
    mode: str
    size: int


def _stream(args: list[str], repo: Repository, *, stdin: bool) -> subprocess.Popen[bytes]:
    """A git process whose output is read as it comes (and, with `stdin`, fed as it runs)."""
    try:
        return subprocess.Popen(
            ["git", "--no-pager", *args],
            cwd=repo.top,
            stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_env(),
        )
    except OSError as exc:
        raise RevisionError(f"cannot run git: {exc.strerror or exc}") from None


def list_tree(commit: str, repo: Repository) -> Iterator[Entry]:
    """Every entry under the project folder at the commit (names relative to the project),
    read as git streams it."""
    args = ["ls-tree", "-r", "-z", "-l", "--full-tree", commit]
    if repo.prefix:
        args += ["--", repo.prefix.rstrip("/")]
    proc = _stream(["--literal-pathspecs", *args], repo, stdin=False)
    assert proc.stdout is not None
    rest = b""
    try:
        while chunk := proc.stdout.read(1 << 16):
            records = (rest + chunk).split(b"\0")
            rest = records.pop()
            for record in records:
                entry = parse_entry(record, repo.prefix)
                if entry is not None:
                    yield entry
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()


def parse_entry(record: bytes, prefix: str) -> Entry | None:
    """One record of `ls-tree -z -l` (a name relative to the project), or None."""
    meta, tab, raw = record.partition(b"\t")
    fields = meta.split()
    if not tab or len(fields) != 4:
        return None
    mode, _, oid, size = (f.decode("ascii", "replace") for f in fields)
    name = os.fsdecode(raw)
    if not name.startswith(prefix):
        return None
    return Entry(name[len(prefix) :], oid, mode, int(size) if size.isdigit() else 0)


# --- reading the blobs --------------------------------------------------------------------------


class BlobReader:
    """One `git cat-file --batch` process: object ids in, their bytes out, streamed. `read`
    asks for one object and waits for it; `copy_all` sends every id at once from a thread
    (git answers in order), so many small files cost no round trip each."""

    def __init__(self, repo: Repository) -> None:
        self.proc = _stream(["cat-file", "--batch"], repo, stdin=True)

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.proc.kill()
        self.proc.wait()

    def _ask(self, oids: list[str]) -> None:
        assert self.proc.stdin is not None
        # git stopped (OSError), or the reader closed stdin first (ValueError: the flush after
        # the last write can come after the reader has every answer, or has given up)
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.write(b"".join(oid.encode("ascii") + b"\n" for oid in oids))
            self.proc.stdin.flush()

    def _answer(self, oid: str, out: IO[bytes], limit: int) -> int:
        """Copy the next answer, which must be blob `oid` of at most `limit` bytes, to `out`."""
        assert self.proc.stdout is not None
        fields = self.proc.stdout.readline().split()
        if len(fields) != 3 or fields[1] != b"blob" or not fields[2].isdigit():
            raise RevisionError(f"git cannot read object {oid}")
        size = int(fields[2])
        if fields[0].decode("ascii", "replace") != oid or size > limit:
            raise RevisionError(f"git answered object {oid} with another")
        left = size
        while left:
            chunk = self.proc.stdout.read(min(left, 1 << 20))
            if not chunk:
                raise RevisionError("git stopped while the files were read")
            out.write(chunk)
            left -= len(chunk)
        self.proc.stdout.read(1)  # the newline after the content
        return size

    def read(self, oid: str, limit: int) -> bytes:
        """One blob's bytes (at most `limit` of them)."""
        _check_oid(oid)
        self._ask([oid])
        buf = io.BytesIO()
        self._answer(oid, buf, limit)
        return buf.getvalue()

    def copy_all(self, jobs: list[tuple[str, int]], open_out: Callable[[str], IO[bytes]]) -> None:
        """Each (object id, limit) copied to the file `open_out(oid)` gives, in order."""
        for oid, _ in jobs:
            _check_oid(oid)
        writer = threading.Thread(target=self._ask, args=([oid for oid, _ in jobs],), daemon=True)
        writer.start()
        try:
            for oid, limit in jobs:
                with open_out(oid) as out:
                    self._answer(oid, out, limit)
        finally:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
            if writer.is_alive():  # an error mid-way: stop git so the writer unblocks
                self.proc.kill()
            writer.join()


def _check_oid(oid: str) -> None:
    if not oid or any(c not in "0123456789abcdef" for c in oid):
        raise RevisionError(f"git named an object '{oid}'")
