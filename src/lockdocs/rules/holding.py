"""LD306, LD307: practice rules about how long a lock is held: an in-memory lock held until
the transaction's writes commit, and no path that returns with its transaction open while it
holds locks."""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.rules.context import (
    CheckContext,
    held_locks,
    once_per_step,
    step_finding,
    steps_holding,
)
from lockdocs.rules.examples import FLEET_LOCKSET, FLEET_PATH, HEAD
from lockdocs.rules.finder import Finder
from lockdocs.rules.practice import ROW_EXAMPLE, held_text
from lockdocs.rules.registry import rule


@rule(
    "LD306",
    "memory-lock-released-before-commit",
    Severity.ERROR,
    summary="An in-memory lock is released before the transaction's writes commit.",
    what=(
        "Reports a release of an in-memory lock in a transaction that has written and not yet "
        "committed."
    ),
    why=(
        "The next holder of the in-memory lock may read before the commit and miss the "
        "changes it was meant to see. Commit first, then release."
    ),
    example={
        "locks.yaml": HEAD + "locks:\n" + FLEET_LOCKSET,
        "paths/fleets.yaml": FLEET_PATH.replace(
            "      - commit\n      - release: fleet\n", "      - release: fleet\n      - commit\n"
        ),
    },
    use_instead={
        "paths/fleets.yaml": (
            "      - release: fleet\n      - commit\n",
            "      - commit\n      - release: fleet\n",
        ),
    },
)
def memory_release(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    early = (
        ev
        for backend in ctx.backends
        for ev in ctx.events(backend)
        if ev.kind == "release" and ev.wrote and ctx.lock_kind(ev.lock, backend) == "memory"
    )
    for step in once_per_step(early):
        ev = step.event
        yield step_finding(
            finding,
            step,
            f"path '{step.owner}' releases the in-memory lock {ev.lock} before its writes commit",
            "move the commit before the release",
            (ev.lock,),
        )


@rule(
    "LD307",
    "transaction-left-open",
    Severity.INFO,
    summary="A path returns with its transaction open while it holds locks.",
    what="Reports a leave_open step taken while locks are held.",
    why=(
        "Whatever runs after the return (rendering a response, a network call) extends how "
        "long those locks are held, and other paths wait for it."
    ),
    example={
        "locks.yaml": ROW_EXAMPLE,
        "paths/orders.yaml": """\
group: Orders
paths:
  sync:
    title: Sync an order
    transaction: bounded
    steps:
      - take: order
      - leave_open: the caller rolls back after rendering
""",
    },
    use_instead={
        "paths/orders.yaml": (
            "      - leave_open: the caller rolls back after rendering\n",
            "      - rollback\n",
        ),
    },
)
def left_open(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for step in steps_holding(ctx.all_events, "leave_open"):
        yield step_finding(
            finding,
            step,
            f"path '{step.owner}' returns with its transaction open, holding "
            f"{held_text(step.held)}",
            "end the transaction before returning, or keep what runs after the return short",
            held_locks(step),
        )
