"""The transaction kinds: how each is opened, its first lock and what bounds its waits."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.escape import Link
from lockdocs.render.view.base import PageContext, tx_anchor
from lockdocs.render.words import mode_label, tx_words


@dataclass(frozen=True)
class TxView:
    """A transaction kind (transactions.md.j2, and the path headers)."""

    id: str
    anchor: str
    title: str
    link: Link
    opened_by: str | None
    first_lock: Link | None
    first_mode: str | None
    isolation: str | None
    lock_timeout: str
    bounded: bool
    on_timeout: str | None
    notes: str | None
    database: str | None
    pooler: str | None = None  # transaction: a pooler hands out a connection per transaction

    def words(self, determiner: str) -> tuple[str, str]:
        """The words around the kind's link after a verb: ('a', '') before 'plain
        transaction', ('a transaction of the', 'kind') around 'entitlements.Materializing'."""
        return tx_words(self.title, determiner)


def tx_view(ctx: PageContext, tk: m.TransactionKind) -> TxView:
    """One transaction kind and the paths that use it."""
    first = ctx.model.locks.get(tk.first_lock) if tk.first_lock else None
    return TxView(
        id=tk.id,
        anchor=tx_anchor(tk.id),
        title=tk.title or tk.id,
        link=ctx.tx_links[tk.id],
        opened_by=tk.opened_by,
        first_lock=ctx.lock_link(tk.first_lock) if tk.first_lock else None,
        first_mode=(
            mode_label(first.kind, tk.first_mode) if first is not None and tk.first_mode else None
        ),
        isolation=tk.isolation,
        lock_timeout=tk.lock_timeout or "none",
        bounded=tk.lock_timeout is not None,
        on_timeout=tk.on_timeout,
        notes=tk.notes,
        database=tk.database,
        pooler=tk.pooler,
    )


def transactions(ctx: PageContext) -> dict[str, TxView]:
    """Every transaction kind's view, in declaration order, by id."""
    return {tid: tx_view(ctx, t) for tid, t in ctx.model.transactions.items()}
