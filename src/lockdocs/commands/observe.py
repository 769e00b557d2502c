"""`lockdocs observe LOG...`: the transactions a server log shows, checked against the
declarations (and with --propose, drafted as declarations). Loaded only by this command."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lockdocs.api import check as run_check
from lockdocs.commands import Format, LogFormat
from lockdocs.commands.common import NoRoot, emit, fail, resolve_root, summary
from lockdocs.diagnostics import printable
from lockdocs.observe import orders, run
from lockdocs.observe.run import Observed, Observer
from lockdocs.postgres.serverlog import LogError, LogFile, LogReader
from lockdocs.project.root import RootNotFound, find_root
from lockdocs.report import FORMATS
from lockdocs.scan.run import scan_model


def observe(
    logs: list[str],
    root: Path | None,
    fmt: Format,
    log_format: LogFormat = LogFormat.auto,
    log_line_prefix: str | None = None,
    propose: Path | None = None,
) -> int:
    """0 clean, 1 a blocking finding or a part of a log not read, 2 bad input."""
    if not logs:
        return fail("name a server log (or - for stdin)")
    if logs.count("-") > 1:
        return fail("stdin (-) can be read once")
    base = _root(root, propose)
    if base is NoRoot:
        return 2
    model = diagnostics = scan = None
    if isinstance(base, Path):
        result = run_check(base, drift=False)
        if result.bad_input or result.model is None:
            emit(result.diagnostics, "text", "the declarations are not valid")
            return 2
        model, diagnostics = result.model, result.diagnostics
        scan = scan_model(model) if model.code else None
    reader = LogReader([LogFile(x) for x in logs], log_format.value, log_line_prefix)
    observer = Observer(model, diagnostics or [], scan, propose=propose is not None)
    try:
        observer.feed(reader.entries())
    except LogError as exc:
        return fail(printable(str(exc)))
    stats = observer.rebuilder
    if not stats.statements:
        if stats.anonymous:
            return fail(
                "the log's lines carry no process id, so its sessions cannot be told apart",
                "put %p in log_line_prefix (and %l), or pass --log-line-prefix as "
                "postgresql.conf has it",
            )
        return fail(
            f"no statement is logged in {printable(', '.join(logs))}",
            "run the application with log_statement = 'all' (docs/observe.md says how)",
        )
    observed = observer.finish(base if isinstance(base, Path) else None)
    unread = reader.problems
    _report(observed, fmt, base if isinstance(base, Path) else None, model, reader, logs)
    if propose is not None and observed.proposer is not None:
        written = observed.proposer.write(propose, base if isinstance(base, Path) else None)
        sys.stderr.write(
            "lockdocs: drafted "
            + ", ".join(printable(str(propose / w)) for w in written)
            + ": review them before you commit them\n"
        )
    blocking = any(d.blocking for d in observed.diagnostics)
    return 1 if blocking or unread or reader.dropped else 0


def _root(root: Path | None, propose: Path | None) -> Path | type[NoRoot] | None:
    """The project; with --propose and no project, None (everything is drafted)."""
    if propose is not None and root is None:
        try:
            return find_root(Path.cwd())
        except RootNotFound:
            return None
    try:
        return resolve_root(root)
    except NoRoot:
        return NoRoot


def _report(
    result: Observed,
    fmt: Format,
    root: Path | None,
    model: Any,
    reader: LogReader,
    logs: list[str],
) -> None:
    stats = result.stats
    unread = [{"file": p.source, "line": p.line, "why": p.message} for p in reader.problems]
    head = (
        f"{stats['transactions']} transactions, {stats['statements']} statements in "
        f"{stats['sessions']} sessions"
    )
    spec = FORMATS[fmt]
    if not spec.terminal:
        extra: dict[str, Any] = {
            "observed": {**stats, "logs": logs, "unread": unread, "unread_more": reader.dropped},
        }
        if result.coverage is not None:
            extra["coverage"] = result.coverage.to_json()
        rules_url = model.rules_url if model is not None else None
        said = summary(result.diagnostics) if spec.summary else ""
        emit(result.diagnostics, fmt, said, root, rules_url, extra)
        return
    lines = []
    for p in reader.problems:
        lines.append(f"{p.source}:{p.line}: not read: {p.message}")
    if reader.dropped:
        lines.append(f"... and {reader.dropped} more parts not read")
    paths = stats["paths"]
    named = sum(paths.get(k, 0) for k in ("tag", "mapping", "application_name"))
    matched = sum(paths.get(k, 0) for k in ("exact", "likely"))
    lines.append(
        f"observed: {head}; paths: {named} named, {matched} matched, "
        f"{paths.get('partial', 0)} partly, {paths.get('ambiguous', 0)} ambiguous"
    )
    dropped, unchecked = stats["sequences not searched"], stats["advisory keys not compared"]
    if dropped:
        lines.append(
            f"not searched for deadlocks: {dropped} transaction{'s' if dropped != 1 else ''} "
            f"whose lock sequence was none of the first {orders.MAX_SEQUENCES} distinct ones"
        )
    if unchecked:
        lines.append(
            f"not compared for LD806: {unchecked} advisory key{'s' if unchecked != 1 else ''} "
            f"past the first {run.MAX_KEYS:,} distinct ones"
        )
    if result.coverage is not None:
        lines += result.coverage.text()
    # what the log showed, then the summary line last, as check prints it
    lines.append(summary(result.diagnostics))
    emit(result.diagnostics, fmt, "\n".join(printable(x) for x in lines), root)
