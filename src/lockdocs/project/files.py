"""What the project declares: the walk of the paths folder, and load_documents, which reads
and validates locks.yaml and every path file within the project's limits (files, bytes, paths
and steps, counted as each file is read).

Nothing outside the project is read; every problem is a diagnostic, not an exception (but
RootNotFound, a usage error).
"""

from __future__ import annotations

import math
from pathlib import Path as FsPath
from typing import Any

from lockdocs import inputs
from lockdocs.confine import inside, resolved
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.load import (
    MAX_PATH_FILES,
    MAX_PATHS,
    MAX_STEPS,
    MAX_TOTAL_BYTES,
    MAX_WALK_ENTRIES,
    Document,
    read_file,
)
from lockdocs.project.root import LOCKS_FILE
from lockdocs.schema.validate import validate

# The most elements a set: may have; the analysis follows every order of them (4! = 24).
MAX_SET = 4


def _err(code: str, loc: Location, message: str, hint: str) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, loc, hint)


def _outside(code_loc: Location, what: str, hint: str) -> Diagnostic:
    return _err("LD012", code_loc, what, hint)


def _path_files(root: FsPath, folder: FsPath) -> tuple[list[FsPath], list[Diagnostic]]:
    """The .yaml/.yml files under the paths folder, sorted by name. Symlinks are followed
    only while they lead to a place inside the project (each folder walked once, so a link
    loop ends); one that leads out is an LD012 error at it, never read."""

    files: list[FsPath] = []
    diags: list[Diagnostic] = []
    seen: set[FsPath] = set()
    pending = [folder]
    looked = 0
    while pending:
        here = pending.pop()
        real = resolved(here)
        if real is None or real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(here.iterdir())
        except OSError as exc:
            diags.append(
                _err(
                    "LD008",
                    Location(here.relative_to(root).as_posix()),
                    f"cannot read the folder: {exc.strerror}",
                    "check that it is readable",
                )
            )
            continue
        looked += len(entries)
        if looked > MAX_WALK_ENTRIES:
            diags.append(
                _err(
                    "LD009",
                    Location(folder.relative_to(root).as_posix()),
                    f"the paths folder holds more than {MAX_WALK_ENTRIES:,} files and folders",
                    "keep only the path files there",
                )
            )
            return [], diags
        for entry in entries:
            rel = entry.relative_to(root).as_posix()
            if entry.is_symlink() and not inside(root, entry):
                if entry.suffix in (".yaml", ".yml") or entry.is_dir():
                    diags.append(
                        _outside(
                            Location(rel),
                            f"{rel} is a symlink that leads outside the project "
                            f"({entry.resolve()}); it is not read",
                            "copy the file into the project, or point the link inside it",
                        )
                    )
                continue
            if entry.is_dir():
                pending.append(entry)
            elif entry.suffix in (".yaml", ".yml") and entry.is_file():
                files.append(entry)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix()), diags


def _paths_folder(root: FsPath, locks_doc: Document) -> tuple[FsPath | None, list[Diagnostic]]:
    """The folder locks.yaml names with `paths:` (paths/ by default), when it lies inside
    the project; an LD012 error at the value otherwise (nothing outside is walked)."""

    name = locks_doc.data.get("paths")
    if not isinstance(name, str):
        name = "paths"
        loc = Location(name)
    else:
        loc = locks_doc.loc(("paths",))
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        return None, [
            _outside(
                loc,
                f"paths: {name!r} holds a control character, which no folder name can",
                "name a folder relative to locks.yaml, e.g. paths: paths",
            )
        ]
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\", "~")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        return None, [
            _outside(
                loc,
                f"paths: '{name}' is not a folder inside the project",
                "name a folder relative to locks.yaml, without '..', e.g. paths: paths",
            )
        ]
    folder = root / name
    if not inside(root, folder):
        return None, [
            _outside(
                loc,
                f"paths: '{name}' leads outside the project (to {resolved(folder) or folder})",
                "point it at a folder inside the project",
            )
        ]
    return folder, []


