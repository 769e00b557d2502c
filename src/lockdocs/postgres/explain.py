"""A server log's deadlock and lock-timeout reports -> the declared locks, paths and findings.

Each wait a deadlock report names is decoded to a declared lock: an advisory tag to the lock
whose fixed key has that tag, or to a key family by the key expression of the waiting
process's statement; a row wait (on a transaction or a tuple) to the row lock of the table the
statement names. The process that blocks it holds that lock, so each process holds one lock of
the cycle and asks for the next; the declared takes of that order name the paths that could
have run it. Then the cycle is compared with lockdocs' findings: one it reports, one whose
order no declared path has (the declarations are missing a path or a step), or one on a lock
that is not declared at all.
"""

from __future__ import annotations

from lockdocs import model as m
from lockdocs import pghash
from lockdocs.analysis.events import Event
from lockdocs.diagnostics import Diagnostic
from lockdocs.postgres import statements as sq
from lockdocs.postgres.cases import Case, LockRef, Process, Taker
from lockdocs.postgres.logs import (
    ADVISORY_MODE_NAMES,
    TABLE_MODE_NAMES,
    LockTag,
    context_relation,
    parse_detail,
)
from lockdocs.postgres.serverlog import DEADLOCK, Entry
from lockdocs.postgres.sqlread import AdvisoryCall, Reading, RelationLock, masked, read

CYCLE_CODES = ("LD201", "LD202", "LD203")
_READINGS = 4096  # statements read once each, kept while a log is explained


