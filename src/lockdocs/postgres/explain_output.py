"""`lockdocs explain`: read a log, explain each case, and write text, JSON or Markdown."""

from __future__ import annotations

import json
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.postgres.cases import Case, group
from lockdocs.postgres.explain import Explainer
from lockdocs.postgres.serverlog import entries, lock_reports
from lockdocs.render.escape import code
from lockdocs.rules.context import Context


def explain(
    model: m.Model,
    diagnostics: list[Diagnostic],
    text: str,
    log_format: str = "auto",
    show_literals: bool = False,
) -> list[Case]:
    explainer = Explainer(model, diagnostics, Context(model).all_events)
    cases = [explainer.case(e, show_literals) for e in lock_reports(entries(text, log_format))]
    return group(cases)


def _times(c: Case) -> str:
    n = len(c.lines)
    where = ", ".join(str(x) for x in c.lines[:10]) + (", ..." if n > 10 else "")
    return f"{n} time{'s' if n != 1 else ''} (line{'s' if n != 1 else ''} {where})"


def _lock(ref_locks: tuple[str, ...]) -> str:
    return " or ".join(ref_locks) if ref_locks else "an undeclared lock"


def text(cases: list[Case], source: str) -> str:
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
                lines.append(f"     statement: {p.masked}".replace("\n", "\n       "))
            if p.takers:
                lines.append("     declared takes: " + "; ".join(_taker(t) for t in p.takers))
            else:
                lines.append("     declared takes: none")
            if p.declared_takers:
                lines.append("     taken by: " + "; ".join(p.declared_takers))
        lines.extend(f"  => {s}" for s in c.says)
        lines.append("")
    verdicts: dict[str, int] = {}
    for c in cases:
        verdicts[c.verdict] = verdicts.get(c.verdict, 0) + len(c.lines)
    summary = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    lines.append(
        f"{sum(len(c.lines) for c in cases)} lock errors in {len(cases)} kinds"
        + (f": {summary}" if summary else "")
    )
    return "\n".join(lines) + "\n"


def _taker(t: Any) -> str:
    via = f" via {', '.join(t.via)}" if t.via else ""
    return f"{t.path} at {t.location}{via}"


def markdown(cases: list[Case], source: str) -> str:
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
            lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
        lines.append("")
        lines.extend(f"- {s}" for s in c.says)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def as_json(cases: list[Case], source: str) -> str:
    doc = {
        "source": source,
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
