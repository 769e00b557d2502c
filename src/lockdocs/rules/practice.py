"""LD301-LD305: practice rules from experience with Postgres locking: bounded waits, no network
calls under a lock, transaction-scoped advisory locks, the weakest row lock that does the job,
and SKIP LOCKED for queues only. `holding.py` (LD306, LD307) is about how long locks are held."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.rules.context import (
    CheckContext,
    held_locks,
    once_per_step,
    step_finding,
    steps_holding,
)
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule

if TYPE_CHECKING:
    from lockdocs.analysis.events import Event

ROW_EXAMPLE = """\
lockdocs: 1
page: {title: Locks}
transactions:
  plain: {lock_timeout: none}
  bounded: {lock_timeout: 3s}
locks:
  order:
    title: Order row
    kind: row
    table: app.orders
    modes: {for no key update: writers}
"""


def held_text(held: Iterable[object]) -> str:
    return ", ".join(sorted({f"{h.lock} ({h.mode})" for h in held}))  # type: ignore[attr-defined]


# A path that takes the order row in the bounded transaction kind of ROW_EXAMPLE.
_SHIP = """\
group: Orders
paths:
  ship:
    title: Ship an order
    transaction: bounded
    steps:
      - take: order
"""


@rule(
    "LD301",
    "wait-without-timeout",
    Severity.INFO,
    summary="A path waits for a lock in a transaction with no lock_timeout.",
    what=(
        "Reports each transaction kind that sets no lock_timeout and in which some path waits "
        "for a lock, listing the paths and where each first waits."
    ),
    why=(
        "Without a bound a waiter holds its connection and its own locks until its context "
        "ends; one stuck holder can then stall every path behind it. lock_timeout turns that "
        "into a quick 55P03 the code can retry."
    ),
    example={
        "locks.yaml": ROW_EXAMPLE,
        "paths/orders.yaml": _SHIP.replace("transaction: bounded", "transaction: plain"),
    },
    use_instead={
        "paths/orders.yaml": (
            "    transaction: plain\n",
            "    transaction: bounded\n",
        ),
    },
)
def no_timeout(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    # One finding per transaction kind, at the kind: that is where the fix goes.
    waiting: dict[str, dict[str, object]] = {}
    for ev in ctx.all_events:
        if ev.kind != "acquire" or ev.option in m.NEVER_WAITS or not ev.txkind:
            continue
        if ctx.lock_kind(ev.lock, None) == "memory":
            continue
        tk = ctx.model.transactions.get(ev.txkind)
        if tk is None or tk.lock_timeout is not None:
            continue
        waiting.setdefault(ev.txkind, {}).setdefault(ev.path, ev)
    for kind, paths in sorted(waiting.items()):
        tk = ctx.model.transactions[kind]
        names = sorted(paths)
        shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
        yield finding(
            f"transaction kind '{kind}' sets no lock_timeout; {len(names)} "
            f"path{'s wait' if len(names) != 1 else ' waits'} for locks in it ({shown})",
            tk.location,
            "set lock_timeout on the transaction kind (SET LOCAL lock_timeout = '5s'), or "
            "record why waiting until the context ends is acceptable",
            details=tuple(
                f"{p} first waits at {paths[p].location} for {paths[p].lock}"  # type: ignore[attr-defined]
                for p in names
            ),
            paths=tuple(names),
            locks=tuple(sorted({paths[p].lock for p in names})),  # type: ignore[attr-defined]
        )


@rule(
    "LD302",
    "external-call-under-lock",
    Severity.WARNING,
    summary="A network call is made while a lock is held.",
    what="Reports an external call step made while the path holds any lock.",
    why=(
        "A remote call can take seconds or hang; every lock held meanwhile blocks other "
        "transactions, and a pooled connection is pinned. Call before taking the locks, or "
        "after the commit."
    ),
    example={
        "locks.yaml": ROW_EXAMPLE,
        "paths/orders.yaml": _SHIP + '      - external: "carrier API: book a pickup"\n',
    },
    use_instead={
        "paths/orders.yaml": (
            "      - take: order\n",
            "      - take: order\n      - commit\n",
        ),
    },
)
def external_under_lock(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for step in steps_holding(ctx.all_events, "external"):
        yield step_finding(
            finding,
            step,
            f"path '{step.owner}' calls {step.event.name!r} while holding {held_text(step.held)}",
            "make the call before the transaction takes its locks, or after it commits",
            held_locks(step),
        )


@rule(
    "LD303",
    "session-advisory-lock",
    Severity.WARNING,
    summary="An advisory lock is session-scoped.",
    what="Reports an advisory lock declared with scope: session.",
    why=(
        "A session lock survives commit and rollback. Through a transaction pooler (PgBouncer "
        "in transaction mode) it lands on whatever connection ran the statement, and an unlock "
        "sent on another connection fails silently, stranding the lock. Prefer "
        "pg_advisory_xact_lock unless the work must span transactions."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
locks:
  init:
    title: Server initialization
    kind: advisory
    scope: session
    key: {hashtextextended: {text: server_init}}
    modes: {exclusive: each replica at start-up}
""",
    },
    use_instead={
        "locks.yaml": (
            "    scope: session\n",
            "",
        ),
    },
)
def session_advisory(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    pooled: dict[str, dict[str, list[str]]] = {}  # lock -> pooled kind -> paths
    for ev in ctx.all_events:
        tk = ctx.model.transactions.get(ev.txkind or "")
        if ev.kind == "acquire" and tk is not None and tk.pooler == "transaction":
            paths = pooled.setdefault(ev.lock, {}).setdefault(tk.id, [])
            if ev.path not in paths:
                paths.append(ev.path)
    for lock in ctx.model.locks.values():
        if lock.kind == "advisory" and lock.scope == "session":
            kinds = pooled.get(lock.id, {})
            through = "; ".join(f"kind '{k}' ({', '.join(p)})" for k, p in sorted(kinds.items()))
            yield finding(
                f"{lock.id} is a session-scoped advisory lock"
                + (
                    f", taken through a transaction-mode pooler in {through}: the end of the "
                    "transaction hands its server connection back to the pool with the lock "
                    "still on it, so the path no longer holds it, the next client of that "
                    "connection does, and a later unlock unlocks nothing"
                    if kinds
                    else ""
                ),
                lock.location,
                "use the transaction-scoped form, or hold it on one dedicated connection and "
                "write down why (an exception with the reason)"
                + ("; through the pooler, only the transaction-scoped form holds" if kinds else ""),
                paths=tuple(dict.fromkeys(p for ps in kinds.values() for p in ps)),
                locks=(lock.id,),
            )


@rule(
    "LD304",
    "for-update-on-referenced-row",
    Severity.WARNING,
    summary="FOR UPDATE on a row other tables reference, where FOR NO KEY UPDATE would do.",
    what=(
        "Reports a FOR UPDATE take of a row lock that other tables reference (declared with "
        "`references:`, or `referenced_by_foreign_keys: true`) when the step does not say it "
        "changes a key or deletes (changes_key: true, implicit: DELETE). A `write:` step that "
        "inserts into a referencing table (`insert: <table>`), or updates its key column "
        "(`update: <table>` with `columns:`), takes the FOR KEY SHARE that waits for it."
    ),
    why=(
        "FOR UPDATE conflicts with the FOR KEY SHARE that every insert of a referencing row "
        "takes, so child inserts wait, and can deadlock against the parent's writer. FOR NO "
        "KEY UPDATE does not conflict with FOR KEY SHARE."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
locks:
  instance:
    title: Instance row
    kind: row
    table: app.instances
    references:
      - {table: app.jobs, column: instance_id}
    modes: {for update: processing}
""",
        "paths/instances.yaml": """\
group: Instances
paths:
  process:
    title: Process an instance
    steps:
      - take: instance
  add-job:
    title: Add a job to an instance
    steps:
      - write: job
        insert: app.jobs
""",
    },
    use_instead={
        "locks.yaml": (
            "    modes: {for update: processing}\n",
            "    modes: {for no key update: processing}\n",
        ),
    },
)
def for_update_referenced(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    def needless(ev: Event) -> bool:
        if ev.kind not in ("acquire", "upgrade") or ev.mode != "for update" or ev.changes_key:
            return False
        deletes = bool(ev.implicit and ev.implicit.upper().startswith("DELETE"))
        return ctx.model.locks[ev.lock].referenced_by_foreign_keys and not deletes

    for step in once_per_step(filter(needless, ctx.all_events)):
        ev = step.event
        table = ctx.model.locks[ev.lock].table or "this row"
        yield step_finding(
            finding,
            step,
            f"path '{step.owner}' takes {ev.lock} FOR UPDATE; other tables reference "
            f"{table} through foreign keys",
            "use FOR NO KEY UPDATE unless the statement changes a key column or deletes "
            "(then say changes_key: true)",
            (ev.lock,),
        )


@rule(
    "LD305",
    "skip-locked-not-queue",
    Severity.WARNING,
    summary="SKIP LOCKED on rows that are not a work queue.",
    what="Reports a SKIP LOCKED take of a lock not declared queue: true.",
    why=(
        "SKIP LOCKED silently leaves out rows another transaction holds. For claiming queue "
        "items that is the point; for a correctness check it means the check does not see "
        "every row."
    ),
    example={
        "locks.yaml": ROW_EXAMPLE,
        "paths/orders.yaml": """\
group: Orders
paths:
  audit:
    title: Audit open orders
    transaction: bounded
    steps:
      - take: order
        option: skip locked
""",
    },
    use_instead={
        "locks.yaml": (
            "    table: app.orders\n",
            "    table: app.orders\n    queue: true\n",
        ),
        "paths/orders.yaml": (
            "    title: Audit open orders\n",
            "    title: Claim orders to ship\n",
        ),
    },
)
def skip_locked(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    takes = (
        ev
        for ev in ctx.all_events
        if ev.option == "skip locked" and not ctx.model.locks[ev.lock].queue
    )
    for step in once_per_step(takes):
        ev = step.event
        yield step_finding(
            finding,
            step,
            f"path '{step.owner}' takes {ev.lock} with SKIP LOCKED, but the lock is not a queue",
            "declare queue: true on the lock if its rows are claimed as work items; otherwise "
            "wait for the rows (or use NOWAIT and retry)",
            (ev.lock,),
        )
