"""What every section's view model shares: links to locks, paths, transaction kinds and rules,
the page order of the paths, and the anchors other pages link to.

Built once per render (`PageContext`); each section module reads it and builds its own objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockdocs import model as m
from lockdocs.analysis.budget import Budget
from lockdocs.analysis.events import Event, Refusal
from lockdocs.analysis.flatten import flatten_all
from lockdocs.diagnostics import Diagnostic
from lockdocs.render.edges import EdgeSet, PairEdge, cycle_pairs, page_path_order
from lockdocs.render.escape import Link, slug
from lockdocs.render.targets import RenderError
from lockdocs.render.view.stepview import ends_open
from lockdocs.render.words import bare, levels
from lockdocs.rules.catalog import load_all
from lockdocs.rules.waivers import waiver_label

if TYPE_CHECKING:
    from lockdocs.rules.context import CheckContext

RESERVED_DIAGRAMS = frozenset({"lock-order"})


def issue_link(model: m.Model, number: int) -> Link:
    """#N linked through the project's issue template (plain text when it is unsafe)."""
    return Link(f"#{number}", model.issue_link(number))


def lock_anchor(lock_id: str) -> str:
    """The stable anchor of a lock's section: lock-<id>."""
    return f"lock-{lock_id}"


def path_anchor(path_id: str) -> str:
    """The stable anchor of a path's section: path-<id>."""
    return f"path-{path_id}"


def tx_anchor(tx_id: str) -> str:
    """The stable anchor of a transaction kind: tx-<id>."""
    return f"tx-{tx_id}"


def group_key(g: m.Group) -> str:
    """A group's identity (two files may share a title)."""
    return g.title + "\x00" + g.file


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
        out[group_key(g)] = s
    return out


@dataclass(frozen=True)
class IssueRef:
    """An issue a lock or path names; `planned` when it is also listed as planned work."""

    link: Link
    planned: bool


