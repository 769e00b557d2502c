"""The consistency pass: the claims the page would make, compared with one another and with
the analysis, before anything is written. Two claims that disagree stop the build (LD606, bad
input: exit 2, nothing written), each named with where it comes from.

Every sentence of the page comes from one fact of the model or the analysis, so most of these
cannot disagree unless a view or a template goes wrong; the pass is what keeps it so. What the
declarations themselves can make disagree is checked the same way: prose that says two locks
never deadlock beside a finding that says they do, a re-take (`again: true`) of a lock no step
holds, a statement said to change a key that takes a mode a key change cannot, planned work the
paths already do, a path said to run in its caller's transaction that opens its own.

The eight kinds, each a function below: direction, order, planned, transactions, key change,
held, inside, deviation; and two exceptions with one title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.render.view.base import PageContext
from lockdocs.render.view.locks import LockTableView
from lockdocs.render.view.order import OrderView
from lockdocs.render.view.paths import GroupView


@dataclass(frozen=True)
class PageView:
    """The parts of the page whose claims are compared (page.PageView has them all)."""

    groups: tuple[GroupView, ...]
    lock_tables: tuple[LockTableView, ...]
    order: OrderView


CODE = "LD606"

# Prose that says two things never wait on each other in a cycle.
_NEVER = re.compile(
    r"\b(?:never|cannot|can ?not|can't|won't|will not|could not|couldn't|no)\s+"
    r"(?:\w+\s+){0,2}deadlocks?\b"
    r"|\bonly\s+(?:ever\s+)?waits?\s+in\s+one\s+direction\b"
    r"|\bdeadlock[- ]free\b",
    re.IGNORECASE,
)
DEADLOCKS = ("LD201", "LD202")


def _finding(where: Location, message: str, hint: str, **keys: tuple[str, ...]) -> Diagnostic:
    return Diagnostic(CODE, Severity.ERROR, message, where, hint, **keys)  # type: ignore[arg-type]


def _deadlocks(ctx: PageContext) -> list[Diagnostic]:
    return [d for d in ctx.diags if d.code in DEADLOCKS]


def _said(d: Diagnostic) -> str:
    who = f"{d.waived_by}" if d.waived_by else f"{d.code} at {d.location}"
    return f"{who} says it can deadlock"


def direction(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A claim that something never deadlocks (a lock's or a path's prose, a pair taken both
    ways, a deviation said to be safe) beside a finding that it can."""
    model = ctx.model
    found = _deadlocks(ctx)
    texts: list[tuple[str, str, Location, set[str], set[str]]] = []
    for lk in model.locks.values():
        for field, value in (("serializes", lk.serializes), ("notes", lk.notes)):
            if value:
                texts.append((f"the {field} of lock '{lk.id}'", value, lk.location, {lk.id}, set()))
    for p in model.paths.values():
        for field, value in (("summary", p.summary), ("notes", p.notes)):
            if value:
                texts.append((f"the {field} of path '{p.id}'", value, p.location, set(), {p.id}))
    for label, value, where, locks, paths in texts:
        hit = _NEVER.search(value)
        if hit is None:
            continue
        for d in found:
            if (locks & set(d.locks)) or (paths & set(d.paths)):
                yield _finding(
                    where,
                    f"{label} says '{hit.group(0)}', but {_said(d)}: the page would say both",
                    "say in the prose when it can deadlock (or why the finding is wrong), so "
                    "the page says one thing",
                    locks=tuple(sorted(locks or set(d.locks))),
                    paths=tuple(sorted(paths)),
                )
                break
    for b in view.order.both_ways:
        if not b.why.startswith("They never deadlock"):
            continue
        a, c = _lock_id(b.first.href), _lock_id(b.then.href)
        for d in found:
            if d.code == "LD201" and a in d.locks and c in d.locks:
                yield _finding(
                    model.locks[a].location,
                    f"the page would say {a} and {c} never deadlock, but {_said(d)}",
                    "a bug in lockdocs' page: please report it with this project",
                    locks=(a, c),
                )
    for table in view.lock_tables:
        for lock in table.locks:
            for dev in lock.several.deviations:
                if not dev.why.startswith("safely"):
                    continue
                for link in dev.paths:
                    pid = _path_id(link.href)
                    for d in found:
                        if lock.id in d.locks and pid in ctx.deviating(d):
                            yield _finding(
                                model.locks[lock.id].location,
                                f"the page would call {pid}'s order of {lock.id} safe, but "
                                f"{_said(d)}",
                                "a bug in lockdocs' page: please report it with this project",
                                locks=(lock.id,),
                                paths=(pid,),
                            )


