"""PostgreSQL server logs, read in one streaming pass: every logged message as an `Entry`.

Three formats: stderr (the default, with any log_line_prefix), csvlog and jsonlog, told apart
per file from its first line; a file may be gzip-compressed, and `-` reads stdin. `explain`
and `observe` share this reader. A message is one entry with its DETAIL, HINT, CONTEXT and
STATEMENT. In the stderr format each of those is a line of its own, `<prefix>LEVEL:  text`,
continued on lines that begin with a tab; the level words are the server's English words
(lc_messages must be C or en), and what the prefix carries (the process id, the session line
number, the transaction ids) is read by `logprefix`.

Nothing is held but the entry being read: memory does not grow with the log. An entry is at
most `MAX_ENTRY` characters; what is longer, not UTF-8 or not a log line at all is counted
as a `Problem` with its line, never a crash and never silence.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from lockdocs.postgres.logprefix import FIELDS, LEVELS, Prefix, Values, detect, level_at, loose

DEADLOCK = "40P01"
LOCK_NOT_AVAILABLE = "55P03"
_MESSAGES = {
    "deadlock detected": DEADLOCK,
    "canceling statement due to lock timeout": LOCK_NOT_AVAILABLE,
}
_NOWAIT = ("could not obtain lock on row in relation ", "could not obtain lock on relation ")

# The longest entry (and line) lockdocs reads: a statement of a few MB is ordinary, a field
# this long is not; the rest of it is skipped and the entry marked as cut.
MAX_ENTRY = 32 * 1024 * 1024
MAX_PROBLEMS = 100  # kept with their lines; the rest are only counted
_DETECT_LINES = 200
_GZIP = b"\x1f\x8b"

FORMATS = ("stderr", "csvlog", "jsonlog")


@dataclass(slots=True)
class Entry:
    """One logged message with its fields, as every format gives them."""

    severity: str
    message: str
    sqlstate: str = ""
    detail: str = ""
    hint: str = ""
    context: str = ""
    statement: str = ""
    pid: int | None = None
    time: str = ""
    line: int = 0  # where it starts in its file (1-based)
    session: str = ""  # the session id (%c), "" when the log does not carry it
    session_line: int | None = None  # the session line number (%l)
    vxid: str = ""  # the virtual transaction id (%v)
    xid: str = ""  # the transaction id (%x)
    application: str = ""
    user: str = ""
    database: str = ""
    source: str = ""  # the file it is in, as the user named it
    cut: bool = False  # longer than MAX_ENTRY: the rest of it was not read
    # The log lines with a prefix it spans: stderr prints the prefix (and counts %l) before
    # each of DETAIL, HINT, CONTEXT and STATEMENT; csvlog and jsonlog write one record.
    width: int = 1

    @property
    def state(self) -> str:
        """The SQLSTATE, from the log when it has one, else from the message text."""
        if self.sqlstate:
            return self.sqlstate
        if self.message in _MESSAGES:
            return _MESSAGES[self.message]
        if self.message.startswith(_NOWAIT):
            return LOCK_NOT_AVAILABLE
        return ""


@dataclass(frozen=True)
class Problem:
    """A part of a log that was not read, and why."""

    source: str
    line: int
    message: str


class LogError(Exception):
    """A log that cannot be read at all (a missing file, a bad --log-format): exit 2."""


@dataclass(frozen=True)
class LogFile:
    """A log to read: a path, or stdin (`-`)."""

    name: str  # as the user wrote it; findings name it so

    def open(self) -> BinaryIO:
        if self.name == "-":
            return sys.stdin.buffer
        try:
            return Path(self.name).open("rb")
        except OSError as exc:
            raise LogError(f"cannot read {self.name}: {exc.strerror or exc}") from None

    @property
    def shown(self) -> str:
        return "<stdin>" if self.name == "-" else self.name


@dataclass
class LogReader:
    """Reads logs one after another, in one pass; `problems` says what it could not read."""

    files: list[LogFile]
    fmt: str = "auto"
    prefix: str | None = None  # log_line_prefix, when the user gives it
    problems: list[Problem] = field(default_factory=list)
    dropped: int = 0  # problems beyond MAX_PROBLEMS, only counted
    formats: dict[str, str] = field(default_factory=dict)  # file -> the format read
    prefixes: dict[str, Prefix | None] = field(default_factory=dict)  # stderr files
    unmatched: dict[str, int] = field(default_factory=dict)  # stderr lines the prefix misread

    def problem(self, source: str, line: int, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(source, line, message))
        else:
            self.dropped += 1

    def entries(self) -> Iterator[Entry]:
        for f in self.files:
            fh = f.open()
            try:
                yield from self._file(f.shown, fh)
            finally:
                if fh is not sys.stdin.buffer:
                    fh.close()

    def _file(self, name: str, fh: BinaryIO) -> Iterator[Entry]:
        stream: BinaryIO = fh
        head = _peek(fh, 2)
        if head == _GZIP:
            stream = gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[assignment]
        lines = _Lines(stream, name, self)
        first = lines.lookahead(_DETECT_LINES)
        fmt = self.fmt if self.fmt != "auto" else detect_format(first)
        self.formats[name] = fmt
        if fmt == "csvlog":
            found = _csvlog(lines, name, self)
        elif fmt == "jsonlog":
            found = _jsonlog(lines, name, self)
        else:
            if self.prefix is not None:
                prefix: Prefix | None = Prefix(self.prefix)
            else:
                prefix = detect(text for _, text in first)
            self.prefixes[name] = prefix
            found = _stderr(lines, name, self, prefix)
        count = 0
        for entry in found:
            count += 1
            yield entry
        if not count and any(text.strip() for _, text in first):
            self.problem(name, 1, f"no line reads as a PostgreSQL server log ({fmt} was tried)")


def _peek(fh: BinaryIO, n: int) -> bytes:
    peek = getattr(fh, "peek", None)
    if peek is not None:
        try:
            return bytes(peek(n)[:n])
        except (OSError, ValueError):
            return b""
    return b""


class _Lines:
    """The lines of a byte stream as (number, text): split on newline only, decoded as UTF-8
    (a bad byte becomes U+FFFD), each at most MAX_ENTRY bytes (a longer one is cut there, and
    said). A damaged gzip stream ends the file, and is said."""

    def __init__(self, stream: BinaryIO, name: str, reader: LogReader) -> None:
        self.stream = stream
        self.name = name
        self.reader = reader
        self.n = 0
        self.ahead: list[tuple[int, str]] = []

    def lookahead(self, count: int) -> list[tuple[int, str]]:
        while len(self.ahead) < count:
            nxt = self._next()
            if nxt is None:
                break
            self.ahead.append(nxt)
        return list(self.ahead)

    def _next(self) -> tuple[int, str] | None:
        try:
            raw = self.stream.readline(MAX_ENTRY)
            if not raw:
                return None
            self.n += 1
            if len(raw) >= MAX_ENTRY and not raw.endswith(b"\n"):
                while True:  # skip the rest of the line
                    more = self.stream.readline(MAX_ENTRY)
                    if not more or more.endswith(b"\n"):
                        break
                self.reader.problem(
                    self.name, self.n, f"a line over {MAX_ENTRY // (1024 * 1024)} MiB; cut there"
                )
        except (OSError, EOFError, zlib.error) as exc:
            self.reader.problem(self.name, self.n + 1, f"the file cannot be read past here: {exc}")
            return None
        return self.n, raw.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")

    def __iter__(self) -> Iterator[tuple[int, str]]:
        ahead, self.ahead = self.ahead, []
        yield from ahead
        # The hot loop of a big log: one C readline and one decode a line.
        readline = self.stream.readline
        n = self.n
        try:
            while True:
                raw = readline(MAX_ENTRY)
                if not raw:
                    return
                n += 1
                self.n = n
                if raw[-1:] == b"\n":
                    raw = raw[:-2] if raw[-2:-1] == b"\r" else raw[:-1]
                elif len(raw) >= MAX_ENTRY:
                    self._skip_rest(n)
                yield n, raw.decode("utf-8", "replace")
        except (OSError, EOFError, zlib.error) as exc:
            self.reader.problem(self.name, n + 1, f"the file cannot be read past here: {exc}")

    def texts(self) -> Iterator[str]:
        """The lines' texts alone, numbered 1, 2, ... by the reader (the stderr format's loop:
        no tuple a line)."""
        ahead, self.ahead = self.ahead, []
        for _, text in ahead:
            yield text
        readline = self.stream.readline
        n = self.n
        try:
            while True:
                raw = readline(MAX_ENTRY)
                if not raw:
                    self.n = n
                    return
                n += 1
                if raw[-1:] == b"\n":
                    raw = raw[:-2] if raw[-2:-1] == b"\r" else raw[:-1]
                elif len(raw) >= MAX_ENTRY:
                    self._skip_rest(n)
                yield raw.decode("utf-8", "replace")
        except (OSError, EOFError, zlib.error) as exc:
            self.n = n
            self.reader.problem(self.name, n + 1, f"the file cannot be read past here: {exc}")

    def _skip_rest(self, n: int) -> None:
        while True:
            more = self.stream.readline(MAX_ENTRY)
            if not more or more.endswith(b"\n"):
                break
        self.reader.problem(
            self.name, n, f"a line over {MAX_ENTRY // (1024 * 1024)} MiB; cut there"
        )


def detect_format(first: Iterable[tuple[int, str]]) -> str:
    """stderr, csvlog or jsonlog, from the first lines: jsonlog when one is a JSON object with
    a severity, csvlog when a record has the csvlog columns (a record runs over several lines
    when a field holds a newline, and a damaged one is passed over), else stderr."""
    lines = [text for _, text in first if text.strip()]
    for text in lines:
        if text.lstrip().startswith("{"):
            try:
                doc = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if isinstance(doc, dict) and "error_severity" in doc:
                return "jsonlog"
    _csv_limit()
    rows = csv.reader(text + "\n" for text in lines)
    while True:
        try:
            row = next(rows)
        except csv.Error:
            continue
        except StopIteration:
            return "stderr"
        if len(row) >= 23 and row[11] in LEVELS:
            return "csvlog"


def _csv_limit() -> None:
    """A csvlog field is as long as the statement it holds: far over the csv module's 128 KiB
    default (which made a deadlock with a long statement pass unseen). Raised, never lowered."""
    csv.field_size_limit(max(csv.field_size_limit(), MAX_ENTRY))


def _int(text: object, digits: int = 11) -> int | None:
    """A process id or line number as logged: ASCII digits only (never '²'), not too long."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text if 0 <= text < 10**digits else None
    s = str(text)
    return int(s) if s and len(s) <= digits and s.isascii() and s.isdigit() else None


