"""Outputs in memory and the atomic build that writes them.

`render_outputs` is pure (model + findings -> {path: text}, Markdown and DOT only). `build` adds
an SVG per DOT and writes every changed file through a temporary file in the same folder and
`os.replace`, the manifest last, so an interrupted build leaves the previous files in place and
complete; files a previous build wrote and this one does not are then removed. `drift.py`
compares the same outputs with the committed files.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import re
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, TextIO

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity, sort_diagnostics

if TYPE_CHECKING:
    from lockdocs.progress import Progress
    from lockdocs.scan.compare import Coverage

DOCS = "docs"
MANIFEST = f"{DOCS}/.lockdocs-manifest"
_MANIFEST_HEAD = (
    "# Files written by `lockdocs build`; the next build removes any it no longer writes.\n"
)


class RenderError(Exception):
    """The outputs cannot be rendered (a bad output path, a broken template): bad input."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("; ".join(d.message for d in diagnostics))
        self.diagnostics = diagnostics


# --- where the outputs go ----------------------------------------------------------------------


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
    return None


def output_diagnostics(model: m.Model) -> list[Diagnostic]:
    """page.output must name a Markdown file inside docs/; a located error otherwise."""
    problem = _output_problem(model.page.output)
    if problem is None:
        return []
    from lockdocs.load import read_file  # lazy: only on this error path

    loc = Location("locks.yaml", 0, 0)
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


def _inside_docs(rel: str) -> bool:
    """Whether a manifest entry may be written or removed (never outside docs/)."""
    parts = PurePosixPath(rel).parts
    return (
        len(parts) >= 2
        and parts[0] == DOCS
        and not PurePosixPath(rel).is_absolute()
        and all(p not in ("", ".", "..") for p in parts)
        and "\\" not in rel
    )


def confined(root: Path, rel: str) -> bool:
    """A path inside docs/ by name that also lies inside docs/ once symlinks are resolved
    (with `docs/evil -> /elsewhere`, `docs/evil/x` lies elsewhere: never read, written or
    removed)."""
    from lockdocs.confine import inside

    return _inside_docs(rel) and inside(root / DOCS, root / rel)


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
    from lockdocs.confine import inside

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


# --- rendering ---------------------------------------------------------------------------------


def render_outputs(
    model: m.Model, diagnostics: list[Diagnostic], coverage: Coverage | None = None
) -> dict[str, str]:
    """Every generated text file: {posix path relative to the root: content}, sorted by path.
    `coverage` (when locks.yaml has code:) gives the page its line about the scanned SQL.

    Raises RenderError for a page.output outside docs/ or a broken project template.
    """
    from lockdocs.render.coverage import coverage_view
    from lockdocs.render.dot import path_dot
    from lockdocs.render.dot_order import legend_dot, lock_order_dot
    from lockdocs.render.edges import cycle_pairs
    from lockdocs.render.markdown import TemplateProblem, render_page
    from lockdocs.render.view import build_page

    bad = output_diagnostics(model)
    if bad:
        raise RenderError(bad)
    page_path, stem = page_location(model)
    diagnostics = sort_diagnostics(list(diagnostics))
    view = build_page(model, diagnostics, stem)
    try:
        markdown = render_page(Path(model.root), view, coverage_view(model, coverage))
    except TemplateProblem as exc:
        raise RenderError([exc.diagnostic]) from None
    cycles = cycle_pairs(diagnostics)
    folder = str(PurePosixPath(stem).parent)
    files = {page_path: markdown, f"{stem}/legend.dot": legend_dot(model, any(cycles))}
    for part in view.order.components:
        if part.diagram_dot:
            files[str(PurePosixPath(folder) / part.diagram_dot)] = lock_order_dot(
                model,
                part.name,
                view.edge_pairs,
                tuple(view.order.layer_ids[i] for i in part.diagram_parts),
                view.order.two_way_ids,
                cycles,
            )
    for group in view.groups:
        for path in group.paths:
            rel = str(PurePosixPath(folder) / path.diagram_dot)
            files[rel] = path_dot(model, model.paths[path.id], path.held_marks)
    return dict(sorted(files.items()))


def _svg_path(dot_path: str) -> str:
    """The SVG drawn from a DOT file sits next to it."""
    return dot_path[: -len(".dot")] + ".svg"


def _manifest_text(paths: list[str]) -> str:
    """The manifest: a comment, then one generated path per line, sorted."""
    return _MANIFEST_HEAD + "".join(p + "\n" for p in sorted(paths))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _hashes(files: dict[str, str]) -> dict[str, str]:
    return {rel: _sha(text) for rel, text in files.items()}


