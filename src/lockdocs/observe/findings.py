"""The LD8xx findings of a log, worded: each at a log line (the file as the user named it, or
relative to the project), with the path and locks an exception can name, and a hint."""

from __future__ import annotations

from lockdocs.diagnostics import Diagnostic, Location, Related, Severity
from lockdocs.observe.locks import Seen
from lockdocs.observe.orders import Witness
from lockdocs.observe.paths import Departure
from lockdocs.observe.sessions import Take, Transaction

PROPOSE = "lockdocs observe --propose DIR drafts it"


def at(take: Take) -> Location:
    return Location(take.source, take.line)


def _times(n: int) -> str:
    return "" if n <= 1 else f" (seen {n} times)"


def _statement(take: Take, sample: str) -> str:
    name = f" (sqlc {take.name})" if take.name else ""
    via = f" inside {take.took.via}" if take.took.via else ""
    return f"{' '.join(sample.split())[:200]}{name}{via}"


def undeclared_order(pair: tuple[str, str], w: Witness) -> Diagnostic:
    held, took = pair
    ran = f" in a transaction of path '{w.path}'" if w.path else ""
    return Diagnostic(
        "LD801",
        Severity.WARNING,
        f"held {held} (taken at line {w.held_line}), then took {took}{ran}: no declared path "
        f"takes {took} while holding {held}{_times(w.count)}",
        Location(w.source, w.line),
        f"declare the path that does this ({PROPOSE}), or take {took} before {held} as the "
        "declared paths do",
        paths=(w.path,) if w.path else (),
        locks=pair,
        related=(Related(Location(w.source, w.held_line), f"{held} taken here"),),
    )


def deadlock(d: Diagnostic, witnesses: set[tuple[str, int]]) -> Diagnostic:
    """An LD201 cycle of the model with the observed sequences added, as LD802: at the hop
    that takes an undeclared order (a log line of `witnesses`), where the cycle search put it
    at another hop (a transaction that follows its declared path)."""
    location, related = d.location, d.related
    if (location.file, location.line) not in witnesses:
        for i, r in enumerate(related):
            if (r.location.file, r.location.line) in witnesses:
                first = Related(location, "the cycle's first hop waits here")
                location = r.location
                related = (first, *related[:i], *related[i + 1 :])
                break
    return Diagnostic(
        "LD802",
        Severity.ERROR,
        "logged transactions can deadlock: " + d.message,
        location,
        "the log shows an order the declarations lack; declare it and fix the order the "
        f"code takes its locks in ({PROPOSE}; lockdocs replay runs it once declared)",
        details=d.details,
        paths=d.paths,
        locks=d.locks,
        related=related,
        threads=d.threads,
        extra=d.extra,
    )


def undeclared_lock(seen: Seen, take: Take, sample: str, count: int) -> Diagnostic:
    if seen.kind == "advisory":
        return Diagnostic(
            "LD805",
            Severity.ERROR,
            f"{seen.label}: {seen.why}{_times(count)}; statement: {_statement(take, sample)}",
            at(take),
            f"declare the key's family (a prefix of its own), or build the key the way a "
            f"declared family does ({PROPOSE})",
        )
    return Diagnostic(
        "LD803",
        Severity.ERROR,
        f"{take.took.how} takes a {seen.label}: {seen.why}{_times(count)}; statement: "
        f"{_statement(take, sample)}",
        at(take),
        f"declare a lock on {seen.table} with the paths that take it ({PROPOSE})",
    )


def departure(path: str, dep: Departure, count: int) -> Diagnostic:
    take = dep.take
    step = f" (its step at {dep.step})" if dep.step else ""
    if dep.kind == "lacks":
        message = f"a transaction of path '{path}' takes {dep.lock}, which its steps do not take"
        hint = f"add the take to path '{path}', or tag the transaction with its real path"
    elif dep.kind == "mode":
        message = (
            f"a transaction of path '{path}' takes {dep.lock} {take.took.mode}; its steps take "
            f"it {dep.other}{step}"
        )
        hint = "declare the mode the code takes, or change the statement"
    else:
        message = (
            f"a transaction of path '{path}' takes {dep.lock} after {dep.other}; its steps take "
            f"{dep.lock} first{step}"
        )
        hint = f"declare the order the code runs in path '{path}', or change the code"
    related = (Related(dep.step, f"the step of path '{path}'"),) if dep.step else ()
    return Diagnostic(
        "LD804",
        Severity.WARNING,
        message + f" ({take.took.how}){_times(count)}",
        at(take),
        hint,
        paths=(path,),
        locks=tuple(x for x in (dep.lock, dep.other if dep.kind == "order" else None) if x),
        related=related,
    )


def clash(
    tag: tuple[int, int, int], first: tuple[str, str, int], second: tuple[str, Take]
) -> Diagnostic:
    (a, source, line), (b, tb) = first, second
    return Diagnostic(
        "LD806",
        Severity.ERROR,
        f"the advisory key [{tag[0]},{tag[1]},{tag[2]}] is {a}'s at line {line} and {b}'s "
        f"here: the two families meet, and their holders wait on each other",
        at(tb),
        "give each family a prefix of its own, so no two can produce one key",
        locks=tuple(sorted((a, b))),
        related=(Related(Location(source, line), f"the same key as {a}"),),
    )


CUTS = {
    "start": "the log begins inside this transaction: the locks it took before are not in it",
    "end": "the log ends inside this transaction: the locks it took after are not in it",
    "gap": "lines of this session are missing from the log (its line numbers jump) inside "
    "this transaction",
    "unknown": "the log does not show whether these statements were one transaction (no "
    "BEGIN or COMMIT, no session line numbers)",
}


def cut(t: Transaction) -> Diagnostic:
    return Diagnostic(
        "LD807",
        Severity.INFO,
        f"{CUTS.get(t.cut, t.cut)} (session {t.session}, {len(t.takes)} locks read)",
        Location(t.source, t.line),
        "start the log before the run and stop it after; its orders are read as far as the "
        "log shows them",
    )


def unread(source: str, line: int, why: str, count: int) -> Diagnostic:
    return Diagnostic(
        "LD808",
        Severity.WARNING,
        f"a statement the server ran is not read, so its locks are not known: {why}{_times(count)}",
        Location(source, line),
        "lockdocs reads PostgreSQL 15's grammar; a statement cut by the log (log_parameter_max"
        "_length, a full disk) or newer syntax cannot be read",
    )


def unknown_path(value: str, take_source: str, line: int, count: int, close: str) -> Diagnostic:
    return Diagnostic(
        "LD809",
        Severity.WARNING,
        f"lockdocs_path='{value}' names no declared path{_times(count)}",
        Location(take_source, line),
        f"tag the statements with a declared path id{close}",
    )