def _joined(lines: list[str] | None) -> str:
    if lines is None:
        return ""
    return lines[0] if len(lines) == 1 else "\n".join(lines)


def _stderr(lines: _Lines, name: str, reader: LogReader, prefix: Prefix | None) -> Iterator[Entry]:
    """The entries of a stderr log. The entry being read is held in local variables (its
    message's lines, and its DETAIL, HINT, CONTEXT and STATEMENT lines when it has them),
    joined once when the next entry begins: this is the loop every line of a log goes
    through."""
    misread = 0
    line_re = prefix.line if prefix is not None else None
    whole = line_re.match if line_re is not None else None
    limit = MAX_ENTRY
    # the entry being read: none while severity is None
    severity: str | None = None
    start = 0
    values = _NO_VALUES
    message: list[str] = []
    fields: dict[str, list[str]] | None = None
    last: list[str] | None = None  # the lines a tab-continued line adds to
    size = 0
    cut = False
    width = 1
    n = 0
    for raw in lines.texts():
        n += 1
        if raw[:1] == "\t":
            if last is not None:
                size += len(raw)  # the line without its tab, and the newline it joins with
                if size > limit:
                    cut = True
                else:
                    last.append(raw[1:])
            continue
        hit = whole(raw) if whole is not None else None
        if hit is not None:
            word = hit["level"]
            end = hit.end()
        else:
            hit = level_at(raw)
            if hit is None:
                last = None  # a foreign line ends what a tab may continue
                continue
            word, end = hit["level"], hit.end()
        body = raw[end:]
        if word in FIELDS:
            if severity is not None:
                width += 1
                if fields is None:
                    fields = {}
                last = fields[word] = [body]
                size += len(body)
            continue
        if severity is not None:
            yield _entry(severity, message, fields, values, start, name, cut, width)
        found: Values | None = None
        if prefix is not None and hit.re is line_re:
            found = prefix.values(hit)
        elif prefix is not None:
            found = prefix.read(raw, hit.start())
            misread += found is None
        values = found if found is not None else loose(raw[: hit.start()])
        severity, start, fields, size, cut, width = word, n, None, len(body), False, 1
        message = last = [body]
    if severity is not None:
        yield _entry(severity, message, fields, values, start, name, cut, width)
    if misread:
        reader.unmatched[name] = reader.unmatched.get(name, 0) + misread


