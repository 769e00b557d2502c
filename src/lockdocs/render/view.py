"""The page as data: every sort, group, join and derived sentence, done here in Python.

Templates only loop over these objects and escape what they print, so a team that overrides a
template cannot get the order or the facts wrong, and the golden tests pin the facts in one place.
Strings here are raw (unescaped) user text unless a field says otherwise; `Link` carries text and
a target that the `link` filter escapes and checks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from lockdocs import model as m
from lockdocs.analysis.flatten import Event, flatten
from lockdocs.diagnostics import Diagnostic
from lockdocs.render.edges import PairEdge, cycle_pairs, lock_edges, page_path_order
from lockdocs.render.escape import Link, slug
from lockdocs.render.words import (
    CATEGORIES,
    CATEGORY_ORDER,
    KIND_NOUN,
    KIND_ORDER,
    KIND_TITLES,
    as_tuple,
    bare,
    explain,
    extent,
    first_sentence,
    group_heading,
    key_category,
    key_expression,
    key_short,
    levels,
    mode_label,
    order_words,
    ordinal,
    scope_facts,
    sentence,
)

RESERVED_DIAGRAMS = frozenset({"lock-order"})


# --- view objects ----------------------------------------------------------------------------


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


@dataclass(frozen=True)
class KeyMemberView:
    """One advisory lock under its key construction (keys.md.j2)."""

    lock: Link
    sql: str
    value: int | None
    tag: tuple[int, int, int] | None
    pair: tuple[int, int] | None
    prefix: str | None
    parts: tuple[str, ...]
    cardinality: int | None
    constant_name: str | None
    constant_bytes: str | None
    outside_int32: bool


@dataclass(frozen=True)
class KeyGroupView:
    """One way keys are built, with the locks built that way (keys.md.j2)."""

    number: int
    anchor: str
    function: str | None  # hashtextextended | hashtext | None
    shape: str  # the words after the function
    explanation: str
    members: tuple[KeyMemberView, ...]


@dataclass(frozen=True)
class FindingView:
    """A diagnostic as the page lists it (finding.md.j2)."""

    code: str
    severity: str
    message: str
    where: str
    hint: str
    details: tuple[str, ...]
    waived_by: str


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
    used_by: tuple[Link, ...]


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


@dataclass(frozen=True)
class ExceptionView:
    """One exception and how many findings it waives (exceptions.md.j2)."""

    number: int
    anchor: str
    title: str
    rule: Link
    rule_summary: str | None
    path: Link | None
    lock: Link | None
    branch: str | None
    issue: Link | None
    why: str
    waives: int


@dataclass(frozen=True)
class EdgeView:
    """One row of the lock-order table (paths.md.j2)."""

    src: Link
    dst: Link
    paths: tuple[Link, ...]
    modes: str
    self_edge: bool
    ordered: bool
    cycle: str  # "" | "reported" | "waived"


@dataclass(frozen=True)
class DifferenceView:
    """A way the paths differ that breaks no rule (exceptions.md.j2)."""

    anchor: str
    title: str
    why: str
    issue: Link | None
    paths: tuple[Link, ...]
    locks: tuple[Link, ...]


@dataclass(frozen=True)
class PlannedView:
    """One piece of planned work (planned.md.j2)."""

    issue: Link
    title: str
    affects: tuple[Link, ...]


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
    key_findings: tuple[FindingView, ...]
    transactions: tuple[TxView, ...]
    lock_order_svg: str
    lock_order_dot: str
    edges: tuple[EdgeView, ...]
    levels: tuple[tuple[Link, ...], ...]
    order_rule: Link | None
    reported_cycles: int
    groups: tuple[GroupView, ...]
    rules: tuple[RuleView, ...]
    exceptions: tuple[ExceptionView, ...]
    differences: tuple[DifferenceView, ...]
    findings: tuple[FindingView, ...]
    waived: int
    planned: tuple[PlannedView, ...]


# --- building ----------------------------------------------------------------------------------


def issue_link(model: m.Model, number: int) -> Link:
    """#N linked through the project's issue template (plain text when it is unsafe)."""
    return Link(f"#{number}", model.issue_link(number))


