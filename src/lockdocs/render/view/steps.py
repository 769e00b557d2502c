"""A path's steps as the lines of a nested list, annotated from the analysis: a take already
held, an upgrade, the locks a commit releases, which transaction a step opens.

Every line starts with what the path does, in the third person ("Takes", "Writes", "Opens",
"Commits"), or says how the steps that follow nest ("For each ...", "One of"); a transaction
kind's title is a noun ("opens a plain transaction", "a transaction of the
entitlements.Materializing kind"), never a tag before the word "transaction".
"""

from __future__ import annotations

from typing import assert_never

from lockdocs import model as m
from lockdocs.analysis.events import Event
from lockdocs.render.escape import Link
from lockdocs.render.view.base import PageContext
from lockdocs.render.view.stepview import (
    StepView,
    ends_open,
    held_mark,
    memory_backend,
    next_marker,
)
from lockdocs.render.view.transactions import TxView
from lockdocs.render.words import (
    ABSENT,
    HELD_WORDS,
    backend_name,
    mode_label,
    order_phrase,
    tx_words,
)

Located = dict[tuple[str, int, int], list[Event]]


class StepLines:
    """Builds one path's list lines; `tx_offset` and `loop_begins` are facts of that path."""

    def __init__(
        self, ctx: PageContext, p: m.Path, own: list[Event], txs: dict[str, TxView]
    ) -> None:
        self.ctx = ctx
        self.txs = txs
        self.path = p
        self.held_marks: dict[tuple[str, int, int], str] = {}  # take -> never|always|later|maybe
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
            for s in m.walk_steps(p.steps)
            if isinstance(s, m.Loop)
            for inner in m.walk_steps(s.steps)
        )
        # transactions opened so far, by kind (the path's own first one included)
        self.opened: dict[str, int] = {}
        if p.transaction and not self.tx_offset:
            self.opened[p.transaction] = 1
        self.several = ctx.several_in(p.id)
        # the parent locks a write's foreign-key check takes on some walk, by the write
        self.checked: dict[tuple[str, int, int], set[str]] = {}
        for s in m.walk_steps(p.steps):
            if isinstance(s, m.Take) and s.derived and ctx.happens(s):
                at = s.location
                self.checked.setdefault((at.file, at.line, at.column), set()).add(s.lock)
        # the backends of the path's own takes, by line (a hold's acquired_at)
        self.take_backends: dict[int, set[str | None]] = {}
        for s in m.walk_steps(p.steps):
            if isinstance(s, m.Take) and s.location.file == p.file:
                self.take_backends.setdefault(s.location.line, set()).add(s.backend)

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
        indent = "    " * depth
        n = start - 1
        for step in steps:
            n += 1
            marker = f"{n}."
            loc = step.location
            evs = self.by_loc.get((loc.file, loc.line, loc.column), [])
            match step:
                case m.Take():
                    if not self.ctx.happens(step):
                        # a re-check no walk reaches: the write's line says so, the diagram omits it
                        self.held_marks[(loc.file, loc.line, loc.column)] = ABSENT
                        n -= 1
                        continue
                    out.append(self.take_view(step, indent, marker, evs, in_loop))
                case m.Branches() if step.statement:
                    out.append(self.set_view(step, indent, marker, in_loop))
                case m.Loop():
                    out.append(self.loop_view(step, indent, marker))
                    open_tx = self.steps(step.steps, depth + 1, out, in_loop=True, open_tx=open_tx)
                case m.Branches():
                    out.append(
                        StepView(kind="branches", indent=indent, marker=marker, note=step.note)
                    )
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
                            self.steps(alt, depth + 2, out, in_loop=in_loop, open_tx=open_tx)
                            or after
                        )
                    open_tx = after
                case m.Run():
                    open_tx = self.run_view(step, indent, marker, out, open_tx)
                case m.Leaf():  # every other kind with no steps inside: simple() words it
                    before = len(out)
                    open_tx = self.simple(step, indent, marker, evs, in_loop, out, open_tx)
                    n += len(out) - before - 1
                case _:
                    assert_never(step)
        return open_tx

    def loop_view(self, step: m.Loop, indent: str, marker: str) -> StepView:
        """A loop: its order when it has one; "in no fixed order" only when the passes pile up
        instances of one lock in one transaction (then the order matters for a deadlock)."""
        order: str | None
        if step.order == "none":
            order = "in no particular order"
        elif step.order:
            order = order_phrase(step.order)
        else:
            piles = any(
                isinstance(s, m.Take) and not s.again and s.lock in self.several
                for s in m.walk_steps(step.steps)
            ) and not any(isinstance(s, m.Begin) for s in m.walk_steps(step.steps))
            order = "in no fixed order" if piles else None
        return StepView(
            kind="loop", indent=indent, marker=marker, label=step.label, order=order, note=step.note
        )

    def run_view(
        self, step: m.Run, indent: str, marker: str, out: list[StepView], open_tx: bool
    ) -> bool:
        callee = self.ctx.model.paths.get(step.path)
        opens = callee is not None and any(
            isinstance(s, m.Begin) for s in m.walk_steps(callee.steps)
        )
        out.append(
            StepView(
                kind="run",
                indent=indent,
                marker=marker,
                target=self.ctx.path_link(step.path),
                target_title=callee.title if callee else step.path,
                note=step.note,
                in_transaction=open_tx,
                opens_own=opens,
            )
        )
        if opens and callee is not None:
            open_tx = ends_open(callee.steps, open_tx)
        return open_tx

    def simple(
        self,
        step: m.Step,
        indent: str,
        marker: str,
        evs: list[Event],
        in_loop: bool,
        out: list[StepView],
        open_tx: bool,
    ) -> bool:
        """A step that does not nest: a call, a call out, a write, a transaction's start or end,
        a release."""
        ctx = self.ctx
        match step:
            case m.Call():
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
            case m.External():
                holding, known = self.held_at(evs)
                out.append(
                    StepView(
                        kind="external",
                        indent=indent,
                        marker=marker,
                        label=step.name,
                        note=step.note,
                        holding=holding,
                        held_known=known,
                    )
                )
            case m.Write():
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
                        backend=backend_name(step.backend),
                    )
                )
            case m.Begin():
                out.extend(self.begin_views(step, indent, marker, in_loop))
                open_tx = True
            case m.End():
                # A commit or rollback releases every transaction-scoped lock (the page says so
                # once); the line names only what outlives it.
                holding, known = (
                    self.held_at(evs) if step.how == "leave_open" else self.kept_after(evs)
                )
                open_tx = step.how == "leave_open"
                out.append(
                    StepView(
                        kind=step.how,
                        indent=indent,
                        marker=marker,
                        note=step.note,
                        holding=holding,
                        held_known=known,
                        backend=backend_name(step.backend),
                    )
                )
            case m.Release():
                lock = ctx.model.locks.get(step.lock)
                out.append(
                    StepView(
                        kind="release",
                        indent=indent,
                        marker=marker,
                        lock=ctx.lock_link(step.lock),
                        via=step.via,
                        note=step.note,
                        backend=backend_name(step.backend or memory_backend(lock)),
                    )
                )
            case m.Take() | m.Loop() | m.Branches() | m.Run():  # pragma: no cover
                raise AssertionError(f"a step that nests or takes: {step!r}")
            case _:
                assert_never(step)
        return open_tx

    def begin_views(self, step: m.Begin, indent: str, marker: str, in_loop: bool) -> list[StepView]:
        """A transaction's start (which one of its kind it is) and, as the next line, the lock
        the kind takes first."""
        tx = self.txs.get(step.transaction)
        title = tx.title if tx else step.transaction
        seen = self.opened.get(step.transaction, 0)
        self.opened[step.transaction] = seen + 1
        if in_loop:
            det = "a new"
        elif seen == 0:
            det = "a"
        elif seen == 1 and not self.loop_begins:
            det = "a second"
        else:
            det = "another"
        before, after = tx_words(title, det)
        lines = [
            StepView(
                kind="begin",
                indent=indent,
                marker=marker,
                target=tx.link if tx else Link(step.transaction),
                target_title=title,
                # the opener is named with the lock it takes first, when it takes one
                via=(tx.opened_by,) if tx and tx.opened_by and not tx.first_lock else (),
                tx_before=before,
                tx_after=after,
                note=step.note,
            )
        ]
        if tx is not None and tx.first_lock is not None:
            lines.append(
                StepView(
                    kind="first",
                    indent=indent,
                    marker=next_marker(marker),
                    via=(tx.opened_by,) if tx.opened_by else (),
                    first_lock=tx.first_lock,
                    first_mode=tx.first_mode,
                )
            )
        return lines

    def take_view(
        self, step: m.Take, indent: str, marker: str, evs: list[Event], in_loop: bool
    ) -> StepView:
        """A take, marked already held or an upgrade from what the analysis saw."""
        ctx = self.ctx
        lock = ctx.model.locks[step.lock]
        elsewhere = None
        if step.backend is not None:
            lines = self.take_backends

            def elsewhere(line: int) -> bool:
                found = lines.get(line, set())
                return bool(found) and None not in found and step.backend not in found

        mark = held_mark(evs, step, in_loop, elsewhere)
        loc = step.location
        self.held_marks[(loc.file, loc.line, loc.column)] = mark
        upgrade_from = None
        for e in evs:
            if e.kind == "upgrade":
                prior = [h.mode for h in e.held if h.lock == e.lock]
                if prior:
                    upgrade_from = mode_label(lock.kind, prior[0])
                    break
        backend = next((b for b in lock.backends if b.name == step.backend), None)
        memory = lock.kind == "memory" or (backend is not None and backend.kind == "memory")
        if memory and lock.kind != "memory":
            # a database lock this backend keeps in the process instead (a lockset entry)
            mode = backend.mode if backend and backend.mode else "exclusive"
            mode_text = f"{mode}, in memory"
        else:
            mode_text = mode_label(lock.kind, step.mode, step.option)
        changes_key = None
        if step.changes_key and not (step.implicit or "").upper().startswith("DELETE"):
            changes_key = "changes a column of a unique key, so Postgres takes FOR UPDATE"
        return StepView(
            kind="take",
            indent=indent,
            marker=marker,
            lock=ctx.lock_link(step.lock),
            mode=mode_text,
            via=step.via,
            note=step.note,
            instance=step.instance,
            order=order_phrase(step.order),
            implicit=step.implicit,
            changes_key=changes_key,
            backend=backend_name(step.backend),
            held=mark,
            held_words=HELD_WORDS.get(mark),
            claimed=step.claimed,
            inserted=step.inserted,
            connection=step.connection,
            upgrade_from=upgrade_from,
            derived=step.derived,
            recheck=step.is_recheck,
            attempt=step.attempt,
            under=(ctx.lock_link(lock.within), step.under) if lock.within and step.under else None,
            memory=memory,
        )

    def set_view(self, step: m.Branches, indent: str, marker: str, in_loop: bool) -> StepView:
        """A set take as the one statement it is, from the set the model keeps (not from the
        alternatives, one per order, that the analysis walks)."""
        elements = []
        for take in step.statement:
            loc = take.location
            evs = self.by_loc.get((loc.file, loc.line, loc.column), [])
            elements.append(self.take_view(take, "", "", evs, in_loop))
        first = step.statement[0]
        return StepView(
            kind="set",
            indent=indent,
            marker=marker,
            via=first.via,
            note=step.note,
            implicit=first.implicit,
            backend=backend_name(step.backend),
            attempt=first.attempt,
            elements=tuple(elements),
        )

    def untouched(self, step: m.Write) -> tuple[tuple[Link, str], ...]:
        """The foreign keys of an updated table whose column the update leaves alone and that
        Postgres does not check again here (`rechecked`: the parent locks whose re-check take
        follows the write on some walk; see project.steps.foreign_key_takes)."""
        if step.update is None or not step.columns:
            return ()
        at = step.location
        rechecked = self.checked.get((at.file, at.line, at.column), set())
        return tuple(
            (self.ctx.lock_link(lock.id), ref.column)
            for lock in self.ctx.model.locks.values()
            if lock.id not in rechecked
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
