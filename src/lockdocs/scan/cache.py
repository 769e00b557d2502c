"""The scan cache: one file's scan, by the sha256 of its bytes (and of this scanner).

It lives beside the clean-check record, in the cache folder `check` already uses
(XDG_CACHE_HOME or ~/.cache, then lockdocs/), one index per project; LOCKDOCS_CACHE=off turns
it off. Nothing is written into the project. A damaged index is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

# Bump when what a FileScan holds changes: old entries then simply stop matching.
SCANNER = "lockdocs-scan-2"


def _folder() -> Path | None:
    if os.environ.get("LOCKDOCS_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lockdocs"


@functools.cache
def _scanner_digest() -> str:
    """The scanner's own code and the parser's version: a changed scanner never reads an old
    entry."""

    h = hashlib.sha256(SCANNER.encode())
    spec = importlib.util.find_spec("pglast")  # its __init__ holds its version; not imported
    files = sorted(Path(__file__).parent.glob("*.py"))
    if spec is not None and spec.origin:
        files.append(Path(spec.origin))
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


def content_key(kind: str, data: bytes) -> str:
    h = hashlib.sha256(f"{_scanner_digest()}\0{kind}\0".encode())
    h.update(data)
    return h.hexdigest()


class Cache:
    def __init__(self, root: Path) -> None:
        folder = _folder()
        key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32]
        self.file = folder / f"scan-{key}.json" if folder else None
        self.entries: dict[str, Any] = {}
        self.used: set[str] = set()
        self.added = False
        if self.file is not None:
            with contextlib.suppress(OSError, ValueError, RecursionError):
                loaded = json.loads(self.file.read_text(encoding="utf-8"))
                if isinstance(loaded, dict):
                    self.entries = loaded

    def get(self, key: str) -> Any | None:
        found = self.entries.get(key)
        if found is not None:
            self.used.add(key)
        return found

    def put(self, key: str, value: Any) -> None:
        self.entries[key] = value
        self.used.add(key)
        self.added = True

    def save(self, *, complete: bool) -> None:
        """Write the index (best effort). After a scan of the whole project only the entries it
        used are kept, so the index never grows past the project's files."""
        if self.file is None:
            return
        stale = complete and set(self.entries) != self.used
        if not self.added and not stale:
            return
        keep = (
            {k: v for k, v in self.entries.items() if k in self.used} if complete else self.entries
        )
        with contextlib.suppress(OSError):
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(keep, sort_keys=True), encoding="utf-8")
            tmp.replace(self.file)
