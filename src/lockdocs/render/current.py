"""Whether the committed docs are what a build from this run's inputs writes, known without
rendering them: nothing stops a build from writing there (a docs folder that cannot take it,
an interrupted build), and the manifest's seal holds (`manifest.vouch`), or a seal this machine
found true by rendering does (`checkcache.seals`). A check asks this first and loads the
renderer and the comparison (`drift.py`) only when the answer is not yes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lockdocs import checkcache
from lockdocs.diagnostics import Diagnostic
from lockdocs.render.journal import interrupted
from lockdocs.render.manifest import run_inputs, vouch
from lockdocs.render.targets import docs_problem


def docs_current(
    root: Path,
    files: Iterable[str],
    findings: Iterable[Diagnostic],
    coverage: dict[str, Any] | None,
    *,
    svg: bool = True,
) -> bool:
    """True when the docs are current; False means "render and compare", never "drift"."""
    if docs_problem(root) is not None or interrupted(root):
        return False
    digest = run_inputs(root, files, findings, coverage)
    return vouch(root, digest, svg=svg, local=checkcache.seals(root))
