"""Whether the code takes a declared lock the declared way (LD703): the strongest mode found
against the declared ones, a row lock's SKIP LOCKED or NOWAIT, an advisory lock's try form and
its scope (transaction or session).

The comparison (`compare`) has already matched the statements to the declaration; this module
only reads what they take.
"""

from __future__ import annotations

from lockdocs import model as m
from lockdocs.grammar import an
from lockdocs.scan.collect import Item
from lockdocs.scan.decls import STRENGTH, Decl, location_of, statement_of
from lockdocs.scan.waiving import Findings


def check_modes(
    found_in: Findings, d: Decl, lock: m.Lock, items: list[Item], modes: set[str] | None = None
) -> None:
    """LD703 for each way the found statements depart from the declaration, added to the
    comparison's findings (which apply the waivers in the SQL). `modes`: the modes several steps
    through one via declare, when their statements cannot be paired with them one to one."""

    def differs(it: Item, message: str, hint: str) -> None:
        found_in.add(
            "LD703",
            message,
            location_of(it),
            hint,
            details=(f"declared at {d.location}",),
            locks=(lock.id,),
            item=it,
        )

    strongest = max(items, key=lambda it: STRENGTH.get(it.lock.mode, 0))
    found = strongest.lock.mode
    expected = modes or ({d.mode} if d.mode else set(lock.mode_names))
    if found not in expected:
        # The mode is changed where it was declared: the step's file, or the lock's.
        where = d.location.file if (d.mode or modes) else (lock.location.file or "locks.yaml")
        differs(
            strongest,
            f"{statement_of(strongest)} takes '{lock.id}' {found.upper()}, but it is declared "
            f"{' or '.join(sorted(x.upper() for x in expected))}",
            "make the SQL and the declaration agree: change the locking clause, or the "
            f"mode in {where}",
        )
    if lock.kind == "row":
        declared = {d.option} if d.option else set(lock.options)
        for it in items:
            if it.lock.implicit:
                continue
            if it.lock.option and it.lock.option not in declared:
                differs(
                    it,
                    f"{statement_of(it)} takes '{lock.id}' {it.lock.option.upper()}, which is not "
                    "declared",
                    f"add option: {it.lock.option} to the step (or options: to the lock), "
                    "or drop it from the SQL",
                )
            elif not it.lock.option and declared and d.option:
                differs(
                    it,
                    f"{statement_of(it)} takes '{lock.id}' without {d.option.upper()}, which is "
                    "declared",
                    f"add {d.option.upper()} to the locking clause, or drop option: from the step",
                )
    if lock.kind == "advisory" and d.taker is None:
        for it in items:
            if it.lock.try_ == d.tries:
                continue
            if it.lock.try_:
                message = f"{statement_of(it)} takes '{lock.id}' with {it.lock.function}, which never waits, but the step waits for it"
                hint = "declare try: on the step (what the code does when the lock is not free)"
            else:
                message = f"{statement_of(it)} takes '{lock.id}' with {it.lock.function}, which waits, but the step is declared try:"
                hint = (
                    "use the pg_try_advisory_* form the step declares, or remove try: from the step"
                )
            differs(
                it,
                message,
                hint,
            )
            break
    if lock.kind == "advisory":
        for it in items:
            if it.lock.scope and it.lock.scope != lock.scope:
                differs(
                    it,
                    f"{statement_of(it)} takes '{lock.id}' with {it.lock.function}, "
                    f"{an(it.lock.scope)}-level lock, but the lock is declared {lock.scope}-scoped",
                    "use the pg_advisory_xact_* form for a transaction-scoped lock, or "
                    f"declare scope: {it.lock.scope}",
                )