def inputs_digest(model: m.Model, coverage: Coverage | None = None) -> str:
    """Everything the generated files are a function of, hashed as this run read it (see
    `inputs.py`): the declarations, pyproject.toml, the project's templates, this lockdocs
    (its version and its own files), and the coverage of the scanned SQL the page states."""
    from lockdocs import __version__, inputs

    root = Path(model.root)
    seen = inputs.seen(root)
    if inputs.TEMPLATE_DIR + "/" not in seen:  # nothing rendered yet: read them now, once
        inputs.template_snapshot(root)
        seen = inputs.seen(root)
    h = hashlib.sha256()
    h.update(__version__.encode())
    if coverage is not None:
        import json

        h.update(json.dumps(coverage.to_json(), sort_keys=True).encode())
    wanted = [*model.files, "pyproject.toml"]
    for label in sorted(set(wanted) | {k for k in seen if k.startswith(inputs.TEMPLATE_DIR)}):
        h.update(f"{label}\0{seen.get(label, '<unread>')}\0".encode("utf-8", "surrogateescape"))
    pkg = Path(__file__).parent.parent
    for f in sorted(pkg.rglob("*")):
        if f.is_file() and f.suffix in (".py", ".j2", ".json") and "__pycache__" not in f.parts:
            data = f.read_bytes()
            h.update(f"pkg/{f.relative_to(pkg).as_posix()}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


# A check that finds no drift remembers, outside the project, the inputs it saw and the sha256 of
# every generated file; the next check with the same inputs and the same files skips the
# renderer (no jinja2, no rendering). Nothing is written into the project, so committed files
# never depend on it; LOCKDOCS_CACHE=off turns it off.


def _cache_file(root: Path) -> Path | None:
    if os.environ.get("LOCKDOCS_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    # fsencode: a non-ASCII project path under LC_ALL=C PYTHONUTF8=0 holds surrogates.
    key = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:32]
    return Path(base) / "lockdocs" / f"{key}.json"


def _outputs_now(root: Path) -> dict[str, str] | None:
    out = {}
    if not confined(root, MANIFEST):
        return None
    for rel in [*read_manifest(root), MANIFEST]:
        data = _read(root / rel)
        if data is None:
            return None
        out[rel] = _sha(data)
    return out


def remember_clean(
    root: Path,
    model: m.Model,
    outputs: dict[str, str],
    *,
    svg: bool = True,
    coverage: Coverage | None = None,
) -> None:
    """Record that these outputs ({file: sha256 of the text compared or written}, the
    manifest among them) match the inputs this run read (best effort, never fails); `svg`
    says whether the SVGs were part of the comparison."""
    import json

    target = _cache_file(root)
    if target is None:
        return
    record = json.dumps(
        {"inputs": inputs_digest(model, coverage), "outputs": outputs, "svg": svg},
        sort_keys=True,
    )
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(record, encoding="utf-8")
        tmp.replace(target)


def _unchanged_since_clean(
    root: Path, model: m.Model, *, svg: bool = True, coverage: Coverage | None = None
) -> bool:
    import json

    target = _cache_file(root)
    if target is None:
        return False
    try:
        seen = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(seen, dict)
        and seen.get("svg", True) == svg
        and seen.get("inputs") == inputs_digest(model, coverage)
        and seen.get("outputs") == _outputs_now(root)
    )


def read_manifest(root: Path) -> list[str]:
    """The files the last build wrote: only lines that name a file inside docs/, symlinks
    resolved, are trusted; any other line is ignored (never read, never removed)."""
    try:
        if not confined(root, MANIFEST):
            return []
        text = (root / MANIFEST).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and confined(root, line):
            out.append(line)
    return out


def _read(path: Path) -> str | None:
    """A file's text, or None when it is missing or unreadable."""
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


# --- the atomic build --------------------------------------------------------------------------


@functools.cache
def _umask() -> int:
    """The process's umask (read without changing it where Linux allows)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _mode_for(target: Path) -> int:
    """The mode `open` would leave: an existing file keeps its own, a new one gets what the
    umask allows (mkstemp alone makes every file 0600)."""
    try:
        return target.stat().st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _write_temp(target: Path, content: bytes, mode: int | None = None) -> Path:
    """Write content to a new temporary file beside target (same folder, so os.replace is an
    atomic rename) and return its path."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _mode_for(target) if mode is None else mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        Path(name).unlink(missing_ok=True)
        if exc.filename is None:  # a failed write names no file; say which one
            exc.filename = str(target)
        raise
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def _mkdirs(folder: Path, created: list[Path]) -> None:
    """Create the missing folders of `folder`, recording them for a rollback."""
    missing = []
    for p in (folder, *folder.parents):
        if p.exists():
            break
        missing.append(p)
    for p in reversed(missing):
        p.mkdir()
        created.append(p)


