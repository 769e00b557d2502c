"""What a run read, hashed as it read it.

The clean-check cache says "these inputs gave these outputs"; it may only record what the run
actually checked. Re-reading the files at the end (as it once did) let an edit made while
`check` or `build` ran be recorded as clean: the next check then passed on stale docs. The
loader, the settings and the template snapshot record each file's sha256 here when they read
it; the cache digest is made of these.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from lockdocs.confine import inside
from lockdocs.load import TooLarge, read_capped

_SEEN: dict[str, dict[str, str]] = {}


def _key(root: Path) -> str:
    return str(root.resolve())


def start(root: Path) -> None:
    """A new run over this project: forget what an earlier one read."""
    _SEEN[_key(root)] = {}


def record(root: Path, label: str, data: bytes | None) -> None:
    """This run read `data` (None: found nothing) as `label`."""
    digest = "<missing>" if data is None else hashlib.sha256(data).hexdigest()
    _SEEN.setdefault(_key(root), {})[label] = digest


def record_digest(root: Path, label: str, digest: str) -> None:
    """Like `record`, for a reader that hashed the bytes itself."""
    _SEEN.setdefault(_key(root), {})[label] = digest


def seen(root: Path) -> dict[str, str]:
    """label -> sha256 of everything this run read, so far."""
    return dict(_SEEN.get(_key(root), {}))


TEMPLATE_DIR = "templates"
MAX_TEMPLATE_FILES = 500
MAX_TEMPLATE_BYTES = 4 * 1024 * 1024


def template_snapshot(root: Path) -> tuple[dict[str, str], str]:
    """The project's templates/ read once: ({name: source}, problem). The renderer renders
    these very texts and the cache hashes them, so an edit made meanwhile can be neither
    half-used nor recorded as checked. A file that leads outside the project (a symlink),
    is too large or is not UTF-8 makes `problem` name it; nothing else is read then."""

    folder = root / TEMPLATE_DIR
    out: dict[str, str] = {}
    if not folder.is_dir() and not folder.is_symlink():
        record(root, TEMPLATE_DIR + "/", None)
        return out, ""
    if not inside(root, folder):
        record(root, TEMPLATE_DIR + "/", b"<outside>")
        return out, f"{TEMPLATE_DIR}/ leads outside the project (a symlink?)"
    names: list[str] = []
    for here, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(here) / name
            rel = path.relative_to(folder).as_posix()
            names.append(rel)
            if len(names) > MAX_TEMPLATE_FILES:
                return {}, f"{TEMPLATE_DIR}/ holds more than {MAX_TEMPLATE_FILES} files"
            if not inside(root, path):
                record(root, f"{TEMPLATE_DIR}/{rel}", b"<outside>")
                return {}, f"{TEMPLATE_DIR}/{rel} leads outside the project (a symlink?)"
            try:
                data = read_capped(path, MAX_TEMPLATE_BYTES)
            except TooLarge:
                return {}, f"{TEMPLATE_DIR}/{rel} is over {MAX_TEMPLATE_BYTES:,} bytes"
            except OSError as exc:
                return {}, f"{TEMPLATE_DIR}/{rel} cannot be read ({exc.strerror})"
            record(root, f"{TEMPLATE_DIR}/{rel}", data)
            try:
                out[rel] = data.decode("utf-8")
            except UnicodeDecodeError:
                return {}, f"{TEMPLATE_DIR}/{rel} is not UTF-8"
    record(root, TEMPLATE_DIR + "/", "\n".join(names).encode("utf-8", "surrogateescape"))
    return out, ""