_NO_VALUES = Values()


def _entry(
    severity: str,
    message: list[str],
    fields: dict[str, list[str]] | None,
    v: Values,
    line: int,
    source: str,
    cut: bool,
    width: int,
) -> Entry:
    detail = hint = context = statement = ""
    if fields is not None:
        get = fields.get
        detail, hint = _joined(get("DETAIL")), _joined(get("HINT"))
        context, statement = _joined(get("CONTEXT")), _joined(get("STATEMENT"))
    # positional: the fields of Entry in order (a log makes one per message)
    return Entry(
        severity,
        message[0] if len(message) == 1 else "\n".join(message),
        "",
        detail,
        hint,
        context,
        statement,
        v.pid,
        "",
        line,
        v.session,
        v.session_line,
        v.vxid,
        v.xid,
        v.application,
        v.user,
        v.database,
        source,
        cut,
        width,
    )


def _csv_rows(lines: _Lines, name: str, reader: LogReader) -> Iterator[tuple[int, list[str]]]:
    _csv_limit()
    starts: list[int] = []

    def feed() -> Iterator[str]:
        for n, text in lines:
            starts.append(n)
            yield text + "\n"

    rows = csv.reader(feed())
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            reader.problem(name, starts[0] if starts else lines.n, f"not a csvlog record ({exc})")
            starts.clear()
            continue
        line = starts[0] if starts else lines.n
        starts.clear()
        yield line, row


