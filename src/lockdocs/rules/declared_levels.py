"""LD504-LD507: the declared rules about kinds and levels of lock: a kind's scope, the
written order of levels and its contradictions, and the lock a write requires.

A finding carries the declared rule's id, as in `declared.py`.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.model import Rule
from lockdocs.rules.context import CheckContext, once_per_step
from lockdocs.rules.declared import (
    HEAD_THEN_POOL,
    POOL_THEN_HEAD,
    rule_finding,
    rules_example,
    rules_of,
)
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule


@rule(
    "LD504",
    "lock-scope",
    Severity.ERROR,
    summary="A lock of the rule's kind has another scope.",
    what="For a `scope: {kind, scope}` rule, reports each lock of that kind with another scope.",
    why="'Every advisory lock belongs to its transaction' is only true if no lock says otherwise.",
    example={
        "locks.yaml": rules_example("""\
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
def scope(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for r in rules_of(ctx, "scope"):
        kind, want = r.param("kind"), r.param("scope")
        for lock in ctx.model.locks.values():
            if lock.kind == kind and lock.scope != want:
                yield rule_finding(
                    finding,
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
        "locks.yaml": rules_example("""\
  lock-order:
    title: The written lock order
    order: {levels: [[rendezvous], [pool], [head]]}
"""),
        "paths/grants.yaml": HEAD_THEN_POOL,
    },
    use_instead={"paths/grants.yaml": POOL_THEN_HEAD},
)
def written_order(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for r in rules_of(ctx, "order"):
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
                    yield rule_finding(
                        finding,
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
        "locks.yaml": rules_example("""\
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
def contradictions(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    after: dict[str, set[str]] = {}
    origin: dict[tuple[str, str], Rule] = {}
    for r in rules_of(ctx, "before"):
        a, b = str(r.param("first")), str(r.param("then"))
        after.setdefault(a, set()).add(b)
        origin.setdefault((a, b), r)
    for r in rules_of(ctx, "order"):
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
        yield rule_finding(
            finding,
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
        "locks.yaml": rules_example("""\
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
def lock_before_write(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for r in rules_of(ctx, "lock_before_write"):
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
            yield rule_finding(
                finding,
                r,
                f"path '{step.owner}' writes {ev.name}{branch} without holding {lid}"
                + step.reached,
                ev.location,
                f"take {lid} before the write",
                step.paths,
                (lid,),
                step.branches,
            )
