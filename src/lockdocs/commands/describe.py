"""What lockdocs prints about a project or itself: `export` (the resolved model as JSON),
`schema` (the JSON Schema of the files) and `rules` (every check). Loaded only by these
commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from lockdocs.commands import ExportFormat
from lockdocs.commands.common import load_project
from lockdocs.export import TooLarge, export_json
from lockdocs.report import REPORTERS
from lockdocs.rules.catalog import load_all, option_schemas
from lockdocs.schema.definition import locks_schema, paths_schema


def export(root: Path | None, fmt: ExportFormat) -> int:
    """The resolved model (locks, transactions, paths with acquisitions, rules, exceptions)."""
    loaded = load_project(root)
    if loaded is None:
        return 2
    _, model, diags = loaded
    if model is None:
        sys.stderr.write(REPORTERS["text"](diags, "the declarations are not valid"))
        return 2
    try:
        text = export_json(model)
    except TooLarge as big:
        loc = big.path.location
        sys.stderr.write(
            f"{loc.file}:{loc.line}:{loc.column}: path '{big.path.id}' cannot be exported: "
            f"{big.why}\n"
            "  hint: split the path (fewer run: steps nested, fewer loops and branches inlined), "
            "or raise limits.path_work and limits.analysis_work in locks.yaml\n"
        )
        return 2
    sys.stdout.write(text)
    return 0


def schema(kind: str) -> int:
    """The JSON Schema of locks.yaml, or of a paths/ file."""
    if kind not in ("locks", "paths"):
        typer.echo(f"lockdocs: unknown schema '{kind}'; use locks or paths", err=True)
        return 2
    doc = locks_schema(option_schemas()) if kind == "locks" else paths_schema()
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return 0


def rules(fmt: str) -> int:
    """Every check with its code, default severity and summary, as text or JSON."""
    reg = load_all()
    if fmt == "json":
        sys.stdout.write(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "severity": r.severity.value,
                        "summary": r.summary,
                    }
                    for r in reg.values()
                ],
                indent=2,
            )
            + "\n"
        )
        return 0
    for r in reg.values():
        typer.echo(f"{r.code}  {r.severity.value:<7}  {r.name:<28} {r.summary}")
    return 0