def _csvlog(lines: _Lines, name: str, reader: LogReader) -> Iterator[Entry]:
    for line, row in _csv_rows(lines, name, reader):
        if len(row) < 23:
            if any(x.strip() for x in row):
                reader.problem(name, line, f"not a csvlog record ({len(row)} fields, not 23+)")
            continue
        yield Entry(
            severity=row[11],
            message=row[13],
            sqlstate=row[12],
            detail=row[14],
            hint=row[15],
            context=row[18],
            statement=row[19],
            pid=_int(row[3]),
            time=row[0],
            line=line,
            session=row[5],
            session_line=_int(row[6], 18),
            vxid=row[9],
            xid=row[10],
            application=row[22],
            user=row[1],
            database=row[2],
            source=name,
        )


def _text(doc: dict[str, object], key: str) -> str:
    value = doc.get(key, "")
    return value if isinstance(value, str) else "" if value is None else str(value)


def _jsonlog(lines: _Lines, name: str, reader: LogReader) -> Iterator[Entry]:
    for n, line in lines:
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError) as exc:
            reader.problem(name, n, f"not a jsonlog record ({str(exc)[:80]})")
            continue
        if not isinstance(doc, dict):
            reader.problem(name, n, "not a jsonlog record (not an object)")
            continue
        try:
            yield Entry(
                severity=_text(doc, "error_severity"),
                message=_text(doc, "message"),
                sqlstate=_text(doc, "state_code"),
                detail=_text(doc, "detail"),
                hint=_text(doc, "hint"),
                context=_text(doc, "context"),
                statement=_text(doc, "statement"),
                pid=_int(doc.get("pid")),
                time=_text(doc, "timestamp"),
                line=n,
                session=_text(doc, "session_id"),
                session_line=_int(doc.get("line_num"), 18),
                vxid=_text(doc, "vxid"),
                xid=_text(doc, "txid"),
                application=_text(doc, "application_name"),
                user=_text(doc, "user"),
                database=_text(doc, "dbname"),
                source=name,
            )
        except (ValueError, RecursionError) as exc:  # str() of a 4,300-digit number, say
            reader.problem(name, n, f"not a jsonlog record ({str(exc)[:80]})")


def entries(text: str, fmt: str = "auto", name: str = "<log>") -> Iterator[Entry]:
    """The entries of a log held in memory (tests, small logs)."""
    reader = LogReader([], fmt)
    fh = io.BufferedReader(io.BytesIO(text.encode("utf-8", "surrogateescape")))
    yield from reader._file(name, fh)


def lock_reports(found: Iterable[Entry]) -> list[Entry]:
    """The deadlock and lock-not-available errors, in log order."""
    return [e for e in found if is_lock_report(e)]


def is_lock_report(e: Entry) -> bool:
    return e.severity == "ERROR" and e.state in (DEADLOCK, LOCK_NOT_AVAILABLE)
