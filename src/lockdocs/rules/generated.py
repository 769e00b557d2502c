"""LD6xx: the generated docs. A project template that cannot render stops the build and the
check (exit code 2) at its file and line; registered here so it has a code and docs."""

from __future__ import annotations

from lockdocs.diagnostics import Severity
from lockdocs.rules.examples import LEDGER
from lockdocs.rules.registry import describe

_LOCKS = LEDGER

describe(
    "LD601",
    "template-error",
    Severity.ERROR,
    summary="A project template cannot be rendered.",
    what="Reports anything that stops a template of the project's templates/ folder from "
    "rendering, at its file and line: a Jinja2 syntax error, an undefined name (templates "
    "render with StrictUndefined, so a misspelt field is an error rather than an empty "
    "cell), an error the template raises, or a bound it passes. Templates run in Jinja2's "
    "sandbox (no Python attributes, no changes to the page data) with bounded recursion, "
    "values of at most 4,000,000 characters, a page of at most 256,000,000 characters, "
    "2,000,000 range() items and 120 seconds per render; a template file that leads "
    "outside the project through a symlink is refused.",
    why="A template that half renders would publish a page that silently lacks facts, and a "
    "template is code from whoever edits the repository: on a pull request's CI run it "
    "must not run commands or exhaust the machine.",
    example={
        "locks.yaml": _LOCKS,
        "templates/page.md.j2": "# {{ page.title|text }\n",
    },
    use_instead={
        "locks.yaml": _LOCKS,
        "templates/page.md.j2": "# {{ page.title|text }}\n",
    },
)


_CONTRADICTION = (
    LEDGER
    + """\
    serializes: Postings to one ledger; a posting and a refund never deadlock.
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for update: every writer}
"""
)
_TWO_ORDERS = """\
group: Money
paths:
  post:
    title: Post
    steps:
      - take: ledger
      - take: account
  refund:
    title: Refund
    steps:
      - take: account
      - take: ledger
"""

describe(
    "LD606",
    "page-contradiction",
    Severity.ERROR,
    summary="The page would say two things that disagree.",
    what="Compares the claims the page would make before it is written, and stops the build and "
    "the check (exit code 2, nothing written) when two disagree: prose that says locks "
    "never deadlock beside a finding or an exception that says they can; one take's order "
    "named two ways (a loop and the take inside it); planned work whose `adds:` the paths "
    "already do; a statement said to change a key (`changes_key`, a DELETE) declared in a "
    "mode other than FOR UPDATE; a re-take (`again: true`) that no step before it makes "
    "possible; a path declared `standalone: false` (it runs in its caller's transaction) "
    "that opens a transaction of its own; two exceptions with one title. The same pass "
    "compares what the page derives in two places (a path's transaction kinds and the "
    "kinds its steps run in, the order of a lock's instances in its table and in the lock "
    "order, a deviation and the exception or reason named for it).",
    why="A reader trusts the page sentence by sentence: one that contradicts another on the "
    "same page sends a developer the wrong way, and they cannot tell which of the two is "
    "true.",
    example={"locks.yaml": _CONTRADICTION, "paths/money.yaml": _TWO_ORDERS},
    use_instead={
        "locks.yaml": _CONTRADICTION.replace("; a posting and a refund never deadlock.", "."),
        "paths/money.yaml": _TWO_ORDERS,
    },
)


def _drift_rule(code: str, name: str, summary: str, what: str, example: dict[str, str]) -> None:
    describe(
        code,
        name,
        Severity.ERROR,
        summary=summary,
        what=what + " `lockdocs check --diff` prints the unified diff; `lockdocs build` fixes it.",
        why="The page is what developers read before they take a lock. A page that no longer "
        "says what the declarations say sends them the wrong way, and a check that only "
        "printed a diff would not reach annotations, SARIF or the summary line.",
        example={"locks.yaml": _LOCKS, **example},
    )


_drift_rule(
    "LD602",
    "docs-drift",
    "A generated file differs from what the declarations generate.",
    "Reports, at the first line that differs, a committed page or DOT file whose text is not "
    "what `lockdocs build` would write now, with the sections the change touches (headings of "
    "the page, nodes and edges of a graph); an SVG whose DOT stamp is not the current DOT's; "
    "a manifest that does not list the generated files.",
    {"docs/database-locks.md": "# Locks\n\nEdited by hand.\n"},
)
_drift_rule(
    "LD603",
    "docs-missing",
    "A file the declarations generate is missing.",
    "Reports each page, DOT or SVG file that `lockdocs build` would add.",
    {},
)
_drift_rule(
    "LD604",
    "docs-stale",
    "A file the last build wrote is no longer generated.",
    "Reports each file listed in `docs/.lockdocs-manifest` that the declarations no longer "
    "generate (a renamed group's diagram, a moved page), which `lockdocs build` would remove.",
    {
        "docs/.lockdocs-manifest": "# Files written by `lockdocs build`\ndocs/locks/old.dot\n",
        "docs/locks/old.dot": "digraph old {}\n",
    },
)
_drift_rule(
    "LD605",
    "build-interrupted",
    "A build was killed while it replaced the generated files.",
    "Reports the undo journal (`docs/.lockdocs-journal`) that a killed `lockdocs build` leaves: "
    "the docs folder may hold some files from before and some from after the change.",
    {"docs/.lockdocs-journal": "[]\n"},
)
