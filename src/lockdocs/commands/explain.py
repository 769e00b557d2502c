"""`lockdocs explain`: a server log's deadlocks and lock timeouts decoded back to declared
locks, paths and findings. Loaded only by this command."""

from __future__ import annotations

import sys
from pathlib import Path

from lockdocs.api import check as run_check
from lockdocs.commands import ExplainFormat, Format, LogFormat
from lockdocs.commands.common import NoRoot, emit, fail, resolve_root
from lockdocs.postgres.explain_output import FORMATTERS
from lockdocs.postgres.explain_output import explain as run_explain


def explain(
    root: Path | None,
    logfile: str,
    fmt: ExplainFormat,
    log_format: LogFormat = LogFormat.auto,
    show_literals: bool = False,
) -> int:
    """Explain a server log's lock errors: 0 when each is a reported finding or a timeout on a
    declared lock, 1 when one shows the declarations miss a lock, a path or a step (or the
    analysis a cycle), 2 for bad input."""
    try:
        base = resolve_root(root)
    except NoRoot:
        return 2
    if logfile == "-":
        text, source = sys.stdin.read(), "<stdin>"
    else:
        try:
            raw = Path(logfile).read_bytes()
        except OSError as exc:
            return fail(f"cannot read {logfile}: {exc.strerror or exc}")
        text, source = raw.decode("utf-8", errors="replace"), logfile
    result = run_check(base, drift=False)
    if result.bad_input or result.model is None:
        emit(result.diagnostics, Format.text, "the declarations are not valid")
        return 2
    cases = run_explain(result.model, result.diagnostics, text, log_format.value, show_literals)
    sys.stdout.write(FORMATTERS[fmt.value](cases, source))
    return 0 if all(c.verdict in ("reported", "timeout") for c in cases) else 1
