"""LD308: locks that live in one server process. An asyncio lock or an in-process lockset
excludes only the tasks of its own process; with several replicas of the server it keeps
nothing apart across them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.rules.context import (
    CheckContext,
    ReachedStep,
    held_locks,
    once_per_step,
    step_finding,
)
from lockdocs.rules.examples import FLEET_LOCKSET, FLEET_PATH, HEAD
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import rule


def _route(ctx: CheckContext, backend: str | None, step: ReachedStep) -> str:
    """Which route through the path the unguarded write is on, when another route to the same
    step holds a database lock: the branch the write stands in, or the branches before it
    that skip the database lock the other routes take there."""
    if step.branches:
        names = ", ".join(f"'{b}'" for b in step.branches)
        return f" (branch {names})"
    guarded = {
        h.lock
        for ev in ctx.events(backend)
        if ev.kind == "write" and ev.location == step.event.location
        for h in ev.held
        if not process_local(ctx, h.lock, backend)
    }
    if not guarded:
        return ""
    skipping: list[str] = []
    stack = [ctx.model.paths[step.owner].steps]
    while stack:
        for s in stack.pop():
            if isinstance(s, m.Loop):
                stack.append(s.steps)
            elif isinstance(s, m.Branches) and not s.statement:
                takes = [(name, _takes_any(alt, guarded)) for name, alt in s.alternatives]
                if any(t for _, t in takes):
                    skipping += [f"'{name}' (line {s.location.line})" for name, t in takes if not t]
                stack.extend(alt for _, alt in s.alternatives)
    if not skipping:
        return ""
    return (
        f" after branch {' or '.join(skipping)}, which does not take {', '.join(sorted(guarded))},"
    )


def _takes_any(steps: tuple[m.Step, ...], locks: set[str]) -> bool:
    stack = [steps]
    while stack:
        for s in stack.pop():
            match s:
                case m.Take():
                    if s.lock in locks:
                        return True
                case m.Loop():
                    stack.append(s.steps)
                case m.Branches():
                    stack.extend(alt for _, alt in s.alternatives)
                case m.Run() | m.Leaf():
                    pass
                case _:
                    assert_never(s)
    return False


def process_local(ctx: CheckContext, lock_id: str, backend: str | None) -> bool:
    """Does the lock exclude only within one process on this backend?"""
    kind, scope = ctx.model.locks[lock_id].on(backend)
    return kind == "memory" and scope == "process"


@rule(
    "LD308",
    "write-guarded-in-one-process",
    Severity.ERROR,
    summary="With several replicas, a write is guarded only by a lock that lives in one process.",
    what=(
        "When `replicas:` is above 1 (for the backend), reports a write made while the only "
        "locks held are process-local memory locks (`scope: process`, the default for "
        "`kind: memory`), naming them."
    ),
    why=(
        "An asyncio lock or a lockset is a Python object: a second server process has its own "
        "and never sees the first one's. Two replicas then run the guarded write at once, "
        "which is the race the lock was written to prevent."
    ),
    example={
        "locks.yaml": HEAD
        + "replicas: 3\nlocks:\n"
        + FLEET_LOCKSET
        + """\
  fleet-row:
    title: Fleet row
    kind: row
    table: fleets
    modes: {for no key update: processing}
""",
        "paths/fleets.yaml": FLEET_PATH,
    },
    use_instead={
        "paths/fleets.yaml": (
            "      - take: fleet\n",
            "      - take: fleet-row\n",
        ),
    },
)
def guarded_in_one_process(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    for backend in ctx.backends:
        replicas = ctx.model.replicas_on(backend)
        if replicas < 2:
            continue
        writes = [
            ev
            for ev in ctx.events(backend)
            if ev.kind == "write"
            and ev.held
            and all(process_local(ctx, h.lock, backend) for h in ev.held)
        ]
        on = f" on {backend}" if backend else ""
        for step in once_per_step(writes):
            ev = step.event
            locks = held_locks(step)
            yield step_finding(
                finding,
                step,
                f"path '{step.owner}' writes {ev.name}{_route(ctx, backend, step)} guarded "
                "only by "
                + ", ".join(locks)
                + f", which lives in one process; with {replicas} replicas{on} another process "
                "makes the same write at the same time",
                "guard the write with a database lock as well (a row lock, or an advisory lock "
                "on the same name), or run one replica",
                locks,
            )
