"""Find the declaration files, load and validate them, and resolve them into one `Model`.

Everything here returns diagnostics instead of raising: a run reports every problem in every
file at once, sorted, and builds no model when any of them is an error.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import stat
from pathlib import Path as FsPath
from typing import Any

from lockdocs import inputs
from lockdocs import model as m
from lockdocs.confine import inside, resolved
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.grammar import an
from lockdocs.keys import resolve_key
from lockdocs.load import (
    MAX_PATH_FILES,
    MAX_PATHS,
    MAX_STEPS,
    MAX_TOTAL_BYTES,
    MAX_WALK_ENTRIES,
    Document,
    read_file,
)
from lockdocs.modes import modes_for_kind
from lockdocs.schema.definition import ALL_MODES
from lockdocs.schema.validate import validate

LOCKS_FILE = "locks.yaml"
# The most elements a set: may have; the analysis follows every order of them (4! = 24).
MAX_SET = 4


class RootNotFound(Exception):
    """No locks.yaml in the folder or above it (a usage error, exit 2)."""


def _stranger(path: FsPath) -> str | None:
    """Why a folder (or its locks.yaml) found upward is not this user's project, or None."""

    try:
        info = path.stat()
    except OSError:
        return "it cannot be read"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return "it belongs to another user"
    if path.is_dir() and info.st_mode & stat.S_IWOTH:
        return "anyone may write to the folder"
    return None


def find_root(start: FsPath) -> FsPath:
    """The nearest folder upward that holds locks.yaml. The walk stops at the repository's
    top (a folder with .git) and at the user's home, and never takes a folder, or a
    locks.yaml, that another user owns or anyone may write to (a shared /tmp): someone
    else's locks.yaml would bring its templates and journal with it."""
    here = start.resolve()
    try:
        home: FsPath | None = FsPath.home().resolve()
    except (RuntimeError, KeyError, OSError):
        home = None
    for folder in (here, *here.parents):
        candidate = folder / LOCKS_FILE
        if candidate.is_file():
            why = _stranger(folder) or _stranger(candidate)
            if why is not None:
                raise RootNotFound(
                    f"found {candidate}, but {why}; lockdocs does not take it as the project"
                )
            return folder
        if (folder / ".git").exists() or folder == home:
            break
    raise RootNotFound(
        f"no {LOCKS_FILE} in {here} or above it (up to the repository top or your home)"
    )


def _err(code: str, loc: Location, message: str, hint: str) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, message, loc, hint)


