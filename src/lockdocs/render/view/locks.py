"""The locks section: one summary table per kind of lock, and each lock's own section."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context, lock_anchor, walk
from lockdocs.render.view.keys import KeyGroupView
from lockdocs.render.words import (
    KIND_NOUN,
    KIND_ORDER,
    KIND_TITLES,
    extent,
    first_sentence,
    group_heading,
    key_expression,
    key_short,
    mode_label,
    order_words,
)


@dataclass(frozen=True)
class TakerView:
    """One `taken_by` entry, as the lock section lists it."""

    name: str
    kind: str | None
    mode: str | None
    via: tuple[str, ...]
    called_by: tuple[str, ...]
    module: str | None
    note: str | None


@dataclass(frozen=True)
class ModeView:
    """One declared mode with its words and, for a lock of several modes, who takes it."""

    mode: str
    label: str
    text: str
    takers: tuple[str, ...]


@dataclass(frozen=True)
class BackendView:
    """The lock on one database backend (lock.md.j2, 'Backends')."""

    name: str
    kind: str
    kind_noun: str
    table: str | None
    mode: str | None
    how: str | None


@dataclass(frozen=True)
class LockView:
    """Everything lock.md.j2 and the lock tables print about one lock."""

    id: str
    anchor: str
    title: str
    link: Link
    kind: str
    kind_noun: str
    scope: str
    extent: str | None
    key_sql: str | None
    key_short: str | None
    key_group: Link | None  # its construction under "How keys are built"
    key_value: int | None
    key_tag: tuple[int, int, int] | None
    key_bits: int | None
    key_cardinality: int | None
    constant_name: str | None
    constant_bytes: str | None
    table: str | None
    row: str | None
    mode_cell: str
    mode_text: str | None
    modes: tuple[ModeView, ...]
    options: tuple[str, ...]
    options_text: str
    queue: bool
    referenced_by_foreign_keys: bool
    singleton: bool
    instance_order: str | None
    backends: tuple[BackendView, ...]
    takers: tuple[TakerView, ...]
    takers_short: tuple[str, ...]
    takers_more: int
    serializes: str | None
    serializes_short: str | None
    notes: str | None
    issues: tuple[Link, ...]
    taken_in: tuple[Link, ...]
    first_of: tuple[Link, ...]  # transaction kinds that take it first
    level: int | None
    order_rule: Link | None
    planned: tuple[Link, ...]


@dataclass(frozen=True)
class LockTableView:
    """One summary table (advisory, row, table or in-process locks) and its locks."""

    kind: str
    anchor: str
    title: str
    locks: tuple[LockView, ...]


def taken_in(ctx: Context) -> dict[str, set[str]]:
    """The paths whose own steps (or whose transaction kind) take each lock."""
    model = ctx.model
    out: dict[str, set[str]] = {}
    for pid, p in model.paths.items():
        tk = model.transactions.get(p.transaction) if p.transaction and p.standalone else None
        if tk is not None and tk.first_lock:
            out.setdefault(tk.first_lock, set()).add(pid)
        for step in walk(p.steps):
            if isinstance(step, m.Take):
                out.setdefault(step.lock, set()).add(pid)
            elif isinstance(step, m.Begin):
                bk = model.transactions.get(step.transaction)
                if bk is not None and bk.first_lock:
                    out.setdefault(bk.first_lock, set()).add(pid)
    return out


def lock_view(
    ctx: Context, lock: m.Lock, taken: dict[str, set[str]], key_groups: dict[str, KeyGroupView]
) -> LockView:
    """One lock's section and table row."""
    model = ctx.model
    key = lock.key
    modes = []
    for mode, words in lock.modes:
        takers = tuple(
            t.name
            for t in lock.takers
            if t.mode == mode or (t.mode is None and len(lock.modes) == 1)
        )
        modes.append(ModeView(mode, mode_label(lock.kind, mode), words, takers))
    option_words = tuple(o.upper() for o in lock.options)
    mode_cell = lock.mode_text or ", ".join(
        [mode_label(lock.kind, mm) for mm in lock.mode_names]
    ) + ("" if not option_words else " (" + ", ".join(option_words) + ")")
    names = tuple(dict.fromkeys(t.name for t in lock.takers))
    group = key_groups.get(lock.id)
    first_of = tuple(
        ctx.tx_links[t.id] for t in model.transactions.values() if t.first_lock == lock.id
    )
    planned = tuple(ctx.issue(p.issue) for p in model.planned if lock.id in p.affects)
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
        key_short=key_short(key) if key else None,
        key_group=(
            Link(group_heading(group.function, group.shape), "#" + group.anchor) if group else None
        ),
        key_value=key.value if key and key.construction != "constant" else None,
        key_tag=key.tag if key else None,
        key_bits=key.bits if key else None,
        key_cardinality=(key.text.cardinality if key and key.text else None),
        constant_name=key.constant_name if key else None,
        constant_bytes=key.constant_bytes if key else None,
        table=lock.table,
        row=lock.row,
        mode_cell=mode_cell,
        mode_text=lock.mode_text,
        modes=tuple(modes),
        options=option_words,
        options_text=", ".join(option_words),
        queue=lock.queue,
        referenced_by_foreign_keys=lock.referenced_by_foreign_keys,
        singleton=lock.singleton,
        instance_order=order_words(lock.instance_order),
        backends=tuple(
            BackendView(
                b.name,
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
                t.kind,
                mode_label(lock.kind, t.mode) if t.mode else None,
                t.via,
                t.called_by,
                t.module,
                t.note,
            )
            for t in lock.takers
        ),
        takers_short=names[:3],
        takers_more=max(0, len(names) - 3),
        serializes=lock.serializes,
        serializes_short=first_sentence(lock.serializes),
        notes=lock.notes,
        issues=tuple(ctx.issue(n) for n in lock.issues),
        taken_in=ctx.by_page_order(taken.get(lock.id, ())),
        first_of=first_of,
        level=ctx.levels.get(lock.id),
        order_rule=ctx.rule_link(ctx.order_rule.id) if ctx.order_rule else None,
        planned=planned,
    )


def lock_tables(ctx: Context, key_by_lock: dict[str, KeyGroupView]) -> tuple[LockTableView, ...]:
    """The summary tables, one per kind of lock present, each with its locks' sections."""
    taken = taken_in(ctx)
    views = {lid: lock_view(ctx, lk, taken, key_by_lock) for lid, lk in ctx.model.locks.items()}
    return tuple(
        LockTableView(
            kind,
            f"{kind}-locks",
            KIND_TITLES[kind],
            tuple(v for v in views.values() if v.kind == kind),
        )
        for kind in KIND_ORDER
        if any(v.kind == kind for v in views.values())
    )
