"""The check's result cache: a check remembers, outside the project, what it found and every
input it read; the next check whose inputs are all unchanged prints that result without
reading YAML, analysing or scanning. `lockdocs build` computes the same findings and
remembers them too, so the check a pre-commit hook runs after a build is answered this way.

What a run read is recorded as it reads it (`inputs.py`): the sha256 of each declaration file,
of pyproject.toml and of each file `code:` matched, and the tree of each folder it walked (the
paths folder, the folders the `code:` globs search), taken before the walk. A later check
re-reads and re-hashes exactly these, and re-lists these folders; one difference (an edit, a
file added or removed anywhere a walk looks, a symlink) and the check runs in full, as without
the cache. lockdocs itself is part of the key (its version, and the size, times and inode of
each of its files, so an edited checkout is another lockdocs), and so are Python and the
libraries that parse (PyYAML, pglast).

The drift of the docs is never cached: each check asks the manifest (`render.manifest.vouch`)
whether the docs are what a build from these inputs writes; when it cannot vouch, the check
runs in full and renders. A check that rendered and found the docs current remembers that
here too (a local seal), so a change that leaves the docs as they are (a comment in
locks.yaml) renders once, not on every check.

Nothing is written into the project. The cache lives in $XDG_CACHE_HOME/lockdocs (or
~/.cache/lockdocs), one file per project; LOCKDOCS_CACHE=off turns it off; a damaged file is
ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, NamedTuple

from lockdocs import __version__, inputs
from lockdocs.diagnostics import Diagnostic, from_record, to_record

FORMAT = "lockdocs check cache 1"
_LIBRARIES = ("yaml", "pglast", "jinja2", "markupsafe")
_MAX_SEALS = 8


def folder() -> Path | None:
    if os.environ.get("LOCKDOCS_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lockdocs"


def _file(root: Path) -> Path | None:
    where = folder()
    if where is None:
        return None
    # fsencode: a non-ASCII project path under LC_ALL=C PYTHONUTF8=0 holds surrogates.
    key = hashlib.sha256(os.fsencode(root.resolve())).hexdigest()[:32]
    return where / f"check-{key}.json"


def _signature(h: Any, path: str, st: os.stat_result | None) -> None:
    shown = "-" if st is None else f"{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}"
    h.update(f"{path}\0{shown}\0".encode("utf-8", "surrogateescape"))


@functools.cache
def tool() -> str:
    """This lockdocs, as a key: its version, Python, the parsing libraries' files, and the
    size, times and inode of every file of the package (an edited checkout is another tool)."""
    h = hashlib.sha256(f"{FORMAT}\0{__version__}\0{sys.version}\0{sys.prefix}\0".encode())
    for name in _LIBRARIES:
        spec = importlib.util.find_spec(name)
        h.update(f"{name}\0".encode())
        if spec is not None and spec.origin:
            try:
                _signature(h, spec.origin, Path(spec.origin).stat())
            except OSError:
                _signature(h, spec.origin, None)
    package = Path(__file__).parent
    pending = [package]
    while pending:
        here = pending.pop()
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    pending.append(Path(entry.path))
            elif entry.name.endswith((".py", ".j2", ".json")):
                _signature(h, entry.path, entry.stat(follow_symlinks=False))
    return h.hexdigest()


def _package_files() -> list[tuple[str, str]]:
    """(name from the package's folder, path) of every source, template and schema file of the
    package, in one order everywhere."""
    package = Path(__file__).parent
    found: list[tuple[str, str]] = []
    pending = [(package, "")]
    while pending:
        here, prefix = pending.pop()
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    pending.append((Path(entry.path), f"{prefix}{entry.name}/"))
            elif entry.name.endswith((".py", ".j2", ".json")):
                found.append((prefix + entry.name, entry.path))
    return sorted(found)


@functools.cache
def package_digest() -> str:
    """The sha256 of what the package's files hold (sources, templates, schemas): with the
    inputs, what the generated docs are a function of. A git install or an edited checkout
    keeps its version while its renderer changes, so the manifest's seal holds this digest and
    a build by other code is rendered and compared, never vouched for. Reading the package
    costs 4-6 ms (218 files, 1.7 MB), so the digest is kept under `tool()` (the files' sizes,
    times and inodes) and read again only after the package changed: in the cache folder, or
    with the cache off beside the package's bytecode, as install-time data (`make setup`
    writes it there with the bytecode)."""
    where = folder()
    memo = (where or Path(__file__).parent / "__pycache__") / f"package-{tool()[:32]}"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        kept = memo.read_text(encoding="ascii").strip()
        if len(kept) == 64 and all(c in "0123456789abcdef" for c in kept):
            return kept
    h = hashlib.sha256(b"lockdocs package 1\0")
    for name, path in _package_files():
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = b"<unreadable>"
        h.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        h.update(data)
    digest = h.hexdigest()
    with contextlib.suppress(OSError):  # (a read-only install: computed again next time)
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(digest + "\n", encoding="ascii")
        tmp.replace(memo)
        if where is None:  # beside the bytecode: one memo, this package's (an edit makes one)
            for old in memo.parent.glob("package-*"):
                if old.name != memo.name and not old.name.endswith(".tmp"):
                    old.unlink(missing_ok=True)
    return digest


def _digest_now(root: Path, label: str) -> str:
    """What `inputs` would record for `label` if the run read it now."""
    if label.startswith("walk:"):
        return inputs.listing(root / label[len("walk:") :])
    if label.startswith("glob:"):
        return inputs.glob_listing(root, label[len("glob:") :])
    path = root / label.removeprefix("code:")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return "<missing>"
    except OSError:
        return inputs.UNCACHEABLE  # a symlink, or unreadable: never equal to a digest
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return inputs.UNCACHEABLE
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return h.hexdigest()
    except OSError:
        return inputs.UNCACHEABLE
    finally:
        os.close(fd)


def _load(root: Path) -> dict[str, Any] | None:
    target = _file(root)
    if target is None:
        return None
    try:
        record = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # a planted one may nest deeply
        return None
    if not isinstance(record, dict) or record.get("tool") != tool():
        return None
    return record


def _save(root: Path, record: dict[str, Any]) -> None:
    target = _file(root)
    if target is None:
        return
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        tmp.replace(target)


class Recalled(NamedTuple):
    """A check's findings as the last full run found them (before drift)."""

    diagnostics: list[Diagnostic]
    bad_input: bool  # the declarations are not valid (exit 2)
    output_problems: list[Diagnostic]  # page.output cannot be written (bad input with drift)
    files: list[str]  # the declaration files, as the model lists them
    coverage: dict[str, Any] | None  # the coverage of the scanned SQL, as JSON
    rules_url: str | None


