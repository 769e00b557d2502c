"""The two sides of `lockdocs diff`: a git revision, a folder, or the working tree, loaded and
analysed as `check` does. A revision is materialised into a temporary folder with git (the
project may sit in a subfolder of the repository)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lockdocs import model as m
from lockdocs.api import analyse, load
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.load import MAX_FILE_BYTES
from lockdocs.report import REPORTERS

LOCKS_FILE = "locks.yaml"
# What a project's declarations are made of, besides the paths folder (named in locks.yaml).
EXTRA_FILES = ("templates", "pyproject.toml")


class DiffInputError(Exception):
    """Bad input at either side: exit 2 with this message (and the side's diagnostics)."""

    def __init__(self, message: str, details: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details  # printed before the message: the side's diagnostics
        self.hint = hint  # printed after it


@dataclass(frozen=True)
class Side:
    """One side of the comparison, loaded and analysed."""

    label: str
    model: m.Model
    findings: list[Diagnostic]


# --- reading a side ---------------------------------------------------------------------------


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise DiffInputError("git is not installed; compare two folders instead") from None


_PATHS_KEY = re.compile(r"""^paths:[ \t]*["']?([^"'#\n]*?)["']?[ \t]*(?:#.*)?$""", re.MULTILINE)


def _paths_folder(locks_text: bytes) -> str:
    """The paths folder that locks.yaml names (paths/ by default). A line match, not a YAML
    parse: the loader parses the file later, with its limits on size and aliases."""
    found = _PATHS_KEY.search(locks_text.decode("utf-8", "replace"))
    folder = found.group(1).strip().strip("/") if found else ""
    return folder or "paths"


def materialize(rev: str, project: Path, dest: Path, *, empty_ok: bool = False) -> bool:
    """Write the project's declaration files as they are at `rev` into `dest`.

    Only locks.yaml, the paths folder, templates/ and pyproject.toml: what the model and the
    severity settings are built from. The project may sit in a subfolder of the repository.
    Returns False, writing nothing, when the revision has no locks.yaml and `empty_ok` (the
    base of the pull request that adopts lockdocs).
    """
    if rev.startswith("-"):  # never let a revision be read as an option
        raise DiffInputError(f"unknown revision {rev}")
    top = _git(["rev-parse", "--show-toplevel"], project)
    if top.returncode != 0:
        raise DiffInputError(f"'{rev}' is not a folder, and {project} is not in a git repository")
    # Paths from git as the file system spells them (os.fsdecode): under LC_ALL=C a non-ASCII
    # folder name must round-trip into the next git call and into open().
    toplevel = Path(os.fsdecode(top.stdout.strip()))
    prefix = os.fsdecode(_git(["rev-parse", "--show-prefix"], project).stdout.strip())
    found = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], toplevel)
    if found.returncode != 0:
        raise DiffInputError(f"unknown revision {rev}")
    commit = found.stdout.decode().strip()
    where = f" (in {prefix.rstrip('/')})" if prefix else ""
    size = _git(["cat-file", "-s", f"{commit}:{prefix}{LOCKS_FILE}"], toplevel)
    if size.returncode == 0:
        _refuse_large(f"{prefix}{LOCKS_FILE}", int(size.stdout.strip() or 0), rev)
    locks = _git(["show", f"{commit}:{prefix}{LOCKS_FILE}"], toplevel)
    if locks.returncode != 0 and empty_ok:
        return False
    if locks.returncode != 0:
        raise DiffInputError(
            f"no {LOCKS_FILE} at revision {rev}{where}",
            hint="run lockdocs diff in the project's folder, or pass --root DIR",
        )
    dest.mkdir(parents=True, exist_ok=True)
    (dest / LOCKS_FILE).write_bytes(locks.stdout)
    wanted = [f"{prefix}{_paths_folder(locks.stdout)}", *(f"{prefix}{x}" for x in EXTRA_FILES)]
    listing = _git(["ls-tree", "-r", "-z", "-l", "--full-tree", commit, "--", *wanted], toplevel)
    if listing.returncode != 0:
        raise DiffInputError(
            f"cannot list the files of revision {rev}: "
            f"{listing.stderr.decode('utf-8', 'replace').strip()}"
        )
    for entry in os.fsdecode(listing.stdout).split("\0"):
        if not entry:
            continue
        meta, _, name = entry.partition("\t")
        mode, kind, _, *rest = meta.split()
        # Blobs only (a symlink's blob is where it points: never taken as a file).
        if kind != "blob" or mode == "120000" or not name.startswith(prefix):
            continue
        rel = Path(name[len(prefix) :])
        if rel.is_absolute() or ".." in rel.parts:
            continue
        _refuse_large(name, int(rest[0]) if rest and rest[0].isdigit() else 0, rev)
        blob = _git(["show", f"{commit}:{name}"], toplevel)
        if blob.returncode != 0:
            raise DiffInputError(f"cannot read {name} at revision {rev}")
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob.stdout)
    return True


