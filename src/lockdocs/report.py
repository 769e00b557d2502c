"""Diagnostics -> text, JSON, GitHub workflow commands or SARIF 2.1.0.

Reporters are a name -> function table; each takes the sorted list and returns the whole output.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lockdocs.diagnostics import Diagnostic, Severity


def _text(diags: list[Diagnostic], summary: str) -> str:
    lines: list[str] = []
    for d in diags:
        tag = f"{d.severity.value} (waived: {d.waived_by})" if d.waived_by else d.severity.value
        lines.append(f"{d.location}: {d.code} {tag}: {d.message}")
        lines.extend(f"    {x}" if x else "" for x in d.details)
        if d.hint:
            lines.append(f"  hint: {d.hint}")
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")


def diagnostic_json(d: Diagnostic) -> dict[str, Any]:
    """One diagnostic as the JSON reporter (and diff's JSON) writes it."""
    return {
        "code": d.code,
        "severity": d.severity.value,
        "message": d.message,
        "file": d.location.file,
        "line": d.location.line,
        "column": d.location.column,
        "hint": d.hint,
        "details": list(d.details),
        "waived_by": d.waived_by or None,
        "paths": list(d.paths),
        "locks": list(d.locks),
        "rule": d.rule_id or None,
    }


def _json(diags: list[Diagnostic], summary: str) -> str:
    drift = [d.extra["drift"] for d in diags if isinstance(d.extra.get("drift"), dict)]
    return (
        json.dumps(
            {
                "diagnostics": [diagnostic_json(d) for d in diags],
                # The generated files `lockdocs build` would change, with the sections each
                # change touches (and, with --diff, the unified diff).
                "drift": {"files": drift, "fix": "lockdocs build" if drift else None},
                "summary": summary,
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


def _github(diags: list[Diagnostic], summary: str) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
    lines = []
    for d in diags:
        if d.waived_by:
            continue
        props = [f"file={_gh_escape_prop(d.location.file)}"]
        if d.location.line:
            props.append(f"line={d.location.line}")
            props.append(f"col={d.location.column or 1}")
        props.append(f"title={_gh_escape_prop(d.code)}")
        body = d.message + ("\n" + "\n".join(d.details) if d.details else "")
        if d.hint:
            body += "\nhint: " + d.hint
        lines.append(f"::{level[d.severity]} {','.join(props)}::{_gh_escape_data(body)}")
    if summary:
        lines.append(summary)
    return "\n".join(lines) + "\n"


def _sarif(diags: list[Diagnostic], summary: str) -> str:
    from lockdocs import __version__
    from lockdocs.rules.registry import load_all

    registry = load_all()
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    rules = [
        {
            "id": info.code,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "fullDescription": {"text": info.what},
            "help": {"text": info.why},
            "defaultConfiguration": {"level": level[info.severity]},
        }
        for info in registry.values()
    ]
    index = {code: i for i, code in enumerate(registry)}
    results = []
    for d in diags:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "level": level[d.severity],
            "message": {"text": d.message + (f" (hint: {d.hint})" if d.hint else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": d.location.file},
                        "region": {
                            "startLine": max(d.location.line, 1),
                            "startColumn": max(d.location.column, 1),
                        },
                    }
                }
            ],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.waived_by:
            result["suppressions"] = [{"kind": "inSource", "justification": d.waived_by}]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lockdocs",
                        "version": __version__,
                        "informationUri": "https://lockdocs.invalid/",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


REPORTERS: dict[str, Callable[[list[Diagnostic], str], str]] = {
    "text": _text,
    "json": _json,
    "github": _github,
    "sarif": _sarif,
}