class Explainer:
    def __init__(self, model: m.Model, diagnostics: list[Diagnostic], events: list[Event]):
        self.model = model
        self.findings = [d for d in diagnostics if d.code in CYCLE_CODES]
        self.events = [e for e in events if e.kind in ("acquire", "upgrade", "retake")]
        self.by_lock: dict[str, list[tuple[int, Event]]] = {}
        for i, e in enumerate(self.events):
            self.by_lock.setdefault(e.lock, []).append((i, e))
        self.readings: dict[str, Reading] = {}
        # Each declared table parsed once (by Postgres's grammar), not once per wait.
        # (a table lock with instances: replay puts instance n in schema <schema>_<n>)
        self.tables = [
            (lock.id, sq.table_of(lock.table, lock.id), lock.kind == "table" and not lock.singleton)
            for lock in model.locks.values()
            if lock.kind in ("row", "table") and lock.table
        ]
        self.tags: dict[tuple[int, int, int], list[str]] = {}
        for lock in model.locks.values():
            if lock.key is not None and lock.key.tag is not None:
                self.tags.setdefault(lock.key.tag, []).append(lock.id)

    # --- decoding ---------------------------------------------------------------------------

    def advisory(self, tag: LockTag | None, mode: str, reading: Reading) -> LockRef:
        words = tag.text if tag else "an advisory lock"
        wanted = tag.advisory_tag if tag else None
        call = self._call(reading, wanted)
        declared_mode = ADVISORY_MODE_NAMES.get(mode) or (call.mode if call else None)
        if wanted is not None and wanted in self.tags:
            return LockRef(tuple(self.tags[wanted]), declared_mode, words, "its fixed key")
        if call is not None:
            stand_in = self._stand_in(call)
            if stand_in:
                return LockRef((stand_in,), declared_mode, words, "replay's stand-in for it")
            family = self._family(call)
            if family:
                expr = call.parts[0] if len(call.parts) == 1 else call.parts[-1]
                shown = expr.text if expr.text is not None else f"{expr.prefix or ''}..."
                return LockRef(
                    tuple(family),
                    declared_mode,
                    words,
                    f"the key expression of its statement: {expr.function}('{shown}')",
                )
        why = "no declared key has this tag"
        if call is None and reading.error:
            why += f", and {reading.error}"
        elif call is None:
            why += ", and its statement takes no advisory lock lockdocs can read"
        return LockRef((), declared_mode, words, why)

    def _call(self, reading: Reading, tag: tuple[int, int, int] | None) -> AdvisoryCall | None:
        calls = list(reading.advisory)
        exact = [c for c in calls if tag is not None and c.tag == tag]
        if exact:
            return exact[0]
        unknown = [c for c in calls if c.tag is None]
        return unknown[0] if len(unknown) == 1 else (calls[0] if len(calls) == 1 else None)

    def _stand_in(self, call: AdvisoryCall) -> str | None:
        if len(call.parts) != 2 or call.parts[0].value != pghash.hashtext(sq.STAND_IN_NAMESPACE):
            return None
        text = call.parts[1].text or ""
        lock = text.rsplit("#", 1)[0]
        return lock if lock in self.model.locks else None

    def _family(self, call: AdvisoryCall) -> list[str]:
        out = []
        for lock in self.model.locks.values():
            key = lock.key
            if key is None or lock.kind != "advisory":
                continue
            if key.construction in ("hashtextextended", "hashtext") and len(call.parts) == 1:
                part, kt = call.parts[0], key.text
                if part.function != key.construction or kt is None or not kt.parts:
                    continue
                prefix = kt.prefix or ""
                seen = part.text if part.text is not None else part.prefix
                if seen is not None and seen.startswith(prefix) and part.seed == kt.seed:
                    out.append(lock.id)
            elif key.construction == "int4pair" and len(call.parts) == 2:
                first = key.first
                fixed = first if isinstance(first, int) else None
                if isinstance(first, m.KeyText) and first.fixed and first.text is not None:
                    fixed = pghash.hashtext(first.text)
                if fixed is not None and call.parts[0].value == fixed:
                    out.append(lock.id)
        return out

    def relation(self, reading: Reading, postgres: str, named: str | None = None) -> LockRef:
        """A row or table wait: the lock of the table the statement names. `named` is the
        relation the report's CONTEXT names (the reporting process only): with several
        statements sent as one query, or a statement that locks several tables, it says
        which table the wait was on; without it such a wait could be on any of them."""
        if reading.error and named is None:
            return LockRef((), None, postgres, reading.error)
        hits: list[tuple[RelationLock, list[str]]] = []
        for rel in reading.relations:
            found = self._tables(rel.schema, rel.table, rel.kind)
            if found:
                hits.append((rel, found))
        if named is not None:
            chosen = [(r, f) for r, f in hits if r.table == named and r.kind != "foreign key"]
            if chosen and len({(r.schema, r.table) for r, _ in hits}) == 1:
                hits = chosen
            elif chosen:
                rel, found = chosen[0]
                return LockRef(
                    tuple(found),
                    rel.mode if len(chosen) == 1 else None,
                    postgres,
                    f'the relation its CONTEXT names ("{named}"): {rel.how} on {_qualified(rel)}',
                )
            else:
                found = self._tables(None, named, "row")
                if found:
                    return LockRef(
                        tuple(found), None, postgres, f'the relation its CONTEXT names ("{named}")'
                    )
                if reading.error:
                    return LockRef((), None, postgres, reading.error)
        tables = {(r.schema, r.table) for r, _ in hits}
        if len(tables) == 1:
            rel, found = hits[0]
            return LockRef(
                tuple(found),
                rel.mode,
                postgres,
                f"the table its statement names ({rel.how} on {_qualified(rel)})",
            )
        if hits:
            locks = tuple(dict.fromkeys(lk for _, found in hits for lk in found))
            names = ", ".join(dict.fromkeys(_qualified(r) for r, _ in hits))
            return LockRef(
                locks,
                None,
                postgres,
                f"one of the tables its statement{'s' if reading.statements > 1 else ''} "
                f"name{'' if reading.statements > 1 else 's'} ({names}); the log does not say "
                "which",
            )
        names = ", ".join(dict.fromkeys(_qualified(r) for r in reading.relations))
        return LockRef(
            (),
            None,
            postgres,
            f"no declared lock is on {names}" if names else "its statement names no table",
        )

    def _tables(self, schema: str | None, table: str, kind: str) -> list[str]:
        if table.endswith(sq.FOREIGN_KEY_CHILD):
            # replay's own child table: its insert's foreign-key check locks the parent's row
            table = table[: -len(sq.FOREIGN_KEY_CHILD)]
            kind = "key share"
        if kind == "foreign key":
            # The referenced table is not in the statement: the declared takes say which
            # insert's foreign key takes which row lock (implicit: ...).
            return sorted({e.lock for e in self.events if e.implicit and table in e.implicit})
        return [
            lock_id
            for lock_id, t, instances in self.tables
            if t.name == table
            and (
                schema is None
                or t.schema == schema
                or (
                    instances
                    and schema.startswith(t.schema + "_")
                    and schema[len(t.schema) + 1 :].isdigit()
                )
            )
        ]

    def read(self, statement: str) -> Reading:
        """A statement's reading, once per text (a report names one statement many times)."""
        if not statement:
            return Reading(error="the log has no statement")
        hit = self.readings.get(statement)
        if hit is None:
            if len(self.readings) >= _READINGS:
                self.readings.clear()
            hit = self.readings[statement] = read(statement)
        return hit

    def wait(self, tag: LockTag, mode: str, statement: str, context: str = "") -> LockRef:
        reading = self.read(statement)
        if tag.kind == "advisory":
            return self.advisory(tag, mode, reading)
        named = context_relation(context) if context else None
        if tag.kind in ("transaction", "tuple"):
            words = f"{mode} on {'a transaction' if tag.kind == 'transaction' else 'a tuple'}"
            return self.relation(reading, words, named)
        if tag.kind == "relation":
            ref = self.relation(reading, f"{mode} on a relation")
            return LockRef(ref.locks, TABLE_MODE_NAMES.get(mode, ref.mode), ref.postgres, ref.how)
        return LockRef((), None, tag.text, "lockdocs does not decode this kind of lock")

    def _checked_parent(self, tag: LockTag, mode: str, context: str) -> LockRef | None:
        """The parent row a foreign-key check waits for: the statement names only the child
        table, but the report's CONTEXT quotes the check Postgres ran (SELECT 1 FROM ONLY
        parent x WHERE ... FOR KEY SHARE OF x), and that names the parent."""
        inner = _context_statement(context)
        if inner is None or tag.kind not in ("transaction", "tuple"):
            return None
        ref = self.wait(tag, mode, inner)
        if not ref.locks:
            return None
        return LockRef(ref.locks, ref.mode, ref.postgres, f"{ref.how}, a foreign-key check")

    # --- paths ------------------------------------------------------------------------------

    def takers(self, holds: LockRef | None, wants: LockRef) -> tuple[Taker, ...]:
        out: dict[tuple[str, str], Taker] = {}
        held = set(holds.locks) if holds else set()
        if holds and holds.postgres.endswith("on a tuple") and held == set(wants.locks):
            # What it holds is the row's tuple lock, taken to wait for that row first in the
            # row's queue (README.tuplock): no lock it took before, so any take of it fits.
            held = set()
        for _, ev in sorted(
            (x for lock in set(wants.locks) for x in self.by_lock.get(lock, ())),
            key=lambda x: x[0],
        ):
            if held and not any(h.lock in held for h in ev.held):
                continue
            if held == {ev.lock} and ev.kind == "retake":
                continue
            if wants.mode and ev.mode != wants.mode and self._strict(ev.lock):
                continue
            key = (ev.path, str(ev.location))
            out.setdefault(key, Taker(ev.path, str(ev.location), ev.via))
        return tuple(out[k] for k in sorted(out))

    def declared_takers(self, wants: LockRef) -> tuple[str, ...]:
        """The functions locks.yaml says take the lock (taken_by), in a mode that fits."""
        out: list[str] = []
        for lock_id in wants.locks:
            for t in self.model.locks[lock_id].takers:
                if t.mode is None or wants.mode is None or t.mode == wants.mode:
                    via = f" (via {', '.join(t.via)})" if t.via else ""
                    out.append(f"{t.name}{via}")
        return tuple(dict.fromkeys(out))

    def _strict(self, lock_id: str) -> bool:
        return self.model.locks[lock_id].kind == "advisory"

    # --- reports ----------------------------------------------------------------------------

    def case(self, entry: Entry, show_literals: bool = False) -> Case:
        if entry.state == DEADLOCK:
            return self.deadlock(entry, show_literals)
        return self.timeout(entry, show_literals)

    def deadlock(self, entry: Entry, show_literals: bool) -> Case:
        detail = parse_detail(entry.detail)
        if not detail.waits:
            case = Case("deadlock", DEADLOCK, [], "unread", [], lines=[entry.line])
            case.says.append(
                "the report's DETAIL names no wait lockdocs can read (the server writes "
                "'Process N waits for ... on ...; blocked by process M.'), so which locks "
                "deadlocked is not known"
            )
            case.hint, case.context = entry.hint, entry.context
            return case
        statements = dict(detail.statements)
        if entry.pid is not None and entry.pid not in statements and entry.statement:
            statements[entry.pid] = entry.statement
        # The process that reports the deadlock (its CONTEXT is the report's): by pid, or,
        # with no %p in log_line_prefix, the one whose statement is the report's STATEMENT.
        reporter = entry.pid
        if reporter is None and entry.statement:
            same = [pid for pid, st in statements.items() if st == entry.statement]
            reporter = same[0] if len(same) == 1 else None
        wants: dict[int, LockRef] = {}
        holds: dict[int, LockRef] = {}
        for w in detail.waits:
            context = entry.context if w.pid == reporter else ""
            ref = self.wait(w.tag, w.mode, statements.get(w.pid, ""), context)
            if w.pid == reporter and not ref.locks:
                ref = self._checked_parent(w.tag, w.mode, entry.context) or ref
            wants[w.pid] = ref
            holds[w.blocker] = ref
        procs = []
        for w in detail.waits:
            st = statements.get(w.pid, "")
            shown = st if show_literals else masked(st)
            procs.append(Process("", w.pid, wants[w.pid], holds.get(w.pid), st, shown))
        procs.sort(key=lambda p: (p.wants.locks, p.masked))
        for i, p in enumerate(procs):
            p.name = f"P{i + 1}"
            p.takers = self.takers(p.holds, p.wants)
            p.declared_takers = self.declared_takers(p.wants)
        case = Case("deadlock", DEADLOCK, procs, "", [], lines=[entry.line])
        case.hint, case.context = entry.hint, entry.context
        self._verdict(case)
        return case

    def _verdict(self, case: Case) -> None:
        procs = case.processes
        unknown = [p for p in procs if not p.wants.locks]
        if unknown:
            case.verdict = "undeclared lock"
            case.says = [
                f"{p.name} waits for {p.wants.postgres}: {p.wants.how}; the declarations do not "
                "have this lock (declare it, with the paths that take it)"
                for p in unknown
            ]
            return
        cycle = {lk for p in procs for lk in p.wants.locks}
        matches = [d for d in self.findings if set(d.locks) and set(d.locks) <= cycle]
        exact = [d for d in matches if set(d.locks) == cycle] or matches
        if exact:
            case.verdict = "reported"
            for d in exact:
                waived = f"; waived by {d.waived_by}" if d.waived_by else ""
                case.says.append(
                    f"the cycle lockdocs reports as {d.code} at {d.location}: {d.message}{waived}"
                )
                case.findings.append(_finding_json(d))
            return
        missing = [p for p in procs if not p.takers]
        if missing:
            case.verdict = "missing order"
            # the paths of every other process: all paths, less those only this one has
            counts: dict[str, int] = {}
            for q in procs:
                for path in {t.path for t in q.takers}:
                    counts[path] = counts.get(path, 0) + 1
            for p in missing:
                held = " or ".join(p.holds.locks) if p.holds else "?"
                want = " or ".join(p.wants.locks)
                mine = {t.path for t in p.takers}
                others = sorted(x for x, n in counts.items() if n > (1 if x in mine else 0))
                side = (
                    f"path {', '.join(others)} takes {want} before {held}"
                    if others
                    else "the other side is not declared either"
                )
                case.says.append(
                    f"{p.name} held {held} and asked for {want}, and no declared path takes "
                    f"{want} while holding {held} ({side}): the declarations are missing a "
                    "path or a step"
                )
            return
        case.verdict = "unreported"
        case.says.append(
            "every order of this cycle is declared, yet lockdocs reports no cycle on "
            f"{', '.join(sorted(cycle))}: that is a bug in lockdocs' analysis; please report it"
        )

    def timeout(self, entry: Entry, show_literals: bool) -> Case:
        st = entry.statement
        reading = self.read(st)
        if reading.advisory:
            ref = self.advisory(None, "", reading)
        else:
            ref = self.relation(reading, entry.message, _timeout_relation(entry))
        shown = st if show_literals else masked(st)
        p = Process("P1", entry.pid, ref, None, st, shown)
        p.takers = self.takers(None, ref)
        p.declared_takers = self.declared_takers(ref)
        kind = "lock timeout" if "lock timeout" in entry.message else "lock not available"
        case = Case(kind, entry.state, [p], "timeout", [], lines=[entry.line])
        case.hint, case.context = entry.hint, entry.context
        if not ref.locks:
            case.verdict = "undeclared lock"
            case.says.append(f"the wait was for a lock lockdocs cannot name: {ref.how}")
            return case
        want = " or ".join(ref.locks)
        case.says.append(f"{entry.message}: a wait for {want} ({ref.mode or '?'}) ended it")
        for d in self.findings:
            if set(d.locks) & set(ref.locks):
                case.says.append(
                    f"{want} is on the cycle lockdocs reports as {d.code} at {d.location}"
                )
                case.findings.append(_finding_json(d))
        return case


