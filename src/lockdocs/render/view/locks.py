"""The locks section: one summary table per kind of lock, and each lock's details.

The table carries what a reader scans (key or row, modes, takers, what it serializes); the details
carry the rest once: the computed key, how each taker reaches the lock, the rules that constrain
it, the locks taken before and after it (with the paths) and the issues.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.escape import Link
from lockdocs.render.view.base import IssueRef, PageContext, lock_anchor
from lockdocs.render.view.keys import KeyGroupView
from lockdocs.render.view.order import OrderedLockView, ordered_lock
from lockdocs.render.words import (
    KIND_NOUN,
    KIND_ORDER,
    KIND_TITLES,
    backend_name,
    extent,
    group_heading,
    key_expression,
    mode_label,
    order_words,
)

TAKER_KIND_WORDS = {
    "function": "",
    "query": "the query",
    "sql-function": "the SQL function",
    "statement": "the statement",
    "transaction-kind": "the transaction kind",
}


@dataclass(frozen=True)
class TakerView:
    """One `taken_by` entry: the kind as words ('the query'), never as a tag."""

    name: str
    kind_words: str
    mode: str | None
    via: tuple[str, ...]
    called_by: tuple[str, ...]
    module: str | None
    note: str | None


@dataclass(frozen=True)
class ModeView:
    """One declared mode with who takes it that way."""

    mode: str
    label: str
    text: str


@dataclass(frozen=True)
class BackendView:
    """The lock on one database backend."""

    name: str
    kind: str
    kind_noun: str
    table: str | None
    mode: str | None
    how: str | None


@dataclass(frozen=True)
class NeighbourView:
    """A lock taken before or after this one, with the paths that do so."""

    lock: Link
    paths: tuple[Link, ...]


@dataclass(frozen=True)
class LockView:
    """Everything the lock tables and a lock's details print about one lock."""

    id: str
    anchor: str
    title: str
    link: Link
    kind: str
    kind_noun: str
    scope: str
    extent: str | None
    key_sql: str | None
    key_group: Link | None  # its construction under "How keys are built"
    key_value: int | None
    key_tag: tuple[int, int, int] | None
    key_cardinality: int | None
    constant_name: str | None
    constant_bytes: str | None
    table: str | None
    row: str | None
    mode_text: str | None
    modes: tuple[ModeView, ...]
    options: tuple[str, ...]
    options_text: str
    queue: bool
    referenced_by_foreign_keys: bool
    references: tuple[m.Reference, ...]
    derived_in: tuple[Link, ...]  # paths where a write implies its FOR KEY SHARE
    cluster_wide: bool
    instance_order: str | None
    within: Link | None  # the parent lock whose instances own this lock's
    children: tuple[Link, ...]  # locks declared within this one
    backends: tuple[BackendView, ...]
    takers: tuple[TakerView, ...]
    taker_names: tuple[str, ...]
    # with no taken_by: how each backend takes it, (backend, how), for the table's Taken by
    backend_takers: tuple[tuple[str, str], ...]
    # when a backend keeps the lock in memory: its mode there, (backend, words), for the table
    backend_modes: tuple[tuple[str, str], ...]
    several: OrderedLockView
    serializes: str | None
    notes: str | None
    # Every text field of the lock as declared, by name (model.locks.AS_DECLARED): a new one
    # reaches the templates as lock.declared.<name> without a field here.
    declared: dict[str, str | None]
    issues: tuple[IssueRef, ...]
    taken_in: tuple[Link, ...]
    first_of: tuple[Link, ...]  # transaction kinds that take it first
    rules: tuple[Link, ...]
    exceptions: tuple[Link, ...]
    after: tuple[NeighbourView, ...]  # taken while these are held
    before: tuple[NeighbourView, ...]  # held while these are taken
    several_in: tuple[Link, ...]  # paths that hold two or more of it at once
    alone_in: tuple[Link, ...]  # paths that take it with no other lock before or after
    level: int | None
    order_rule: Link | None


