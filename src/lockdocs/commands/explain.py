"""`lockdocs explain`: a server log's deadlocks and lock timeouts decoded back to declared
locks, paths and findings. Loaded only by this command."""

from __future__ import annotations

import sys
from pathlib import Path

from lockdocs.api import check as run_check
from lockdocs.commands import ExplainFormat, LogFormat
from lockdocs.commands.common import NoRoot, emit, fail, resolve_root
from lockdocs.diagnostics import printable
from lockdocs.postgres.explain_output import FORMATTERS
from lockdocs.postgres.explain_output import explain as run_explain
from lockdocs.postgres.serverlog import LogError, LogFile, LogReader


def explain(
    root: Path | None,
    logfile: str,
    fmt: ExplainFormat,
    log_format: LogFormat = LogFormat.auto,
    show_literals: bool = False,
    log_line_prefix: str | None = None,
) -> int:
    """Explain a server log's lock errors: 0 when each is a reported finding or a timeout on a
    declared lock, 1 when one shows the declarations miss a lock, a path or a step (or the
    analysis a cycle), or a part of the log could not be read; 2 for bad input."""
    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    log = LogFile(logfile)
    result = run_check(base, drift=False)
    if result.bad_input or result.model is None:
        emit(result.diagnostics, "text", "the declarations are not valid")
        return 2
    reader = LogReader([log], log_format.value, log_line_prefix)
    try:
        explained = run_explain(
            result.model, result.diagnostics, reader.entries(), show_literals=show_literals
        )
    except LogError as exc:
        return fail(printable(str(exc)))
    explained.problems, explained.dropped = reader.problems, reader.dropped
    sys.stdout.write(FORMATTERS[fmt.value](explained, printable(log.shown)))
    return 0 if explained.clean else 1