def _finding_json(d: Diagnostic) -> dict[str, object]:
    """A finding as an explained case names it (JSON and the text's 'reported as' line)."""
    return {
        "code": d.code,
        "file": d.location.file,
        "line": d.location.line,
        "message": d.message,
        "paths": list(d.paths),
        "waived_by": d.waived_by or None,
    }


def _context_statement(context: str) -> str | None:
    """The statement a report's CONTEXT says the error happened in (`SQL statement "..."`);
    the quotes inside it are not escaped, so it runs to the line's last quote."""
    marker = 'SQL statement "'
    for line in context.splitlines():
        at = line.find(marker)
        end = line.rfind('"')
        if at >= 0 and end > at + len(marker):
            return line[at + len(marker) : end]
    return None


def _qualified(rel: RelationLock) -> str:
    return f"{rel.schema + '.' if rel.schema else ''}{rel.table}"


def _timeout_relation(entry: Entry) -> str | None:
    """The relation a lock timeout or NOWAIT failure names: its CONTEXT, or the message
    (`could not obtain lock on row in relation "accounts"`)."""
    named = context_relation(entry.context) if entry.context else None
    if named is not None:
        return named
    for start in (
        'could not obtain lock on row in relation "',
        'could not obtain lock on relation "',
    ):
        if entry.message.startswith(start) and entry.message.endswith('"'):
            return entry.message[len(start) : -1].replace('""', '"')
    return None
