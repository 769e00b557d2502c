"""The manifest of the generated docs (docs/.lockdocs-manifest), and how a check reads it
instead of rendering the docs again.

A build lists every file it wrote, each page and DOT file with the sha256 of its text, and seals
the list: the seal is the sha256 of the list, of the inputs the build rendered (the declaration
files and project templates as it read them, the findings, the coverage of the scanned SQL) and
of the lockdocs that built it (its version and the digest of its files). `vouch` is the drift check's fast path: when the seal holds for this
run's inputs and every listed file is still the one the build wrote (a page or DOT file by its
hash, an SVG by its stamps), the docs are what a build would write now, known without rendering
them. Anything else (a changed input, another lockdocs version or code, a file edited, missing or behind
a symlink, a manifest edited or merged by hand) gets no answer, and the check renders and
compares as before, so every difference is still reported file by file.

No YAML and no Jinja here: a check whose docs are current reads only these files.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from lockdocs import __version__, inputs
from lockdocs.checkcache import package_digest
from lockdocs.diagnostics import Diagnostic, to_record
from lockdocs.render.stamps import svg_stamp_of

DOCS = "docs"
MANIFEST = f"{DOCS}/.lockdocs-manifest"
# lockdocs' own files in docs/ start with this; no generated file may (a page named
# .lockdocs-journal.md would put its diagrams' folder where the journal goes).
OWN_PREFIX = ".lockdocs-"
MANIFEST_HEAD = (
    "# Files written by `lockdocs build`; the next build removes any it no longer writes.\n"
)
SEAL_HEAD = "# seal of this list, the inputs it was built from and the lockdocs that built it: "


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def svg_path(dot_path: str) -> str:
    """The SVG drawn from a DOT file sits next to it."""
    return dot_path[: -len(".dot")] + ".svg"


def inside_docs(rel: str) -> bool:
    """Whether a manifest entry may be written or removed (never outside docs/)."""
    parts = PurePosixPath(rel).parts
    return (
        len(parts) >= 2
        and parts[0] == DOCS
        and not PurePosixPath(rel).is_absolute()
        and all(p not in ("", ".", "..") for p in parts)
        and "\\" not in rel
    )


def inputs_digest(
    read: Mapping[str, str], findings: Iterable[Diagnostic], coverage: Any | None
) -> str:
    """What the generated files are a function of: the files the run read ({label: sha256},
    the declarations and the project's templates), the findings the page states, and the
    coverage of the scanned SQL (its JSON). lockdocs' version goes into the seal."""
    h = hashlib.sha256(b"lockdocs inputs 1\0")
    for label in sorted(read):
        h.update(f"{label}\0{read[label]}\0".encode("utf-8", "surrogateescape"))
    records = [to_record(d) for d in findings]
    h.update(json.dumps(records, ensure_ascii=False).encode("utf-8", "surrogateescape"))
    h.update(b"\0")
    h.update(json.dumps(coverage, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    return h.hexdigest()


def run_inputs(
    root: Path, files: Iterable[str], findings: Iterable[Diagnostic], coverage: Any | None
) -> str:
    """`inputs_digest` of this run: the declaration `files` and the project's templates as this
    run read them (the templates read now when nothing was rendered yet), the findings and the
    coverage's JSON (`scan.decls.Coverage.to_json()`, or None)."""
    seen = inputs.seen(root)
    if inputs.TEMPLATE_DIR + "/" not in seen:
        inputs.template_snapshot(root)
        seen = inputs.seen(root)
    read = {label: seen.get(label, "<unread>") for label in files}
    read.update({k: v for k, v in seen.items() if k.startswith(inputs.TEMPLATE_DIR + "/")})
    return inputs_digest(read, findings, coverage)


def seal(digest: str, body: str) -> str:
    """The sha256 of the list, the inputs' digest, and the lockdocs that wrote it: its version
    and what its files hold (`checkcache.package_digest`: the same version from another commit
    renders other docs)."""
    h = hashlib.sha256(
        f"lockdocs manifest 2\0{__version__}\0{package_digest()}\0{digest}\0".encode()
    )
    h.update(body.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def manifest_text(
    paths: list[str], contents: dict[str, str] | None = None, digest: str = ""
) -> str:
    """The manifest: a comment, the seal (when the inputs are known), then one generated path
    per line, sorted; a page or DOT file with the sha256 of what was written (an SVG is told by
    its stamps instead: its bytes differ with the Graphviz version and fonts, and the manifest
    must not)."""
    contents = contents or {}

    def line(p: str) -> str:
        text = contents.get(p)
        if text is not None and p.endswith((".md", ".dot")):
            return f"{p} {sha(text)}\n"
        return p + "\n"

    body = "".join(line(p) for p in sorted(paths))
    sealed = f"{SEAL_HEAD}{seal(digest, body)}\n" if digest else ""
    return MANIFEST_HEAD + sealed + body


def body_of(text: str | None) -> str | None:
    """The list of a manifest's text: what follows its comment and its seal (None for no
    manifest, or a text that is not one)."""
    if text is None or not text.startswith(MANIFEST_HEAD):
        return None
    rest = text[len(MANIFEST_HEAD) :]
    if rest.startswith(SEAL_HEAD):
        rest = rest.partition("\n")[2]
    return rest


_NOFOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)


def _plain(path: str | Path) -> bytes | None:
    """A regular file's bytes, read without following a symlink at its name; None otherwise.
    A check at 100x reads 7,200 generated files here: a path is a string, and a file read
    whole by its first read (shorter than asked: the end) is not read again for its end."""
    try:
        fd = os.open(path, _NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        first = os.read(fd, info.st_size + 1)
        if len(first) <= info.st_size:
            return first
        chunks = [first]
        while chunks[-1]:  # to the end: it grew since the fstat
            chunks.append(os.read(fd, 1 << 20))
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _generated_name(rel: str) -> list[str] | None:
    """The parts of a manifest line's path when it may name a generated file (as `inside_docs`
    and not one of lockdocs' own files), else None."""
    parts = rel.split("/")
    if (
        len(parts) < 2
        or parts[0] != DOCS
        or "\\" in rel
        or "" in parts
        or "." in parts
        or ".." in parts
        or parts[-1].startswith(OWN_PREFIX)
    ):
        return None
    return parts


def _real_dir(path: str | Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _absent(path: str | Path) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def vouch(
    root: Path, digest: str, *, svg: bool = True, local: frozenset[str] = frozenset()
) -> bool:
    """Whether the docs on disk are exactly what a build from these inputs writes, told from
    the manifest alone (see the module's docstring); False means "not known", never "drift".
    `local`: seals this machine's check found true by rendering (`checkcache.seals`), which
    vouch as the manifest's own does.

    Below docs/ nothing may be a symlink (so every file is confined to docs/ without resolving
    each path); docs/ itself has been checked by the caller (`targets.docs_problem`)."""
    data = _plain(root / MANIFEST)
    if data is None:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    body = body_of(text)
    if body is None:
        return False
    sealed = seal(digest, body)
    if not text.startswith(MANIFEST_HEAD + SEAL_HEAD + sealed + "\n") and sealed not in local:
        return False
    hashes: dict[str, str] = {}
    svgs: set[str] = set()
    folders: set[str] = set()
    for line in body.splitlines():
        rel, _, recorded = line.partition(" ")
        parts = _generated_name(rel)
        if parts is None:
            return False
        if rel.endswith((".md", ".dot")) and len(recorded) == 64:
            hashes[rel] = recorded
        elif rel.endswith(".svg") and not recorded:
            svgs.add(rel)
        else:
            return False
        parent = rel.rpartition("/")[0]
        if parent not in folders:  # (most files share their folder with the line before)
            folders.update("/".join(parts[:i]) for i in range(2, len(parts)))
    base = os.fspath(root) + "/"  # strings, not Paths: one join a file (7,200 at 100x)
    if not all(_real_dir(base + p) for p in folders):
        return False
    for rel, recorded in hashes.items():
        got = _plain(base + rel)
        if got is None or hashlib.sha256(got).hexdigest() != recorded:
            return False
    dots = {rel for rel in hashes if rel.endswith(".dot")}
    if any(rel[: -len(".svg")] + ".dot" not in dots for rel in svgs):
        return False
    for dot in dots:
        drawn = svg_path(dot)
        if drawn not in svgs:
            # A check with SVGs wants one for every DOT; without, an unlisted SVG on disk
            # would still be compared (and the manifest found wanting) by the full check.
            if svg or not _absent(base + drawn):
                return False
            continue
        got = _plain(base + drawn)
        if got is None:
            return False
        if svg and svg_stamp_of(got) != hashes[dot]:
            return False
    return True
