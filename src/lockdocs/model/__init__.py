"""The resolved model: frozen, typed objects with every reference checked.

Built once by `project.assemble.assemble_model` from validated documents; the analysis, the rules
and the renderers only read it, as `m.X` from this package:

- `locks`: keys, backends, takers, references, locks and transaction kinds.
- `paths`: the steps (and the `Step` union), paths and groups.
- here: the rest of what locks.yaml declares (rules, exceptions as `Waiver`, the page,
  planned changes, known differences, `code:` globs, the analysis limits) and the `Model`
  that holds it all.
"""

from __future__ import annotations

from lockdocs.diagnostics import Location
from lockdocs.model.locks import (
    Backend,
    IntegerPart,
    Key,
    KeyText,
    Lock,
    Reference,
    Taker,
    TransactionKind,
    as_declared,
)
from lockdocs.model.paths import (
    NEVER_WAITS,
    Begin,
    Branches,
    Call,
    End,
    External,
    Group,
    Leaf,
    Loop,
    Path,
    Release,
    Run,
    Step,
    Take,
    Write,
    walk_steps,
)
from lockdocs.records import field, record

__all__ = [
    "NEVER_WAITS",
    "Backend",
    "Begin",
    "Branches",
    "Call",
    "CodeGlob",
    "Difference",
    "End",
    "Example",
    "External",
    "Group",
    "IntegerPart",
    "Key",
    "KeyText",
    "Leaf",
    "Limits",
    "Lock",
    "Loop",
    "Model",
    "Observe",
    "Page",
    "Path",
    "Planned",
    "PlannedTake",
    "Reference",
    "Release",
    "Rule",
    "Run",
    "Step",
    "Take",
    "Taker",
    "TransactionKind",
    "Waiver",
    "Write",
    "as_declared",
    "walk_steps",
]


@record
class Example:
    """A piece of code a rule shows: the pattern to follow, or a do and a don't."""

    code: str
    title: str | None = None
    language: str | None = None


@record
class Rule:
    id: str
    title: str
    location: Location
    check: str | None  # first | before | sorted | scope | order | lock_before_write | None
    params: tuple[tuple[str, object], ...] = ()
    text: str | None = None
    issues: tuple[int, ...] = ()
    examples: tuple[Example, ...] = ()

    def param(self, name: str) -> object:
        return dict(self.params).get(name)


@record
class Waiver:
    """An exception in the declarations (named Waiver to keep clear of Python's Exception)."""

    index: int
    rule: str
    why: str
    location: Location
    path: str | None = None
    lock: str | None = None
    issue: int | None = None
    title: str | None = None
    branch: str | None = None
    taker: str | None = None  # LD7xx: the taker or statement of the scanned code


@record
class Difference:
    title: str
    why: str
    issue: int | None = None
    paths: tuple[str, ...] = ()
    locks: tuple[str, ...] = ()


@record
class PlannedTake:
    """A take planned work adds: `path` will take `lock` (in `mode`, while holding
    `holding`)."""

    path: str
    lock: str
    mode: str | None = None
    holding: str | None = None


@record
class Planned:
    issue: int
    title: str
    affects: tuple[str, ...] = ()
    adds: tuple[PlannedTake, ...] = ()
    location: Location | None = None


@record
class Page:
    title: str
    audience: str | None = None
    summary: str | None = None
    intro: str | None = None
    output: str = "database-locks.md"
    key_intro: str | None = None
    order_intro: str | None = None


@record
class CodeGlob:
    """One `code:` pattern: where the project's SQL lives, relative to locks.yaml."""

    pattern: str
    location: Location


@record
class Observe:
    """locks.yaml `observe:`: how `lockdocs observe` names a logged transaction's path."""

    tags: tuple[tuple[tuple[str, str], str], ...] = ()  # ((sqlcommenter key, value), path)
    applications: tuple[tuple[str, str], ...] = ()  # (application_name, path)


@record
class Limits:
    """Bounds on the analysis's work (locks.yaml `limits:`)."""

    path_work: int = 250_000
    cycle_search: int = 200_000
    # The whole analysis of one run (analysis/budget.py): work units, and seconds (0: no
    # bound on time).
    analysis_work: int = 2_000_000
    analysis_seconds: int = 120


@record
class Model:
    root: str
    page: Page
    locks: dict[str, Lock]
    transactions: dict[str, TransactionKind]
    paths: dict[str, Path]
    groups: tuple[Group, ...]
    rules: dict[str, Rule]
    waivers: tuple[Waiver, ...]
    planned: tuple[Planned, ...]
    differences: tuple[Difference, ...] = ()
    issue_url: str | None = None
    checks: dict[str, str] = field(default_factory=dict)  # a severity per check code
    # The options set per check code (`checks: {LD103: {min_odds: 0.01}}`), as written: only
    # lockdocs.config, which reads each rule's registered options, can check them.
    check_options: dict[str, dict[str, object]] = field(default_factory=dict)
    rules_url: str | None = None  # the rules reference page, for links per rule (SARIF)
    files: tuple[str, ...] = ()
    code: tuple[CodeGlob, ...] = ()
    # How the .sql files of code: write parameters: None (as Postgres reads them) or "psycopg"
    # (%s and %(name)s, which the scan reads as $1).
    code_placeholders: str | None = None
    # Server processes per backend (None: every backend); 1 unless locks.yaml says replicas:.
    replicas: tuple[tuple[str | None, int], ...] = ()
    limits: Limits = field(default_factory=Limits)
    observe: Observe = field(default_factory=Observe)

    def replicas_on(self, backend: str | None) -> int:
        found = dict(self.replicas)
        return found.get(backend, found.get(None, 1))

    def issue_link(self, number: int) -> str | None:
        if not self.issue_url:
            return None
        return self.issue_url.replace("{number}", str(number))
