"""A path's steps as the lines of a nested list, annotated from the analysis: a take already
held, an upgrade, the locks a commit releases, the ordinal of a transaction a step opens."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context, walk
from lockdocs.render.view.transactions import TxView
from lockdocs.render.words import mode_label, order_words, ordinal


@dataclass(frozen=True)
class StepView:
    """One line of a path's nested list; `indent` and `marker` place it."""

    kind: str
    indent: str
    marker: str
    lock: Link | None = None
    mode: str | None = None
    via: tuple[str, ...] = ()
    note: str | None = None
    instance: str | None = None
    order: str | None = None
    implicit: str | None = None
    changes_key: bool = False
    backend: str | None = None
    again: bool = False
    claimed: bool = False  # the rows an earlier take of the path claimed, and no others
    inserted: bool = False  # a row the transaction inserted: no other one sees it yet
    connection: str | None = None  # another connection of the worker the take runs on
    held_before: str = "never"  # never | always | sometimes: the lock was already held
    upgrade_from: str | None = None
    label: str | None = None
    target: Link | None = None
    target_title: str | None = None
    first_lock: Link | None = None
    first_mode: str | None = None
    ordinal: str | None = None
    held: tuple[Link, ...] = ()
    held_known: bool = True
    in_transaction: bool = True  # for a run: a transaction is open where it runs
    opens_own: bool = False  # for a run: the path it runs opens transactions of its own
    code_like: bool = False  # for a call: the label is an identifier, not words
    # for a take a foreign-key check implies: the write it comes from, in words
    derived: str | None = None
    attempt: str | None = None  # for a try: what the code does when the lock is not free
    under: tuple[Link, str] | None = None  # for a take within a parent: (parent lock, instance)
    # for a write: what it inserts into or updates, and the foreign keys it leaves alone
    table: str | None = None
    write_how: str | None = None  # "inserts into" | "updates"
    columns: tuple[str, ...] = ()
    fk_untouched: tuple[tuple[Link, str], ...] = ()  # (parent lock, referencing column)
    # for a loop with order: none: its iterations come in no order at all
    no_order: bool = False
    # for a set take: its elements, each a take line's facts (lock, instance, mode, marks)
    elements: tuple[StepView, ...] = ()


Located = dict[tuple[str, int, int], list[Event]]