def _refuse_large(name: str, size: int, rev: str) -> None:
    """A blob over the loader's limit is refused before git hands it over (a 1 GiB blob was
    read whole: 8.3 s and 2.1 GB)."""

    if size > MAX_FILE_BYTES:
        raise DiffInputError(
            f"{name} at revision {rev} is {size:,} bytes; the limit is {MAX_FILE_BYTES:,}",
            hint="declarations are text of a few hundred KiB; split the file, or compare "
            "other revisions",
        )


def _is_revision(spec: str, project: Path) -> bool:
    if spec.startswith("-"):
        return False
    probe = _git(["rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"], project)
    return probe.returncode == 0


def _diagnostics_text(diags: list[Diagnostic]) -> str:
    return REPORTERS["text"](diags, "")


def load_side(root: Path, label: str) -> Side:
    """Load and analyse one side; invalid declarations are bad input (exit 2), as in `check`."""

    model, diags = load(root)
    if model is None:
        raise DiffInputError(f"the declarations at {label} are not valid", _diagnostics_text(diags))
    findings = analyse(model)
    bad = [d for d in findings if d.code.startswith("LD0") and d.severity is Severity.ERROR]
    if bad:
        raise DiffInputError(f"the declarations at {label} are not valid", _diagnostics_text(bad))
    return Side(label, model, findings)


@contextmanager
def open_side(spec: str | None, project: Path) -> Iterator[Side]:
    """A side from a folder, a git revision, or (spec None) the project's working tree.

    A folder wins when it holds locks.yaml; otherwise the spec is a revision.
    """
    if spec is None:
        if not (project / LOCKS_FILE).is_file():
            raise DiffInputError(f"no {LOCKS_FILE} in {project}")
        yield load_side(project, "working tree")
        return
    folder = Path(spec)
    if (folder / LOCKS_FILE).is_file():
        yield load_side(folder, spec)
        return
    if folder.is_dir() and not _is_revision(spec, project):
        raise DiffInputError(f"no {LOCKS_FILE} in {spec}")
    with tempfile.TemporaryDirectory(prefix="lockdocs-diff-") as tmp:
        # A project that exists now but not at the revision (the pull request that adopts
        # lockdocs): that side is an empty project, and everything shows as added.
        adopted = (project / LOCKS_FILE).is_file()
        if materialize(spec, project, Path(tmp), empty_ok=adopted):
            yield load_side(Path(tmp), spec)
        else:
            yield Side(f"{spec} (no {LOCKS_FILE})", empty_model(project), [])


def empty_model(root: Path) -> m.Model:
    """A project that declares nothing."""
    return m.Model(
        root=str(root),
        page=m.Page(title=""),
        locks={},
        transactions={},
        paths={},
        groups=(),
        rules={},
        waivers=(),
        planned=(),
    )


# --- comparing ----------------------------------------------------------------------------------
