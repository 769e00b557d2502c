"""`lockdocs validate` and `lockdocs check`: the hot commands, which a pre-commit hook runs;
`entry.py` calls them without the CLI framework.

A check first asks the result cache (`checkcache`) and the manifest (`render.manifest`): when
every input is as the last check read it and the manifest vouches for the docs, it prints that
check's findings and loads none of the pipeline (no YAML, no analysis, no scan, no renderer).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lockdocs import checkcache
from lockdocs.commands.common import (
    NoRoot,
    bounded_heap,
    emit,
    load_project,
    resolve_root,
    summary,
)
from lockdocs.diagnostics import Diagnostic, printable, sort_diagnostics
from lockdocs.records import replace
from lockdocs.report import FORMATS


def validate(root: Path | None, fmt: str) -> int:
    loaded = load_project(root)
    if loaded is None:
        return 2
    base, model, diags = loaded
    if model is None:
        emit(diags, fmt, "the declarations are not valid", base)
        return 2
    emit(
        diags,
        fmt,
        f"ok: {len(model.locks)} locks, {len(model.paths)} paths in {len(model.files)} files"
        if FORMATS[fmt].terminal
        else "ok",
        base,
        model.rules_url,
    )
    return 0


def check(
    root: Path | None, fmt: str, drift: bool, *, show_diff: bool = False, svg: bool = True
) -> int:
    """`lockdocs check`: findings and drift (one finding per generated file that differs).

    `show_diff` prints the unified diff of each drifted file (to stdout in text, else to
    stderr, so stdout stays valid for the format) and keeps it in the JSON.
    """
    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    recalled = _recall(base, drift=drift, svg=svg)
    if recalled is not None:
        diags, bad_input, rules_url, coverage = recalled
        code = 2 if bad_input else 1 if any(d.blocking for d in diags) else 0
    else:
        # The lazy boundary of the pipeline: only a check the cache cannot answer loads it.
        from lockdocs.api import check as run_check

        bounded_heap()
        result = run_check(base, drift=drift, svg=svg)
        diags, bad_input, code = result.diagnostics, result.bad_input, result.exit_code
        rules_url = result.model.rules_url if result.model is not None else None
        coverage = result.coverage.to_json() if result.coverage is not None else None
        if result.drift:
            if show_diff:
                out = sys.stdout if FORMATS[fmt].terminal else sys.stderr
                out.write("".join(_shown_diff(_diff_of(d)) for d in result.drift))
            else:
                diags = [_without_diff(d) for d in diags]
    text = "the declarations are not valid" if bad_input else summary(diags)
    extra = {"coverage": coverage} if coverage is not None else None
    emit(diags, fmt, text if FORMATS[fmt].summary else "", base, rules_url, extra)
    return code


def _recall(
    base: Path, *, drift: bool, svg: bool
) -> tuple[list[Diagnostic], bool, str | None, dict[str, Any] | None] | None:
    """(findings, bad input, rules_url, coverage) when the last check's findings still hold
    and, with `drift`, the manifest vouches for the docs; None when a full check must run
    (it also reports a refused docs folder or an interrupted build, and any drift)."""
    found = checkcache.recall(base)
    if found is None:
        return None
    if found.bad_input:
        return found.diagnostics, True, found.rules_url, found.coverage
    if drift:
        if found.output_problems:
            diags = sort_diagnostics(found.diagnostics + found.output_problems)
            return diags, True, found.rules_url, found.coverage
        # The lazy boundary of the manifest's check (not the renderer): validate needs none.
        from lockdocs.render.current import docs_current

        if not docs_current(base, found.files, found.diagnostics, found.coverage, svg=svg):
            return None
    return found.diagnostics, False, found.rules_url, found.coverage


def _shown_diff(diff: str) -> str:
    """A unified diff for the terminal: each line's control characters escaped."""
    return "\n".join(printable(line) for line in diff.split("\n"))


def _diff_of(d: Diagnostic) -> str:
    data = d.extra.get("drift")
    return str(data.get("diff", "")) if isinstance(data, dict) else ""


def _without_diff(d: Diagnostic) -> Diagnostic:
    data = d.extra.get("drift")
    if not isinstance(data, dict) or "diff" not in data:
        return d
    return replace(d, extra={**d.extra, "drift": {k: v for k, v in data.items() if k != "diff"}})