def _did_you_mean(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    if not known:
        return "declare it first"
    shown = ", ".join(sorted(known)[:8])
    return f"declared ones: {shown}{', ...' if len(known) > 8 else ''}"


def _via(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


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


class _Resolver:
    def __init__(self, root: FsPath, locks_doc: Document, path_docs: list[Document]) -> None:
        self.root = root
        self.ld = locks_doc
        self.path_docs = path_docs
        self.diags: list[Diagnostic] = []
        self.data: dict[str, Any] = locks_doc.data

    def err(self, code: str, loc: Location, message: str, hint: str) -> None:
        self.diags.append(_err(code, loc, message, hint))

    # -- locks.yaml ----------------------------------------------------------------------------

    def locks(self) -> dict[str, m.Lock]:
        out: dict[str, m.Lock] = {}
        for lid, raw in self.data.get("locks", {}).items():
            base = ("locks", lid)
            loc = self.ld.loc(base, key=True)
            kind = raw["kind"]
            valid = modes_for_kind(kind)
            modes: list[tuple[str, str]] = []
            for mode, text in (raw.get("modes") or {}).items():
                if mode not in valid:
                    self.err(
                        "LD006",
                        self.ld.loc((*base, "modes", mode), key=True),
                        f"{an(kind)} lock has no mode '{mode}'",
                        "modes of a " + kind + " lock: " + ", ".join(valid),
                    )
                modes.append((mode, str(text)))
            if not modes:
                modes = [(valid[-1], "")]
            key = None
            if "key" in raw:
                if kind != "advisory":
                    self.err(
                        "LD003",
                        self.ld.loc((*base, "key"), key=True),
                        f"{an(kind)} lock has no advisory key",
                        "remove key:, or make the lock kind: advisory",
                    )
                else:
                    key, key_diags = resolve_key(raw["key"], self.ld, (*base, "key"))
                    self.diags += key_diags
            elif kind == "advisory":
                self.err(
                    "LD003",
                    loc,
                    f"advisory lock '{lid}' declares no key",
                    "add key: with hashtextextended, hashtext, constant, integer, application "
                    "or int4pair",
                )
            if kind in ("row", "table") and not raw.get("table"):
                self.err(
                    "LD003", loc, f"{kind} lock '{lid}' names no table", "add table: schema.name"
                )
            scope = self.scope(lid, kind, raw)
            singleton = raw.get("singleton")
            if singleton is None:
                singleton = bool(key is not None and key.fixed) or kind == "table"
            takers = []
            for i, t in enumerate(raw.get("taken_by") or []):
                tmode = t.get("mode")
                if tmode and tmode not in valid:
                    self.err(
                        "LD006",
                        self.ld.loc((*base, "taken_by", i, "mode")),
                        f"{an(kind)} lock has no mode '{tmode}'",
                        "modes of a " + kind + " lock: " + ", ".join(valid),
                    )
                takers.append(
                    m.Taker(
                        name=t["name"],
                        kind=t.get("kind"),
                        mode=tmode,
                        via=_via(t.get("via")),
                        called_by=tuple(t.get("called_by") or ()),
                        module=t.get("module"),
                        note=t.get("note"),
                        location=self.ld.loc((*base, "taken_by", i)),
                    )
                )
            backends = tuple(
                m.Backend(
                    name,
                    b["kind"],
                    b.get("table"),
                    b.get("mode"),
                    b.get("how"),
                    b.get("isolation"),
                    self.backend_scope(lid, name, b, scope),
                )
                for name, b in (raw.get("backends") or {}).items()
            )
            for b in backends:
                if b.mode and b.mode not in modes_for_kind(b.kind):
                    self.err(
                        "LD006",
                        self.ld.loc((*base, "backends", b.name, "mode")),
                        f"{an(b.kind)} lock has no mode '{b.mode}'",
                        "modes: " + ", ".join(modes_for_kind(b.kind)),
                    )
            out[lid] = m.Lock(
                id=lid,
                title=raw["title"],
                kind=kind,
                scope=scope,
                location=loc,
                key=key,
                table=raw.get("table"),
                row=raw.get("row"),
                modes=tuple(modes),
                mode_text=raw.get("mode_text"),
                options=tuple(raw.get("options") or ()),
                queue=bool(raw.get("queue", False)),
                referenced_by_foreign_keys=bool(
                    raw.get("referenced_by_foreign_keys", False) or raw.get("references")
                ),
                references=self.references(lid, kind, raw),
                singleton=bool(singleton),
                instance_order=(raw.get("instances") or {}).get("order"),
                within=(raw.get("instances") or {}).get("within"),
                cluster_wide=self.cluster_wide(lid, kind, raw),
                backends=backends,
                takers=tuple(takers),
                serializes=raw.get("serializes"),
                notes=raw.get("notes"),
                issues=tuple(raw.get("issues") or ()),
            )
        return out

    def parents(self, locks: dict[str, m.Lock]) -> None:
        """instances: {within: P}: P is another declared lock with instances of its own, and
        following within: from any lock never comes back to it."""
        for lid, lock in locks.items():
            if lock.instance_order == "none":
                self.err(
                    "LD003",
                    self.ld.loc(("locks", lid, "instances", "order")),
                    f"lock '{lid}' declares its instance order as 'none', which is the word for "
                    "a loop whose iterations come in no order",
                    "name the order the code sorts by, e.g. order: ascending id, or remove "
                    "order: if the code has none",
                )
            parent = lock.within
            if parent is None:
                continue
            where = ("locks", lid, "instances", "within")
            if not self.lock_ref(self.ld, where, parent, locks):
                continue
            if lock.singleton:
                self.err(
                    "LD003",
                    self.ld.loc(where),
                    f"'{lid}' is one lock for the whole database; it has no instances to "
                    "belong to a parent",
                    "remove within:, or the fixed key / singleton: that makes it one lock",
                )
            elif locks[parent].singleton:
                self.err(
                    "LD003",
                    self.ld.loc(where),
                    f"'{parent}' is one lock for the whole database, so it already keeps "
                    "every holder apart; its instances cannot own others",
                    "remove within:; holding a singleton in conflicting modes is a gate anyway",
                )
            seen = [lid]
            while parent is not None and parent in locks and parent not in seen:
                seen.append(parent)
                parent = locks[parent].within
            if parent == lid:
                self.err(
                    "LD003",
                    self.ld.loc(where),
                    "within: comes back to '" + lid + "': " + " -> ".join([*seen, lid]),
                    "each instance belongs to an instance of another lock; break the loop",
                )

    def scope(self, lid: str, kind: str, raw: dict[str, Any]) -> str:
        """A memory lock is process-local unless it says session; only memory locks can be."""
        scope = raw.get("scope")
        if scope is None:
            return "process" if kind == "memory" else "transaction"
        where = self.ld.loc(("locks", lid, "scope"))
        if scope == "process" and kind != "memory":
            self.err(
                "LD003",
                where,
                f"{an(kind)} lock lives in the database, not in one process",
                "scope: process is for kind: memory; use transaction or session",
            )
        if scope == "transaction" and kind == "memory":
            self.err(
                "LD003",
                where,
                "a memory lock is not released by a commit, so it is not transaction-scoped",
                "use scope: process (one server process, the default) or session (a lock "
                "every process shares)",
            )
        return str(scope)

    def backend_scope(self, lid: str, name: str, raw: dict[str, Any], scope: str) -> str:
        declared = raw.get("scope")
        kind = raw["kind"]
        if declared is None:
            if kind == "memory":
                return scope if scope in ("process", "session") else "process"
            return scope if scope in ("transaction", "session") else "transaction"
        where = self.ld.loc(("locks", lid, "backends", name, "scope"))
        if (declared == "process") != (kind == "memory") and declared != "session":
            self.err(
                "LD003",
                where,
                f"{an(kind)} lock cannot be {declared}-scoped",
                "memory locks are process or session; database locks transaction or session",
            )
        return str(declared)

    def cluster_wide(self, lid: str, kind: str, raw: dict[str, Any]) -> bool:
        if raw.get("cluster_wide") and kind != "advisory":
            self.err(
                "LD003",
                self.ld.loc(("locks", lid, "cluster_wide"), key=True),
                f"{an(kind)} lock lives in one database; only an advisory key can name an object "
                "of the whole cluster",
                "remove cluster_wide:, or make the lock kind: advisory",
            )
        return bool(raw.get("cluster_wide", False))

    def replicas(self, locks: dict[str, m.Lock]) -> tuple[tuple[str | None, int], ...]:
        raw = self.data.get("replicas")
        if raw is None:
            return ()
        if isinstance(raw, int):
            return ((None, raw),)
        named = sorted({b.name for lock in locks.values() for b in lock.backends})
        for name in raw:
            if name not in named:
                self.err(
                    "LD004",
                    self.ld.loc(("replicas", name), key=True),
                    f"no lock has a backend '{name}'",
                    _did_you_mean(name, named)
                    if named
                    else "give replicas: as one number when locks declare no backends:",
                )
        return tuple(sorted(raw.items()))

    def references(self, lid: str, kind: str, raw: dict[str, Any]) -> tuple[m.Reference, ...]:
        refs = raw.get("references") or ()
        if refs and kind != "row":
            self.err(
                "LD003",
                self.ld.loc(("locks", lid, "references"), key=True),
                f"{an(kind)} lock has no rows for a foreign key to reference",
                "references: belongs on a row lock; remove it here",
            )
        return tuple(m.Reference(r["table"], r.get("column")) for r in refs)

    def code(self) -> tuple[m.CodeGlob, ...]:
        out = []
        for i, pattern in enumerate(self.data.get("code") or ()):
            loc = self.ld.loc(("code", i))
            parts = pattern.replace("\\", "/").split("/")
            if pattern.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
                self.err(
                    "LD003",
                    loc,
                    f"code: '{pattern}' reaches outside the project",
                    "write a pattern relative to the folder of locks.yaml, e.g. db/**/*.sql",
                )
                continue
            out.append(m.CodeGlob(pattern, loc))
        return tuple(out)

    def lock_ref(
        self, doc: Document, path: tuple[str | int, ...], name: str, locks: dict[str, m.Lock]
    ) -> bool:
        if name in locks:
            return True
        self.err(
            "LD004",
            doc.loc(path),
            f"unknown lock '{name}'",
            _did_you_mean(name, list(locks)),
        )
        return False

    def mode_ok(
        self,
        doc: Document,
        path: tuple[str | int, ...],
        lock: m.Lock,
        mode: str | None,
    ) -> str:
        """The mode a reference means; reports a mode the lock's kind (or the lock) lacks."""
        if mode is None:
            if lock.default_mode is None:
                self.err(
                    "LD006",
                    doc.loc(path),
                    f"lock '{lock.id}' is taken in several modes; this step names none",
                    "add mode: " + " or ".join(lock.mode_names),
                )
                return lock.mode_names[0]
            return lock.default_mode
        valid = modes_for_kind(lock.kind)
        if mode not in ALL_MODES:  # a typo: the schema lets it through for this message
            close = difflib.get_close_matches(mode, [*lock.mode_names, *valid], n=1)
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"'{mode}' is not a mode of this lock ('{lock.id}')"
                + (f"; did you mean '{close[0]}'?" if close else ""),
                f"lock '{lock.id}' is declared with " + " or ".join(lock.mode_names),
            )
        elif mode not in valid:
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"{an(lock.kind)} lock has no mode '{mode}'",
                f"modes of {an(lock.kind)} lock: " + ", ".join(valid),
            )
        elif mode not in lock.mode_names:
            self.err(
                "LD006",
                doc.loc((*path, "mode")),
                f"lock '{lock.id}' is not declared with mode '{mode}'",
                f"add '{mode}' to the modes of lock '{lock.id}' in locks.yaml, or use "
                + " or ".join(lock.mode_names),
            )
        return mode

    def transactions(self, locks: dict[str, m.Lock]) -> dict[str, m.TransactionKind]:
        out: dict[str, m.TransactionKind] = {}
        for tid, raw in (self.data.get("transactions") or {}).items():
            base = ("transactions", tid)
            first = raw.get("first") or {}
            first_lock = first.get("lock")
            first_mode = first.get("mode")
            if first_lock and self.lock_ref(self.ld, (*base, "first", "lock"), first_lock, locks):
                first_mode = self.mode_ok(self.ld, (*base, "first"), locks[first_lock], first_mode)
            timeout = raw.get("lock_timeout")
            out[tid] = m.TransactionKind(
                id=tid,
                location=self.ld.loc(base, key=True),
                title=raw.get("title"),
                opened_by=raw.get("opened_by"),
                first_lock=first_lock,
                first_mode=first_mode,
                isolation=raw.get("isolation"),
                lock_timeout=None if timeout in (None, "none") else timeout,
                on_timeout=raw.get("on_timeout"),
                notes=raw.get("notes"),
                database=raw.get("database"),
            )
        return out

    # -- paths/ --------------------------------------------------------------------------------

    def steps(
        self,
        doc: Document,
        base: tuple[str | int, ...],
        raw_steps: list[Any],
        locks: dict[str, m.Lock],
        ctx: _PathCtx,
    ) -> tuple[m.Step, ...]:
        out: list[m.Step] = []
        for i, raw in enumerate(raw_steps):
            p = (*base, i)
            loc = doc.loc(p)
            if isinstance(raw, str):
                out.append(m.End(raw, loc))
                continue
            if "take" in raw:
                take = self.take(doc, p, raw, locks, ctx)
                if take is not None:
                    out.append(take)
            elif "set" in raw:
                out.extend(self.set_take(doc, p, raw, locks, ctx))
            elif "loop" in raw:
                out.append(
                    m.Loop(
                        label=raw["loop"],
                        location=loc,
                        steps=self.steps(doc, (*p, "steps"), raw["steps"], locks, ctx),
                        order=raw.get("order"),
                        note=raw.get("note"),
                        backend=raw.get("backend"),
                    )
                )
            elif "branches" in raw:
                alts = tuple(
                    (name, self.steps(doc, (*p, "branches", name), steps, locks, ctx))
                    for name, steps in raw["branches"].items()
                )
                out.append(m.Branches(alts, loc, raw.get("note"), raw.get("backend")))
            elif "run" in raw:
                ctx.runs.append((raw["run"], doc, (*p, "run")))
                out.append(m.Run(raw["run"], loc, raw.get("note"), raw.get("backend")))
            elif "call" in raw:
                out.append(m.Call(raw["call"], loc, raw.get("note"), raw.get("backend")))
            elif "external" in raw:
                out.append(m.External(raw["external"], loc, raw.get("note"), raw.get("backend")))
            elif "write" in raw:
                write = m.Write(
                    raw["write"],
                    loc,
                    _via(raw.get("via")),
                    raw.get("note"),
                    raw.get("backend"),
                    insert=raw.get("insert"),
                    update=raw.get("update"),
                    columns=tuple(raw.get("columns") or ()),
                    instance=raw.get("instance"),
                )
                if write.columns and write.update is None:
                    self.err(
                        "LD003",
                        doc.loc((*p, "columns"), key=True),
                        "columns: names what an update sets, and this write updates no table",
                        "add update: <table>, or remove columns:",
                    )
                if write.insert is not None and write.update is not None:
                    self.err(
                        "LD003",
                        doc.loc((*p, "update"), key=True),
                        "one write inserts into a table or updates one, not both",
                        "split it into two write: steps",
                    )
                out.append(write)
                out.extend(foreign_key_takes(write, locks))
            elif "begin" in raw:
                ctx.begins.append((raw["begin"], doc, (*p, "begin")))
                out.append(m.Begin(raw["begin"], loc, raw.get("note"), raw.get("backend")))
            elif "commit" in raw:
                out.append(m.End("commit", loc, raw.get("commit") or None, raw.get("backend")))
            elif "rollback" in raw:
                out.append(m.End("rollback", loc, raw.get("rollback") or None, raw.get("backend")))
            elif "leave_open" in raw:
                out.append(
                    m.End("leave_open", loc, raw.get("leave_open") or None, raw.get("backend"))
                )
            elif "release" in raw and self.lock_ref(doc, (*p, "release"), raw["release"], locks):
                out.append(
                    m.Release(
                        raw["release"],
                        loc,
                        _via(raw.get("via")),
                        raw.get("note"),
                        raw.get("backend"),
                    )
                )
        return tuple(out)

    def take(
        self,
        doc: Document,
        p: tuple[str | int, ...],
        raw: dict[str, Any],
        locks: dict[str, m.Lock],
        ctx: _PathCtx,
    ) -> m.Take | None:
        name = raw["take"]
        if not self.lock_ref(doc, (*p, "take"), name, locks):
            return None
        lock = locks[name]
        mode = self.mode_ok(doc, p, lock, raw.get("mode"))
        option = raw.get("option")
        attempt = raw.get("try")
        under = raw.get("under")
        if under is not None and lock.within is None:
            self.err(
                "LD003",
                doc.loc((*p, "under"), key=True),
                f"under: names the parent instance of a take, and '{name}' declares no parent",
                f"declare instances: {{within: <parent lock>}} on '{name}' in locks.yaml, or "
                "remove under:",
            )
        if option and lock.kind != "row":
            self.err(
                "LD006",
                doc.loc((*p, "option")),
                f"{option.upper()} applies to row locks only; '{name}' is {lock.kind}",
                "a take that never waits (pg_try_advisory_xact_lock, an in-process check) is "
                "declared with try: <what the code does when the lock is not free>; remove "
                "option:",
            )
        elif option and attempt is not None:
            self.err(
                "LD006",
                doc.loc((*p, "try"), key=True),
                f"this take of '{name}' says both option: {option} and try:",
                "keep option: for a NOWAIT or SKIP LOCKED the statement itself fails or skips "
                "on, or try: for a NOWAIT whose error the code handles; not both",
            )
        return m.Take(
            lock=name,
            mode=mode,
            location=doc.loc(p),
            via=_via(raw.get("via")),
            note=raw.get("note"),
            instance=raw.get("instance"),
            again=bool(raw.get("again", False)),
            order=raw.get("order"),
            option=option,
            attempt=attempt,
            under=under,
            implicit=raw.get("implicit"),
            changes_key=bool(raw.get("changes_key", False)),
            backend=raw.get("backend"),
        )

    def set_take(
        self,
        doc: Document,
        p: tuple[str | int, ...],
        raw: dict[str, Any],
        locks: dict[str, m.Lock],
        ctx: _PathCtx,
    ) -> list[m.Step]:
        """set: [a, b]: one statement takes every element, in no order the code controls. In
        the model it is alternatives, one per order of the elements (so the analysis needs no
        case of its own), that remember the set (so the page shows one step)."""
        elements = raw["set"]
        if len(elements) > MAX_SET:
            self.err(
                "LD030",
                doc.loc((*p, "set"), key=True),
                f"this set takes {len(elements)} locks in one statement; lockdocs follows at "
                f"most {MAX_SET} (every order of them: {math.factorial(MAX_SET)} alternatives)",
                "declare the instances of one lock as a loop: with order: none, or split the "
                "set where the code takes some of its locks in statements of their own",
            )
            return []
        takes: list[m.Take] = []
        seen: dict[tuple[str, str | None], int] = {}
        for j, item in enumerate(elements):
            ip = (*p, "set", j)
            one = {"take": item} if isinstance(item, str) else dict(item)
            for field in ("mode", "via", "option", "try", "implicit", "backend"):
                if field in raw and field not in one:
                    one[field] = raw[field]
            take = self.take(doc, ip, one, locks, ctx)
            if take is None:
                continue
            lock = locks[take.lock]
            who = (take.lock, None if lock.singleton else take.instance)
            if who in seen:
                self.err(
                    "LD030",
                    doc.loc(ip),
                    f"element {j + 1} of this set takes the same "
                    + ("lock" if lock.singleton else "instance")
                    + f" of '{take.lock}' as element {seen[who] + 1}",
                    "name two distinct rows of one lock with instance: on each element (take: "
                    f"{take.lock}, instance: a), or list the lock once",
                )
                continue
            seen[who] = j
            takes.append(take)
        if len(takes) < 2:
            return list(takes)
        names = [t.lock + (f" {t.instance}" if t.instance else "") for t in takes]
        alternatives = tuple(
            (" then ".join(names[i] for i in order), tuple(takes[i] for i in order))
            for order in itertools.permutations(range(len(takes)))
        )
        return [
            m.Branches(
                alternatives,
                doc.loc(p),
                raw.get("note"),
                raw.get("backend"),
                statement=tuple(takes),
            )
        ]

    def paths(
        self,
        locks: dict[str, m.Lock],
        transactions: dict[str, m.TransactionKind],
    ) -> tuple[dict[str, m.Path], tuple[m.Group, ...]]:
        paths: dict[str, m.Path] = {}
        first_seen: dict[str, Location] = {}
        groups: list[m.Group] = []
        ctx = _PathCtx()
        for doc in self.path_docs:
            data = doc.data
            default_tx = data.get("transaction")
            if default_tx is not None and default_tx not in transactions:
                self.err(
                    "LD004",
                    doc.loc(("transaction",)),
                    f"unknown transaction kind '{default_tx}'",
                    _did_you_mean(default_tx, list(transactions)),
                )
            ids: list[str] = []
            for pid, raw in data["paths"].items():
                loc = doc.loc(("paths", pid), key=True)
                if pid in first_seen:
                    self.err(
                        "LD005",
                        loc,
                        f"path id '{pid}' is declared twice (first at {first_seen[pid]})",
                        "path ids are unique across all files; rename one",
                    )
                    continue
                first_seen[pid] = loc
                tx = raw.get("transaction", default_tx)
                if "transaction" in raw and tx not in transactions:
                    self.err(
                        "LD004",
                        doc.loc(("paths", pid, "transaction")),
                        f"unknown transaction kind '{tx}'",
                        _did_you_mean(str(tx), list(transactions)),
                    )
                steps = self.steps(doc, ("paths", pid, "steps"), raw["steps"], locks, ctx)
                if not raw["steps"]:
                    self.err("LD007", loc, f"path '{pid}' has no steps", "list its steps")
                paths[pid] = m.Path(
                    id=pid,
                    title=raw["title"],
                    group=data["group"],
                    file=doc.file,
                    location=loc,
                    steps=steps,
                    entry=_via(raw.get("entry")),
                    transaction=tx,
                    standalone=bool(raw.get("standalone", True)),
                    summary=raw.get("summary"),
                    notes=raw.get("notes"),
                    issues=tuple(raw.get("issues") or ()),
                )
                ids.append(pid)
            groups.append(
                m.Group(
                    title=data["group"],
                    file=doc.file,
                    order=int(data.get("order", 1000)),
                    paths=tuple(ids),
                    intro=data.get("intro"),
                    transaction=default_tx,
                )
            )
        for name, doc, p in ctx.runs:
            if name not in paths:
                self.err(
                    "LD004", doc.loc(p), f"unknown path '{name}'", _did_you_mean(name, list(paths))
                )
        for name, doc, p in ctx.begins:
            if name not in transactions:
                self.err(
                    "LD004",
                    doc.loc(p),
                    f"unknown transaction kind '{name}'",
                    _did_you_mean(name, list(transactions)),
                )
        self._run_cycles(paths)
        groups.sort(key=lambda g: (g.order, g.file))
        return paths, tuple(groups)

    def _run_cycles(self, paths: dict[str, m.Path]) -> None:
        """A path that runs itself, directly or not, would inline forever."""
        calls: dict[str, list[m.Run]] = {pid: list(_runs(p.steps)) for pid, p in paths.items()}
        state: dict[str, int] = {}  # 1: on the current chain, 2: done
        # An explicit stack (a run: chain of thousands of paths has no recursion limit): each
        # frame is a path and how many of its run: steps were followed.
        for root in sorted(paths):
            if root in state:
                continue
            state[root] = 1
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                pid, i = stack[-1]
                runs = calls.get(pid, [])
                if i >= len(runs):
                    stack.pop()
                    state[pid] = 2
                    continue
                stack[-1] = (pid, i + 1)
                r = runs[i]
                if r.path not in paths:
                    continue
                if state.get(r.path) == 1:
                    chain = [p for p, _ in stack]
                    cycle = [*chain[chain.index(r.path) :], r.path] if r.path in chain else [pid]
                    self.err(
                        "LD010",
                        r.location,
                        "paths run each other in a loop: " + " -> ".join(cycle),
                        "a path can run another only if that one does not run it back",
                    )
                elif r.path not in state:
                    state[r.path] = 1
                    stack.append((r.path, 0))

    # -- rules and exceptions --------------------------------------------------------------------

    def rules(
        self, locks: dict[str, m.Lock], transactions: dict[str, m.TransactionKind]
    ) -> dict[str, m.Rule]:
        out: dict[str, m.Rule] = {}
        checks = ("first", "before", "sorted", "scope", "order", "lock_before_write")
        for rid, raw in (self.data.get("rules") or {}).items():
            base = ("rules", rid)
            present = [c for c in checks if c in raw]
            if len(present) > 1:
                self.err(
                    "LD003",
                    self.ld.loc(base, key=True),
                    f"rule '{rid}' gives several checks: " + ", ".join(present),
                    "a rule has one check; split it into several rules",
                )
            check = present[0] if present else None
            params: dict[str, Any] = dict(raw[check]) if check else {}
            if check in ("first", "sorted", "lock_before_write"):
                self.lock_ref(self.ld, (*base, check, "lock"), params["lock"], locks)
            if check == "first" and params.get("mode") and params["lock"] in locks:
                self.mode_ok(self.ld, (*base, check), locks[params["lock"]], params["mode"])
            if check == "first":
                for i, t in enumerate(params.get("transactions") or []):
                    if t not in transactions:
                        self.err(
                            "LD004",
                            self.ld.loc((*base, check, "transactions", i)),
                            f"unknown transaction kind '{t}'",
                            _did_you_mean(t, list(transactions)),
                        )
            if check == "before":
                for k in ("first", "then"):
                    self.lock_ref(self.ld, (*base, check, k), params[k], locks)
            if check == "order":
                seen: dict[str, int] = {}
                for li, level in enumerate(params["levels"]):
                    for ji, lid in enumerate(level):
                        p = (*base, check, "levels", li, ji)
                        if not self.lock_ref(self.ld, p, lid, locks):
                            continue
                        if lid in seen:
                            self.err(
                                "LD506",
                                self.ld.loc(p),
                                f"lock '{lid}' stands in levels {seen[lid] + 1} and {li + 1}",
                                "a lock has one place in the written order",
                            )
                        seen[lid] = li
                params["levels"] = tuple(tuple(level) for level in params["levels"])
            for k, v in list(params.items()):
                if isinstance(v, list):
                    params[k] = tuple(v)
            out[rid] = m.Rule(
                id=rid,
                title=raw["title"],
                location=self.ld.loc(base, key=True),
                check=check,
                params=tuple(sorted(params.items())),
                text=raw.get("text"),
                issues=tuple(raw.get("issues") or ()),
            )
        return out

    def waivers(
        self, rules: dict[str, m.Rule], paths: dict[str, m.Path], locks: dict[str, m.Lock]
    ) -> tuple[m.Waiver, ...]:
        exceptions = self.data.get("exceptions") or []
        registry: dict[str, object] = {}
        if exceptions:
            # The lazy boundary of the rule catalog: only exceptions name rule codes to check.
            from lockdocs.rules.catalog import load_all

            registry = dict(load_all())
        out: list[m.Waiver] = []
        for i, raw in enumerate(exceptions):
            base = ("exceptions", i)
            rule = raw["rule"]
            if rule not in rules and rule not in registry:
                self.err(
                    "LD004",
                    self.ld.loc((*base, "rule")),
                    f"unknown rule '{rule}'",
                    _did_you_mean(rule, [*rules, *registry]),
                )
            pid = raw.get("path")
            if pid is not None and pid not in paths:
                self.err(
                    "LD004",
                    self.ld.loc((*base, "path")),
                    f"unknown path '{pid}'",
                    _did_you_mean(pid, list(paths)),
                )
            lid = raw.get("lock")
            if lid is not None:
                self.lock_ref(self.ld, (*base, "lock"), lid, locks)
            out.append(
                m.Waiver(
                    index=i,
                    rule=rule,
                    why=raw["why"],
                    location=self.ld.loc(base),
                    path=pid,
                    lock=lid,
                    issue=raw.get("issue"),
                    title=raw.get("title"),
                    branch=raw.get("branch"),
                )
            )
        return tuple(out)

    def build(self) -> m.Model | None:
        locks = self.locks()
        self.parents(locks)
        transactions = self.transactions(locks)
        paths, groups = self.paths(locks, transactions)
        rules = self.rules(locks, transactions)
        waivers = self.waivers(rules, paths, locks)
        page_raw = self.data["page"]
        planned = tuple(
            m.Planned(p["issue"], p["title"], tuple(p.get("affects") or ()))
            for p in self.data.get("planned") or ()
        )
        for i, pl in enumerate(planned):
            for j, a in enumerate(pl.affects):
                if a not in locks and a not in paths:
                    self.err(
                        "LD004",
                        self.ld.loc(("planned", i, "affects", j)),
                        f"'{a}' is neither a lock nor a path",
                        _did_you_mean(a, [*locks, *paths]),
                    )
        code = self.code()
        differences = []
        for i, raw in enumerate(self.data.get("differences") or ()):
            for j, pid in enumerate(raw.get("paths") or ()):
                if pid not in paths:
                    self.err(
                        "LD004",
                        self.ld.loc(("differences", i, "paths", j)),
                        f"unknown path '{pid}'",
                        _did_you_mean(pid, list(paths)),
                    )
            for j, lid in enumerate(raw.get("locks") or ()):
                self.lock_ref(self.ld, ("differences", i, "locks", j), lid, locks)
            differences.append(
                m.Difference(
                    raw["title"],
                    raw["why"],
                    raw.get("issue"),
                    tuple(raw.get("paths") or ()),
                    tuple(raw.get("locks") or ()),
                )
            )
        if any(d.severity is Severity.ERROR for d in self.diags):
            return None
        return m.Model(
            root=str(self.root),
            page=m.Page(
                title=page_raw["title"],
                audience=page_raw.get("audience"),
                summary=page_raw.get("summary"),
                intro=page_raw.get("intro"),
                output=page_raw.get("output", "database-locks.md"),
                key_intro=page_raw.get("key_intro"),
                order_intro=page_raw.get("order_intro"),
            ),
            locks=locks,
            transactions=transactions,
            paths=paths,
            groups=groups,
            rules=rules,
            waivers=waivers,
            planned=planned,
            differences=tuple(differences),
            issue_url=self.data.get("issues"),
            rules_url=self.data.get("rules_url"),
            checks={
                code: "off" if value is False else str(value)
                for code, value in (self.data.get("checks") or {}).items()
            },
            files=(LOCKS_FILE, *(d.file for d in self.path_docs)),
            code=code,
            replicas=self.replicas(locks),
            limits=m.Limits(**(self.data.get("limits") or {})),
        )


