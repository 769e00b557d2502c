"""Which files the command line names, and the bytes of a file: measured before they are read.

A folder named on the command line means every SQL, Python and Go file under it, never a
symlink out of the project (or, with none, out of the folder): such a link is skipped with a
warning, unread. A file is read only when it is a regular file of at most 4 MiB (never read
past that: it may grow meanwhile), and only as UTF-8 text without NUL bytes.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from pathlib import Path

from lockdocs.scan.found import FileScan, Warning
from lockdocs.scan.sources import file_kind

MAX_BYTES = 4 * 1024 * 1024


def path_files(
    paths: Iterable[Path], root: Path
) -> tuple[list[tuple[str, Path]], list[str], list[tuple[str, Warning]]]:
    """Files named on the command line (a folder means every file under it); names that do
    not exist are returned apart. A folder's walk never leaves the project (or, with none, the
    folder): a symlink out of it is skipped with a warning, never read."""
    out: dict[str, Path] = {}
    missing: list[str] = []
    skipped: list[tuple[str, Warning]] = []
    base = root.resolve()
    for p in paths:
        if not p.exists():
            missing.append(str(p))
            continue
        if not p.is_dir():
            out.setdefault(_relative(p, base) or p.as_posix(), p)
            continue
        fence = base if _relative(p, base) is not None else p.resolve()
        for f in sorted(p.rglob("*")):
            if file_kind(f.name) is None or not f.is_file():
                continue
            found = _relative(f, base)
            inside = found if fence == base else _relative(f, fence)
            if inside is None:
                skipped.append(
                    (
                        f.as_posix(),
                        Warning(
                            1,
                            1,
                            "LD710",
                            "a symlink out of the project; not read",
                            "keep the code inside the project, or name the file itself",
                        ),
                    )
                )
                continue
            out.setdefault(found or f.as_posix(), f)
    return sorted(out.items()), missing, skipped


def _relative(p: Path, base: Path) -> str | None:
    """`p` relative to `base` once every symlink is followed, or None when it lies outside."""
    try:
        return p.resolve().relative_to(base).as_posix()
    except (ValueError, OSError, RuntimeError):
        return None


def read_file(rel: str, path: Path) -> tuple[bytes | None, FileScan | None]:
    kind = file_kind(rel)
    if kind is None:
        return None, FileScan(
            "none",
            warnings=(
                Warning(
                    1,
                    1,
                    "LD710",
                    "not a SQL, Python or Go file; skipped",
                    "code: globs should match .sql, .py or .go files only",
                ),
            ),
        )
    too_big = FileScan(
        kind,
        warnings=(
            Warning(
                1,
                1,
                "LD710",
                f"the file is over {MAX_BYTES // (1024 * 1024)} MiB; skipped",
                "split it, or leave it out of code:",
            ),
        ),
    )
    try:
        # Measured before it is read, and never read past the limit (it may grow meanwhile).
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, "not a regular file")
        if info.st_size > MAX_BYTES:
            return None, too_big
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        return None, FileScan(
            kind,
            warnings=(
                Warning(
                    1,
                    1,
                    "LD710",
                    f"cannot read the file: {exc.strerror or exc}",
                    "check it",
                ),
            ),
        )
    if len(data) > MAX_BYTES:
        return None, too_big
    return data, None


def unreadable(data: bytes) -> Warning | None:
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = data[: exc.start]
        line = head.count(b"\n") + 1
        col = len(head[head.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        return Warning(
            line,
            col,
            "LD710",
            f"byte 0x{data[exc.start]:02x} is not UTF-8; the file is skipped",
            "save the file as UTF-8",
        )
    if nul != -1:
        line = text.count("\n", 0, nul) + 1
        return Warning(
            line,
            nul - text.rfind("\n", 0, nul),
            "LD710",
            "a NUL byte: this is not a text file; skipped",
            "leave binary files out of code:",
        )
    return None
