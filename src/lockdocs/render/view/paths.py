"""The paths section: each group of paths, each path's gist (what a reader sees before opening
anything: the locks in the order taken, transaction by transaction, and how long a lock wait
lasts), and behind it the facts, the steps as an ordered list and the path's diagram."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.render.escape import Link
from lockdocs.render.view.base import IssueRef, PageContext, group_key, group_slugs, path_anchor
from lockdocs.render.view.steps import StepLines
from lockdocs.render.view.stepview import StepView
from lockdocs.render.view.transactions import TxView
from lockdocs.render.words import mode_label, waits

PATH_DIAGRAMS = "paths"  # the folder of the per-path diagrams, beside lock-order.svg


@dataclass(frozen=True)
class FactView:
    """One fact of a path's header line: a label and its links (each with words after it)."""

    label: str
    items: tuple[tuple[Link, str], ...]
    sep: str = ", "
    tail: str = ""


@dataclass(frozen=True)
class PathView:
    """One path: its gist, header facts, steps as list lines and its diagram."""

    id: str
    anchor: str
    title: str
    link: Link
    entry: tuple[str, ...]
    gist: str  # the locks in the order first taken, as words ("" when it takes none)
    waits: str  # how long its lock waits last ("" when it takes no lock)
    kinds: tuple[TxView, ...]  # its transactions' kinds in order (shown when not the group's)
    kinds_repeat: bool  # a loop opens a new transaction on each pass
    kinds_shown: bool
    standalone: bool
    run_inside: tuple[Link, ...]  # callers that run it in their own transaction
    run_by: tuple[Link, ...]  # callers that run it where it opens transactions of its own
    summary: str | None
    notes: str | None
    issues: tuple[IssueRef, ...]
    exceptions: tuple[Link, ...]
    facts: tuple[FactView, ...]  # the header line: what is not the group's already
    steps: tuple[StepView, ...]
    opens_own: bool  # its steps open transactions (a caller cannot lend it one)
    diagram: str  # the SVG, relative to the page
    diagram_dot: str
    held_marks: dict[tuple[str, int, int], str]  # for the diagram: which takes are re-takes


@dataclass(frozen=True)
class GroupView:
    """One paths/ file: its paths, and the transaction kind they run in unless one says
    otherwise."""

    title: str
    anchor: str
    slug: str
    intro: str | None
    transaction: TxView | None
    paths: tuple[PathView, ...]


def _derived_takes(model: m.Model) -> set[tuple[str, int, int]]:
    """Where a take the declarations imply (a foreign-key check) stands."""
    return {
        (s.location.file, s.location.line, s.location.column)
        for p in model.paths.values()
        for s in m.walk_steps(p.steps)
        if isinstance(s, m.Take) and s.derived
    }


def _opens_own(model: m.Model, path_id: str) -> bool:
    p = model.paths.get(path_id)
    return p is not None and any(isinstance(s, m.Begin) for s in m.walk_steps(p.steps))


def gist(
    ctx: PageContext, path_id: str, events: list[Event], derived: set[tuple[str, int, int]]
) -> tuple[str, str]:
    """('Materialization rendezvous shared → Pool row → Materialization', 'waits up to 5s'):
    each lock once per transaction in the order first taken on any branch (its mode only for a
    lock of several modes, how many when it holds several at once); a lock Postgres takes for
    a foreign key is named by the sub-path it comes from ('Materialization'). A transaction that
    takes nothing new is left out; runs of a path that opens transactions of its own are that
    path's gist, not this one's."""
    model = ctx.model
    by_tx: dict[int, dict[tuple[str, str], tuple[list[str], set[str]]]] = {}
    kinds: dict[int, str | None] = {}
    waiting: set[int] = set()  # transactions with a take that can wait
    path = model.paths[path_id]
    for e in events:
        if e.kind not in ("acquire", "upgrade"):
            continue
        if e.through and _opens_own(model, e.through[0]):
            continue
        if not path.standalone and not e.through and e.location == path.location:
            continue  # the kind's first lock: a caller's, which it runs inside
        items = by_tx.setdefault(e.transaction, {})
        kinds.setdefault(e.transaction, e.txkind)
        if e.option not in m.NEVER_WAITS:
            waiting.add(e.transaction)
        loc = (e.location.file, e.location.line, e.location.column)
        if loc in derived:
            sub = next((p for p in reversed(e.through) if not model.paths[p].standalone), None)
            key = ("path", sub) if sub else ("derived", e.lock)
        else:
            key = ("lock", e.lock)
        modes, instances = items.setdefault(key, ([], set()))
        if e.mode not in modes:
            modes.append(e.mode)
        instances.add(e.instance)
    segments: list[tuple[str, str | None, bool]] = []
    seen: set[str] = set()
    for number in sorted(by_tx):
        words = [
            _item(ctx, path_id, key, modes, inst) for key, (modes, inst) in by_tx[number].items()
        ]
        if not words or all(w in seen for w in words):
            continue
        seen.update(words)
        segments.append((" → ".join(words), kinds.get(number), number in waiting))
    text = "; then in a new transaction: ".join(s for s, _, _ in segments)
    timeouts: list[str] = []
    for _, kind, waits_here in segments:
        if not waits_here:
            continue
        tk = model.transactions.get(kind) if kind else None
        w = waits(tk.lock_timeout if tk else None)
        if not timeouts or timeouts[-1] != w:
            timeouts.append(w)
    if segments and not timeouts:
        timeouts = ["never waits for a lock"]
    said = ", then ".join(t if i == 0 else t.removeprefix("waits ") for i, t in enumerate(timeouts))
    return text, said


