"""Where the generated files go, and what may stop them going there: page.output checked to
stay inside docs/ and clear of lockdocs' own files (LD003), every path confined to docs/ with
symlinks resolved, a docs folder that cannot take a build (BuildRefused, in plain words), the
manifest of what the last build wrote (each page and DOT file with its content hash), and how
to tell a file lockdocs wrote from one a person wrote: a build removes or replaces only the
former, whatever a manifest or a journal names."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lockdocs.confine import inside, resolved
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.render.manifest import (
    DOCS,
    MANIFEST,
    MANIFEST_HEAD,
    OWN_PREFIX,
    inside_docs,
    sha,
)

if TYPE_CHECKING:
    from lockdocs import model as m


class RenderError(Exception):
    """The outputs cannot be rendered (a bad output path, a broken template): bad input."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


def _output_problem(output: str) -> str | None:
    """Why page.output could leave docs/, or None when it is a safe relative path."""
    if not output:
        return "is empty"
    if output.startswith(("/", "\\")) or (len(output) > 1 and output[1] == ":"):
        return "is an absolute path"
    if "\\" in output:
        return "uses a backslash; write a relative path with /"
    parts = output.split("/")
    if ".." in parts:
        return "climbs out of docs/ with '..'"
    if any(p in ("", ".") for p in parts):
        return "has an empty or '.' segment; write the plain relative path"
    if not output.endswith(".md") or output == ".md" or parts[-1] == ".md":
        return "is not a .md file name"
    if any(p.startswith(OWN_PREFIX) for p in parts):
        return f"starts with {OWN_PREFIX}, which lockdocs keeps for its own files in docs/"
    return None


def output_diagnostics(model: m.Model) -> list[Diagnostic]:
    """page.output must name a Markdown file inside docs/; a located error otherwise."""
    problem = _output_problem(model.page.output)
    if problem is None:
        return []
    loc = Location("locks.yaml", 0, 0)
    # The lazy boundary of the YAML reader: only a bad page.output is located in locks.yaml.
    from lockdocs.load import read_file

    doc, _ = read_file(Path(model.root) / "locks.yaml", "locks.yaml")
    if doc is not None:
        loc = doc.loc(("page", "output"))
    return [
        Diagnostic(
            "LD003",
            Severity.ERROR,
            f"page.output '{model.page.output}' {problem}",
            loc,
            "write a path relative to docs/, e.g. output: database-locks.md or "
            "output: locks/database.md",
        )
    ]


def page_location(model: m.Model) -> tuple[str, str]:
    """(the page, the folder of its diagrams), as posix paths relative to the project root."""
    page = PurePosixPath(DOCS) / model.page.output
    return page.as_posix(), page.with_suffix("").as_posix()


def confined(root: Path, rel: str) -> bool:
    """A path inside docs/ by name that also lies inside docs/ once symlinks are resolved
    (with `docs/evil -> /elsewhere`, `docs/evil/x` lies elsewhere: never read, written or
    removed)."""
    return inside_docs(rel) and inside(root / DOCS, root / rel)


class Confinement:
    """`confined` for the many files of one build or check: each folder resolved once, and a
    file that is no symlink lies where its folder lies (one `lstat` instead of resolving
    every part of its path again: 7,200 files of a large project took 40,000 `realpath`
    steps). A symlink is resolved in full."""

    def __init__(self, root: Path) -> None:
        self.root = root
        docs = resolved(root / DOCS)
        self.docs = None if docs is None else str(docs)
        self.folders: dict[Path, str | None] = {}

    def __call__(self, rel: str) -> bool:
        if self.docs is None or not inside_docs(rel):
            return False
        path = self.root / rel
        if path.parent not in self.folders:
            real = resolved(path.parent)
            self.folders[path.parent] = None if real is None else str(real)
        folder = self.folders[path.parent]
        if folder is None:
            return False
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return confined(self.root, rel)
        except FileNotFoundError:
            pass
        except OSError:
            return False
        target = f"{folder.rstrip(os.sep)}{os.sep}{path.name}"
        return target == self.docs or target.startswith(self.docs.rstrip(os.sep) + os.sep)


