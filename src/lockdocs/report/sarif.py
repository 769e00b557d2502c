"""Diagnostics -> SARIF 2.1.0, as GitHub code scanning reads it.

Every location's URI is the file relative to the repository top (see `where.py`), percent-
encoded (a space in a file name is `%20`, or the document fails the schema's uri-reference
format). Message texts show what a declaration wrote as a terminal does (`printable`), square
brackets escaped so no embedded link is made. A cycle's other hops are `relatedLocations`, and its interleaving is one `codeFlow`
with a `threadFlow` per transaction. Each rule links to its section of the rules page when the
project sets `rules_url`; the driver names no `informationUri`, because lockdocs has no site
of its own to point at. tests/test_sarif.py validates the output against the official schema.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from lockdocs import __version__
from lockdocs.diagnostics import Diagnostic, Location, Related, Severity, printable
from lockdocs.report.where import Where
from lockdocs.rules.catalog import load_all

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def text(s: str) -> str:
    """A declaration's text in a SARIF plain-text message: controls, bidi and invisible
    characters shown as escapes (as on a terminal), and square brackets escaped, so a title
    cannot make an embedded link (`[text](uri)`, SARIF 2.1.0 section 3.11.6) in the alert."""
    return printable(s).replace("[", "\\[").replace("]", "\\]")


def uri(where: Where, file: str) -> str:
    """A repository-relative file as a relative URI reference."""
    return quote(where.path(file), safe="/")


def _physical(where: Where, loc: Location) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactLocation": {"uri": uri(where, loc.file)}}
    if loc.line:  # a finding about a whole file (a missing page) has no region
        out["region"] = {"startLine": loc.line, "startColumn": max(loc.column, 1)}
    return out


def _location(where: Where, loc: Location, message: str = "", ident: int | None = None) -> Any:
    out: dict[str, Any] = {"physicalLocation": _physical(where, loc)}
    if message:
        out["message"] = {"text": text(message)}
    if ident is not None:
        out["id"] = ident
    return out


def _thread(where: Where, index: int, steps: tuple[Related, ...]) -> dict[str, Any]:
    return {
        "id": f"T{index + 1}",
        "locations": [
            {"location": _location(where, s.location, s.message), "executionOrder": n}
            for n, s in enumerate(steps, start=1)
        ],
    }


def _result(d: Diagnostic, where: Where, index: dict[str, int]) -> dict[str, Any]:
    body = text(d.message) + (f"\nhint: {text(d.hint)}" if d.hint else "")
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": _LEVEL[d.severity],
        "message": {"text": body},
        "locations": [_location(where, d.location)],
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.related:
        result["relatedLocations"] = [
            _location(where, r.location, r.message, n) for n, r in enumerate(d.related, start=1)
        ]
    if d.threads:
        result["codeFlows"] = [
            {
                "message": {"text": "One interleaving that ends in the deadlock"},
                "threadFlows": [_thread(where, i, t) for i, t in enumerate(d.threads)],
            }
        ]
    if d.waived_by:
        result["suppressions"] = [{"kind": "inSource", "justification": text(d.waived_by)}]
    return result


def _rule(info: Any, where: Where) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": info.what},
        "help": {"text": info.why},
        "defaultConfiguration": {"level": _LEVEL[info.severity]},
    }
    link = where.rule_url(info.code)
    if link:
        rule["helpUri"] = link
    return rule


def sarif(diags: list[Diagnostic], where: Where) -> str:
    registry = load_all()
    index = {code: i for i, code in enumerate(registry)}
    doc = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "lockdocs",
                        "version": __version__,
                        "rules": [_rule(info, where) for info in registry.values()],
                    }
                },
                "results": [_result(d, where, index) for d in diags],
            }
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
