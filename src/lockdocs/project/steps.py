"""Resolving a path's steps: takes (with their mode and option checks), sets (one
alternative per order of their elements), loops, branches and the other steps, and the
FOR KEY SHARE a write takes through foreign keys.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Location
from lockdocs.load import Document
from lockdocs.project.files import MAX_SET
from lockdocs.project.state import Resolver, via

# The step keys that end a transaction: each is an `End` of that name.
_ENDS = ("commit", "rollback", "leave_open")


class PathCtx:
    def __init__(self) -> None:
        self.runs: list[tuple[str, Document, tuple[str | int, ...]]] = []
        self.begins: list[tuple[str, Document, tuple[str | int, ...]]] = []


def resolve_steps(
    rv: Resolver,
    doc: Document,
    base: tuple[str | int, ...],
    raw_steps: list[Any],
    locks: dict[str, m.Lock],
    ctx: PathCtx,
) -> tuple[m.Step, ...]:
    out: list[m.Step] = []
    for i, raw in enumerate(raw_steps):
        p = (*base, i)
        loc = doc.loc(p)
        if isinstance(raw, str):
            out.append(m.End(raw, loc))
            continue
        if "take" in raw:
            take = resolve_take(rv, doc, p, raw, locks, ctx, loc)
            if take is not None:
                out.append(take)
        elif "set" in raw:
            out.extend(resolve_set(rv, doc, p, raw, locks, ctx))
        elif "loop" in raw:
            out.append(
                m.Loop(
                    label=raw["loop"],
                    location=loc,
                    steps=resolve_steps(rv, doc, (*p, "steps"), raw["steps"], locks, ctx),
                    order=raw.get("order"),
                    note=raw.get("note"),
                    backend=raw.get("backend"),
                )
            )
        elif "branches" in raw:
            alts = tuple(
                (name, resolve_steps(rv, doc, (*p, "branches", name), steps, locks, ctx))
                for name, steps in raw["branches"].items()
            )
            out.append(m.Branches(alts, loc, raw.get("note"), raw.get("backend")))
        elif "run" in raw:
            ctx.runs.append((raw["run"], doc, (*p, "run")))
            out.append(m.Run(raw["run"], loc, raw.get("note"), raw.get("backend")))
        elif "call" in raw:
            out.append(m.Call(raw["call"], loc, raw.get("note"), raw.get("backend")))
        elif "external" in raw:
            out.append(m.External(raw["external"], loc, raw.get("note"), raw.get("backend")))
        elif "write" in raw:
            write = m.Write(
                raw["write"],
                loc,
                via(raw.get("via")),
                raw.get("note"),
                raw.get("backend"),
                insert=raw.get("insert"),
                update=raw.get("update"),
                columns=tuple(raw.get("columns") or ()),
                instance=raw.get("instance"),
                rewrites=raw.get("rewrites"),
            )
            if write.rewrites is not None and write.update is None:
                rv.err(
                    "LD003",
                    doc.loc((*p, "rewrites"), key=True),
                    "rewrites: says whether an update writes a row this transaction already "
                    "wrote, and this write updates no table",
                    "add update: <table>, or remove rewrites:",
                )
            if write.columns and write.update is None:
                rv.err(
                    "LD003",
                    doc.loc((*p, "columns"), key=True),
                    "columns: names what an update sets, and this write updates no table",
                    "add update: <table>, or remove columns:",
                )
            if write.insert is not None and write.update is not None:
                rv.err(
                    "LD003",
                    doc.loc((*p, "update"), key=True),
                    "one write inserts into a table or updates one, not both",
                    "split it into two write: steps",
                )
            out.append(write)
            out.extend(foreign_key_takes(write, locks))
        elif "begin" in raw:
            ctx.begins.append((raw["begin"], doc, (*p, "begin")))
            out.append(m.Begin(raw["begin"], loc, raw.get("note"), raw.get("backend")))
        elif how := next((k for k in _ENDS if k in raw), None):
            end = raw.get(how) or None
            out.append(m.End(how, loc, end, raw.get("backend"), raw.get("connection")))
        elif "release" in raw and rv.lock_ref(doc, (*p, "release"), raw["release"], locks):
            out.append(
                m.Release(
                    raw["release"],
                    loc,
                    via(raw.get("via")),
                    raw.get("note"),
                    raw.get("backend"),
                )
            )
    return tuple(out)


# The keys of a take that needs none of resolve_take's cross-checks.
_PLAIN_TAKE = frozenset({"take", "mode", "via", "note"})


def resolve_take(
    rv: Resolver,
    doc: Document,
    p: tuple[str | int, ...],
    raw: dict[str, Any],
    locks: dict[str, m.Lock],
    ctx: PathCtx,
    loc: Location | None = None,
) -> m.Take | None:
    """`loc`: the step's location when the caller has it already (`doc.loc(p)`)."""
    name = raw["take"]
    if not rv.lock_ref(doc, (*p, "take"), name, locks):
        return None
    lock = locks[name]
    mode = rv.mode_ok(doc, p, lock, raw.get("mode"))
    if raw.keys() <= _PLAIN_TAKE:
        # The usual take (a 100x project: 18,000 of 18,055): nothing below can object, and
        # every other field keeps its default.
        return m.Take(name, mode, loc or doc.loc(p), via(raw.get("via")), raw.get("note"))
    option = raw.get("option")
    attempt = raw.get("try")
    under = raw.get("under")
    if under is not None and lock.within is None:
        rv.err(
            "LD003",
            doc.loc((*p, "under"), key=True),
            f"under: names the parent instance of a take, and '{name}' declares no parent",
            f"declare instances: {{within: <parent lock>}} on '{name}' in locks.yaml, or "
            "remove under:",
        )
    if raw.get("claimed") and (raw.get("instance") is not None or raw.get("again")):
        rv.err(
            "LD003",
            doc.loc((*p, "claimed"), key=True),
            f"this take of '{name}' says claimed: (every row the path holds) and "
            + ("instance:" if raw.get("instance") is not None else "again:")
            + " (one of them)",
            "keep claimed: for a statement over all the rows claimed earlier, or the other "
            "for one row",
        )
    if raw.get("inserted") and lock.kind != "row":
        rv.err(
            "LD003",
            doc.loc((*p, "inserted"), key=True),
            f"inserted: says the take locks a row the transaction inserted, and '{name}' is "
            f"{lock.kind}",
            "remove inserted:, or take the row lock of the inserted row",
        )
    if option and lock.kind != "row":
        rv.err(
            "LD006",
            doc.loc((*p, "option")),
            f"{option.upper()} applies to row locks only; '{name}' is {lock.kind}",
            "a take that never waits (pg_try_advisory_xact_lock, an in-process check) is "
            "declared with try: <what the code does when the lock is not free>; remove "
            "option:",
        )
    elif option and attempt is not None:
        rv.err(
            "LD006",
            doc.loc((*p, "try"), key=True),
            f"this take of '{name}' says both option: {option} and try:",
            "keep option: for a NOWAIT or SKIP LOCKED the statement itself fails or skips "
            "on, or try: for a NOWAIT whose error the code handles; not both",
        )
    return m.Take(
        lock=name,
        mode=mode,
        location=loc or doc.loc(p),
        via=via(raw.get("via")),
        note=raw.get("note"),
        instance=raw.get("instance"),
        again=bool(raw.get("again", False)),
        claimed=bool(raw.get("claimed", False)),
        inserted=bool(raw.get("inserted", False)),
        connection=raw.get("connection"),
        order=raw.get("order"),
        option=option,
        attempt=attempt,
        under=under,
        implicit=raw.get("implicit"),
        changes_key=bool(raw.get("changes_key", False)),
        backend=raw.get("backend"),
    )


