"""LD501-LD503: the order rules a project declares in locks.yaml (a lock first, one lock
before another, instances in their declared order), checked against every path; and what every
declared-rule check shares (`declared_levels.py`: LD504-LD507).

A finding carries the declared rule's id, so an exception can name the rule as the project
calls it ("pools-ascending") rather than by code.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.model import Rule
from lockdocs.model.columns import same_order
from lockdocs.rules.context import CheckContext, once_per_step
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule

_BASE = """\
lockdocs: 1
page: {title: Locks}
transactions:
  materializing: {opened_by: BeginMaterializing, first: {lock: rendezvous, mode: shared}, lock_timeout: 5s}
  plain: {lock_timeout: 5s}
locks:
  rendezvous:
    title: Rendezvous
    kind: advisory
    key: {hashtextextended: {text: rendezvous}}
    modes: {shared: materializers, exclusive: rule changes}
  pool:
    title: Pool row
    kind: row
    table: core.pools
    modes: {for update: every writer}
    instances: {order: ascending pool_id}
  head:
    title: Lineage head
    kind: row
    table: core.grants
    modes: {for update: grant acts}
"""


# A path that takes the lineage head before the pool row, and the edit that swaps them: the
# example of both written-order rules (a pairwise before: and a list of levels).
HEAD_THEN_POOL = """\
group: Grants
paths:
  revoke:
    title: Revoke
    transaction: materializing
    steps:
      - take: head
      - take: pool
"""
POOL_THEN_HEAD = (
    "      - take: head\n      - take: pool\n",
    "      - take: pool\n      - take: head\n",
)


def rules_example(body: str) -> str:
    return _BASE + "rules:\n" + body


def rules_of(ctx: CheckContext, check: str) -> list[Rule]:
    return [r for r in ctx.model.rules.values() if r.check == check]


def rule_finding(
    finding: Finder,
    r: Rule,
    message: str,
    loc: Location,
    hint: str,
    paths: tuple[str, ...],
    locks: tuple[str, ...],
    branches: tuple[str, ...] = (),
) -> Diagnostic:
    """A finding of a declared rule: exceptions name it by the rule's id."""
    return finding(
        f"rule '{r.id}': {message}",
        loc,
        hint,
        paths=paths,
        locks=locks,
        rule_id=r.id,
        branches=branches,
    )