def load_documents(root: FsPath) -> tuple[Document | None, list[Document], list[Diagnostic]]:
    """Read locks.yaml and every paths/*.yaml (sorted by name, so disk order never matters).

    Nothing outside the project is read: a locks.yaml or path file that is a symlink leading
    out, or a `paths:` folder outside, is an LD012 error."""

    inputs.start(root)
    diags: list[Diagnostic] = []
    if not inside(root, root / LOCKS_FILE):
        return (
            None,
            [],
            [
                _outside(
                    Location(LOCKS_FILE),
                    f"{LOCKS_FILE} is a symlink that leads outside the project; it is not read",
                    "keep the declarations inside the project",
                )
            ],
        )
    locks_doc, d = read_file(root / LOCKS_FILE, LOCKS_FILE)
    diags += d
    if locks_doc is not None:
        inputs.record_digest(root, LOCKS_FILE, locks_doc.digest)
        schema_diags = validate(locks_doc, "locks")
        diags += schema_diags
        if schema_diags:
            locks_doc = None
    folder: FsPath | None = root / "paths"
    if locks_doc is not None:
        folder, d = _paths_folder(root, locks_doc)
        diags += d
    path_docs: list[Document] = []
    if folder is not None:
        inputs.record_listing(root, f"walk:{folder.relative_to(root).as_posix()}", folder)
    if folder is not None and folder.is_dir():
        files, d = _path_files(root, folder)
        diags += d
        too_many = _over_project_limits(root, folder, files)
        if too_many is not None:
            return locks_doc, [], [*diags, too_many]
        budget = _Budget()
        for f in files:
            display = f.relative_to(root).as_posix()
            doc, d = read_file(f, display)
            diags += d
            if doc is None:
                continue
            inputs.record_digest(root, display, doc.digest)
            over = budget.spend(doc)
            if over is not None:
                return locks_doc, [], [*diags, over]
            schema_diags = validate(doc, "paths")
            diags += schema_diags
            if not schema_diags:
                path_docs.append(doc)
    return locks_doc, path_docs, diags


def _over_project_limits(root: FsPath, folder: FsPath, files: list[FsPath]) -> Diagnostic | None:
    """Refuse, before reading any path file, more files or bytes than any project holds."""

    where = Location(folder.relative_to(root).as_posix())
    if len(files) > MAX_PATH_FILES:
        return _err(
            "LD009",
            where,
            f"the paths folder holds {len(files):,} path files; the limit is {MAX_PATH_FILES:,}",
            "group the paths into fewer files (one per area of the code)",
        )
    total = 0
    for f in [root / LOCKS_FILE, *files]:
        try:
            total += f.stat().st_size
        except OSError:
            continue
    if total > MAX_TOTAL_BYTES:
        return _err(
            "LD009",
            where,
            f"the declarations are {total:,} bytes; the limit is {MAX_TOTAL_BYTES:,}",
            "declare the locking of one application per project; this is far beyond one",
        )
    return None


class _Budget:
    """Paths and steps counted as each file is read; past a limit the load stops there."""

    def __init__(self) -> None:
        self.paths = 0
        self.steps = 0

    def spend(self, doc: Document) -> Diagnostic | None:
        paths = doc.data.get("paths") if isinstance(doc.data, dict) else None
        if not isinstance(paths, dict):
            return None
        for pid, raw in paths.items():
            self.paths += 1
            if self.paths > MAX_PATHS:
                return _err(
                    "LD009",
                    doc.loc(("paths", pid), key=True),
                    f"more than {MAX_PATHS:,} paths are declared; this is the one past the limit",
                    "declare the locking of one application per project; this is far beyond one",
                )
            self.steps += _count_steps(raw.get("steps") if isinstance(raw, dict) else None)
            if self.steps > MAX_STEPS:
                return _err(
                    "LD009",
                    doc.loc(("paths", pid), key=True),
                    f"the paths declare more than {MAX_STEPS:,} steps; the limit is passed here",
                    "declare each path's locking steps only; shared sequences go in run: paths",
                )
        return None


def _count_steps(steps: Any) -> int:
    """Steps in a path, nested loops and branches included (iteratively: no recursion)."""
    count = 0
    pending = [steps]
    while pending:
        current = pending.pop()
        if not isinstance(current, list):
            continue
        for step in current:
            count += 1
            if isinstance(step, dict):
                elements = step.get("set")
                if isinstance(elements, list) and len(elements) > 1:
                    # a set is resolved into every order of its elements (LD030 past MAX_SET)
                    k = min(len(elements), MAX_SET)
                    count += math.factorial(k) * k
                pending.append(step.get("steps"))
                branches = step.get("branches")
                if isinstance(branches, dict):
                    pending.extend(branches.values())
    return count