def order(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """One take's order named two ways: a loop in one order whose element lock's take says
    another, or a lock's order in one path said differently in two places of the page."""
    for p in ctx.model.paths.values():
        for s in m.walk_steps(p.steps):
            if not isinstance(s, m.Loop) or not s.order or s.order == "none":
                continue
            first = next((t for t in s.steps if isinstance(t, m.Take) and not t.again), None)
            if first is not None and first.order and first.order not in (s.order, "none"):
                yield _finding(
                    first.location,
                    f"path '{p.id}' loops over {s.label} in {s.order}, but its first take "
                    f"({first.lock}) says it goes in {first.order}: the page would say both",
                    "give the order once, on the loop (or on the take, and none on the loop)",
                    locks=(first.lock,),
                    paths=(p.id,),
                )
    said: dict[tuple[str, str], tuple[str, str]] = {}
    for table in view.lock_tables:
        for lock in table.locks:
            for dev in lock.several.deviations:
                for link in dev.paths:
                    said[(lock.id, _path_id(link.href))] = (dev.how, "the lock's table")
    for c in view.order.components:
        for level in c.levels:
            for o in level:
                for dev in o.deviations:
                    for link in dev.paths:
                        key = (_lock_id(o.lock.href), _path_id(link.href))
                        other = said.get(key)
                        if dev.how and other is not None and other[0] != dev.how:
                            yield _finding(
                                ctx.model.locks[key[0]].location,
                                f"the page would say {key[1]} takes {key[0]} {dev.how} in the "
                                f"lock order, and {other[0]} in {other[1]}",
                                "a bug in lockdocs' page: please report it with this project",
                                locks=(key[0],),
                                paths=(key[1],),
                            )


def planned(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """Planned work whose takes (`adds:`) the paths already make: the page would call done work
    planned."""
    for pl in ctx.model.planned:
        done = [a for a in pl.adds if _takes(ctx, a)]
        if pl.adds and len(done) == len(pl.adds):
            a = done[0]
            holding = f" while holding {a.holding}" if a.holding else ""
            yield _finding(
                pl.location or Location("locks.yaml", 0, 0),
                f"planned work #{pl.issue} adds what the paths already do ({a.path} takes "
                f"{a.lock}{holding}): the page would list done work as planned",
                "take the item out of planned: (keep the issue on the locks and paths it "
                "explains with issues:)",
                locks=tuple(dict.fromkeys(x.lock for x in done)),
                paths=tuple(dict.fromkeys(x.path for x in done)),
            )


def _takes(ctx: PageContext, add: m.PlannedTake) -> bool:
    for e in ctx.events(add.path):
        if e.kind not in ("acquire", "retake", "upgrade") or e.lock != add.lock:
            continue
        if add.mode and e.mode != add.mode:
            continue
        if add.holding and not any(h.lock == add.holding for h in e.held):
            continue
        return True
    return False


def transactions(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A path's transaction kinds (its header, or its group's) against the kinds the analysis
    ran its steps in."""
    for g in view.groups:
        for p in g.paths:
            if not p.standalone:
                continue
            claimed = [k.id for k in p.kinds] if p.kinds_shown else []
            if not p.kinds_shown and g.transaction is not None:
                claimed = [g.transaction.id]
            if not claimed:
                continue
            ran: list[str] = []
            for e in ctx.events(p.id):
                if e.through or e.txkind is None or e.kind in ("begin",):
                    continue
                if not ran or ran[-1] != e.txkind:
                    ran.append(e.txkind)
            extra = [k for k in dict.fromkeys(ran) if k not in claimed]
            if extra:
                yield _finding(
                    ctx.model.paths[p.id].location,
                    f"the page would say path '{p.id}' runs in {' then '.join(claimed)}, but its "
                    f"steps run in {', '.join(extra)} too",
                    "a bug in lockdocs' page: please report it with this project",
                    paths=(p.id,),
                )


def key_change(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A take said to change a key column (or taken by a DELETE), which Postgres does with FOR
    UPDATE, declared in another mode."""
    for p in ctx.model.paths.values():
        for s in m.walk_steps(p.steps):
            if not isinstance(s, m.Take) or ctx.model.locks[s.lock].kind != "row":
                continue
            deletes = (s.implicit or "").upper().startswith("DELETE")
            if (s.changes_key or deletes) and s.mode != "for update":
                why = "is a DELETE" if deletes else "changes a key column (changes_key)"
                yield _finding(
                    s.location,
                    f"path '{p.id}' says the statement that takes {s.lock} {why}, which "
                    f"Postgres does with FOR UPDATE, but declares {s.mode.upper()}",
                    "declare mode: for update, or drop changes_key when the statement leaves "
                    "every unique key alone",
                    locks=(s.lock,),
                    paths=(p.id,),
                )


def held(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A take declared a re-take (`again: true`) that no way through the path reaches with the
    lock held: the page would call it already held and the analysis says it is not."""
    marks: dict[tuple[str, int, int], str] = {}
    for g in view.groups:
        for pv in g.paths:
            marks.update(pv.held_marks)
    for p in ctx.model.paths.values():
        if not p.standalone:
            continue  # what it holds comes from its callers
        for s in m.walk_steps(p.steps):
            if not isinstance(s, m.Take) or not s.again:
                continue
            loc = s.location
            if marks.get((loc.file, loc.line, loc.column)) == "never":
                yield _finding(
                    loc,
                    f"path '{p.id}' declares a re-take of {s.lock} (again: true), but no step "
                    "before it takes that lock: the page would call it already held",
                    "drop again: true, or take the lock earlier in the path",
                    locks=(s.lock,),
                    paths=(p.id,),
                )


def inside(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A path said to run only inside its callers, in their transaction (standalone: false),
    that opens a transaction of its own; or a caller said to run it in its transaction that
    runs it with none open."""
    for path in ctx.model.paths.values():
        if path.standalone:
            continue
        begin = next((s for s in m.walk_steps(path.steps) if isinstance(s, m.Begin)), None)
        if begin is not None and any(in_tx for _, in_tx in ctx.run_sites().get(path.id, ())):
            yield _finding(
                begin.location,
                f"path '{path.id}' is declared standalone: false (it runs in its caller's "
                "transaction), but it opens a transaction of its own here",
                "open the transaction in the caller, or leave standalone: false out",
                paths=(path.id,),
            )
    for g in view.groups:
        for pv in g.paths:
            sites = dict(ctx.run_sites().get(pv.id, ()))
            for link in pv.run_inside:
                caller = _path_id(link.href)
                if caller in sites and not sites[caller]:
                    yield _finding(
                        ctx.model.paths[pv.id].location,
                        f"the page would say path '{pv.id}' runs inside {caller}'s transaction, "
                        f"but {caller} runs it with no transaction open",
                        "a bug in lockdocs' page: please report it with this project",
                        paths=(pv.id, caller),
                    )


def deviation(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """A path named as taking a lock's instances in another order with neither an exception,
    nor a reason it is safe, nor a finding that says so."""
    for table in view.lock_tables:
        for lock in table.locks:
            for dev in lock.several.deviations:
                if dev.exceptions or dev.why or dev.reported:
                    continue
                names = [_path_id(x.href) for x in dev.paths]
                yield _finding(
                    ctx.model.locks[lock.id].location,
                    f"the page would say {', '.join(names)} {dev.verb} {lock.id}'s instances "
                    f"{dev.how.removeprefix('them ')}, with no exception, no finding and no "
                    "reason it is safe",
                    "a bug in lockdocs' page: please report it with this project",
                    locks=(lock.id,),
                    paths=tuple(names),
                )


def titles(ctx: PageContext, view: PageView) -> Iterable[Diagnostic]:
    """Two exceptions (or differences) with one title: a reader cannot tell them apart."""
    seen: dict[str, int] = {}
    for w in ctx.model.waivers:
        title = " ".join((w.title or "").split()).rstrip(".").lower()
        if not title:
            continue
        if title in seen:
            yield _finding(
                w.location,
                f"exceptions {seen[title]} and {w.index + 1} have one title, '{w.title}'",
                "give each exception a title of its own (or make them one exception)",
            )
        else:
            seen[title] = w.index + 1


CHECKS = (direction, order, planned, transactions, key_change, held, inside, deviation, titles)


def contradictions(ctx: PageContext, view: PageView) -> list[Diagnostic]:
    """Every disagreement among the page's claims, one finding each (none: the page may be
    written)."""
    out: list[Diagnostic] = []
    seen: set[tuple[str, int, int, str]] = set()
    for check in CHECKS:
        for d in check(ctx, view):
            key = (d.location.file, d.location.line, d.location.column, d.message)
            if key not in seen:
                seen.add(key)
                out.append(d)
    return out


def _lock_id(href: str | None) -> str:
    return (href or "").removeprefix("#lock-")


def _path_id(href: str | None) -> str:
    return (href or "").removeprefix("#path-")
