"""`lockdocs explain`: read a log, explain each case, and write text, JSON or Markdown.

The log is read in one pass (`serverlog.LogReader`); only its lock reports are kept. What the
reader could not read is listed with its line, and makes the run unclean: a deadlock there
would otherwise pass unseen.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, printable
from lockdocs.postgres.cases import Case, group
from lockdocs.postgres.explain import Explainer
from lockdocs.postgres.serverlog import Entry, Problem, entries, is_lock_report
from lockdocs.render.escape import code
from lockdocs.rules.context import CheckContext


@dataclass
class Explained:
    """The cases of a log, and what of it could not be read."""

    cases: list[Case]
    problems: list[Problem] = field(default_factory=list)
    dropped: int = 0  # problems beyond those listed

    @property
    def clean(self) -> bool:
        return not self.problems and all(c.verdict in ("reported", "timeout") for c in self.cases)

    def __iter__(self) -> Any:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)


def explain(
    model: m.Model,
    diagnostics: list[Diagnostic],
    log: str | Iterable[Entry],
    log_format: str = "auto",
    show_literals: bool = False,
) -> Explained:
    """Every lock report of `log` (a text, or the entries of a streaming reader), explained
    and grouped."""
    explainer = Explainer(model, diagnostics, CheckContext(model).all_events)
    found = entries(log, log_format) if isinstance(log, str) else log
    cases = [explainer.case(e, show_literals) for e in found if is_lock_report(e)]
    return Explained(group(cases))


def _times(c: Case) -> str:
    n = len(c.lines)
    where = ", ".join(str(x) for x in c.lines[:10]) + (", ..." if n > 10 else "")
    return f"{n} time{'s' if n != 1 else ''} (line{'s' if n != 1 else ''} {where})"


def _lock(ref_locks: tuple[str, ...]) -> str:
    return " or ".join(ref_locks) if ref_locks else "an undeclared lock"


def text(result: Explained, source: str) -> str:
    cases = result.cases
    lines: list[str] = []
    for c in cases:
        lines.append(f"{source}: {c.kind} ({c.sqlstate}), {_times(c)}")
        for p in c.processes:
            held = f", holding {_lock(p.holds.locks)}" if p.holds else ""
            mode = f" ({p.wants.mode})" if p.wants.mode else ""
            lines.append(f"  {p.name} waits for {_lock(p.wants.locks)}{mode}{held}")
            lines.append(f"     Postgres: {p.wants.postgres}")
            lines.append(f"     decoded from {p.wants.how}")
            if p.masked:
                lines.append(f"     statement: {p.masked}")
            if p.takers:
                lines.append("     declared takes: " + "; ".join(_taker(t) for t in p.takers))
            else:
                lines.append("     declared takes: none")
            if p.declared_takers:
                lines.append("     taken by: " + "; ".join(p.declared_takers))
        lines.extend(f"  => {s}" for s in c.says)
        lines.append("")
    lines.extend(_unread(result))
    verdicts: dict[str, int] = {}
    for c in cases:
        verdicts[c.verdict] = verdicts.get(c.verdict, 0) + len(c.lines)
    summary = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    unread = len(result.problems) + result.dropped
    lines.append(
        f"{sum(len(c.lines) for c in cases)} lock errors in {len(cases)} kinds"
        + (f": {summary}" if summary else "")
        + (f"; {unread} part{'s' if unread != 1 else ''} of the log not read" if unread else "")
    )
    # Statements and names come from the log: a terminal shows their control characters
    # as escapes, never as commands.
    return "\n".join(printable(line) for line in lines) + "\n"


def _unread(result: Explained) -> list[str]:
    out = [f"{p.source}:{p.line}: not read: {p.message}" for p in result.problems]
    if result.dropped:
        out.append(f"... and {result.dropped} more parts not read")
    if out:
        out.append("")
    return out


def _taker(t: Any) -> str:
    via = f" via {', '.join(t.via)}" if t.via else ""
    return f"{t.path} at {t.location}{via}"


def markdown(result: Explained, source: str) -> str:
    cases = result.cases
    lines = [f"## Lock errors in {code(source)}", ""]
    if not cases:
        lines.append("No deadlock or lock timeout in this log.")
    for c in cases:
        lines += [f"### {c.kind.capitalize()} ({c.sqlstate}), {_times(c)}", ""]
        lines += [
            "| process | waits for | holding | statement | declared takes |",
            "| --- | --- | --- | --- | --- |",
        ]
        for p in c.processes:
            cells = [
                p.name,
                f"{_lock(p.wants.locks)}" + (f" ({p.wants.mode})" if p.wants.mode else ""),
                _lock(p.holds.locks) if p.holds else "",
                code(" ".join(p.masked.split())) if p.masked else "",
                "<br>".join(_taker(t) for t in p.takers) or "none",
            ]
            lines.append("| " + " | ".join(printable(x).replace("|", "\\|") for x in cells) + " |")
        lines.append("")
        lines.extend(f"- {printable(s)}" for s in c.says)
        lines.append("")
    lines.extend(f"- not read: {printable(x)}" for x in _unread(result) if x)
    return "\n".join(lines).rstrip() + "\n"


def as_json(result: Explained, source: str) -> str:
    cases = result.cases
    doc = {
        "source": source,
        "unread": [{"file": p.source, "line": p.line, "why": p.message} for p in result.problems],
        "unread_more": result.dropped,
        "cases": [
            {
                "kind": c.kind,
                "sqlstate": c.sqlstate,
                "count": len(c.lines),
                "lines": c.lines,
                "verdict": c.verdict,
                "says": c.says,
                "findings": c.findings,
                "hint": c.hint or None,
                "context": c.context or None,
                "processes": [
                    {
                        "name": p.name,
                        "wants": {
                            "locks": list(p.wants.locks),
                            "mode": p.wants.mode,
                            "postgres": p.wants.postgres,
                            "decoded_from": p.wants.how,
                        },
                        "holds": list(p.holds.locks) if p.holds else None,
                        "statement": p.masked,
                        "takers": [
                            {"path": t.path, "location": t.location, "via": list(t.via)}
                            for t in p.takers
                        ],
                        "taken_by": list(p.declared_takers),
                    }
                    for p in c.processes
                ],
            }
            for c in cases
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


FORMATTERS = {"text": text, "json": as_json, "markdown": markdown}