class _PathCtx:
    def __init__(self) -> None:
        self.runs: list[tuple[str, Document, tuple[str | int, ...]]] = []
        self.begins: list[tuple[str, Document, tuple[str | int, ...]]] = []


def foreign_key_takes(write: m.Write, locks: dict[str, m.Lock]) -> list[m.Take]:
    """The FOR KEY SHARE a write takes on parent rows through foreign keys (Postgres's RI
    check, at the end of the statement): an insert into a child table checks every foreign key
    of the row; an update checks those whose column it sets (with no columns named, all of
    them). An update that leaves the column alone takes none, unless the row was inserted in
    the same transaction; then the parent is the one the insert already locked."""
    table = write.insert or write.update
    if table is None:
        return []
    out: list[m.Take] = []
    for lock in locks.values():
        for ref in lock.references:
            if ref.table != table:
                continue
            if (
                write.update is not None
                and write.columns
                and ref.column is not None
                and ref.column not in write.columns
            ):
                continue
            how = "insert into" if write.insert else "update of"
            for backend in _row_backends(lock, write.backend):
                out.append(
                    m.Take(
                        lock=lock.id,
                        mode="for key share",
                        location=write.location,
                        instance=write.instance,
                        implicit=f"the foreign-key check of {table}"
                        + (f".{ref.column}" if ref.column else ""),
                        backend=backend,
                        derived=f"{how} {table} ("
                        + (f"{ref.column} references" if ref.column else "a foreign key to")
                        + f" {lock.table})",
                    )
                )
    return out