class PageContext:
    """The model, the findings and the links every section uses; built once per render."""

    def __init__(
        self,
        model: m.Model,
        diagnostics: list[Diagnostic],
        stem: str,
        facts: CheckContext | None = None,
    ) -> None:
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
            tid: Link(t.title or tid, "#" + tx_anchor(tid)) for tid, t in model.transactions.items()
        }
        self.rule_numbers = {rid: i + 1 for i, rid in enumerate(model.rules)}
        self.order_rule = next((r for r in model.rules.values() if r.check == "order"), None)
        self.levels: dict[str, int] = {}
        if self.order_rule is not None:
            for i, level in enumerate(levels(self.order_rule)):
                for lid in level:
                    self.levels.setdefault(lid, i + 1)
        self.callers = self._callers()
        self.edges = EdgeSet(model, facts)
        self._events: dict[str, list[Event]] = {}
        # The page walks each path with everything it runs (the analysis walks only the
        # standalone ones): a run: chain of n links is n²/2 steps here, so these walks share
        # a budget of their own, counted (never timed: the page must not depend on the machine).
        self._walks = Budget(model.limits.analysis_work)
        self._pairs_of: dict[str, list[PairEdge]] | None = None
        self._derived: dict[str, list[str]] | None = None
        self._several: dict[str, tuple[str, ...]] | None = None
        self._several_in: dict[str, set[str]] | None = None
        self._children: dict[str, list[str]] | None = None
        self._waived: dict[str, list[tuple[tuple[str, ...], m.Waiver]]] | None = None
        self._sites: dict[str, tuple[tuple[str, bool], ...]] | None = None
        self._rechecks: set[tuple[str, str, int, int]] | None = None
        self._cycles: tuple[set[tuple[str, str]], set[tuple[str, str]]] | None = None

    def cycles(self) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
        """The edges of reported cycles, (unwaived, waived) (`edges.cycle_pairs`), found once:
        the view of each pair taken both ways asks for them."""
        if self._cycles is None:
            self._cycles = cycle_pairs(self.diags)
        return self._cycles

    def run_sites(self) -> dict[str, tuple[tuple[str, bool], ...]]:
        """For each path run by others: (caller, whether a transaction is open where the caller
        runs it), in the callers' declaration order."""
        if self._sites is None:
            sites: dict[str, list[tuple[str, bool]]] = {}
            for pid, p in self.model.paths.items():
                _sites(self.model, pid, p.steps, True, sites)
            self._sites = {k: tuple(dict.fromkeys(v)) for k, v in sites.items()}
        return self._sites

    def several_paths(self) -> dict[str, tuple[str, ...]]:
        """The paths that hold two or more instances of a lock at once, by lock (the graph's
        self-edges)."""
        if self._several is None:
            self._several = {e.src: e.paths for e in self.edges.pairs if e.src == e.dst}
        return self._several

    def several_in(self, path_id: str) -> set[str]:
        """The locks the path holds two or more instances of at once (indexed once: looking
        each path up in every lock's paths made a page of thousands quadratic)."""
        if self._several_in is None:
            index: dict[str, set[str]] = {}
            for lock, paths in self.several_paths().items():
                for pid in paths:
                    index.setdefault(pid, set()).add(lock)
            self._several_in = index
        return set(self._several_in.get(path_id, ()))

    def children(self, lock_id: str) -> list[str]:
        """The locks declared `within` this one, in declaration order (indexed once)."""
        if self._children is None:
            index: dict[str, list[str]] = {}
            for other in self.model.locks.values():
                if other.within is not None:
                    index.setdefault(other.within, []).append(other.id)
            self._children = index
        return self._children.get(lock_id, [])

    def happens(self, step: m.Take) -> bool:
        """Whether a take happens on some walk: always, except a foreign-key re-check (see
        project.steps.foreign_key_takes) that no walk reaches with the table already written in
        its transaction. The page must not show a lock Postgres never takes there."""
        if step.recheck is None:
            return True
        if self._rechecks is None:
            self._rechecks = {
                (e.lock, e.location.file, e.location.line, e.location.column)
                for pid in self.model.paths
                for e in self.events(pid)
                if e.kind in ("acquire", "retake", "upgrade") and e.implicit
            }
        loc = step.location
        return (step.lock, loc.file, loc.line, loc.column) in self._rechecks

    def derived_in(self, lock_id: str) -> list[str]:
        """The paths (in declaration order) with a take of the lock that lockdocs derived
        (indexed once over every path's steps, not once per lock)."""
        if self._derived is None:
            index: dict[str, list[str]] = {}
            for pid, p in self.model.paths.items():
                for lid in dict.fromkeys(
                    s.lock
                    for s in m.walk_steps(p.steps)
                    if isinstance(s, m.Take) and s.derived and self.happens(s)
                ):
                    index.setdefault(lid, []).append(pid)
            self._derived = index
        return self._derived.get(lock_id, [])

    def pairs_of(self, lock_id: str) -> list[PairEdge]:
        """The edges that hold or take the lock, in the graph's order (indexed once: a page
        of thousands of locks would otherwise scan every edge for each lock)."""
        if self._pairs_of is None:
            index: dict[str, list[PairEdge]] = {}
            for e in self.edges.pairs:
                index.setdefault(e.src, []).append(e)
                if e.dst != e.src:
                    index.setdefault(e.dst, []).append(e)
            self._pairs_of = index
        return self._pairs_of.get(lock_id, [])

    def events(self, path_id: str) -> list[Event]:
        """The path's events, its callees' included (flattened once per path)."""
        if path_id not in self._events:
            found = flatten_all(self.model, only=path_id, budget=self._walks)
            if found.refusals:
                raise RenderError([self._stopped(found.refusals[0])])
            self._events[path_id] = found.events
        return self._events[path_id]

    def _stopped(self, r: Refusal) -> Diagnostic:
        """LD209 for a walk the page could not finish: the page is not written."""
        if r.scope != "work":
            why = f"needs more than {r.budget:,} units of work to analyse (limits.path_work)"
        else:
            why = (
                f"and the paths it runs took the rest of the work budget of the page's walks "
                f"({r.budget:,} units, limits.analysis_work)"
            )
        finding = load_all()["LD209"].finder()
        return finding(
            f"path '{r.path}' {why}; the page was not rendered",
            r.location,
            "the page walks each path with every path it runs, so a long chain of run: steps "
            "costs the square of its length: make it shorter, or raise limits.analysis_work "
            "in locks.yaml",
            paths=(r.path,),
        )

    def exception_link(self, w: m.Waiver) -> Link:
        """'exception N', linked to its entry under "Where the paths differ"."""
        return Link(f"exception {w.index + 1}", f"#exception-{w.index + 1}")

    def deviating(self, d: Diagnostic) -> set[str]:
        """The paths a finding is about: the path of its step and every path that runs that
        one (not the other side of a deadlock, which the finding names too)."""
        if not d.paths:
            return set()
        out = {d.paths[0]}
        todo = [d.paths[0]]
        while todo:
            for caller in self.callers.get(todo.pop(), ()):
                if caller not in out:
                    out.add(caller)
                    todo.append(caller)
        return out & set(d.paths)

    def exceptions_for(self, lock_id: str | None, path_id: str) -> tuple[m.Waiver, ...]:
        """The exceptions that waive a finding about this lock (any, for None) in this path (a
        waiver may name no path and still cover the path's finding), or that name both."""
        if self._waived is None:  # indexed once: a page of thousands of paths asks for each
            index: dict[str, list[tuple[tuple[str, ...], m.Waiver]]] = {}
            for d in self.diags:
                waiver = self.waiver_of(d.waived_by) if d.waived_by else None
                if waiver is not None:
                    for pid in self.deviating(d):
                        index.setdefault(pid, []).append((d.locks, waiver))
            self._waived = index
        found: dict[int, m.Waiver] = {}
        for locks, w in self._waived.get(path_id, ()):
            if lock_id is None or lock_id in locks:
                found[w.index] = w
        for w in self.model.waivers:
            if w.path == path_id and (lock_id is None or w.lock == lock_id):
                found[w.index] = w
        return tuple(found[i] for i in sorted(found))

    def locks_of(self, w: m.Waiver) -> tuple[str, ...]:
        """The locks an exception covers: the one it names, or those of its findings (in
        declaration order)."""
        if w.lock:
            return (w.lock,)
        label = waiver_label(self.model, w)
        found = {lk for d in self.diags if d.waived_by == label for lk in d.locks}
        return tuple(lk for lk in self.model.locks if lk in found)

    def paths_of(self, w: m.Waiver) -> tuple[str, ...]:
        """The paths an exception covers: the one it names, or those of the findings it
        waives (standalone ones, in page order)."""
        if w.path:
            return (w.path,)
        label = waiver_label(self.model, w)
        found = {
            p
            for d in self.diags
            if d.waived_by == label
            for p in self.deviating(d)
            if self.model.paths[p].standalone
        }
        return tuple(sorted(found, key=lambda p: (self.path_rank.get(p, 1 << 30), p)))

    def waiver_of(self, label: str) -> m.Waiver | None:
        """The exception a finding's `waived_by` label names."""

        return next((w for w in self.model.waivers if waiver_label(self.model, w) == label), None)

    def issues(self, numbers: Iterable[int]) -> tuple[IssueRef, ...]:
        """Issue links, each once, marked when the issue is also planned work."""
        planned = {p.issue for p in self.model.planned}
        seen = dict.fromkeys(numbers)
        return tuple(IssueRef(self.issue(n), n in planned) for n in seen)

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

    def issue(self, number: int) -> Link:
        """#N linked through the project's issue template."""
        return issue_link(self.model, number)

    def _callers(self) -> dict[str, set[str]]:
        """Which paths run each path (for 'Runs only inside')."""
        out: dict[str, set[str]] = {}
        for pid, p in self.model.paths.items():
            for step in m.walk_steps(p.steps):
                if isinstance(step, m.Run):
                    out.setdefault(step.path, set()).add(pid)
        return out


def opens_own(model: m.Model, path_id: str) -> bool:
    """Whether a path's steps open transactions (so no caller can lend it one)."""
    p = model.paths.get(path_id)
    return p is not None and any(isinstance(s, m.Begin) for s in m.walk_steps(p.steps))


def _sites(
    model: m.Model,
    caller: str,
    steps: tuple[m.Step, ...],
    open_tx: bool,
    out: dict[str, list[tuple[str, bool]]],
) -> bool:
    """Record where `caller` runs other paths and whether a transaction is open there;
    returns whether one is open after the steps (structurally; branches: any)."""

    def at_run(s: m.Run, open_tx: bool) -> bool:
        out.setdefault(s.path, []).append((caller, open_tx))
        if opens_own(model, s.path):
            return _sites(model, s.path, model.paths[s.path].steps, open_tx, {})
        return open_tx

    return ends_open(steps, open_tx, at_run)