def _prune(folder: Path, stop: Path) -> None:
    """Remove folders left empty, up to (not including) stop."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


JOURNAL = f"{DOCS}/.lockdocs-journal"


def _entry(
    root: Path, target: Path, backup: Path | None, tmp: Path | None
) -> dict[str, str | None]:
    def rel(p: Path | None) -> str | None:
        return None if p is None else p.relative_to(root).as_posix()

    return {"target": rel(target), "backup": rel(backup), "temp": rel(tmp)}


def _write_journal(root: Path, entries: list[dict[str, str | None]]) -> None:
    import json

    target = root / JOURNAL
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_temp(target, json.dumps(entries, sort_keys=True).encode("utf-8")).replace(target)


def _discard(root: Path, entries: list[dict[str, str | None]]) -> None:
    for e in entries:
        for key in ("backup", "temp"):
            if e[key]:
                (root / str(e[key])).unlink(missing_ok=True)


def _crash_point(renamed: int) -> None:
    """For the crash test only: LOCKDOCS_CRASH_AFTER=N kills the process after N renames."""
    limit = os.environ.get("LOCKDOCS_CRASH_AFTER")
    if limit and renamed >= int(limit):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def interrupted(root: Path) -> bool:
    """A build was killed while it replaced files (its journal is still there)."""
    return (root / JOURNAL).is_file() or (root / JOURNAL).is_symlink()


_MAX_JOURNAL_BYTES = 16 * 1024 * 1024


def _journal_entries(root: Path) -> tuple[list[dict[str, str | None]], str]:
    """The journal's entries, or ([], why it cannot be trusted). A journal names files to
    restore and delete, so only the exact shape a build writes is followed: a list of
    {target, backup, temp}, every name inside docs/ (symlinks resolved), each backup and
    temporary file a `.NAME.XXXXXXXX.tmp` sibling of its target."""
    import json

    journal = root / JOURNAL
    if journal.is_symlink() or not confined(root, JOURNAL):
        return [], "it is a symlink"
    try:
        if journal.stat().st_size > _MAX_JOURNAL_BYTES:
            return [], "it is far larger than any journal a build writes"
        entries = json.loads(journal.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return [], "it is not JSON"
    if not isinstance(entries, list):
        return [], "it is not a list of entries"
    for e in entries:
        if not isinstance(e, dict) or set(e) != {"target", "backup", "temp"}:
            return [], "an entry is not {target, backup, temp}"
        target = e["target"]
        if not isinstance(target, str) or not confined(root, target) or target == JOURNAL:
            return [], f"an entry's target {target!r} is not a file inside {DOCS}/"
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
    if complete:  # the copies are all there: restore them
        for e in entries:
            target = root / str(e["target"])
            if e.get("backup"):
                (root / str(e["backup"])).replace(target)
            elif e.get("temp"):
                target.unlink(missing_ok=True)  # a file this build added
    _discard(root, entries)  # otherwise the build had finished and was only tidying up
    journal.unlink(missing_ok=True)
    return complete


_TEMP = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.tmp")


def remove_stale_temps(root: Path, names: list[str]) -> list[str]:
    """Delete the temporary files killed builds left beside the files lockdocs writes
    (`.NAME.XXXXXXXX.tmp`, NAME one of `names`); only while holding the build lock, after
    recover() has used the journal's. Returns what was removed."""
    by_folder: dict[Path, set[str]] = {}
    for rel in names:
        if confined(root, rel):
            target = root / rel
            by_folder.setdefault(target.parent, set()).add(target.name)
    removed = []
    for folder, wanted in sorted(by_folder.items()):
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in sorted(entries):
            m = _TEMP.fullmatch(entry.name)
            if m and m.group(1) in wanted and entry.is_file() and not entry.is_symlink():
                entry.unlink(missing_ok=True)
                removed.append(entry.relative_to(root).as_posix())
    return removed


LOCK = f"{DOCS}/.lockdocs-lock"
LOCK_WAIT = 60.0  # seconds a build waits for another one (LOCKDOCS_LOCK_SECONDS overrides)


def _lock_wait() -> float:
    try:
        value = float(os.environ.get("LOCKDOCS_LOCK_SECONDS", ""))
    except ValueError:
        return LOCK_WAIT
    return value if value >= 0 else LOCK_WAIT