class BuildRefused(Exception):
    """The docs folder cannot take the build (wrong type, outside the project, not writable,
    full): exit 2 with this message and what to do; nothing is written."""

    def __init__(self, message: str, hint: str, *, outside: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.outside = outside  # it leads out of the project or docs/ (LD012 in check)


def docs_problem(root: Path) -> BuildRefused | None:
    """Why docs/ cannot hold the generated files, or None when it can (or does not exist yet)."""
    docs = root / DOCS
    if docs.is_symlink() and not docs.exists():
        return BuildRefused(
            f"{DOCS}/ is a symlink to {docs.readlink()}, which does not exist",
            f"create the folder it points to, or replace the link with a {DOCS}/ folder",
        )
    if docs.exists() and not docs.is_dir():
        return BuildRefused(
            f"{DOCS} is a file, not a folder",
            f"move it away: lockdocs build writes the page into a {DOCS}/ folder",
        )
    if docs.exists() and not inside(root, docs):
        return BuildRefused(
            f"{DOCS}/ leads outside the project (a symlink to {docs.resolve()})",
            f"make {DOCS}/ a folder inside the project (a symlink is fine if it stays inside)",
            outside=True,
        )
    return None


# Plain words for the errors a machine (not the declarations) causes, and what to do.
_OS_HINTS = {
    errno.EROFS: "the file system is read-only: build in a writable checkout",
    errno.EACCES: "make the docs folder writable for this user",
    errno.EPERM: "make the docs folder writable for this user",
    errno.ENOSPC: "the disk is full: free some space and build again",
    errno.EDQUOT: "the disk quota is used up: free some space and build again",
    errno.EISDIR: "a folder stands where lockdocs writes a file: move it away",
    errno.ENOTDIR: "a file stands where lockdocs needs a folder: move it away",
    errno.ELOOP: "a symlink loop stands in the docs folder: remove it",
    errno.ENAMETOOLONG: "use a shorter page.output",
}


def os_refusal(exc: OSError, root: Path, doing: str) -> BuildRefused:
    """An OSError from writing the docs as a plain, located refusal."""
    where = exc.filename
    shown = str(where)
    if where is not None:
        with contextlib.suppress(ValueError, TypeError):
            shown = Path(os.fsdecode(where)).relative_to(root).as_posix()
    reason = exc.strerror or type(exc).__name__
    code = errno.errorcode.get(exc.errno or 0, "")
    message = f"cannot {doing} {shown}: {reason}" + (f" ({code})" if code else "")
    return BuildRefused(message, _OS_HINTS.get(exc.errno or 0, "check the docs folder"))


def hashes(files: dict[str, str]) -> dict[str, str]:
    return {rel: sha(text) for rel, text in files.items()}


def read_manifest(root: Path) -> list[str]:
    """The files the last build wrote: only lines that name a file inside docs/, symlinks
    resolved, are trusted; any other line is ignored (never read, never removed)."""
    return list(manifest_hashes(root))


_HEX = frozenset("0123456789abcdef")


def manifest_hashes(root: Path) -> dict[str, str | None]:
    """The manifest's files with the hash recorded for each (None: none recorded)."""
    try:
        if not confined(root, MANIFEST):
            return {}
        text = (root / MANIFEST).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, str | None] = {}
    confined_here = Confinement(root)
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0].startswith("#") or len(parts) > 2:
            continue
        rel, digest = parts[0], parts[1] if len(parts) == 2 else None
        if digest is not None and (len(digest) != 64 or not set(digest) <= _HEX):
            continue
        if confined_here(rel) and not PurePosixPath(rel).name.startswith(OWN_PREFIX):
            out[rel] = digest
    return out


_PAGE_MARK = b"<!-- Generated by lockdocs from "
_DOT_MARK = b"// lockdocs-title: "
_SVG_MARK = b"<!-- lockdocs-dot-sha256: "


def generated(rel: str, data: bytes) -> bool:
    """Whether a file's bytes are ones lockdocs writes at that name: a page with its "Generated
    by lockdocs" line, a DOT file with its title comment, an SVG with its DOT stamp. A page a
    person wrote has none of them."""
    if rel == MANIFEST:
        return data.startswith(MANIFEST_HEAD.encode("utf-8"))
    if rel.endswith(".md"):
        return _PAGE_MARK in data[:65536]
    if rel.endswith(".dot"):
        return data.startswith(_DOT_MARK)
    if rel.endswith(".svg"):
        return _SVG_MARK in data[:4096]
    return False


def written_by_lockdocs(path: Path, rel: str, digest: str | None) -> bool:
    """Whether the file at `path` is one lockdocs wrote and nobody has changed since: it bears
    lockdocs' mark, and its hash is `digest` when one was recorded."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        data = path.read_bytes()
    except OSError:
        return False
    if not generated(rel, data):
        return False
    return digest is None or hashlib.sha256(data).hexdigest() == digest


def read_or_none(path: Path) -> str | None:
    """A file's text, or None when it is missing or unreadable."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
