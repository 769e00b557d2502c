"""The command bodies, one module each, and the output formats the CLI offers (here, so that
the CLI can declare its options without loading any body; `common.py` holds what the bodies
share; the formats of check and validate are named by `report.FORMATS`).

One module per command body (check and validate, scan, replay, explain, diff, init, export,
build); `cli.py` (typer) parses the options and calls one of them, loading only that one;
`entry.py` calls `commands.check` directly for the plain forms of `lockdocs check` and
`lockdocs validate`, so a pre-commit hook does not pay the framework's start-up (typer builds
every parameter through pydantic: about 100 ms).
"""

from __future__ import annotations

from enum import StrEnum

from lockdocs.report import FORMATS

# The --format of check and validate: the names of report.FORMATS, where each format is defined.
Format = StrEnum("Format", [(name, name) for name in FORMATS])  # type: ignore[misc]


class ScanFormat(StrEnum):
    text = "text"
    json = "json"


class ReplayFormat(StrEnum):
    text = "text"
    json = "json"
    isolation = "isolation"


class ExplainFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class LogFormat(StrEnum):
    auto = "auto"
    stderr = "stderr"
    csvlog = "csvlog"
    jsonlog = "jsonlog"


class DiffFormat(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


class FailOn(StrEnum):
    never = "never"
    new_findings = "new-findings"


class ExportFormat(StrEnum):
    json = "json"
