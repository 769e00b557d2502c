"""The paths section: each group of paths, each path's one-line lock sequence (what a reader
sees first), and behind it the facts, the steps as an ordered list and the path's diagram."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context, IssueRef, group_key, group_slugs, path_anchor
from lockdocs.render.view.steps import StepLines, StepView
from lockdocs.render.view.transactions import TxView
from lockdocs.render.words import mode_label

PATH_DIAGRAMS = "paths"  # the folder of the per-path diagrams, beside lock-order.svg


@dataclass(frozen=True)
class PathView:
    """One path: its lock sequence, header facts, steps as list lines and its diagram."""

    id: str
    anchor: str
    title: str
    link: Link
    entry: tuple[str, ...]
    sequence: str  # the locks in the order first taken, as words ("" when it takes none)
    transaction: TxView | None
    standalone: bool
    run_by: tuple[Link, ...]
    summary: str | None
    notes: str | None
    issues: tuple[IssueRef, ...]
    exceptions: tuple[Link, ...]
    steps: tuple[StepView, ...]
    transactions: int  # 0: one per loop pass
    opens_later: bool  # no transaction at the start: its steps open them
    diagram: str  # the SVG, relative to the page
    diagram_dot: str
    held_marks: dict[tuple[str, int, int], str]  # for the diagram: which takes are re-takes


@dataclass(frozen=True)
class GroupView:
    """One paths/ file: its paths."""

    title: str
    anchor: str
    slug: str
    intro: str | None
    transaction: TxView | None
    paths: tuple[PathView, ...]


def sequence(ctx: Context, events: list[Event]) -> str:
    """'Materialization rendezvous shared → Pool row → Grant lineage head': each lock once, in
    the order first taken on any branch; the mode only for a lock of several modes, and how many
    instances when the path holds several at once."""
    order: dict[str, tuple[list[str], set[str]]] = {}
    for e in events:
        if e.kind not in ("acquire", "upgrade"):
            continue
        modes, instances = order.setdefault(e.lock, ([], set()))
        if e.mode not in modes:
            modes.append(e.mode)
        instances.add(e.instance)
    words = []
    for lock_id, (modes, instances) in order.items():
        lock = ctx.model.locks[lock_id]
        text = lock.title
        if len(lock.modes) > 1:
            labels = [mode_label(lock.kind, x) for x in modes]
            text += " " + labels[0] + "".join(f", later {x}" for x in labels[1:])
        several = [i for i in instances if i]
        if len(several) > 1:
            text += " (several)" if any("#" in i for i in several) else f" ×{len(several)}"
        words.append(text)
    return " → ".join(words)


def path_view(ctx: Context, p: m.Path, txs: dict[str, TxView]) -> PathView:
    """One path: header facts from the model, steps annotated from the analysis."""
    model = ctx.model
    events = ctx.events(p.id)
    own = [e for e in events if not e.through]
    lines_of = StepLines(ctx, p, own, txs)
    lines: list[StepView] = []
    tx = txs.get(p.transaction) if p.transaction and p.standalone else None
    if tx is not None and (tx.opened_by or tx.first_lock):
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
    lines_of.steps(p.steps, 0, lines, start=len(lines) + 1, open_tx=not lines_of.tx_offset)
    count = max((e.transaction for e in own), default=1) - lines_of.tx_offset
    if lines_of.loop_begins:
        count = 0  # one per loop pass: no fixed number
    stem_name = PurePosixPath(ctx.stem).name
    return PathView(
        id=p.id,
        anchor=path_anchor(p.id),
        title=p.title,
        link=ctx.path_link(p.id),
        entry=p.entry,
        sequence=sequence(ctx, events),
        transaction=tx,
        standalone=p.standalone,
        run_by=ctx.by_page_order(ctx.callers.get(p.id, ())),
        summary=p.summary,
        notes=p.notes,
        issues=ctx.issues([*p.issues, *(pl.issue for pl in model.planned if p.id in pl.affects)]),
        exceptions=tuple(ctx.exception_link(w) for w in model.waivers if w.path == p.id),
        steps=tuple(lines),
        transactions=count,
        opens_later=bool(lines_of.tx_offset),
        diagram=f"{stem_name}/{PATH_DIAGRAMS}/{p.id}.svg",
        diagram_dot=f"{stem_name}/{PATH_DIAGRAMS}/{p.id}.dot",
        held_marks=dict(lines_of.held_marks),
    )


def groups(ctx: Context, txs: dict[str, TxView]) -> tuple[GroupView, ...]:
    """Every group in its declared order, with its paths."""
    slugs = group_slugs(ctx.model)
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
            )
        )
    return tuple(out)
