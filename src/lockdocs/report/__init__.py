"""Diagnostics -> text, JSON, GitHub workflow commands or SARIF 2.1.0 (report/sarif.py).

`FORMATS` is the one table of the output formats of `check` and `validate`: each format's
reporter and how the commands treat it (its summary line, colour, the paths it names). The
`--format` choices of the CLI, its fast route (`entry.py`) and every decision of the commands
are read from it. A reporter takes the sorted list, the summary line, a `Where` (how file
paths start and where rule links point) and extra top-level keys that a format may print (JSON:
the coverage of the scanned SQL), and returns the whole output. Text keeps the project-relative
paths a person reads; the others use paths relative to the repository, which is what CI places
on files.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from lockdocs.diagnostics import Diagnostic, Related, Severity, printable
from lockdocs.records import record
from lockdocs.report.where import Where

HERE = Where()


class Reporter(Protocol):
    def __call__(
        self,
        diags: list[Diagnostic],
        summary: str,
        where: Where = HERE,
        extra: dict[str, Any] | None = None,
    ) -> str: ...


def _text(
    diags: list[Diagnostic],
    summary: str,
    where: Where = HERE,
    extra: dict[str, Any] | None = None,
) -> str:
    """One line per finding, its details and hint indented; user strings go through
    `printable`, so no escape sequence or newline in a declaration reaches the terminal."""
    p = printable
    lines: list[str] = []
    for d in diags:
        tag = f"{d.severity.value} (waived: {p(d.waived_by)})" if d.waived_by else d.severity.value
        lines.append(f"{p(str(d.location))}: {d.code} {tag}: {p(d.message)}")
        lines.extend(f"    {p(x)}" if x else "" for x in d.details)
        if d.hint:
            lines.append(f"  hint: {p(d.hint)}")
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")


def _related_json(r: Related, where: Where) -> dict[str, Any]:
    loc = r.location
    return {
        "file": where.path(loc.file),
        "line": loc.line,
        "column": loc.column,
        "message": r.message,
    }


def diagnostic_json(d: Diagnostic, where: Where = HERE) -> dict[str, Any]:
    """One diagnostic as the JSON reporter (and diff's JSON) writes it."""
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "file": where.path(d.location.file),
        "line": d.location.line,
        "column": d.location.column,
        "hint": d.hint,
        "details": list(d.details),
        "waived_by": d.waived_by or None,
        "paths": list(d.paths),
        "locks": list(d.locks),
        "rule": d.rule_id or None,
        "related": [_related_json(r, where) for r in d.related],
        "help": where.rule_url(d.code),
    }


def _json(
    diags: list[Diagnostic],
    summary: str,
    where: Where = HERE,
    extra: dict[str, Any] | None = None,
) -> str:
    """`extra` adds top-level keys (check adds the coverage of the scanned SQL)."""
    drift = []
    for d in diags:
        data = d.extra.get("drift")
        if isinstance(data, dict):
            drift.append({**data, "file": where.path(str(data["file"]))})
    return (
        json.dumps(
            {
                "diagnostics": [diagnostic_json(d, where) for d in diags],
                # The generated files `lockdocs build` would change, with the sections each
                # change touches (and, with --diff, the unified diff).
                "drift": {"files": drift, "fix": "lockdocs build" if drift else None},
                "summary": summary,
                **(extra or {}),
            },
            indent=2,
            sort_keys=True,
            ensure_ascii=False,
        )
        + "\n"
    )


def _gh_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _github(
    diags: list[Diagnostic],
    summary: str,
    where: Where = HERE,
    extra: dict[str, Any] | None = None,
) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diags:
        if d.waived_by:
            continue
        props = [f"file={_gh_escape_prop(printable(where.path(d.location.file)))}"]
        if d.location.line:
            props.append(f"line={d.location.line}")
            props.append(f"col={d.location.column or 1}")
        props.append(f"title={_gh_escape_prop(d.code)}")
        body = printable(d.message) + (
            "\n" + "\n".join(map(printable, d.details)) if d.details else ""
        )
        if d.hint:
            body += "\nhint: " + printable(d.hint)
        lines.append(f"::{level[d.severity]} {','.join(props)}::{_gh_escape_data(body)}")
    if summary:
        lines.append(summary)
    return "\n".join(lines) + "\n"


def _sarif(
    diags: list[Diagnostic],
    summary: str,
    where: Where = HERE,
    extra: dict[str, Any] | None = None,
) -> str:
    from lockdocs.report.sarif import sarif

    return sarif(diags, where)


@record
class OutputFormat:
    """One `--format` of check and validate."""

    reporter: Reporter
    # check prints its summary line (the counts of findings, the drift) in this format
    summary: bool
    # written for a person at a terminal: colours, paths from the project's folder, and
    # validate's line with the counts of locks, paths and files (the others: "ok")
    terminal: bool


FORMATS: dict[str, OutputFormat] = {
    "text": OutputFormat(_text, summary=True, terminal=True),
    "json": OutputFormat(_json, summary=True, terminal=False),
    "github": OutputFormat(_github, summary=False, terminal=False),
    "sarif": OutputFormat(_sarif, summary=False, terminal=False),
}

REPORTERS: dict[str, Reporter] = {name: f.reporter for name, f in FORMATS.items()}