def _row_backends(lock: m.Lock, only: str | None) -> list[str | None]:
    """Where the lock is a row lock (a foreign-key check locks rows, never memory)."""
    if not lock.backends:
        return [only] if lock.kind == "row" else []
    rows = [b.name for b in lock.backends if b.kind == "row"]
    if only is not None:
        return [only] if only in rows else []
    if len(rows) == len(lock.backends):
        return [None]
    return list(rows)


def _runs(steps: tuple[m.Step, ...]) -> list[m.Run]:
    out: list[m.Run] = []
    for s in steps:
        if isinstance(s, m.Run):
            out.append(s)
        elif isinstance(s, m.Loop):
            out += _runs(s.steps)
        elif isinstance(s, m.Branches):
            for _, alt in s.alternatives:
                out += _runs(alt)
    return out


def build_model(root: FsPath) -> tuple[m.Model | None, list[Diagnostic]]:
    """The whole front end: files -> documents -> schema -> resolved model."""
    locks_doc, path_docs, diags = load_documents(root)
    if locks_doc is None:
        return None, diags
    if not path_docs and not any(d.severity is Severity.ERROR for d in diags):
        pass  # a project may declare locks before any path
    resolver = _Resolver(root, locks_doc, path_docs)
    model = resolver.build()
    diags += resolver.diags
    if any(d.severity is Severity.ERROR for d in diags):
        return None, diags
    return model, diags