def resolve_set(
    rv: Resolver,
    doc: Document,
    p: tuple[str | int, ...],
    raw: dict[str, Any],
    locks: dict[str, m.Lock],
    ctx: PathCtx,
) -> list[m.Step]:
    """set: [a, b]: one statement takes every element, in no order the code controls. In
    the model it is alternatives, one per order of the elements (so the analysis needs no
    case of its own), that remember the set (so the page shows one step)."""
    elements = raw["set"]
    if len(elements) > MAX_SET:
        rv.err(
            "LD030",
            doc.loc((*p, "set"), key=True),
            f"this set takes {len(elements)} locks in one statement; lockdocs follows at "
            f"most {MAX_SET} (every order of them: {math.factorial(MAX_SET)} alternatives)",
            "declare the instances of one lock as a loop: with order: none, or split the "
            "set where the code takes some of its locks in statements of their own",
        )
        return []
    takes: list[m.Take] = []
    seen: dict[tuple[str, str | None], int] = {}
    for j, item in enumerate(elements):
        ip = (*p, "set", j)
        one = {"take": item} if isinstance(item, str) else dict(item)
        for field in ("mode", "via", "option", "try", "implicit", "backend"):
            if field in raw and field not in one:
                one[field] = raw[field]
        take = resolve_take(rv, doc, ip, one, locks, ctx)
        if take is None:
            continue
        lock = locks[take.lock]
        who = (take.lock, None if lock.singleton else take.instance)
        if who in seen:
            rv.err(
                "LD030",
                doc.loc(ip),
                f"element {j + 1} of this set takes the same "
                + ("lock" if lock.singleton else "instance")
                + f" of '{take.lock}' as element {seen[who] + 1}",
                "name two distinct rows of one lock with instance: on each element (take: "
                f"{take.lock}, instance: a), or list the lock once",
            )
            continue
        seen[who] = j
        takes.append(take)
    if len(takes) < 2:
        return list(takes)
    names = [t.lock + (f" {t.instance}" if t.instance else "") for t in takes]
    alternatives = tuple(
        (" then ".join(names[i] for i in order), tuple(takes[i] for i in order))
        for order in itertools.permutations(range(len(takes)))
    )
    return [
        m.Branches(
            alternatives,
            doc.loc(p),
            raw.get("note"),
            raw.get("backend"),
            statement=tuple(takes),
        )
    ]


