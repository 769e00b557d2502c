"""`lockdocs validate` and `lockdocs check`: the hot commands, which a pre-commit hook runs;
`entry.py` calls them without the CLI framework."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from lockdocs.api import check as run_check
from lockdocs.commands.common import NoRoot, emit, load_project, resolve_root, summary
from lockdocs.diagnostics import Diagnostic, printable
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
    result = run_check(base, drift=drift, svg=svg)
    diags = result.diagnostics
    if result.drift:
        if show_diff:
            out = sys.stdout if FORMATS[fmt].terminal else sys.stderr
            out.write("".join(_shown_diff(_diff_of(d)) for d in result.drift))
        else:
            diags = [_without_diff(d) for d in diags]
    text = "the declarations are not valid" if result.bad_input else summary(diags)
    rules_url = result.model.rules_url if result.model is not None else None
    extra = {"coverage": result.coverage.to_json()} if result.coverage is not None else None
    emit(diags, fmt, text if FORMATS[fmt].summary else "", base, rules_url, extra)
    return result.exit_code


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