def _item(
    ctx: PageContext, path_id: str, key: tuple[str, str], modes: list[str], instances: set[str]
) -> str:
    kind, ident = key
    if kind == "path":
        return ctx.model.paths[ident].title
    lock = ctx.model.locks[ident]
    text = lock.title
    if kind == "derived":
        text += " (for a foreign key)"
    elif len(lock.modes) > 1:
        labels = [mode_label(lock.kind, x) for x in modes]
        text += " " + " or ".join(labels)
    named = {i for i in instances if i and "#" not in i and "@" not in i}
    if len(named) > 1:
        text += f" ×{len(named)}"
    elif path_id in ctx.several_paths().get(ident, ()):
        text += " (several)"
    return text


def _kinds(p: m.Path, offset: int) -> list[str]:
    """The kinds of the path's transactions, in order (a kind repeated back to back once)."""
    out: list[str] = [p.transaction] if p.transaction and not offset else []
    for s in m.walk_steps(p.steps):
        if isinstance(s, m.Begin) and (not out or out[-1] != s.transaction):
            out.append(s.transaction)
    return out


def path_view(
    ctx: PageContext,
    p: m.Path,
    txs: dict[str, TxView],
    group_tx: str | None,
    derived: set[tuple[str, int, int]],
) -> PathView:
    """One path: header facts from the model, steps annotated from the analysis."""
    model = ctx.model
    events = ctx.events(p.id)
    own = [e for e in events if not e.through]
    lines_of = StepLines(ctx, p, own, txs)
    lines: list[StepView] = []
    tx = txs.get(p.transaction) if p.transaction and p.standalone else None
    if tx is not None and tx.first_lock is not None:
        lines.append(
            StepView(
                kind="first",
                indent="",
                marker="1.",
                via=(tx.opened_by,) if tx.opened_by else (),
                first_lock=tx.first_lock,
                first_mode=tx.first_mode,
            )
        )
    lines_of.steps(p.steps, 0, lines, start=len(lines) + 1, open_tx=not lines_of.tx_offset)
    kinds = _kinds(p, lines_of.tx_offset) if p.standalone else []
    repeat = lines_of.loop_begins
    shown = p.standalone and (kinds != [group_tx] or repeat)
    opens = _opens_own(model, p.id)
    sites = ctx.run_sites().get(p.id, ())
    inside = ctx.by_page_order(c for c, in_tx in sites if in_tx and not opens)
    by = ctx.by_page_order(c for c, in_tx in sites if not in_tx or opens)
    text, said = gist(ctx, p.id, events, derived)
    if not p.standalone:
        said = ""  # it waits as long as the caller's transaction lets it
    issues = ctx.issues([*p.issues, *(pl.issue for pl in model.planned if p.id in pl.affects)])
    exceptions = tuple(ctx.exception_link(w) for w in ctx.exceptions_for(None, p.id))
    kind_views = tuple(txs[k] for k in kinds if k in txs)
    facts: list[FactView] = []
    if shown:
        plural = "s" if len(kind_views) > 1 or repeat else ""
        facts.append(
            FactView(
                f"Transaction kind{plural}",
                tuple((k.link, "") for k in kind_views)
                or ((Link("none declared, a plain transaction"), ""),),
                ", then ",
                ", a new one on each pass of its loop" if repeat else "",
            )
        )
    if inside:
        label = "Runs only inside" if not p.standalone and not by else "Also runs inside"
        tail = ", in the caller's transaction" if not p.standalone else ""
        facts.append(FactView(label, tuple((c, "") for c in inside), tail=tail))
    if by:
        label = "Run only by" if not p.standalone and not inside else "Also run by"
        facts.append(FactView(label, tuple((c, "") for c in by)))
    if issues:
        facts.append(
            FactView("Issues", tuple((i.link, "(planned)" if i.planned else "") for i in issues))
        )
    if exceptions:
        label = "Known deviations" if len(exceptions) > 1 else "Known deviation"
        facts.append(FactView(label, tuple((x, "") for x in exceptions)))
    stem_name = PurePosixPath(ctx.stem).name
    return PathView(
        id=p.id,
        anchor=path_anchor(p.id),
        title=p.title,
        link=ctx.path_link(p.id),
        entry=p.entry,
        gist=text,
        waits=said,
        kinds=kind_views,
        kinds_repeat=repeat,
        kinds_shown=shown,
        standalone=p.standalone,
        run_inside=inside,
        run_by=by,
        summary=p.summary,
        notes=p.notes,
        issues=issues,
        exceptions=exceptions,
        facts=tuple(facts),
        steps=tuple(lines),
        opens_own=opens,
        diagram=f"{stem_name}/{PATH_DIAGRAMS}/{p.id}.svg",
        diagram_dot=f"{stem_name}/{PATH_DIAGRAMS}/{p.id}.dot",
        held_marks=dict(lines_of.held_marks),
    )


def groups(ctx: PageContext, txs: dict[str, TxView]) -> tuple[GroupView, ...]:
    """Every group in its declared order, with its paths."""
    slugs = group_slugs(ctx.model)
    derived = _derived_takes(ctx.model)
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
                paths=tuple(
                    path_view(ctx, ctx.model.paths[pid], txs, g.transaction, derived)
                    for pid in g.paths
                ),
            )
        )
    return tuple(out)