class _BuildLock:
    """One build at a time per docs folder: an flock on docs/.lockdocs-lock, removed when the
    build ends (a killed build's file is taken over: the kernel drops its lock)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fd: int | None = None

    def acquire(self, wait: float | None = None) -> BuildRefused | None:
        import fcntl
        import time

        wait = _lock_wait() if wait is None else wait
        path = self.root / LOCK
        if not confined(self.root, LOCK) or path.is_symlink():
            return BuildRefused(f"{LOCK} is a symlink", "remove it; lockdocs creates it itself")
        deadline = time.monotonic() + wait
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        while True:
            fd = os.open(path, flags, 0o666 & ~_umask())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() > deadline:
                    return BuildRefused(
                        f"another lockdocs build is running in this project ({LOCK} is held "
                        f"for more than {wait:g} s)",
                        "wait for it to finish, then build again",
                    )
                time.sleep(0.05)
                continue
            try:
                same = os.fstat(fd).st_ino == path.stat().st_ino
            except OSError:
                same = False
            if same:  # not a file the previous holder removed meanwhile
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                self.fd = fd
                return None
            os.close(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            (self.root / LOCK).unlink()
        os.close(self.fd)
        self.fd = None


def write_files(root: Path, files: dict[str, str]) -> tuple[list[str], list[str]]:
    """Write `files` (and the manifest) all or nothing; remove what the last build wrote and
    this one does not. Returns (written, removed) paths."""
    for rel in files:
        if not _inside_docs(rel):  # pragma: no cover - render_outputs never makes one
            raise ValueError(f"refusing to write {rel} outside {DOCS}/")
    for rel in [*files, MANIFEST, JOURNAL]:
        if not confined(root, rel):
            raise BuildRefused(
                f"{rel} leads outside {DOCS}/ (a symlink on the way)",
                f"remove the symlink or point it inside {DOCS}/: lockdocs writes only there",
            )
        if (root / rel).is_dir():
            raise BuildRefused(
                f"{rel} is a folder, where lockdocs writes a file", "move the folder away"
            )
    previous = read_manifest(root)
    wanted = dict(files)
    manifest = _manifest_text(list(files))
    changed = [rel for rel, text in wanted.items() if _read(root / rel) != text]
    if _read(root / MANIFEST) != manifest:
        changed.append(MANIFEST)
        wanted[MANIFEST] = manifest
    stale = [rel for rel in previous if rel not in files and (root / rel).is_file()]

    created: list[Path] = []
    temps: list[tuple[Path, Path]] = []
    try:
        for rel in changed:
            target = root / rel
            _mkdirs(target.parent, created)
            temps.append((target, _write_temp(target, wanted[rel].encode("utf-8"))))
    except BaseException:
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        for folder in reversed(created):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise

    # Undo journal: every file this build replaces or removes is first copied beside itself,
    # and the list is written (atomically) before the first rename. A failure inside the
    # process restores the copies at once; a killed process leaves the journal, and the next
    # `lockdocs build` restores the previous files before it writes (`check` reports it).
    docs = root / DOCS
    entries: list[dict[str, str | None]] = []
    try:
        for target, tmp in temps:
            backup = _write_temp(target, target.read_bytes()) if target.exists() else None
            entries.append(_entry(root, target, backup, tmp))
        for rel in stale:
            target = root / rel
            entries.append(_entry(root, target, _write_temp(target, target.read_bytes()), None))
        _write_journal(root, entries)
    except BaseException:
        _discard(root, entries)
        for _, tmp in temps:
            tmp.unlink(missing_ok=True)
        raise
    try:
        for n, (target, tmp) in enumerate(temps, start=1):
            tmp.replace(target)
            _crash_point(n)
        for rel in stale:
            (root / rel).unlink(missing_ok=True)
    except BaseException:
        recover(root)
        raise
    _discard(root, entries)  # the build is in place: drop the copies, then the journal
    (root / JOURNAL).unlink(missing_ok=True)
    for rel in stale:
        _prune((root / rel).parent, docs)
    return sorted(r for r in changed if r != MANIFEST), sorted(stale)


def _draw(
    root: Path,
    files: dict[str, str],
    *,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> dict[str, str]:
    """An SVG for every DOT: the one on disk when its stamp says it was drawn from this very
    DOT (the cache: a diagram whose DOT is unchanged is never drawn again), else drawn now,
    many to a `dot` process and one process per core (`svg.render_svgs`)."""
    from lockdocs.render.svg import DOT_TIMEOUT, dot_hash, render_svgs, svg_stamp

    out: dict[str, str] = {}
    todo: dict[str, str] = {}
    for rel in (r for r in files if r.endswith(".dot")):
        old = _read(root / _svg_path(rel)) if confined(root, _svg_path(rel)) else None
        if old is not None and svg_stamp(old) == dot_hash(files[rel]):
            out[_svg_path(rel)] = old
        else:
            todo[rel] = files[rel]
    if todo:

        def shown(done: int, total: int) -> None:
            if progress is not None:
                progress.count("drawing diagrams", done, total)

        drawn = render_svgs(todo, timeout=timeout or DOT_TIMEOUT, progress=shown)
        out.update({_svg_path(rel): svg_text for rel, svg_text in drawn.items()})
    return out


def refuse(err: TextIO, refused: BuildRefused) -> int:
    """Report a refusal: exit 2, nothing written, and what to do."""
    from lockdocs.diagnostics import printable

    err.write(
        f"lockdocs: {printable(refused.message)}; nothing written\n"
        f"hint: {printable(refused.hint)}\n"
    )
    return 2


def restore(root: Path, err: TextIO) -> BuildRefused | None:
    """Undo an interrupted build before anything else (a build with invalid declarations
    too), under the build lock, reporting what it did; a refusal when the docs folder
    cannot be written."""
    if not (root / DOCS).is_dir():
        return None
    lock = _BuildLock(root)
    try:
        problem = lock_docs(lock, root)
        if problem is not None:
            return problem
        if recover(root, err):
            err.write("lockdocs: restored the files an interrupted build had half replaced\n")
    except OSError as exc:
        return os_refusal(exc, root, "restore the interrupted build's files in")
    finally:
        lock.release()
    return None


def build(
    root: Path,
    model: m.Model,
    diagnostics: list[Diagnostic],
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    svg: bool = True,
    coverage: Coverage | None = None,
    dot_timeout: float | None = None,
    progress: Progress | None = None,
) -> int:
    """Write the docs of an analysed model (the caller loads and checks it, see `api.build`):
    0 written, 2 bad input or an unusable docs folder (nothing written), 3 Graphviz failed.

    `svg` False writes the Markdown and the DOT only (no Graphviz needed); the page's images
    then have no file until a build with SVGs runs (check with --no-svg compares DOT only).
    Builds of one project write one at a time (`_BuildLock`)."""
    from lockdocs.render.svg import GraphvizError
    from lockdocs.report import REPORTERS

    out = out or sys.stdout
    err = err or sys.stderr
    if progress is not None:
        progress.say("lockdocs: rendering the page")
    try:
        files = render_outputs(model, diagnostics, coverage)
    except RenderError as exc:
        err.write(REPORTERS["text"](exc.diagnostics, "cannot render the docs; nothing written"))
        return 2
    try:
        if svg:
            files.update(_draw(root, files, timeout=dot_timeout, progress=progress))
    except GraphvizError as exc:
        err.write(f"lockdocs: {exc}; nothing written\n")
        return 2 if exc.usage else 3
    refused = docs_problem(root)
    if refused is not None:
        return refuse(err, refused)
    lock = _BuildLock(root)
    docs = root / DOCS
    made_docs = False
    try:
        if not docs.exists():
            docs.mkdir(parents=True)
            made_docs = True
        problem = lock_docs(lock, root)
        if problem is not None:
            return refuse(err, problem)
        recover(root, err)  # a build killed since this one started
        remove_stale_temps(root, [*files, MANIFEST, JOURNAL, *read_manifest(root)])
        if progress is not None:
            progress.say(f"lockdocs: writing {len(files):,} files")
        written, removed = write_files(root, dict(sorted(files.items())))
    except BuildRefused as exc:
        return refuse(err, exc)
    except OSError as exc:
        return refuse(err, os_refusal(exc, root, "write"))
    finally:
        lock.release()
        if made_docs:
            with contextlib.suppress(OSError):
                docs.rmdir()  # only when it stayed empty
    manifest = _manifest_text(list(files))
    remember_clean(
        root, model, {**_hashes(files), MANIFEST: _sha(manifest)}, svg=svg, coverage=coverage
    )
    for rel in written:
        out.write(f"wrote {rel}\n")
    for rel in removed:
        out.write(f"removed {rel}\n")
    unchanged = len(files) - len(written)
    out.write(f"lockdocs: {len(written)} written, {unchanged} unchanged, {len(removed)} removed\n")
    return 0


def lock_docs(lock: _BuildLock, root: Path) -> BuildRefused | None:
    """Take the build lock. On a read-only file system nobody can write, so no lock is
    needed (a build with nothing to change still succeeds there)."""
    try:
        return lock.acquire()
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        return os_refusal(exc, root, "lock")
