"""`lockdocs build`: write the lock page, its DOT diagrams and their SVGs under docs/, all or
nothing (the pipeline's `api.build`)."""

from __future__ import annotations

from pathlib import Path

from lockdocs.api import build as run_build
from lockdocs.commands.common import NoRoot, bounded_heap, resolve_root


def build(root: Path | None, *, svg: bool, dot_timeout: float | None) -> int:
    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    bounded_heap()
    return run_build(base, svg=svg, dot_timeout=dot_timeout)
