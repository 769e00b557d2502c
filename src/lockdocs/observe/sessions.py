"""Every backend's transactions, rebuilt from its logged statements in log order.

A session (one backend: the log's session id, else its process id) runs transaction blocks
(`BEGIN`/`START TRANSACTION` to `COMMIT`, `ROLLBACK`, `END`, `ABORT` or `PREPARE
TRANSACTION`), statements outside a block (each a transaction of its own; several sent as one
query string run as one implicit transaction) and savepoints (`ROLLBACK TO` releases what
was taken after the savepoint). An error ends the statement: outside a block its transaction
is over, inside one the block is aborted until it rolls back; the locks the statement asked
for are kept as asked (a deadlock victim asked for the lock that closed the cycle).

Where the log does not show a session's start (its first line number is not 1, or the log
carries none), its state is unknown until it shows: a `COMMIT` before any `BEGIN` means the
statements so far were one block the log begins inside ("cut at the start"), a `BEGIN` or a
new virtual transaction id means they were transactions of their own. A block still open at
the end of the log is "cut at the end"; lines missing from a session (its line numbers jump)
cut the transaction they fall in. The log is never guessed past: a cut is said.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lockdocs.observe.locks import Took
from lockdocs.observe.logged import ends_session, is_error, starts_session, statement_of
from lockdocs.observe.shapes import Plan, Shapes
from lockdocs.postgres.serverlog import Entry

MAX_UNKNOWN = 256  # statements of an unknown state kept before they are let go one by one
MAX_SESSIONS = 50_000  # idle sessions beyond this are forgotten (they come back as unknown)


@dataclass(slots=True)
class Take:
    """One lock a transaction took, where the log shows it."""

    took: Took
    source: str
    line: int
    shape: int  # the statement's shape number (Shapes.samples has its text)
    name: str = ""  # sqlc's query name, when the statement carries it
    failed: str = ""  # the error that ended the statement ("" when it succeeded)
    released: bool = False  # ROLLBACK TO a savepoint before it let it go


@dataclass
class Transaction:
    session: str
    pid: int | None
    application: str
    source: str
    line: int  # its first statement's line
    takes: list[Take] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    cut: str = ""  # "" | start | end | gap | unknown (see the module's docstring)
    ended: str = ""  # commit | rollback | prepare | statement | session end | log end
    statements: int = 0
    unread: list[tuple[int, str]] = field(default_factory=list)  # (line, why) not read
    end_line: int = 0
    written: set[str] = field(default_factory=set)  # the tables it inserted into or updated


@dataclass
class _Session:
    key: str
    pid: int | None
    application: str = ""
    known: bool = True  # whether the state is known (the log shows where it stands)
    block: Transaction | None = None  # the open transaction block
    aborted: bool = False
    savepoints: list[tuple[str, int]] = field(default_factory=list)
    pending: list[Transaction] = field(default_factory=list)  # closed, an error may follow
    last_takes: tuple[Transaction, int] | None = None  # where the last statement's takes began
    last_unread: Transaction | None = None  # the last statement was not read: it is here
    unknown: list[Transaction] = field(default_factory=list)  # statements of unknown state
    vxid: str = ""
    line: int | None = None  # the session line number of its last entry
    width: int = 1  # and how many numbered lines that entry spans


class Rebuilder:
    """Feeds on log entries; hands each finished transaction to `done`."""

    def __init__(self, shapes: Shapes, done: Callable[[Transaction], None]) -> None:
        self.shapes = shapes
        self.done = done
        self.sessions: dict[str, _Session] = {}
        self.statements = 0
        self.unread = 0
        self.sessions_seen = 0
        self.anonymous = 0  # statements on lines that carry no process id

    # --- sessions -----------------------------------------------------------------------

    def _session(self, e: Entry) -> _Session:
        key = e.session or (str(e.pid) if e.pid is not None else "?")
        s = self.sessions.get(key)
        if s is None:
            if len(self.sessions) >= MAX_SESSIONS:
                self._forget_idle()
            s = _Session(key, e.pid, e.application)
            s.known = e.session_line == 1 or starts_session(e)
            self.sessions_seen += 1
            self.sessions[key] = s
        elif (
            e.session_line is not None and s.line is not None and e.session_line != s.line + s.width
        ):
            if e.session_line == 1 and not e.session:
                self._end_session(s, "session end")  # a new backend with the same pid
                s = self.sessions[key] = _Session(key, e.pid, e.application, known=True)
            else:
                self._gap(s)
        if e.session_line is not None:
            s.line, s.width = e.session_line, e.width
        if e.application:
            s.application = e.application
        return s

    def _forget_idle(self) -> None:
        for key in [k for k, s in self.sessions.items() if _idle(s)][: MAX_SESSIONS // 2]:
            del self.sessions[key]

    def _gap(self, s: _Session) -> None:
        """Lines of this session are missing: what is open is cut, and the state unknown."""
        self._flush_pending(s)
        if s.block is not None:
            s.block.cut = s.block.cut or "gap"
            self._finish(s.block, "log gap")
            s.block = None
        self._let_unknown_go(s)
        s.known = False
        s.savepoints.clear()
        s.aborted = False

    def _end_session(self, s: _Session, why: str) -> None:
        self._flush_pending(s)
        if s.block is not None:
            self._finish(s.block, why)
            s.block = None
        self._let_unknown_go(s)

    # --- entries ------------------------------------------------------------------------

    def feed(self, e: Entry) -> None:
        if e.pid is None and not e.session:
            if e.severity == "LOG" and statement_of(e) is not None:
                self.anonymous += 1
            return
        if e.severity == "LOG":
            msg = e.message
            # a simple query, read here (the most common entry); the rest by statement_of
            logged = (msg[11:], ()) if msg.startswith("statement: ") else statement_of(e)
            if logged is not None:
                s = self.sessions.get(e.session or str(e.pid))
                if (
                    s is None
                    or e.session_line is None
                    or s.line is None
                    or e.session_line != s.line + s.width
                    or (e.application and e.application != s.application)
                ):
                    s = self._session(e)  # a new session, a gap, a new name: said there
                else:
                    s.line, s.width = e.session_line, e.width  # the common case
                self.statements += 1
                plan = self.shapes.texts.get(logged[0])  # a text seen before: the common case
                if plan is None:
                    plan = self.shapes.plan(logged[0])
                self._statement(s, e, plan, logged[1])
                return
            if starts_session(e) or ends_session(e):
                key = e.session or str(e.pid)
                s0 = self.sessions.pop(key, None)
                if s0 is not None:
                    self._end_session(s0, "session end")
                if starts_session(e):
                    self.sessions[key] = _Session(
                        key, e.pid, e.application, known=True, line=e.session_line, width=e.width
                    )
            return
        if is_error(e):
            s = self._session(e)
            self._error(s, e)
            if ends_session(e):
                self._end_session(s, "session end")
                self.sessions.pop(s.key, None)

    def finish(self) -> None:
        """The end of the log: what is still open is cut there."""
        for s in list(self.sessions.values()):
            self._flush_pending(s)
            if s.block is not None:
                s.block.cut = s.block.cut or "end"
                self._finish(s.block, "log end")
                s.block = None
            self._let_unknown_go(s)
        self.sessions.clear()

    # --- statements ---------------------------------------------------------------------

    def _statement(self, s: _Session, e: Entry, plan: Plan, params: tuple[str | None, ...]) -> None:
        if s.pending:
            self._flush_pending(s)
        elif s.block is None:
            s.last_takes = None
        if not s.known and e.vxid and s.unknown and e.vxid != s.vxid:
            self._let_unknown_go(s)  # a new transaction began: the ones so far were their own
        s.vxid = e.vxid or s.vxid
        s.last_unread = None
        implicit: Transaction | None = None
        if plan.error:
            self.unread += 1
            target: Transaction = s.block or self._new(s, e)
            target.statements += 1
            target.unread.append((e.line, plan.error))
            s.last_unread = target
            if s.block is None:
                self._close_single(s, target)
            return
        several = len(plan.steps) > 1 and plan.several
        took_of, literals = self.shapes.took, plan.literals
        for step in plan.steps:
            if step.control is not None:
                self._control(s, e, step.control, step.savepoint, step.chain, implicit)
                implicit = None
                continue
            if s.aborted:
                continue  # the server refuses every statement of an aborted block
            found = s.block or implicit
            if found is None:
                found = self._new(s, e)
                if several:
                    implicit = found
            target = found
            target.statements += 1
            if plan.tags:
                tags = target.tags
                for k, v in plan.tags:
                    if k not in tags:
                        tags[k] = v
            takes = target.takes
            s.last_takes = (target, len(takes))
            source, line, shape, name = e.source, e.line, plan.shape, plan.name
            took = step.took if not params and not step.needs else took_of(step, params, literals)
            if took:
                takes += [Take(t, source, line, shape, name) for t in took]
            if step.writes:
                # an update of a table the transaction wrote before: maybe a row it wrote, which
                # Postgres checks the foreign keys of again
                for table, again in step.rechecks:
                    if table in target.written:
                        takes += [Take(t, source, line, shape, name) for t in again]
                target.written.update(step.writes)
            target.end_line = line
            if target is not s.block and target is not implicit:
                self._close_single(s, target)
        if implicit is not None:
            self._close_single(s, implicit)

    def _new(self, s: _Session, e: Entry) -> Transaction:
        return Transaction(s.key, s.pid, s.application, e.source, e.line, end_line=e.line)

    def _close_single(self, s: _Session, t: Transaction) -> None:
        """A statement (or query string) outside a block: its own transaction, finished when
        the next entry shows it did not fail; in an unknown state, kept until the state shows."""
        t.ended = t.ended or "statement"
        if not s.known:
            s.unknown.append(t)
            if len(s.unknown) > MAX_UNKNOWN:
                first = s.unknown.pop(0)
                first.cut = "unknown"
                self._finish(first, first.ended)
            return
        s.pending.append(t)

    def _control(
        self,
        s: _Session,
        e: Entry,
        control: str,
        savepoint: str | None,
        chain: bool,
        implicit: Transaction | None,
    ) -> None:
        if control == "begin":
            if s.block is None:
                self._let_unknown_go(s)
                s.known = True
                s.block = implicit or self._new(s, e)
                s.block.statements += 1
                s.aborted = False
                s.savepoints.clear()
            return
        if control in ("commit", "rollback", "prepare"):
            block = s.block
            if block is None and not s.known and s.unknown:
                # the log began inside this block: the statements so far were in it
                block = s.unknown[0]
                for later in s.unknown[1:]:
                    block.takes.extend(later.takes)
                    block.written |= later.written
                    block.statements += later.statements
                    block.unread.extend(later.unread)
                    for k, v in later.tags.items():
                        block.tags.setdefault(k, v)
                block.cut = "start"
                s.unknown.clear()
            elif block is None and implicit is not None:
                block = implicit  # COMMIT inside a query string ends its implicit block
            if block is not None:
                block.statements += 1
                block.end_line = e.line
                self._finish(
                    block, {"commit": "commit", "prepare": "prepare"}.get(control, "rollback")
                )
            s.block = None
            s.known = True
            s.aborted = False
            s.savepoints.clear()
            if chain and control != "prepare":
                s.block = self._new(s, e)
            return
        block = s.block
        if block is None:
            return  # outside a block the server refuses these (a warning or an error)
        block.statements += 1
        if control == "savepoint" and savepoint is not None:
            s.savepoints.append((savepoint, len(block.takes)))
        elif control == "release" and savepoint is not None:
            at = _find(s.savepoints, savepoint)
            if at is not None:
                del s.savepoints[at:]
        elif control == "rollback_to" and savepoint is not None:
            at = _find(s.savepoints, savepoint)
            if at is not None:
                # taken, and let go: the order it was taken in counts, the hold does not
                for take in block.takes[s.savepoints[at][1] :]:
                    take.released = True
                s.savepoints[at] = (savepoint, len(block.takes))
                del s.savepoints[at + 1 :]
                s.aborted = False

    def _error(self, s: _Session, e: Entry) -> None:
        why = f"{e.state or e.severity}: {e.message}" if e.message else e.severity
        if s.last_unread is not None and s.last_unread.unread:
            s.last_unread.unread.pop()  # the server refused it too: it took nothing
            self.unread -= 1
            s.last_unread = None
        if s.last_takes is not None:
            t, start = s.last_takes
            for take in t.takes[start:]:
                take.failed = why
            s.last_takes = None
        if s.block is not None:
            s.aborted = True
        self._flush_pending(s)

    def _flush_pending(self, s: _Session) -> None:
        if s.pending:
            for t in s.pending:
                self._finish(t, t.ended)
            s.pending.clear()
        if s.block is None:
            s.last_takes = None

    def _let_unknown_go(self, s: _Session) -> None:
        """The statements of an unknown state were transactions of their own."""
        for t in s.unknown:
            self._finish(t, t.ended)
        s.unknown.clear()

    def _finish(self, t: Transaction, ended: str) -> None:
        t.ended = ended
        self.done(t)


def _find(points: list[tuple[str, int]], name: str) -> int | None:
    for i in range(len(points) - 1, -1, -1):
        if points[i][0] == name:
            return i
    return None


def _idle(s: _Session) -> bool:
    return s.block is None and not s.pending and not s.unknown


def rebuild(entries: Iterator[Entry], shapes: Shapes) -> Iterator[Transaction]:
    """The transactions of a log, as a stream (for tests and small logs)."""
    out: list[Transaction] = []
    r = Rebuilder(shapes, out.append)
    for e in entries:
        r.feed(e)
        yield from out
        out.clear()
    r.finish()
    yield from out