def foreign_key_takes(write: m.Write, locks: dict[str, m.Lock]) -> list[m.Take]:
    """The FOR KEY SHARE a write takes on parent rows through foreign keys (Postgres's RI
    check, at the end of the statement): an insert into a child table checks every foreign key
    of the row; an update checks those whose column it sets (with no columns named, all of
    them). An update that leaves the column alone checks it again only when it writes a row
    version this transaction created or updated itself (PostgreSQL's
    RI_FKey_fk_upd_check_required; tests/test_pg_verdicts.py measures it): by an insert (whose
    check already locked that parent) or by an earlier update (which may have locked none).
    `rewrites:` says whether it does; by default the take is a re-check that happens where an
    earlier write of the same transaction inserted into or updated the table (the walk knows)."""
    table = write.insert or write.update
    if table is None:
        return []
    out: list[m.Take] = []
    for lock in locks.values():
        for ref in lock.references:
            if ref.table != table:
                continue
            recheck: str | None = None
            how = "insert into" if write.insert else "update of"
            if (
                write.update is not None
                and write.columns
                and ref.column is not None
                and ref.column not in write.columns
            ):
                if write.rewrites is False:
                    continue
                recheck = None if write.rewrites else table
                how = "re-check by the update of"
            for backend in _row_backends(lock, write.backend):
                out.append(
                    m.Take(
                        lock=lock.id,
                        mode="for key share",
                        location=write.location,
                        instance=write.instance,
                        implicit=f"the foreign-key check of {table}"
                        + (f".{ref.column}" if ref.column else ""),
                        backend=backend,
                        derived=f"{how} {table} ("
                        + (f"{ref.column} references" if ref.column else "a foreign key to")
                        + f" {lock.table})"
                        + (
                            ", a row version this transaction already wrote"
                            if how.startswith("re-check")
                            else ""
                        ),
                        recheck=recheck,
                    )
                )
    return out


def _row_backends(lock: m.Lock, only: str | None) -> list[str | None]:
    """Where the lock is a row lock (a foreign-key check locks rows, never memory)."""
    if not lock.backends:
        return [only] if lock.kind == "row" else []
    rows = [b.name for b in lock.backends if b.kind == "row"]
    if only is not None:
        return [only] if only in rows else []
    if len(rows) == len(lock.backends):
        return [None]
    return list(rows)