class StepLines:
    """Builds one path's list lines; `tx_offset` and `loop_begins` are facts of that path."""

    def __init__(self, ctx: Context, p: m.Path, own: list[Event], txs: dict[str, TxView]) -> None:
        self.ctx = ctx
        self.txs = txs
        self.held_marks: dict[tuple[str, int, int], str] = {}  # take -> never|always|sometimes
        self.by_loc: Located = {}
        for e in own:
            loc = e.location
            self.by_loc.setdefault((loc.file, loc.line, loc.column), []).append(e)
        # A path without a kind starts in an implicit plain transaction; when nothing happens in
        # it (the path calls out first, then opens one), its first `begin` opens the first one.
        used = {"acquire", "retake", "upgrade", "write", "release", "leave_open"}
        self.tx_offset = int(
            not p.transaction and not any(e.kind in used and e.transaction == 1 for e in own)
        )
        self.loop_begins = any(
            isinstance(inner, m.Begin)
            for s in walk(p.steps)
            if isinstance(s, m.Loop)
            for inner in walk(s.steps)
        )

    def steps(
        self,
        steps: tuple[m.Step, ...],
        depth: int,
        out: list[StepView],
        start: int = 1,
        in_loop: bool = False,
        open_tx: bool = True,
    ) -> bool:
        """Append the list lines of `steps` at `depth`; loops and branches nest. `open_tx`
        says whether a transaction is open before them; returns whether one is open after."""
        ctx = self.ctx
        indent = "    " * depth
        for n, step in enumerate(steps, start):
            marker = f"{n}."
            loc = step.location
            evs = self.by_loc.get((loc.file, loc.line, loc.column), [])
            if isinstance(step, m.Take):
                out.append(self.take_view(step, indent, marker, evs))
            elif isinstance(step, m.Branches) and step.statement:
                out.append(self.set_view(step, indent, marker))
            elif isinstance(step, m.Loop):
                none = step.order == "none"
                out.append(
                    StepView(
                        kind="loop",
                        indent=indent,
                        marker=marker,
                        label=step.label,
                        order=None if none else order_words(step.order),
                        note=step.note,
                        no_order=none,
                    )
                )
                open_tx = self.steps(step.steps, depth + 1, out, in_loop=True, open_tx=open_tx)
            elif isinstance(step, m.Branches):
                out.append(StepView(kind="branches", indent=indent, marker=marker, note=step.note))
                inner = "    " * (depth + 1)
                after = False
                for name, alt in step.alternatives:
                    out.append(
                        StepView(
                            kind="branch" if alt else "empty-branch",
                            indent=inner,
                            marker="-",
                            label=name,
                        )
                    )
                    after = (
                        self.steps(alt, depth + 2, out, in_loop=in_loop, open_tx=open_tx) or after
                    )
                open_tx = after
            elif isinstance(step, m.Run):
                callee = ctx.model.paths.get(step.path)
                opens = callee is not None and any(
                    isinstance(s, m.Begin) for s in walk(callee.steps)
                )
                out.append(
                    StepView(
                        kind="run",
                        indent=indent,
                        marker=marker,
                        target=ctx.path_link(step.path),
                        target_title=callee.title if callee else step.path,
                        note=step.note,
                        in_transaction=open_tx,
                        opens_own=opens,
                    )
                )
                if opens and callee is not None:
                    open_tx = _ends_open(callee.steps, open_tx)
            elif isinstance(step, m.Call):
                out.append(
                    StepView(
                        kind="call",
                        indent=indent,
                        marker=marker,
                        label=step.name,
                        note=step.note,
                        code_like=" " not in step.name.strip(),
                    )
                )
            elif isinstance(step, m.External):
                held, known = self.held_at(evs)
                out.append(
                    StepView(
                        kind="external",
                        indent=indent,
                        marker=marker,
                        label=step.name,
                        note=step.note,
                        held=held,
                        held_known=known,
                    )
                )
            elif isinstance(step, m.Write):
                out.append(
                    StepView(
                        kind="write",
                        indent=indent,
                        marker=marker,
                        label=step.what,
                        via=step.via,
                        note=step.note,
                        table=step.insert or step.update,
                        write_how="inserts into"
                        if step.insert
                        else "updates"
                        if step.update
                        else None,
                        columns=step.columns,
                        fk_untouched=self.untouched(step),
                    )
                )
            elif isinstance(step, m.Begin):
                tx = self.txs.get(step.transaction)
                numbers = [e.transaction for e in evs if e.kind == "begin"]
                out.append(
                    StepView(
                        kind="begin",
                        indent=indent,
                        marker=marker,
                        target=tx.link if tx else Link(step.transaction),
                        target_title=tx.title if tx else step.transaction,
                        via=(tx.opened_by,) if tx and tx.opened_by else (),
                        first_lock=tx.first_lock if tx else None,
                        first_mode=tx.first_mode if tx else None,
                        ordinal=self.begin_ordinal(numbers, in_loop),
                        note=step.note,
                    )
                )
                open_tx = True
            elif isinstance(step, m.End):
                # A commit or rollback releases every transaction-scoped lock (the page says so
                # once); the line names only what outlives it.
                held, known = (
                    self.held_at(evs) if step.how == "leave_open" else self.kept_after(evs)
                )
                open_tx = step.how == "leave_open"
                out.append(
                    StepView(
                        kind=step.how,
                        indent=indent,
                        marker=marker,
                        note=step.note,
                        held=held,
                        held_known=known,
                    )
                )
            elif isinstance(step, m.Release):
                out.append(
                    StepView(
                        kind="release",
                        indent=indent,
                        marker=marker,
                        lock=ctx.lock_link(step.lock),
                        via=step.via,
                        note=step.note,
                    )
                )
        return open_tx

    def begin_ordinal(self, numbers: list[int], in_loop: bool) -> str:
        """'a second' from the analysis' transaction numbers; a loop's passes are unrolled
        there, so inside a loop (and after one that opens transactions) it says less."""
        if in_loop:
            return "a new"
        if not numbers or self.loop_begins:
            return "another"
        return ordinal(max(numbers) - self.tx_offset)

    def take_view(self, step: m.Take, indent: str, marker: str, evs: list[Event]) -> StepView:
        """A take, marked 'already held' or 'an upgrade' from what the analysis saw."""
        ctx = self.ctx
        lock = ctx.model.locks[step.lock]
        kinds = {e.kind for e in evs if e.kind in ("acquire", "retake", "upgrade")}
        if not kinds or kinds == {"acquire"}:
            held_before = "never"
        elif "acquire" in kinds:
            held_before = "sometimes"
        else:
            held_before = "always"
        loc = step.location
        self.held_marks[(loc.file, loc.line, loc.column)] = held_before
        upgrade_from = None
        for e in evs:
            if e.kind == "upgrade":
                prior = [h.mode for h in e.held if h.lock == e.lock]
                if prior:
                    upgrade_from = mode_label(lock.kind, prior[0])
                    break
        return StepView(
            kind="take",
            indent=indent,
            marker=marker,
            lock=ctx.lock_link(step.lock),
            mode=mode_label(lock.kind, step.mode, step.option),
            via=step.via,
            note=step.note,
            instance=step.instance,
            order=order_words(step.order),
            implicit=step.implicit,
            changes_key=step.changes_key,
            backend=step.backend,
            again=step.again,
            claimed=step.claimed,
            inserted=step.inserted,
            connection=step.connection,
            held_before=held_before,
            upgrade_from=upgrade_from,
            derived=step.derived,
            attempt=step.attempt,
            under=(ctx.lock_link(lock.within), step.under) if lock.within and step.under else None,
        )

    def set_view(self, step: m.Branches, indent: str, marker: str) -> StepView:
        """A set take as the one statement it is, from the set the model keeps (not from the
        alternatives, one per order, that the analysis walks)."""
        elements = []
        for take in step.statement:
            loc = take.location
            evs = self.by_loc.get((loc.file, loc.line, loc.column), [])
            elements.append(self.take_view(take, "", "", evs))
        first = step.statement[0]
        return StepView(
            kind="set",
            indent=indent,
            marker=marker,
            via=first.via,
            note=step.note,
            implicit=first.implicit,
            backend=step.backend,
            attempt=first.attempt,
            elements=tuple(elements),
        )

    def untouched(self, step: m.Write) -> tuple[tuple[Link, str], ...]:
        """The foreign keys of an updated table whose column the update leaves alone: Postgres
        checks none of them (see project.steps.foreign_key_takes)."""
        if step.update is None or not step.columns:
            return ()
        return tuple(
            (self.ctx.lock_link(lock.id), ref.column)
            for lock in self.ctx.model.locks.values()
            for ref in lock.references
            if ref.table == step.update
            and ref.column is not None
            and ref.column not in step.columns
        )

    def held_at(self, evs: list[Event]) -> tuple[tuple[Link, ...], bool]:
        """The locks held at a step on any branch (acquisition order), and whether it is known."""
        if not evs:
            return (), False
        seen: dict[str, None] = {}
        for e in evs:
            for h in e.held:
                seen.setdefault(h.lock, None)
        return tuple(self.ctx.lock_link(lid) for lid in seen), True

    def kept_after(self, evs: list[Event]) -> tuple[tuple[Link, ...], bool]:
        """The locks a commit or rollback does not release: session-scoped and in-process."""
        if not evs:
            return (), False
        seen: dict[str, None] = {}
        for e in evs:
            for h in e.held:
                lock = self.ctx.model.locks.get(h.lock)
                if lock is not None and (lock.kind == "memory" or lock.scope == "session"):
                    seen.setdefault(h.lock, None)
        return tuple(self.ctx.lock_link(lid) for lid in seen), True


def _ends_open(steps: tuple[m.Step, ...], open_tx: bool) -> bool:
    """Whether a transaction is open after these steps (structurally; branches: any)."""
    for s in steps:
        if isinstance(s, m.Begin):
            open_tx = True
        elif isinstance(s, m.End):
            open_tx = s.how == "leave_open"
        elif isinstance(s, m.Loop):
            open_tx = _ends_open(s.steps, open_tx)
        elif isinstance(s, m.Branches):
            open_tx = any(_ends_open(alt, open_tx) for _, alt in s.alternatives)
    return open_tx