def recall(root: Path) -> Recalled | None:
    """The last check's result when every input it read is unchanged, else None. The digests
    verified here are recorded in `inputs`, as a run that read the files would."""
    record = _load(root)
    if record is None or not isinstance(record.get("result"), dict):
        return None
    read = record.get("inputs")
    if not isinstance(read, dict):
        return None
    inputs.start(root)
    for label, digest in read.items():
        if _digest_now(root, label) != digest:
            return None
        inputs.record_digest(root, label, digest)
    result = record["result"]
    try:
        return Recalled(
            [from_record(r) for r in result["diagnostics"]],
            bool(result["bad_input"]),
            [from_record(r) for r in result["output_problems"]],
            [str(f) for f in result["files"]],
            result["coverage"],
            result["rules_url"],
        )
    except (KeyError, TypeError, ValueError):
        return None


def remember(
    root: Path,
    diagnostics: list[Diagnostic],
    *,
    bad_input: bool,
    output_problems: list[Diagnostic],
    files: tuple[str, ...] | list[str],
    coverage: dict[str, Any] | None,
    rules_url: str | None,
) -> None:
    """Record a full check's findings with every input the run has read so far (best effort,
    never fails; nothing is recorded when the run read something the cache cannot re-check)."""
    if folder() is None:
        return
    read = {
        label: digest
        for label, digest in inputs.seen(root).items()
        if not label.startswith(inputs.TEMPLATE_DIR + "/")
    }
    if inputs.UNCACHEABLE in read.values():
        return
    previous = _load(root) or {}
    seals = previous.get("seals", [])
    _save(
        root,
        {
            "tool": tool(),
            "inputs": read,
            "result": {
                "diagnostics": [to_record(d) for d in diagnostics],
                "bad_input": bad_input,
                "output_problems": [to_record(d) for d in output_problems],
                "files": list(files),
                "coverage": coverage,
                "rules_url": rules_url,
            },
            "seals": seals if isinstance(seals, list) else [],
        },
    )


def seals(root: Path) -> frozenset[str]:
    """Manifest seals that a check with this lockdocs rendered and found current."""
    record = _load(root)
    found = record.get("seals") if record else None
    return (
        frozenset(s for s in found if isinstance(s, str))
        if isinstance(found, list)
        else frozenset()
    )


def remember_seal(root: Path, seal: str) -> None:
    """A check rendered the docs and found them current: the manifest's list with the inputs
    of this run (`manifest.seal`) vouches for them from now on, on this machine."""
    if folder() is None:
        return
    record = _load(root) or {"tool": tool()}
    kept = [s for s in record.get("seals", []) if isinstance(s, str) and s != seal]
    record["seals"] = [seal, *kept][:_MAX_SEALS]
    _save(root, record)
