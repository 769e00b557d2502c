"""LD6xx: the generated docs. A project template that cannot render stops the build and the
check (exit code 2) at its file and line; registered here so it has a code and docs."""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.registry import RuleInfo, register

_LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for update: every writer}
"""

register(
    RuleInfo(
        "LD601",
        "template-error",
        Severity.ERROR,
        "A project template cannot be rendered.",
        "Reports a Jinja2 syntax error, or an undefined name, in a template of the project's "
        "templates/ folder at its file and line. Templates render with StrictUndefined, so a "
        "misspelt field is an error rather than an empty cell.",
        "A template that half renders would publish a page that silently lacks facts.",
        {
            "locks.yaml": _LOCKS,
            "templates/page.md.j2": "# {{ page.title|text }\n",
        },
        {
            "locks.yaml": _LOCKS,
            "templates/page.md.j2": "# {{ page.title|text }}\n",
        },
    )
)
