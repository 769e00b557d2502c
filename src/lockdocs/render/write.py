"""`lockdocs build` for an analysed model: render (pages.py), draw the SVGs, then write
everything all or nothing (atomic.py) under the build lock, with a manifest sealed with the
inputs it was rendered from (manifest.py), which the next check reads instead of rendering. An interrupted build leaves the previous files in place and complete; files a
previous build wrote and this one does not are removed. `drift.py` compares the same outputs
with the committed files instead of writing them.
"""

from __future__ import annotations

import contextlib
import errno
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, printable
from lockdocs.render import pages
from lockdocs.render.atomic import (
    JOURNAL,
    LOCK,
    BuildLock,
    Later,
    recover,
    remove_stale_temps,
    write_files,
)
from lockdocs.render.manifest import DOCS, MANIFEST, run_inputs
from lockdocs.render.svg import GraphvizError
from lockdocs.render.targets import (
    BuildRefused,
    RenderError,
    docs_problem,
    os_refusal,
    read_manifest,
)
from lockdocs.report import REPORTERS

if TYPE_CHECKING:
    from lockdocs.progress import Progress
    from lockdocs.rules.context import CheckContext
    from lockdocs.scan.decls import Coverage

__all__ = ["DOCS", "JOURNAL", "LOCK", "MANIFEST", "lock_docs", "refuse", "restore", "write_docs"]


def refuse(err: TextIO, refused: BuildRefused) -> int:
    """Report a refusal: exit 2, nothing written, and what to do."""
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
    lock = BuildLock(root)
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


def write_docs(
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
    facts: CheckContext | None = None,
) -> int:
    """Write the docs of an analysed model (the caller loads and checks it, see `api.build`):
    0 written, 2 bad input or an unusable docs folder (nothing written), 3 Graphviz failed.

    `svg` False writes the Markdown and the DOT only (no Graphviz needed); the page's images
    then have no file until a build with SVGs runs (check with --no-svg compares DOT only).
    Builds of one project write one at a time (`BuildLock`). `facts`: the analysis's, which
    the page reuses (`EdgeSet`)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if progress is not None:
        progress.say("lockdocs: rendering the page")
    svgs: pages.Svgs | None = None
    try:
        try:
            prepared = pages.prepare(model, diagnostics, facts)
            # The diagrams are drawn in the background while the templates render and the
            # other files are written (`Later`); a template problem is still what the build
            # reports first, as when it drew them before anything else, and a drawing that
            # fails leaves the docs as they were.
            missing: GraphvizError | None = None
            if svg:
                try:
                    svgs = pages.start_svgs(
                        root, prepared.dots, timeout=dot_timeout, progress=progress
                    )
                except GraphvizError as exc:
                    missing = exc
            files = pages.page_files(model, prepared, coverage)
            if missing is not None:
                raise missing
        except RenderError as exc:
            err.write(REPORTERS["text"](exc.diagnostics, "cannot render the docs; nothing written"))
            return 2
        except GraphvizError as exc:
            return _graphviz_failed(err, exc)
        later = None if svgs is None else Later(svgs.names, svgs.chunks)
        result = _write(root, model, diagnostics, files, later, err, coverage, progress)
    finally:
        if svgs is not None:
            svgs.cancel()
    if isinstance(result, int):
        return result
    written, removed, kept = result
    n_files = len(files) + (0 if later is None else len(later.names))
    for rel in written:
        out.write(f"wrote {rel}\n")
    for rel in removed:
        out.write(f"removed {rel}\n")
    for rel in kept:
        err.write(
            f"lockdocs: kept {rel}: {MANIFEST} names it, but it is not the file lockdocs wrote "
            "(a person wrote or changed it), so it is not removed; delete it yourself if it "
            "is stale\n"
        )
    unchanged = n_files - len(written)
    out.write(f"lockdocs: {len(written)} written, {unchanged} unchanged, {len(removed)} removed\n")
    return 0


def _graphviz_failed(err: TextIO, exc: GraphvizError) -> int:
    err.write(f"lockdocs: {exc}; nothing written\n")
    return 2 if exc.usage else 3


def _write(
    root: Path,
    model: m.Model,
    diagnostics: list[Diagnostic],
    files: dict[str, str],
    later: Later | None,
    err: TextIO,
    coverage: Coverage | None,
    progress: Progress | None,
) -> tuple[list[str], list[str], list[str]] | int:
    """Write the files under the build lock: (written, removed, kept), or the exit code of
    a refusal (reported)."""
    refused = docs_problem(root)
    if refused is not None:
        return refuse(err, refused)
    lock = BuildLock(root)
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
        names = [*files, *(later.names if later is not None else ())]
        remove_stale_temps(root, [*names, MANIFEST, JOURNAL, *read_manifest(root)])
        if progress is not None:
            progress.say(f"lockdocs: writing {len(names):,} files")
        shown = None if coverage is None else coverage.to_json()
        digest = run_inputs(root, model.files, diagnostics, shown)
        return write_files(root, files, digest, later)
    except GraphvizError as exc:  # from `later`: nothing was written
        return _graphviz_failed(err, exc)
    except BuildRefused as exc:
        return refuse(err, exc)
    except OSError as exc:
        return refuse(err, os_refusal(exc, root, "write"))
    finally:
        lock.release()
        if made_docs:
            with contextlib.suppress(OSError):
                docs.rmdir()  # only when it stayed empty


def lock_docs(lock: BuildLock, root: Path) -> BuildRefused | None:
    """Take the build lock. On a read-only file system nobody can write, so no lock is
    needed (a build with nothing to change still succeeds there)."""
    try:
        return lock.acquire()
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return None
        return os_refusal(exc, root, "lock")