@rule(
    "LD501",
    "first-lock",
    Severity.ERROR,
    summary="A transaction does not take the rule's lock first.",
    what=(
        "For a `first:` rule, checks every transaction of the named kinds, or every "
        "transaction that writes one of `when_writes`: no other lock is taken and no such "
        "write happens before the rule's lock (in the rule's mode, when it names one)."
    ),
    why=(
        "A rendezvous lock only keeps two kinds of work apart if every transaction of the one "
        "kind takes it before anything else."
    ),
    example={
        "locks.yaml": rules_example("""\
  rendezvous-first:
    title: A materializing transaction takes the rendezvous first
    first: {lock: rendezvous, when_writes: [materialization]}
"""),
        "paths/grants.yaml": """\
group: Grants
paths:
  confer:
    title: Confer a grant
    transaction: plain
    steps:
      - take: pool
      - write: materialization
""",
    },
    use_instead={
        "paths/grants.yaml": (
            "    transaction: plain\n",
            "    transaction: materializing\n",
        ),
    },
)
def first_lock(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for r in rules_of(ctx, "first"):
        target = str(r.param("lock"))
        mode = r.param("mode")
        kinds = r.param("transactions") or ()
        writes = r.param("when_writes") or ()
        assert isinstance(kinds, tuple) and isinstance(writes, tuple)
        events = ctx.all_events
        wrote = {(e.path, e.transaction) for e in events if e.kind == "write" and e.name in writes}
        reported: set[tuple[str, int]] = set()
        for ev in events:
            tx = (ev.path, ev.transaction)
            if tx in reported:
                continue
            applies = (kinds and ev.txkind in kinds) or (writes and tx in wrote)
            if not applies or ev.kind not in ("acquire", "write"):
                continue
            if ev.kind == "acquire" and ev.lock == target:
                if mode and ev.mode != mode and not ev.held:
                    reported.add(tx)
                    yield rule_finding(
                        finding,
                        r,
                        f"path '{ev.path}' takes {target} {ev.mode}, not {mode}",
                        ev.location,
                        f"take {target} {mode}",
                        (ev.path,),
                        (target,),
                        ev.branch,
                    )
                continue
            if any(h.lock == target for h in ev.held):
                continue
            if ev.kind == "write" and ev.name not in writes and not kinds:
                continue
            what = f"takes {ev.lock}" if ev.kind == "acquire" else f"writes {ev.name}"
            reported.add(tx)
            yield rule_finding(
                finding,
                r,
                f"path '{ev.path}' {what} without holding {target}",
                ev.location,
                f"open the transaction so that it takes {target} first",
                (ev.path,),
                (target,) if ev.kind == "write" else (target, ev.lock),
                ev.branch,
            )


@rule(
    "LD502",
    "lock-before",
    Severity.ERROR,
    summary="A path takes the rule's first lock while holding its second.",
    what="For a `before: {first: A, then: B}` rule, reports a path that takes A while holding B.",
    why="A written pairwise order is how a team keeps two locks from ever forming a cycle.",
    example={
        "locks.yaml": rules_example("""\
  pool-before-head:
    title: The lineage head is locked after the pool row
    before: {first: pool, then: head}
"""),
        "paths/grants.yaml": HEAD_THEN_POOL,
    },
    use_instead={"paths/grants.yaml": POOL_THEN_HEAD},
)
def before(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for r in rules_of(ctx, "before"):
        a, b = str(r.param("first")), str(r.param("then"))
        taken_after = (
            ev
            for ev in ctx.all_events
            if ev.kind == "acquire" and ev.lock == a and any(h.lock == b for h in ev.held)
        )
        for step in once_per_step(taken_after):
            yield rule_finding(
                finding,
                r,
                f"path '{step.owner}' takes {a} while holding {b}{step.reached}",
                step.event.location,
                f"take {a} before {b}",
                step.paths,
                (a, b),
                step.branches,
            )


@rule(
    "LD503",
    "sorted-instances",
    Severity.ERROR,
    summary="A path takes several instances of the rule's lock outside its declared order.",
    what=(
        "For a `sorted: {lock}` rule, reports every path that holds one instance of the lock "
        "while taking another in an order other than the lock's `instances.order`, even where "
        "a gate lock makes it safe (the rule is what the team promised; LD202 is what can "
        "deadlock)."
    ),
    why="A documented order is only worth something if every path keeps it.",
    example={
        "locks.yaml": rules_example("""\
  pools-ascending:
    title: Several pools are locked in ascending pool_id
    sorted: {lock: pool}
"""),
        "paths/tiers.yaml": """\
group: Tiers
paths:
  tier-add:
    title: Add a tier
    transaction: materializing
    steps:
      - loop: each provision
        order: provision order
        steps:
          - take: pool
""",
    },
    use_instead={
        "paths/tiers.yaml": (
            "        order: provision order\n",
            "        order: ascending pool_id\n",
        ),
    },
)
def sorted_instances(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    rules = rules_of(ctx, "sorted")
    if not rules:
        return
    for backend in ctx.backends:
        graph = ctx.graph(backend)
        for r in rules:
            lid = str(r.param("lock"))
            order = ctx.model.locks[lid].instance_order
            seen: set[str] = set()
            for e in graph.by_pair.get((lid, lid), []):
                if (e.ordered and same_order(e.sorted_by, order)) or e.path in seen:
                    continue
                seen.add(e.path)
                if e.location in ctx.set_statements:
                    how = "in one statement, in no order (a set: take)"
                elif e.order == "none":
                    how = "in no order (order: none)"
                else:
                    how = f"in {e.order}" if e.order else "in no declared order"
                yield rule_finding(
                    finding,
                    r,
                    f"path '{e.path}' takes several {lid} {how}",
                    e.location,
                    f"take them in {order}" if order else "declare instances: {order: ...}",
                    (e.path,),
                    (lid,),
                )
