"""The two sides of `lockdocs diff`: a git revision, a folder, or the working tree, loaded and
analysed as `check` does.

A revision is a revision: BASE and HEAD are resolved by git, never taken for a folder of the
working tree that happens to bear the name (a pull request that adds `origin/main/locks.yaml`
would otherwise be compared with itself). A folder is compared only when named with
`--base-dir`/`--head-dir`. A revision's project is written into a scratch folder (`snapshot.py`):
its declarations, templates, settings and every file its `code:` globs match, so its findings
are those `check` gives at that commit.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lockdocs import model as m
from lockdocs.api import analyse, load
from lockdocs.diagnostics import Diagnostic, Severity, sort_diagnostics
from lockdocs.diff.gitread import RevisionError, repository, resolve
from lockdocs.diff.snapshot import LOCKS_FILE, materialize
from lockdocs.report import REPORTERS

REVISION = "revision"
FOLDER = "folder"
WORKING_TREE = "working tree"


class DiffInputError(Exception):
    """Bad input at either side: exit 2 with this message (and the side's diagnostics)."""

    def __init__(self, message: str, details: str = "", hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.details = details  # printed before the message: the side's diagnostics
        self.hint = hint  # printed after it


@dataclass(frozen=True)
class Side:
    """One side of the comparison, loaded and analysed: what it is (a revision, a folder or
    the working tree), as named, and for a revision the commit it resolved to."""

    label: str
    model: m.Model
    findings: list[Diagnostic]
    kind: str = WORKING_TREE
    commit: str | None = None
    note: str = ""  # "no locks.yaml": the revision before the project adopted lockdocs
    loaded: tuple[Diagnostic, ...] = ()  # the loader's warnings, among the findings

    @property
    def title(self) -> str:
        return f"{self.label} ({self.note})" if self.note else self.label

    def describe(self) -> dict[str, str | None]:
        return {"kind": self.kind, "name": self.label, "commit": self.commit, "note": self.note}


def _diagnostics_text(diags: list[Diagnostic]) -> str:
    return REPORTERS["text"](diags, "")


def load_side(root: Path, label: str, kind: str = WORKING_TREE, commit: str | None = None) -> Side:
    """Load and analyse one side; invalid declarations are bad input (exit 2), as in `check`."""

    model, diags = load(root)
    what = f"{kind} {label}" if kind != WORKING_TREE else label
    if model is None:
        raise DiffInputError(f"the declarations at {what} are not valid", _diagnostics_text(diags))
    # The loader's warnings too: a side's findings are all that `check` reports there, less
    # the drift of the generated docs (which a diff does not compare).
    findings = sort_diagnostics(diags + analyse(model))
    bad = [d for d in findings if d.code.startswith("LD0") and d.severity is Severity.ERROR]
    if bad:
        raise DiffInputError(f"the declarations at {what} are not valid", _diagnostics_text(bad))
    return Side(label, model, findings, kind, commit, loaded=tuple(diags))


@contextmanager
def _no_scan_cache() -> Iterator[None]:
    """A scratch folder's scan is not cached: the cache is one index per project folder, and
    each run's scratch folder is new (it would leave an index behind per run)."""
    before = os.environ.get("LOCKDOCS_CACHE")
    os.environ["LOCKDOCS_CACHE"] = "off"
    try:
        yield
    finally:
        if before is None:
            del os.environ["LOCKDOCS_CACHE"]
        else:
            os.environ["LOCKDOCS_CACHE"] = before


def _folder_hint(spec: str, option: str) -> str:
    if (Path(spec) / LOCKS_FILE).is_file():
        return (
            f"'{spec}' is also a folder with {LOCKS_FILE}; lockdocs diff reads BASE and HEAD as "
            f"git revisions only: to compare with the folder, pass {option} {spec}"
        )
    return (
        f"name a commit, branch or tag (git log shows them); to compare folders, pass {option} DIR"
    )


@contextmanager
def open_revision(spec: str, project: Path, option: str) -> Iterator[Side]:
    """The project as it is at a git revision. `option` names the folder form in hints."""
    repo = repository(project)
    if repo is None:
        raise DiffInputError(
            f"'{spec}' cannot be read as a git revision: {project} is not in a git repository",
            hint=f"run lockdocs diff inside the repository, or compare folders with {option} DIR",
        )
    commit = resolve(spec, repo)
    if commit is None:
        raise DiffInputError(f"unknown revision {spec}", hint=_folder_hint(spec, option))
    where = f" (in {repo.prefix.rstrip('/')})" if repo.prefix else ""
    with tempfile.TemporaryDirectory(prefix="lockdocs-diff-") as tmp, _no_scan_cache():
        try:
            found = materialize(spec, commit, repo, Path(tmp))
        except RevisionError as exc:
            raise DiffInputError(exc.message, hint=exc.hint) from None
        if found:
            yield load_side(Path(tmp), spec, REVISION, commit)
        elif (project / LOCKS_FILE).is_file():
            # The pull request that adopts lockdocs: the project exists now but not at the
            # revision; that side is an empty project, and everything shows as added.
            yield Side(spec, empty_model(project), [], REVISION, commit, f"no {LOCKS_FILE}")
        else:
            raise DiffInputError(
                f"no {LOCKS_FILE} at revision {spec}{where}",
                hint="run lockdocs diff in the project's folder, or pass --root DIR",
            )


@contextmanager
def open_side(
    spec: str | None, project: Path, *, folder: Path | None = None, option: str = "--base-dir"
) -> Iterator[Side]:
    """A side from a git revision (`spec`), a folder named as one (`folder`), or with neither
    the project's working tree."""
    if folder is not None:
        if not (folder / LOCKS_FILE).is_file():
            raise DiffInputError(f"no {LOCKS_FILE} in {folder}")
        yield load_side(folder, str(folder), FOLDER)
    elif spec is None:
        if not (project / LOCKS_FILE).is_file():
            raise DiffInputError(f"no {LOCKS_FILE} in {project}")
        yield load_side(project, WORKING_TREE)
    else:
        with open_revision(spec, project, option) as side:
            yield side


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
