"""The rules every path keeps, the exceptions and differences, findings and planned work."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.escape import Link, code_lines
from lockdocs.render.view.base import PageContext
from lockdocs.render.words import (
    KIND_NOUN,
    as_tuple,
    bare,
    levels,
    mode_label,
    order_words,
    sentence,
)
from lockdocs.rules.waivers import waiver_label


@dataclass(frozen=True)
class ExampleView:
    """A rule's piece of code as a fenced block: the fence is longer than any run of backticks
    in the code, and every line is literal (control, bidi and zero-width characters shown as
    escapes)."""

    title: str | None
    fence: str
    lang: str
    lines: tuple[str, ...]


def example_view(ex: m.Example) -> ExampleView:
    longest = max((len(run) for run in re.findall(r"`+", ex.code)), default=0)
    return ExampleView(
        ex.title,
        "`" * max(3, longest + 1),
        ex.language or "",
        code_lines(ex.code),
    )


@dataclass(frozen=True)
class RuleView:
    """One declared rule and the check behind it (rules.md.j2, rule-check.md.j2)."""

    number: int
    id: str
    anchor: str
    title: str
    text: str | None
    check: str | None
    lock: Link | None = None
    mode: str | None = None
    transactions: tuple[Link, ...] = ()
    when_writes: tuple[str, ...] = ()
    first: Link | None = None
    then: Link | None = None
    kind_noun: str | None = None
    scope: str | None = None
    order: str | None = None
    levels: tuple[tuple[Link, ...], ...] = ()
    writes: tuple[str, ...] = ()
    issues: tuple[Link, ...] = ()
    exceptions: tuple[Link, ...] = ()
    examples: tuple[ExampleView, ...] = ()
    indent: str = "    "  # the indent of a block inside the rule's list item


@dataclass(frozen=True)
class ExceptionView:
    """One exception and how many findings it waives (exceptions.md.j2)."""

    number: int
    anchor: str
    title: str
    rule: Link | None  # a rule of the page; None for a check of lockdocs' own (`code`)
    code: str | None  # the check code it waives, for the note at the end of the page
    rule_summary: str | None
    path: Link | None
    paths: tuple[Link, ...]  # the paths it covers (its own, or its findings')
    lock: Link | None
    locks: tuple[Link, ...]  # the locks it covers (its own, or its findings')
    branch: str | None
    issue: Link | None
    issue_in_text: bool  # the why already names the issue (#N), linked there
    why: str
    waives: int


@dataclass(frozen=True)
class DifferenceView:
    """A way the paths differ that breaks no rule (exceptions.md.j2)."""

    anchor: str
    title: str
    why: str
    issue: Link | None
    issue_in_text: bool
    paths: tuple[Link, ...]
    locks: tuple[Link, ...]


@dataclass(frozen=True)
class PlannedView:
    """One piece of planned work (planned.md.j2)."""

    issue: Link
    title: str
    affects: tuple[Link, ...]


def _names_issue(text: str, number: int | None) -> bool:
    """Whether prose mentions #N (the page links it there)."""
    return number is not None and re.search(rf"(?<![\w/&#])#{number}\b", text) is not None


def rule_view(ctx: PageContext, rule: m.Rule) -> RuleView:
    """One rule, with its check's parameters resolved to links."""
    model = ctx.model
    p = dict(rule.params)
    base: dict[str, object] = {}
    if rule.check == "first":
        lock = model.locks.get(str(p.get("lock")))
        mode = p.get("mode")
        base = {
            "lock": ctx.lock_link(str(p["lock"])),
            "mode": mode_label(lock.kind, str(mode)) if lock and mode else None,
            "transactions": tuple(
                ctx.tx_links.get(str(t), Link(str(t))) for t in as_tuple(p.get("transactions"))
            ),
            "when_writes": tuple(str(w) for w in as_tuple(p.get("when_writes"))),
        }
    elif rule.check == "before":
        base = {"first": ctx.lock_link(str(p["first"])), "then": ctx.lock_link(str(p["then"]))}
    elif rule.check == "sorted":
        lock = model.locks.get(str(p["lock"]))
        base = {
            "lock": ctx.lock_link(str(p["lock"])),
            "order": order_words(lock.instance_order) if lock else None,
        }
    elif rule.check == "scope":
        base = {
            "kind_noun": KIND_NOUN.get(str(p["kind"]), str(p["kind"])),
            "scope": str(p["scope"]),
        }
    elif rule.check == "order":
        base = {
            "levels": tuple(tuple(ctx.lock_link(lid) for lid in level) for level in levels(rule))
        }
    elif rule.check == "lock_before_write":
        base = {
            "lock": ctx.lock_link(str(p["lock"])),
            "writes": tuple(str(w) for w in as_tuple(p.get("writes"))),
        }
    exceptions = tuple(
        Link(f"exception {w.index + 1}", f"#exception-{w.index + 1}")
        for w in model.waivers
        if w.rule == rule.id
    )
    return RuleView(
        number=ctx.rule_numbers[rule.id],
        id=rule.id,
        anchor=f"rule-{rule.id}",
        title=sentence(rule.title),
        text=rule.text,
        check=rule.check,
        issues=tuple(ctx.issue(n) for n in rule.issues),
        exceptions=exceptions,
        examples=tuple(example_view(ex) for ex in rule.examples),
        **base,  # type: ignore[arg-type]
    )


def exception_view(ctx: PageContext, w: m.Waiver, summaries: dict[str, str]) -> ExceptionView:
    """One exception, with the number of findings it waives in this run."""

    model = ctx.model
    label = waiver_label(model, w)
    waives = sum(1 for d in ctx.diags if d.waived_by == label)
    rule: Link | None
    if w.rule in model.rules:
        rule = ctx.rule_link(w.rule)
        summary = None
        code = None
    else:
        rule = None
        summary = bare(summaries[w.rule]) if w.rule in summaries else None
        code = w.rule
    return ExceptionView(
        number=w.index + 1,
        anchor=f"exception-{w.index + 1}",
        title=sentence(w.title or f"Exception {w.index + 1}"),
        rule=rule,
        code=code,
        rule_summary=summary,
        path=ctx.path_link(w.path) if w.path else None,
        paths=ctx.by_page_order(ctx.paths_of(w)),
        lock=ctx.lock_link(w.lock) if w.lock else None,
        locks=tuple(ctx.lock_link(lk) for lk in ctx.locks_of(w)),
        branch=w.branch,
        issue=ctx.issue(w.issue) if w.issue else None,
        issue_in_text=bool(w.issue) and _names_issue(w.why, w.issue),
        why=w.why,
        waives=waives,
    )


def difference_views(ctx: PageContext) -> tuple[DifferenceView, ...]:
    """The declared differences, numbered in declaration order."""
    return tuple(
        DifferenceView(
            anchor=f"difference-{i + 1}",
            title=sentence(d.title),
            why=d.why,
            issue=ctx.issue(d.issue) if d.issue else None,
            issue_in_text=bool(d.issue) and _names_issue(d.why, d.issue),
            paths=tuple(ctx.path_link(p) for p in d.paths),
            locks=tuple(ctx.lock_link(lk) for lk in d.locks),
        )
        for i, d in enumerate(ctx.model.differences)
    )


def planned_views(ctx: PageContext) -> tuple[PlannedView, ...]:
    """The planned work, each with the locks and paths it changes."""
    model = ctx.model
    return tuple(
        PlannedView(
            ctx.issue(p.issue),
            sentence(p.title),
            tuple(ctx.lock_link(a) if a in model.locks else ctx.path_link(a) for a in p.affects),
        )
        for p in model.planned
    )