@dataclass(frozen=True)
class LockTableView:
    """One summary table (advisory, row, table or in-process locks) and its locks."""

    kind: str
    anchor: str
    title: str
    details_title: str
    locks: tuple[LockView, ...]


def taken_in(ctx: PageContext) -> dict[str, set[str]]:
    """The paths whose own steps (or whose transaction kind) take each lock."""
    model = ctx.model
    out: dict[str, set[str]] = {}
    for pid, p in model.paths.items():
        tk = model.transactions.get(p.transaction) if p.transaction and p.standalone else None
        if tk is not None and tk.first_lock:
            out.setdefault(tk.first_lock, set()).add(pid)
        for step in m.walk_steps(p.steps):
            if isinstance(step, m.Take):
                if ctx.happens(step):
                    out.setdefault(step.lock, set()).add(pid)
            elif isinstance(step, m.Begin):
                bk = model.transactions.get(step.transaction)
                if bk is not None and bk.first_lock:
                    out.setdefault(bk.first_lock, set()).add(pid)
    return out


def rules_on(rule: m.Rule, lock: m.Lock) -> bool:
    """Whether a declared rule constrains the lock in particular (a `scope` rule covers a whole
    kind of lock: the page states it once, not under every lock)."""
    p = dict(rule.params)
    if rule.check in ("first", "sorted", "lock_before_write"):
        return p.get("lock") == lock.id
    if rule.check == "before":
        return lock.id in (p.get("first"), p.get("then"))
    return False  # an `order` rule is named with the lock's level in it


def _neighbours(
    ctx: PageContext, lock_id: str
) -> tuple[tuple[NeighbourView, ...], tuple[NeighbourView, ...], tuple[Link, ...], set[str]]:
    """(taken while these are held, held while these are taken, paths holding two of it, and
    every path named in those)."""
    after: list[NeighbourView] = []
    before: list[NeighbourView] = []
    several: tuple[Link, ...] = ()
    named: set[str] = set()
    for e in ctx.pairs_of(lock_id):
        named.update(e.paths)
        paths = tuple(ctx.path_link(p) for p in e.paths)
        if e.src == e.dst:
            several = paths
        elif e.dst == lock_id:
            after.append(NeighbourView(ctx.lock_link(e.src), paths))
        else:
            before.append(NeighbourView(ctx.lock_link(e.dst), paths))
    return tuple(after), tuple(before), several, named


