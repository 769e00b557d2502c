"""LD205: a path that waits for itself across two of its connections. A worker that holds a
lock on one connection and asks for it again, in a conflicting mode, on another connection of
its own (`take: ... connection:`) waits for a transaction that only it can end: Postgres sees two
sessions, one waiting and one idle, and breaks nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.modes import conflicts
from lockdocs.rules.context import CheckContext, once_per_step, step_finding
from lockdocs.rules.examples import ACCOUNT_ROW, HEAD
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule


@rule(
    "LD205",
    "self-wait-across-connections",
    Severity.ERROR,
    summary="A path asks, on one of its connections, for a lock it holds on another.",
    what=(
        "Reports a take declared on another connection of the worker (`connection:`) of an "
        "instance the same path holds, in a mode the request conflicts with, on a different "
        "connection (its own, or another named one) whose transaction has not ended."
    ),
    why=(
        "Each connection is a session of its own to Postgres: the request waits for the "
        "other session's transaction, which the worker would end only after the request "
        "returns. The holding session is idle, not waiting, so the deadlock detector sees no "
        "cycle: the worker hangs until a lock_timeout or a restart."
    ),
    example={
        "locks.yaml": HEAD + "locks:\n" + ACCOUNT_ROW,
        "paths/money.yaml": """\
group: Money
paths:
  post:
    title: Post an entry
    steps:
      - take: account
      - take: account
        connection: audit
        note: the audit logger writes the balance on a connection of its own
""",
    },
    use_instead={
        "paths/money.yaml": (
            "      - take: account\n        connection: audit\n",
            "      - commit\n      - take: account\n        connection: audit\n",
        ),
    },
)
def check_self_waits(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        events = ctx.events(backend)
        # A lock is held on another connection only through a take declared on one, whose
        # event says so: without any, there is nothing to find (most projects).
        if not any(ev.connection for ev in events):
            continue
        found = []
        for ev in events:
            if ev.kind not in ("acquire", "upgrade"):
                continue
            kind = ctx.lock_kind(ev.lock, backend)
            mine = [
                h
                for h in ev.held
                if h.lock == ev.lock
                and h.instance == ev.instance
                and h.connection != ev.connection
                and not h.maybe
                and conflicts(kind, ev.mode, h.mode)
            ]
            if mine:
                found.append((ev, mine[0]))
        holds = {ev.location: h for ev, h in found}
        for step in once_per_step(ev for ev, _ in found):
            ev = step.event
            h = holds[ev.location]
            on = f"connection '{ev.connection}'" if ev.connection else "its own connection"
            by = f"connection '{h.connection}'" if h.connection else "its own connection"
            yield step_finding(
                finding,
                step,
                f"path '{step.owner}' asks for {ev.lock} ({ev.mode}) on {on} while it holds it "
                f"({h.mode}, line {h.acquired_at}) on {by}: it waits for itself, and Postgres, "
                "which sees one session waiting for an idle one, never breaks it: it hangs",
                "take it on the connection that holds it, or end that connection's "
                "transaction first (a commit: with its connection: before the other asks)",
                (ev.lock,),
            )
