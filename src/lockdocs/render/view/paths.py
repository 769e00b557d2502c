"""The paths section: each group of paths with its diagram, each path's header and steps."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from lockdocs import model as m
from lockdocs.analysis.flatten import flatten
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context, group_key, group_slugs, path_anchor
from lockdocs.render.view.steps import StepLines, StepView
from lockdocs.render.view.transactions import TxView


@dataclass(frozen=True)
class PathView:
    """One path: its header facts and its steps as list lines (path.md.j2)."""

    id: str
    anchor: str
    title: str
    link: Link
    file: str
    entry: tuple[str, ...]
    transaction: TxView | None
    standalone: bool
    run_by: tuple[Link, ...]
    summary: str | None
    notes: str | None
    issues: tuple[Link, ...]
    exceptions: tuple[Link, ...]
    planned: tuple[Link, ...]
    steps: tuple[StepView, ...]
    transactions: int  # 0: one per loop pass
    opens_later: bool  # no transaction at the start: its steps open them


@dataclass(frozen=True)
class GroupView:
    """One paths/ file: its paths and its diagram (group.md.j2)."""

    title: str
    anchor: str
    slug: str
    intro: str | None
    transaction: TxView | None
    paths: tuple[PathView, ...]
    diagram: str  # the SVG, relative to the page
    diagram_dot: str


def path_view(ctx: Context, p: m.Path, txs: dict[str, TxView]) -> PathView:
    """One path: header facts from the model, steps annotated from the analysis."""
    model = ctx.model
    own = [e for e in flatten(model, only=p.id) if not e.through]
    lines_of = StepLines(ctx, p, own, txs)
    lines: list[StepView] = []
    tx = txs.get(p.transaction) if p.transaction and p.standalone else None
    if tx is not None:
        lines.append(
            StepView(
                kind="open",
                indent="",
                marker="1.",
                target=tx.link,
                target_title=tx.title,
                via=(tx.opened_by,) if tx.opened_by else (),
                first_lock=tx.first_lock,
                first_mode=tx.first_mode,
            )
        )
    lines_of.steps(p.steps, 0, lines, start=len(lines) + 1)
    waivers = tuple(
        Link(f"exception {w.index + 1}", f"#exception-{w.index + 1}")
        for w in model.waivers
        if w.path == p.id
    )
    planned = tuple(ctx.issue(pl.issue) for pl in model.planned if p.id in pl.affects)
    count = max((e.transaction for e in own), default=1) - lines_of.tx_offset
    if lines_of.loop_begins:
        count = 0  # one per loop pass: no fixed number
    return PathView(
        id=p.id,
        anchor=path_anchor(p.id),
        title=p.title,
        link=ctx.path_link(p.id),
        file=p.file,
        entry=p.entry,
        transaction=tx,
        standalone=p.standalone,
        run_by=ctx.by_page_order(ctx.callers.get(p.id, ())),
        summary=p.summary,
        notes=p.notes,
        issues=tuple(ctx.issue(n) for n in p.issues),
        exceptions=waivers,
        planned=planned,
        steps=tuple(lines),
        transactions=count,
        opens_later=bool(lines_of.tx_offset),
    )


def groups(ctx: Context, txs: dict[str, TxView]) -> tuple[GroupView, ...]:
    """Every group in its declared order, with its paths and its diagram's file names."""
    slugs = group_slugs(ctx.model)
    stem_name = PurePosixPath(ctx.stem).name
    out = []
    for g in ctx.model.groups:
        s = slugs[group_key(g)]
        out.append(
            GroupView(
                title=g.title,
                anchor=f"group-{s}",
                slug=s,
                intro=g.intro,
                transaction=txs.get(g.transaction) if g.transaction else None,
                paths=tuple(path_view(ctx, ctx.model.paths[pid], txs) for pid in g.paths),
                diagram=f"{stem_name}/{s}.svg",
                diagram_dot=f"{stem_name}/{s}.dot",
            )
        )
    return tuple(out)