def lock_anchor(lock_id: str) -> str:
    """The stable anchor of a lock's section: lock-<id>."""
    return f"lock-{lock_id}"


def path_anchor(path_id: str) -> str:
    """The stable anchor of a path's section: path-<id>."""
    return f"path-{path_id}"


def group_slugs(model: m.Model) -> dict[str, str]:
    """A unique slug per group title (also the diagram's file name)."""
    used: set[str] = set(RESERVED_DIAGRAMS)
    out: dict[str, str] = {}
    for g in model.groups:
        base = slug(g.title, "group")
        s, n = base, 2
        while s in used:
            s, n = f"{base}-{n}", n + 1
        used.add(s)
        out[g.title + "\x00" + g.file] = s
    return out


def group_key(g: m.Group) -> str:
    """A group's identity (two files may share a title)."""
    return g.title + "\x00" + g.file


def _finding(d: Diagnostic) -> FindingView:
    """A diagnostic as data for the templates; blank detail lines dropped."""
    return FindingView(
        code=d.code,
        severity=d.severity.value,
        message=sentence(d.message),
        where=str(d.location),
        hint=d.hint,
        details=tuple(x for x in d.details if x.strip()),
        waived_by=d.waived_by,
    )


class _Builder:
    """Builds the page view once per render; each method builds one section's objects."""

    def __init__(self, model: m.Model, diagnostics: list[Diagnostic], stem: str) -> None:
        self.model = model
        self.diags = diagnostics
        self.stem = stem
        self.path_rank = page_path_order(model)
        self.lock_links = {
            lid: Link(lock.title, "#" + lock_anchor(lid)) for lid, lock in model.locks.items()
        }
        self.path_links = {
            pid: Link(p.title, "#" + path_anchor(pid)) for pid, p in model.paths.items()
        }
        self.tx_links = {
            tid: Link(t.title or tid, f"#tx-{tid}") for tid, t in model.transactions.items()
        }
        self.rule_numbers = {rid: i + 1 for i, rid in enumerate(model.rules)}
        self.order_rule = next((r for r in model.rules.values() if r.check == "order"), None)
        self.levels: dict[str, int] = {}
        if self.order_rule is not None:
            for i, level in enumerate(levels(self.order_rule)):
                for lid in level:
                    self.levels.setdefault(lid, i + 1)
        self.events = {pid: flatten(model, only=pid) for pid in model.paths}
        self.tx_offset = 0  # set per path by path_view
        self.loop_begins = False  # set per path by path_view
        self.callers = self._callers()

    # -- helpers ----------------------------------------------------------------------------

    def lock_link(self, lock_id: str) -> Link:
        """A link to a lock's section (plain text for an unknown id)."""
        return self.lock_links.get(lock_id, Link(lock_id))

    def path_link(self, path_id: str) -> Link:
        """A link to a path's section (plain text for an unknown id)."""
        return self.path_links.get(path_id, Link(path_id))

    def by_page_order(self, path_ids: Iterable[str]) -> tuple[Link, ...]:
        """Links to paths, in the order the page shows them."""
        ids = sorted(set(path_ids), key=lambda p: (self.path_rank.get(p, 1 << 30), p))
        return tuple(self.path_link(p) for p in ids)

    def rule_link(self, rule_id: str) -> Link:
        """'rule N (title)' linked to the rule, or the bare id of a check code."""
        rule = self.model.rules.get(rule_id)
        if rule is None:
            return Link(rule_id)
        return Link(f"rule {self.rule_numbers[rule_id]} ({bare(rule.title)})", f"#rule-{rule_id}")

    def _callers(self) -> dict[str, set[str]]:
        """Which paths run each path (for 'Runs only inside')."""
        out: dict[str, set[str]] = {}
        for pid, p in self.model.paths.items():
            for step in _walk(p.steps):
                if isinstance(step, m.Run):
                    out.setdefault(step.path, set()).add(pid)
        return out

    # -- locks --------------------------------------------------------------------------------

    def taken_in(self) -> dict[str, set[str]]:
        """The paths whose own steps (or whose transaction kind) take each lock."""
        out: dict[str, set[str]] = {}
        for pid, p in self.model.paths.items():
            tk = (
                self.model.transactions.get(p.transaction)
                if p.transaction and p.standalone
                else None
            )
            if tk is not None and tk.first_lock:
                out.setdefault(tk.first_lock, set()).add(pid)
            for step in _walk(p.steps):
                if isinstance(step, m.Take):
                    out.setdefault(step.lock, set()).add(pid)
                elif isinstance(step, m.Begin):
                    bk = self.model.transactions.get(step.transaction)
                    if bk is not None and bk.first_lock:
                        out.setdefault(bk.first_lock, set()).add(pid)
        return out

    def lock_view(
        self, lock: m.Lock, taken: dict[str, set[str]], key_groups: dict[str, KeyGroupView]
    ) -> LockView:
        """One lock's section and table row."""
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
            self.tx_links[t.id] for t in self.model.transactions.values() if t.first_lock == lock.id
        )
        planned = tuple(
            issue_link(self.model, p.issue) for p in self.model.planned if lock.id in p.affects
        )
        return LockView(
            id=lock.id,
            anchor=lock_anchor(lock.id),
            title=lock.title,
            link=self.lock_link(lock.id),
            kind=lock.kind,
            kind_noun=KIND_NOUN.get(lock.kind, lock.kind),
            scope=lock.scope,
            extent=extent(lock),
            key_sql=key_expression(key) if key else None,
            key_short=key_short(key) if key else None,
            key_group=(
                Link(group_heading(group.function, group.shape), "#" + group.anchor)
                if group
                else None
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
            issues=tuple(issue_link(self.model, n) for n in lock.issues),
            taken_in=self.by_page_order(taken.get(lock.id, ())),
            first_of=first_of,
            level=self.levels.get(lock.id),
            order_rule=self.rule_link(self.order_rule.id) if self.order_rule else None,
            planned=planned,
        )

    # -- keys ---------------------------------------------------------------------------------

    def key_groups(self) -> tuple[tuple[KeyGroupView, ...], dict[str, KeyGroupView]]:
        """The key constructions in a fixed order, and each advisory lock's group."""
        buckets: dict[str, list[m.Lock]] = {}
        for lock in self.model.locks.values():
            if lock.key is not None:
                buckets.setdefault(key_category(lock.key), []).append(lock)
        has_hashtext = any(c.startswith("hashtext-") for c in buckets)
        groups: list[KeyGroupView] = []
        by_lock: dict[str, KeyGroupView] = {}
        for cat in CATEGORY_ORDER:
            locks = buckets.get(cat)
            if not locks:
                continue
            function, shape, anchor = CATEGORIES[cat]
            members = tuple(self.key_member(lk, has_hashtext) for lk in locks)
            view = KeyGroupView(
                number=len(groups) + 1,
                anchor=anchor,
                function=function,
                shape=shape,
                explanation=explain(cat, locks, has_hashtext),
                members=members,
            )
            groups.append(view)
            for lk in locks:
                by_lock[lk.id] = view
        return tuple(groups), by_lock

    def key_member(self, lock: m.Lock, has_hashtext: bool) -> KeyMemberView:
        """One lock's line under its key construction."""
        key = lock.key
        assert key is not None
        kt = key.text
        outside = key.value is not None and not -(2**31) <= key.value < 2**31
        return KeyMemberView(
            lock=self.lock_link(lock.id),
            sql=key_expression(key),
            value=key.value if key.construction not in ("int4pair", "constant") else None,
            tag=key.tag,
            pair=key.pair,
            prefix=kt.prefix if kt else None,
            parts=kt.parts if kt else (),
            cardinality=kt.cardinality if kt else None,
            constant_name=key.constant_name,
            constant_bytes=key.constant_bytes,
            outside_int32=outside and key.construction == "constant" and has_hashtext,
        )

    # -- transactions -------------------------------------------------------------------------

    def tx_view(self, tk: m.TransactionKind) -> TxView:
        """One transaction kind and the paths that use it."""
        users = [
            pid for pid, p in self.model.paths.items() if p.transaction == tk.id and p.standalone
        ]
        for pid, p in self.model.paths.items():
            for step in _walk(p.steps):
                if isinstance(step, m.Begin) and step.transaction == tk.id:
                    users.append(pid)
        first = self.model.locks.get(tk.first_lock) if tk.first_lock else None
        return TxView(
            id=tk.id,
            anchor=f"tx-{tk.id}",
            title=tk.title or tk.id,
            link=self.tx_links[tk.id],
            opened_by=tk.opened_by,
            first_lock=self.lock_link(tk.first_lock) if tk.first_lock else None,
            first_mode=(
                mode_label(first.kind, tk.first_mode)
                if first is not None and tk.first_mode
                else None
            ),
            isolation=tk.isolation,
            lock_timeout=tk.lock_timeout or "none",
            bounded=tk.lock_timeout is not None,
            on_timeout=tk.on_timeout,
            notes=tk.notes,
            used_by=self.by_page_order(users),
        )

    # -- paths --------------------------------------------------------------------------------

    def path_view(self, p: m.Path, txs: dict[str, TxView]) -> PathView:
        """One path: header facts from the model, steps annotated from the analysis."""
        own = [e for e in self.events[p.id] if not e.through]
        by_loc: dict[tuple[str, int, int], list[Event]] = {}
        for e in own:
            loc = e.location
            by_loc.setdefault((loc.file, loc.line, loc.column), []).append(e)
        # A path without a kind starts in an implicit plain transaction; when nothing happens in
        # it (the path calls out first, then opens one), its first `begin` opens the first one.
        used = {"acquire", "retake", "upgrade", "write", "release", "leave_open"}
        self.tx_offset = int(
            not p.transaction and not any(e.kind in used and e.transaction == 1 for e in own)
        )
        self.loop_begins = any(
            isinstance(inner, m.Begin)
            for s in _walk(p.steps)
            if isinstance(s, m.Loop)
            for inner in _walk(s.steps)
        )
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
        self.steps(p.steps, 0, lines, by_loc, txs, start=len(lines) + 1)
        waivers = tuple(
            Link(f"exception {w.index + 1}", f"#exception-{w.index + 1}")
            for w in self.model.waivers
            if w.path == p.id
        )
        planned = tuple(
            issue_link(self.model, pl.issue) for pl in self.model.planned if p.id in pl.affects
        )
        count = max((e.transaction for e in own), default=1) - self.tx_offset
        if self.loop_begins:
            count = 0  # one per loop pass: no fixed number
        return PathView(
            id=p.id,
            anchor=path_anchor(p.id),
            title=p.title,
            link=self.path_link(p.id),
            file=p.file,
            entry=p.entry,
            transaction=tx,
            standalone=p.standalone,
            run_by=self.by_page_order(self.callers.get(p.id, ())),
            summary=p.summary,
            notes=p.notes,
            issues=tuple(issue_link(self.model, n) for n in p.issues),
            exceptions=waivers,
            planned=planned,
            steps=tuple(lines),
            transactions=count,
            opens_later=bool(self.tx_offset),
        )

    def steps(
        self,
        steps: tuple[m.Step, ...],
        depth: int,
        out: list[StepView],
        by_loc: dict[tuple[str, int, int], list[Event]],
        txs: dict[str, TxView],
        start: int = 1,
        in_loop: bool = False,
    ) -> None:
        """Append the list lines of `steps` at `depth`; loops and branches nest."""
        indent = "    " * depth
        for n, step in enumerate(steps, start):
            marker = f"{n}."
            loc = step.location
            evs = by_loc.get((loc.file, loc.line, loc.column), [])
            if isinstance(step, m.Take):
                out.append(self.take_view(step, indent, marker, evs))
            elif isinstance(step, m.Loop):
                out.append(
                    StepView(
                        kind="loop",
                        indent=indent,
                        marker=marker,
                        label=step.label,
                        order=order_words(step.order),
                        note=step.note,
                    )
                )
                self.steps(step.steps, depth + 1, out, by_loc, txs, in_loop=True)
            elif isinstance(step, m.Branches):
                out.append(StepView(kind="branches", indent=indent, marker=marker, note=step.note))
                inner = "    " * (depth + 1)
                for name, alt in step.alternatives:
                    out.append(
                        StepView(
                            kind="branch" if alt else "empty-branch",
                            indent=inner,
                            marker="-",
                            label=name,
                        )
                    )
                    self.steps(alt, depth + 2, out, by_loc, txs, in_loop=in_loop)
            elif isinstance(step, m.Run):
                callee = self.model.paths.get(step.path)
                out.append(
                    StepView(
                        kind="run",
                        indent=indent,
                        marker=marker,
                        target=self.path_link(step.path),
                        target_title=callee.title if callee else step.path,
                        note=step.note,
                    )
                )
            elif isinstance(step, m.Call):
                out.append(
                    StepView(
                        kind="call", indent=indent, marker=marker, label=step.name, note=step.note
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
                    )
                )
            elif isinstance(step, m.Begin):
                tx = txs.get(step.transaction)
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
            elif isinstance(step, m.End):
                held, known = self.held_at(evs, released_only=step.how != "leave_open")
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
                        lock=self.lock_link(step.lock),
                        via=step.via,
                        note=step.note,
                    )
                )

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
        lock = self.model.locks[step.lock]
        kinds = {e.kind for e in evs if e.kind in ("acquire", "retake", "upgrade")}
        if not kinds or kinds == {"acquire"}:
            held_before = "never"
        elif "acquire" in kinds:
            held_before = "sometimes"
        else:
            held_before = "always"
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
            lock=self.lock_link(step.lock),
            mode=mode_label(lock.kind, step.mode, step.option),
            via=step.via,
            note=step.note,
            instance=step.instance,
            order=order_words(step.order),
            implicit=step.implicit,
            changes_key=step.changes_key,
            backend=step.backend,
            again=step.again,
            held_before=held_before,
            upgrade_from=upgrade_from,
        )

    def held_at(
        self,
        evs: list[Event],
        *,
        released_only: bool = False,
    ) -> tuple[tuple[Link, ...], bool]:
        """The locks held at a step on any branch (acquisition order), and whether it is known;
        `released_only` keeps the ones a commit or rollback releases (not session-scoped ones)."""
        if not evs:
            return (), False
        seen: dict[str, None] = {}
        for e in evs:
            for h in e.held:
                lock = self.model.locks.get(h.lock)
                if released_only and (
                    lock is None or lock.kind == "memory" or lock.scope == "session"
                ):
                    continue
                seen.setdefault(h.lock, None)
        return tuple(self.lock_link(lid) for lid in seen), True

    # -- rules, exceptions, findings ----------------------------------------------------------

    def rule_view(self, rule: m.Rule) -> RuleView:
        """One rule, with its check's parameters resolved to links."""
        p = dict(rule.params)
        base: dict[str, object] = {}
        if rule.check == "first":
            lock = self.model.locks.get(str(p.get("lock")))
            mode = p.get("mode")
            base = {
                "lock": self.lock_link(str(p["lock"])),
                "mode": mode_label(lock.kind, str(mode)) if lock and mode else None,
                "transactions": tuple(
                    self.tx_links.get(str(t), Link(str(t))) for t in as_tuple(p.get("transactions"))
                ),
                "when_writes": tuple(str(w) for w in as_tuple(p.get("when_writes"))),
            }
        elif rule.check == "before":
            base = {
                "first": self.lock_link(str(p["first"])),
                "then": self.lock_link(str(p["then"])),
            }
        elif rule.check == "sorted":
            lock = self.model.locks.get(str(p["lock"]))
            base = {
                "lock": self.lock_link(str(p["lock"])),
                "order": order_words(lock.instance_order) if lock else None,
            }
        elif rule.check == "scope":
            base = {
                "kind_noun": KIND_NOUN.get(str(p["kind"]), str(p["kind"])),
                "scope": str(p["scope"]),
            }
        elif rule.check == "order":
            base = {
                "levels": tuple(
                    tuple(self.lock_link(lid) for lid in level) for level in levels(rule)
                )
            }
        elif rule.check == "lock_before_write":
            base = {
                "lock": self.lock_link(str(p["lock"])),
                "writes": tuple(str(w) for w in as_tuple(p.get("writes"))),
            }
        exceptions = tuple(
            Link(f"exception {w.index + 1}", f"#exception-{w.index + 1}")
            for w in self.model.waivers
            if w.rule == rule.id
        )
        return RuleView(
            number=self.rule_numbers[rule.id],
            id=rule.id,
            anchor=f"rule-{rule.id}",
            title=sentence(rule.title),
            text=rule.text,
            check=rule.check,
            issues=tuple(issue_link(self.model, n) for n in rule.issues),
            exceptions=exceptions,
            **base,  # type: ignore[arg-type]
        )

    def exception_view(self, w: m.Waiver, summaries: dict[str, str]) -> ExceptionView:
        """One exception, with the number of findings it waives in this run."""
        from lockdocs.rules.waivers import waiver_label  # lazy: rules import lazily

        label = waiver_label(self.model, w)
        waives = sum(1 for d in self.diags if d.waived_by == label)
        if w.rule in self.model.rules:
            rule = self.rule_link(w.rule)
            summary = None
        else:
            rule = Link(w.rule)
            summary = bare(summaries[w.rule]) if w.rule in summaries else None
        return ExceptionView(
            number=w.index + 1,
            anchor=f"exception-{w.index + 1}",
            title=sentence(w.title or f"Exception {w.index + 1}"),
            rule=rule,
            rule_summary=summary,
            path=self.path_link(w.path) if w.path else None,
            lock=self.lock_link(w.lock) if w.lock else None,
            branch=w.branch,
            issue=issue_link(self.model, w.issue) if w.issue else None,
            why=w.why,
            waives=waives,
        )

    # -- lock order ---------------------------------------------------------------------------

    def edge_views(self, edges: list[PairEdge]) -> tuple[EdgeView, ...]:
        """The lock-order table's rows, with reported cycles marked."""
        live, waived = cycle_pairs(self.diags)
        out = []
        for e in edges:
            pair = (e.src, e.dst)
            cycle = "reported" if pair in live else "waived" if pair in waived else ""
            lock_kind = self.model.locks[e.dst].kind
            src_kind = self.model.locks[e.src].kind
            modes = ", ".join(
                f"{mode_label(src_kind, h)} then {mode_label(lock_kind, w)}" for h, w in e.modes
            )
            out.append(
                EdgeView(
                    src=self.lock_link(e.src),
                    dst=self.lock_link(e.dst),
                    paths=tuple(self.path_link(p) for p in e.paths),
                    modes=modes,
                    self_edge=e.src == e.dst,
                    ordered=e.ordered,
                    cycle=cycle,
                )
            )
        return tuple(out)

    # -- page ---------------------------------------------------------------------------------

    def page(self) -> PageView:
        """The whole page view."""
        model = self.model
        key_groups, key_by_lock = self.key_groups()
        taken = self.taken_in()
        lock_views = {
            lid: self.lock_view(lk, taken, key_by_lock) for lid, lk in model.locks.items()
        }
        tables = tuple(
            LockTableView(
                kind,
                f"{kind}-locks",
                KIND_TITLES[kind],
                tuple(v for v in lock_views.values() if v.kind == kind),
            )
            for kind in KIND_ORDER
            if any(v.kind == kind for v in lock_views.values())
        )
        txs = {tid: self.tx_view(t) for tid, t in model.transactions.items()}
        slugs = group_slugs(model)
        stem_name = PurePosixPath(self.stem).name
        groups = []
        for g in model.groups:
            s = slugs[group_key(g)]
            groups.append(
                GroupView(
                    title=g.title,
                    anchor=f"group-{s}",
                    slug=s,
                    intro=g.intro,
                    transaction=txs.get(g.transaction) if g.transaction else None,
                    paths=tuple(self.path_view(model.paths[pid], txs) for pid in g.paths),
                    diagram=f"{stem_name}/{s}.svg",
                    diagram_dot=f"{stem_name}/{s}.dot",
                )
            )
        from lockdocs.rules.registry import load_all  # lazy: heavy, only here

        summaries = {code: info.summary for code, info in load_all().items()}
        edges = lock_edges(model)
        edge_views = self.edge_views(edges)
        return PageView(
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
            key_groups=key_groups,
            key_findings=tuple(_finding(d) for d in self.diags if d.code.startswith("LD1")),
            transactions=tuple(txs.values()),
            lock_order_svg=f"{stem_name}/lock-order.svg",
            lock_order_dot=f"{stem_name}/lock-order.dot",
            edges=edge_views,
            levels=tuple(
                tuple(self.lock_link(lid) for lid in level)
                for level in (levels(self.order_rule) if self.order_rule else ())
            ),
            order_rule=self.rule_link(self.order_rule.id) if self.order_rule else None,
            reported_cycles=sum(1 for d in self.diags if d.code == "LD201" and not d.waived_by),
            groups=tuple(groups),
            rules=tuple(self.rule_view(r) for r in model.rules.values()),
            exceptions=tuple(self.exception_view(w, summaries) for w in model.waivers),
            differences=tuple(
                DifferenceView(
                    anchor=f"difference-{i + 1}",
                    title=sentence(d.title),
                    why=d.why,
                    issue=issue_link(model, d.issue) if d.issue else None,
                    paths=tuple(self.path_link(p) for p in d.paths),
                    locks=tuple(self.lock_link(lk) for lk in d.locks),
                )
                for i, d in enumerate(model.differences)
            ),
            findings=tuple(_finding(d) for d in self.diags if not d.waived_by),
            waived=sum(1 for d in self.diags if d.waived_by),
            planned=tuple(
                PlannedView(
                    issue_link(model, p.issue),
                    sentence(p.title),
                    tuple(
                        self.lock_link(a) if a in model.locks else self.path_link(a)
                        for a in p.affects
                    ),
                )
                for p in model.planned
            ),
        )


# --- pure helpers --------------------------------------------------------------------------


def _walk(steps: tuple[m.Step, ...]) -> Iterable[m.Step]:
    """Every step, nested ones included, in document order (not into run: targets)."""
    for s in steps:
        yield s
        if isinstance(s, m.Loop):
            yield from _walk(s.steps)
        elif isinstance(s, m.Branches):
            for _, alt in s.alternatives:
                yield from _walk(alt)


def build_page(model: m.Model, diagnostics: list[Diagnostic], stem: str) -> PageView:
    """The page's view model; `stem` is the page's path under docs/ without `.md`."""
    return _Builder(model, diagnostics, stem).page()
