"""Resolving the transaction kinds of locks.yaml and the groups and paths of paths/: unique
path ids, the transaction each path runs in, the names `run:` and `begin:` steps give, and
no path running itself.
"""

from __future__ import annotations

from typing import assert_never

from lockdocs import model as m
from lockdocs.diagnostics import Location
from lockdocs.project.state import Resolver, did_you_mean, via
from lockdocs.project.steps import PathCtx, resolve_steps


def resolve_transactions(rv: Resolver, locks: dict[str, m.Lock]) -> dict[str, m.TransactionKind]:
    out: dict[str, m.TransactionKind] = {}
    for tid, raw in (rv.data.get("transactions") or {}).items():
        base = ("transactions", tid)
        first = raw.get("first") or {}
        first_lock = first.get("lock")
        first_mode = first.get("mode")
        if first_lock and rv.lock_ref(rv.ld, (*base, "first", "lock"), first_lock, locks):
            first_mode = rv.mode_ok(rv.ld, (*base, "first"), locks[first_lock], first_mode)
        timeout = raw.get("lock_timeout")
        out[tid] = m.TransactionKind(
            id=tid,
            location=rv.ld.loc(base, key=True),
            title=raw.get("title"),
            opened_by=raw.get("opened_by"),
            first_lock=first_lock,
            first_mode=first_mode,
            isolation=raw.get("isolation"),
            lock_timeout=None if timeout in (None, "none") else timeout,
            on_timeout=raw.get("on_timeout"),
            notes=raw.get("notes"),
            database=raw.get("database"),
            pooler=raw.get("pooler"),
        )
    return out


def resolve_paths(
    rv: Resolver,
    locks: dict[str, m.Lock],
    transactions: dict[str, m.TransactionKind],
) -> tuple[dict[str, m.Path], tuple[m.Group, ...]]:
    paths: dict[str, m.Path] = {}
    first_seen: dict[str, Location] = {}
    groups: list[m.Group] = []
    ctx = PathCtx()
    for doc in rv.path_docs:
        data = doc.data
        default_tx = data.get("transaction")
        if default_tx is not None and default_tx not in transactions:
            rv.err(
                "LD004",
                doc.loc(("transaction",)),
                f"unknown transaction kind '{default_tx}'",
                did_you_mean(default_tx, list(transactions)),
            )
        ids: list[str] = []
        for pid, raw in data["paths"].items():
            loc = doc.loc(("paths", pid), key=True)
            if pid in first_seen:
                rv.err(
                    "LD005",
                    loc,
                    f"path id '{pid}' is declared twice (first at {first_seen[pid]})",
                    "path ids are unique across all files; rename one",
                )
                continue
            first_seen[pid] = loc
            tx = raw.get("transaction", default_tx)
            if "transaction" in raw and tx not in transactions:
                rv.err(
                    "LD004",
                    doc.loc(("paths", pid, "transaction")),
                    f"unknown transaction kind '{tx}'",
                    did_you_mean(str(tx), list(transactions)),
                )
            steps = resolve_steps(rv, doc, ("paths", pid, "steps"), raw["steps"], locks, ctx)
            if not raw["steps"]:
                rv.err("LD007", loc, f"path '{pid}' has no steps", "list its steps")
            paths[pid] = m.Path(
                id=pid,
                title=raw["title"],
                group=data["group"],
                file=doc.file,
                location=loc,
                steps=steps,
                entry=via(raw.get("entry")),
                transaction=tx,
                standalone=bool(raw.get("standalone", True)),
                summary=raw.get("summary"),
                notes=raw.get("notes"),
                issues=tuple(raw.get("issues") or ()),
            )
            ids.append(pid)
        groups.append(
            m.Group(
                title=data["group"],
                file=doc.file,
                order=int(data.get("order", 1000)),
                paths=tuple(ids),
                intro=data.get("intro"),
                transaction=default_tx,
            )
        )
    for name, doc, p in ctx.runs:
        if name not in paths:
            rv.err("LD004", doc.loc(p), f"unknown path '{name}'", did_you_mean(name, list(paths)))
    for name, doc, p in ctx.begins:
        if name not in transactions:
            rv.err(
                "LD004",
                doc.loc(p),
                f"unknown transaction kind '{name}'",
                did_you_mean(name, list(transactions)),
            )
    _run_cycles(rv, paths)
    groups.sort(key=lambda g: (g.order, g.file))
    return paths, tuple(groups)


def _run_cycles(rv: Resolver, paths: dict[str, m.Path]) -> None:
    """A path that runs itself, directly or not, would inline forever."""
    calls: dict[str, list[m.Run]] = {pid: list(_runs(p.steps)) for pid, p in paths.items()}
    state: dict[str, int] = {}  # 1: on the current chain, 2: done
    # An explicit stack (a run: chain of thousands of paths has no recursion limit): each
    # frame is a path and how many of its run: steps were followed.
    for root in sorted(paths):
        if root in state:
            continue
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            pid, i = stack[-1]
            runs = calls.get(pid, [])
            if i >= len(runs):
                stack.pop()
                state[pid] = 2
                continue
            stack[-1] = (pid, i + 1)
            r = runs[i]
            if r.path not in paths:
                continue
            if state.get(r.path) == 1:
                chain = [p for p, _ in stack]
                cycle = [*chain[chain.index(r.path) :], r.path] if r.path in chain else [pid]
                rv.err(
                    "LD010",
                    r.location,
                    "paths run each other in a loop: " + " -> ".join(cycle),
                    "a path can run another only if that one does not run it back",
                )
            elif r.path not in state:
                state[r.path] = 1
                stack.append((r.path, 0))


def _runs(steps: tuple[m.Step, ...]) -> list[m.Run]:
    out: list[m.Run] = []
    for s in steps:
        match s:
            case m.Run():
                out.append(s)
            case m.Loop():
                out += _runs(s.steps)
            case m.Branches():
                for _, alt in s.alternatives:
                    out += _runs(alt)
            case m.Leaf():
                pass
            case _:
                assert_never(s)
    return out