def lock_view(
    ctx: PageContext, lock: m.Lock, taken: dict[str, set[str]], key_groups: dict[str, KeyGroupView]
) -> LockView:
    """One lock's table row and details."""
    model = ctx.model
    key = lock.key
    group = key_groups.get(lock.id)
    after, before, several, named = _neighbours(ctx, lock.id)
    return LockView(
        id=lock.id,
        anchor=lock_anchor(lock.id),
        title=lock.title,
        link=ctx.lock_link(lock.id),
        kind=lock.kind,
        kind_noun=KIND_NOUN.get(lock.kind, lock.kind),
        scope=lock.scope,
        extent=extent(lock),
        key_sql=key_expression(key) if key else None,
        key_group=(
            Link(group_heading(group.function, group.shape), "#" + group.anchor) if group else None
        ),
        key_value=key.value if key and key.construction != "constant" else None,
        key_tag=key.tag if key else None,
        key_cardinality=(key.text.cardinality if key and key.text else None),
        constant_name=key.constant_name if key else None,
        constant_bytes=key.constant_bytes if key else None,
        table=lock.table,
        row=lock.row,
        mode_text=lock.mode_text,
        modes=tuple(
            ModeView(mode, mode_label(lock.kind, mode), words) for mode, words in lock.modes
        ),
        options=tuple(o.upper() for o in lock.options),
        options_text=", ".join(o.upper() for o in lock.options),
        queue=lock.queue,
        referenced_by_foreign_keys=lock.referenced_by_foreign_keys,
        references=lock.references,
        derived_in=tuple(ctx.path_link(pid) for pid in ctx.derived_in(lock.id)),
        cluster_wide=lock.cluster_wide,
        instance_order=order_words(lock.instance_order),
        within=ctx.lock_link(lock.within) if lock.within else None,
        children=tuple(ctx.lock_link(child) for child in ctx.children(lock.id)),
        backends=tuple(
            BackendView(
                backend_name(b.name) or b.name,
                b.kind,
                KIND_NOUN.get(b.kind, b.kind),
                b.table,
                mode_label(b.kind, b.mode) if b.mode else None,
                b.how,
            )
            for b in sorted(lock.backends, key=lambda b: b.name)
        ),
        takers=tuple(
            TakerView(
                t.name,
                TAKER_KIND_WORDS.get(t.kind or "", ""),
                mode_label(lock.kind, t.mode) if t.mode else None,
                t.via,
                t.called_by,
                t.module,
                t.note,
            )
            for t in lock.takers
        ),
        taker_names=tuple(dict.fromkeys(t.name for t in lock.takers)),
        backend_takers=()
        if lock.takers
        else tuple(
            (backend_name(b.name) or b.name, b.how)
            for b in sorted(lock.backends, key=lambda b: b.name)
            if b.how
        ),
        several=ordered_lock(ctx, lock.id),
        backend_modes=tuple(
            (backend_name(b.name) or b.name, _memory_mode(lock, b))
            for b in sorted(lock.backends, key=lambda b: b.name)
            if b.kind == "memory" and lock.kind != "memory"
        ),
        serializes=lock.serializes,
        notes=lock.notes,
        declared={name: getattr(lock, name) for name in m.as_declared(m.Lock)},
        issues=ctx.issues(
            [*lock.issues, *(p.issue for p in model.planned if lock.id in p.affects)]
        ),
        taken_in=ctx.by_page_order(taken.get(lock.id, ())),
        first_of=tuple(
            ctx.tx_links[t.id] for t in model.transactions.values() if t.first_lock == lock.id
        ),
        rules=tuple(ctx.rule_link(r.id) for r in model.rules.values() if rules_on(r, lock)),
        exceptions=tuple(ctx.exception_link(w) for w in model.waivers if w.lock == lock.id),
        after=after,
        before=before,
        several_in=several,
        # A path run only inside others holds what its callers hold: never alone.
        alone_in=ctx.by_page_order(
            pid
            for pid in taken.get(lock.id, ())
            if pid not in named and model.paths[pid].standalone
        ),
        level=ctx.levels.get(lock.id),
        order_rule=ctx.rule_link(ctx.order_rule.id) if ctx.order_rule else None,
    )


def _memory_mode(lock: m.Lock, backend: m.Backend) -> str:
    """The lock's mode on a backend that keeps it in memory: 'in memory' when it is the mode
    the lock has elsewhere, else the mode and 'in memory'."""
    mode = backend.mode or "exclusive"
    if lock.kind == "advisory" and tuple(lock.mode_names) == (mode,):
        return "in memory"
    return f"{mode}, in memory"


def lock_tables(
    ctx: PageContext, key_by_lock: dict[str, KeyGroupView]
) -> tuple[LockTableView, ...]:
    """The summary tables, one per kind of lock present."""
    taken = taken_in(ctx)
    views = {lid: lock_view(ctx, lk, taken, key_by_lock) for lid, lk in ctx.model.locks.items()}
    return tuple(
        LockTableView(
            kind,
            f"{kind}-locks",
            KIND_TITLES[kind],
            f"Details of each {KIND_NOUN[kind]}",
            tuple(v for v in views.values() if v.kind == kind),
        )
        for kind in KIND_ORDER
        if any(v.kind == kind for v in views.values())
    )
