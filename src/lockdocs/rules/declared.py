"""LD5xx: the rules a project declares in locks.yaml, checked against every path.

A finding carries the declared rule's id, so an exception can name the rule as the project
calls it ("pools-ascending") rather than by code.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.model import Rule
from lockdocs.rules.context import Context, once_per_step
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


def _rules(body: str) -> str:
    return _BASE + "rules:\n" + body


def _rules_of(ctx: Context, check: str) -> list[Rule]:
    return [r for r in ctx.model.rules.values() if r.check == check]


def _finding(
    code: str,
    r: Rule,
    message: str,
    loc: Location,
    hint: str,
    paths: tuple[str, ...],
    locks: tuple[str, ...],
    branches: tuple[str, ...] = (),
) -> Diagnostic:
    return Diagnostic(
        code,
        Severity.ERROR,
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
        "locks.yaml": _rules("""\
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
def first_lock(ctx: Context) -> Iterable[Diagnostic]:
    for r in _rules_of(ctx, "first"):
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
                    yield _finding(
                        "LD501",
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
            yield _finding(
                "LD501",
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
        "locks.yaml": _rules("""\
  pool-before-head:
    title: The lineage head is locked after the pool row
    before: {first: pool, then: head}
"""),
        "paths/grants.yaml": """\
group: Grants
paths:
  revoke:
    title: Revoke
    transaction: materializing
    steps:
      - take: head
      - take: pool
""",
    },
    use_instead={
        "paths/grants.yaml": (
            "      - take: head\n      - take: pool\n",
            "      - take: pool\n      - take: head\n",
        ),
    },
)
def before(ctx: Context) -> Iterable[Diagnostic]:
    for r in _rules_of(ctx, "before"):
        a, b = str(r.param("first")), str(r.param("then"))
        taken_after = (
            ev
            for ev in ctx.all_events
            if ev.kind == "acquire" and ev.lock == a and any(h.lock == b for h in ev.held)
        )
        for step in once_per_step(taken_after):
            yield _finding(
                "LD502",
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
        "locks.yaml": _rules("""\
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
def sorted_instances(ctx: Context) -> Iterable[Diagnostic]:
    rules = _rules_of(ctx, "sorted")
    if not rules:
        return
    for backend in ctx.backends:
        graph = ctx.graph(backend)
        for r in rules:
            lid = str(r.param("lock"))
            order = ctx.model.locks[lid].instance_order
            seen: set[str] = set()
            for e in graph.by_pair.get((lid, lid), []):
                if e.ordered or e.path in seen:
                    continue
                seen.add(e.path)
                how = f"in {e.order}" if e.order else "in no declared order"
                yield _finding(
                    "LD503",
                    r,
                    f"path '{e.path}' takes several {lid} {how}",
                    e.location,
                    f"take them in {order}" if order else "declare instances: {order: ...}",
                    (e.path,),
                    (lid,),
                )


@rule(
    "LD504",
    "lock-scope",
    Severity.ERROR,
    summary="A lock of the rule's kind has another scope.",
    what="For a `scope: {kind, scope}` rule, reports each lock of that kind with another scope.",
    why="'Every advisory lock belongs to its transaction' is only true if no lock says otherwise.",
    example={
        "locks.yaml": _rules("""\
  xact-only:
    title: Every advisory lock is transaction-scoped
    scope: {kind: advisory, scope: transaction}
""").replace(
            "    key: {hashtextextended: {text: rendezvous}}",
            "    scope: session\n    key: {hashtextextended: {text: rendezvous}}",
        ),
    },
    use_instead={
        "locks.yaml": (
            "    scope: session\n",
            "",
        ),
    },
)
def scope(ctx: Context) -> Iterable[Diagnostic]:
    for r in _rules_of(ctx, "scope"):
        kind, want = r.param("kind"), r.param("scope")
        for lock in ctx.model.locks.values():
            if lock.kind == kind and lock.scope != want:
                yield _finding(
                    "LD504",
                    r,
                    f"{lock.id} is {lock.scope}-scoped",
                    lock.location,
                    f"make it {want}-scoped, or add an exception with the reason",
                    (),
                    (lock.id,),
                )


def _levels(r: Rule) -> dict[str, int]:
    levels = r.param("levels")
    assert isinstance(levels, tuple)
    return {lid: i for i, level in enumerate(levels) for lid in level}


@rule(
    "LD505",
    "written-order",
    Severity.ERROR,
    summary="A path takes a lock while holding one of the same or a later level.",
    what=(
        "For an `order: {levels}` rule (the global written order, first level first), reports "
        "each acquisition of a lock while the path holds a different lock of the same or a "
        "later level. Locks not named in the levels are not checked."
    ),
    why=(
        "One written order that every path follows rules out every deadlock between the locks "
        "it names, without reasoning about pairs of paths."
    ),
    example={
        "locks.yaml": _rules("""\
  lock-order:
    title: The written lock order
    order: {levels: [[rendezvous], [pool], [head]]}
"""),
        "paths/grants.yaml": """\
group: Grants
paths:
  revoke:
    title: Revoke
    transaction: materializing
    steps:
      - take: head
      - take: pool
""",
    },
    use_instead={
        "paths/grants.yaml": (
            "      - take: head\n      - take: pool\n",
            "      - take: pool\n      - take: head\n",
        ),
    },
)
def written_order(ctx: Context) -> Iterable[Diagnostic]:
    for r in _rules_of(ctx, "order"):
        level = _levels(r)
        seen: set[tuple[str, int, str]] = set()
        for ev in ctx.all_events:
            if ev.kind not in ("acquire", "upgrade") or ev.lock not in level:
                continue
            for h in ev.held:
                if h.lock == ev.lock or h.lock not in level:
                    continue
                if level[h.lock] >= level[ev.lock]:
                    key = (ev.path, ev.location.line, h.lock)
                    if key in seen:
                        continue
                    seen.add(key)
                    yield _finding(
                        "LD505",
                        r,
                        f"path '{ev.path}' takes {ev.lock} (level {level[ev.lock] + 1}) while "
                        f"holding {h.lock} (level {level[h.lock] + 1})",
                        ev.location,
                        f"take {ev.lock} before {h.lock}, or move one of them in the written order",
                        (ev.path,),
                        (ev.lock, h.lock),
                        ev.branch,
                    )


@rule(
    "LD506",
    "order-contradiction",
    Severity.ERROR,
    summary="The written order contradicts itself.",
    what=(
        "Reports a lock named in two levels of the written order, and `before:` rules that "
        "form a cycle with each other or with the levels."
    ),
    why="An order that cannot be followed protects nothing.",
    example={
        "locks.yaml": _rules("""\
  pool-before-head:
    title: Pool before head
    before: {first: pool, then: head}
  head-before-pool:
    title: Head before pool
    before: {first: head, then: pool}
"""),
    },
    use_instead={
        "locks.yaml": (
            "  head-before-pool:\n    title: Head before pool\n    before: {first: head, then: pool}\n",
            "",
        ),
    },
)
def contradictions(ctx: Context) -> Iterable[Diagnostic]:
    after: dict[str, set[str]] = {}
    origin: dict[tuple[str, str], Rule] = {}
    for r in _rules_of(ctx, "before"):
        a, b = str(r.param("first")), str(r.param("then"))
        after.setdefault(a, set()).add(b)
        origin.setdefault((a, b), r)
    for r in _rules_of(ctx, "order"):
        levels = r.param("levels")
        assert isinstance(levels, tuple)
        for i, level in enumerate(levels):
            for later in levels[i + 1 :]:
                for a in level:
                    for b in later:
                        after.setdefault(a, set()).add(b)
                        origin.setdefault((a, b), r)
    reported: set[frozenset[str]] = set()
    for (a, b), r in sorted(origin.items()):
        # b reaches a? then a -> b closes a cycle.
        stack, seen = [b], {b}
        while stack:
            n = stack.pop()
            if n == a:
                break
            for nxt in sorted(after.get(n, ())):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        else:
            continue
        key = frozenset((a, b))
        if key in reported:
            continue
        reported.add(key)
        yield _finding(
            "LD506",
            r,
            f"{a} must come before {b}, and the rules also put {b} before {a}",
            r.location,
            "remove or correct one of the rules",
            (),
            (a, b),
        )


@rule(
    "LD507",
    "lock-before-write",
    Severity.ERROR,
    summary="A write happens without the lock the rule requires.",
    what="For a `lock_before_write: {lock, writes}` rule, reports each listed write made "
    "while the path does not hold the lock.",
    why="The lock is what makes the write safe; a write outside it is a lost update waiting "
    "to happen.",
    example={
        "locks.yaml": _rules("""\
  pool-before-positions:
    title: The pool row is locked before positions change
    lock_before_write: {lock: pool, writes: [positions]}
"""),
        "paths/grants.yaml": """\
group: Grants
paths:
  confer:
    title: Confer
    transaction: materializing
    steps:
      - write: positions
""",
    },
    use_instead={
        "paths/grants.yaml": (
            "    steps:\n",
            "    steps:\n      - take: pool\n",
        ),
    },
)
def lock_before_write(ctx: Context) -> Iterable[Diagnostic]:
    for r in _rules_of(ctx, "lock_before_write"):
        lid = str(r.param("lock"))
        writes = r.param("writes")
        assert isinstance(writes, tuple)
        unguarded = (
            ev
            for ev in ctx.all_events
            if ev.kind == "write" and ev.name in writes and not any(h.lock == lid for h in ev.held)
        )
        for step in once_per_step(unguarded):
            ev = step.event
            branch = f" (branch {' / '.join(ev.branch)})" if ev.branch else ""
            yield _finding(
                "LD507",
                r,
                f"path '{step.owner}' writes {ev.name}{branch} without holding {lid}"
                + step.reached,
                ev.location,
                f"take {lid} before the write",
                step.paths,
                (lid,),
                step.branches,
            )
