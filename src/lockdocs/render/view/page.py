"""The whole page's view: each section's objects, built from one shared `PageContext`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.render.edges import PairEdge
from lockdocs.render.view.about import AboutView, about_view
from lockdocs.render.view.base import PageContext
from lockdocs.render.view.claims import PageView as Claimed
from lockdocs.render.view.claims import contradictions
from lockdocs.render.view.keys import KeyGroupView, key_groups
from lockdocs.render.view.locks import LockTableView, lock_tables
from lockdocs.render.view.order import OrderView, order_view
from lockdocs.render.view.paths import GroupView, groups
from lockdocs.render.view.rules import (
    DifferenceView,
    ExceptionView,
    PlannedView,
    RuleView,
    difference_views,
    exception_view,
    planned_views,
    rule_view,
)
from lockdocs.render.view.transactions import TxView, transactions
from lockdocs.render.words import scope_facts
from lockdocs.rules.catalog import load_all

if TYPE_CHECKING:
    from lockdocs.rules.context import CheckContext


@dataclass(frozen=True)
class PageView:
    """The whole page: what page.md.j2 and every included template receive as `page`."""

    title: str
    audience: str | None
    summary: str | None
    intro: str | None
    key_intro: str | None
    order_intro: str | None
    issue_url: str | None
    sources: tuple[str, ...]
    sources_line: str
    scope_facts: tuple[str, ...]
    lock_tables: tuple[LockTableView, ...]
    key_groups: tuple[KeyGroupView, ...]
    transactions: tuple[TxView, ...]
    legend_svg: str
    order: OrderView
    edge_pairs: list[PairEdge]  # for the lock-order diagram
    groups: tuple[GroupView, ...]
    rules: tuple[RuleView, ...]
    exceptions: tuple[ExceptionView, ...]
    differences: tuple[DifferenceView, ...]
    planned: tuple[PlannedView, ...]
    about: AboutView
    # Claims of the page that disagree (render/view/claims.py): the page is not written.
    contradictions: tuple[Diagnostic, ...] = ()


def build_page(
    model: m.Model, diagnostics: list[Diagnostic], stem: str, facts: CheckContext | None = None
) -> PageView:
    """The page's view model; `stem` is the page's path under docs/ without `.md`; `facts`,
    the analysis's when the caller has them (`EdgeSet`)."""

    ctx = PageContext(model, diagnostics, stem, facts)
    keys, key_by_lock = key_groups(ctx)
    tables = lock_tables(ctx, key_by_lock)
    txs = transactions(ctx)
    group_views = groups(ctx, txs)
    summaries = {code: info.summary for code, info in load_all().items()}
    stem_name = PurePosixPath(stem).name
    view = PageView(
        title=model.page.title,
        audience=model.page.audience,
        summary=model.page.summary,
        intro=model.page.intro,
        key_intro=model.page.key_intro,
        order_intro=model.page.order_intro,
        issue_url=model.issue_url,
        sources=model.files,
        sources_line=", ".join(model.files),
        scope_facts=scope_facts(model),
        lock_tables=tables,
        key_groups=keys,
        transactions=tuple(txs.values()),
        legend_svg=f"{stem_name}/legend.svg",
        order=order_view(ctx, ctx.edges),
        edge_pairs=ctx.edges.pairs,
        groups=group_views,
        rules=tuple(rule_view(ctx, r) for r in model.rules.values()),
        exceptions=tuple(exception_view(ctx, w, summaries) for w in model.waivers),
        differences=difference_views(ctx),
        planned=planned_views(ctx),
        about=about_view(
            ctx,
            any(s.held_words for g in group_views for p in g.paths for s in p.steps),
        ),
    )
    claimed = Claimed(view.groups, view.lock_tables, view.order)
    return replace(view, contradictions=tuple(contradictions(ctx, claimed)))
