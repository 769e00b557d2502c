"""PostgreSQL server logs -> the deadlock and lock-timeout reports in them.

Three formats: stderr (the default, with any log_line_prefix), csvlog and jsonlog. A report is
one ERROR with its DETAIL, HINT, CONTEXT and STATEMENT. In the stderr format each of those is
a line of its own, `<prefix>LEVEL:  text`, continued on lines that begin with a tab; the level
words are found after whatever the prefix printed (they are the server's English words:
lc_messages must be C or en).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

LEVELS = "DEBUG5|DEBUG4|DEBUG3|DEBUG2|DEBUG1|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC"
FIELDS = "DETAIL|HINT|QUERY|CONTEXT|LOCATION|STATEMENT"
_LINE = re.compile(rf"(?P<level>{LEVELS}|{FIELDS}):  (?P<text>.*)$")

DEADLOCK = "40P01"
LOCK_NOT_AVAILABLE = "55P03"
_MESSAGES = {
    "deadlock detected": DEADLOCK,
    "canceling statement due to lock timeout": LOCK_NOT_AVAILABLE,
}
_NOWAIT = ("could not obtain lock on row in relation ", "could not obtain lock on relation ")


@dataclass
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
    line: int = 0  # where it starts in the file (1-based)
    fields: dict[str, str] = field(default_factory=dict)

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


def detect(text: str) -> str:
    """stderr, csvlog or jsonlog, from the first line that is not blank."""
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            return "jsonlog"
        try:
            row = next(csv.reader([line]))
        except csv.Error:
            return "stderr"
        if len(row) >= 23 and row[11] in LEVELS.split("|"):
            return "csvlog"
        return "stderr"
    return "stderr"


def _stderr(text: str) -> Iterator[Entry]:
    current: Entry | None = None
    last = ""
    for n, raw in enumerate(text.split("\n"), 1):
        if raw.startswith("\t") and current is not None and last:
            value = current.fields[last] + "\n" + raw[1:]
            current.fields[last] = value
            continue
        hit = _LINE.search(raw)
        if hit is None:
            last = ""
            continue
        level, body = hit["level"], hit["text"]
        if level in FIELDS.split("|"):
            if current is not None:
                current.fields[level] = body
                last = level
            continue
        if current is not None:
            yield _finish(current)
        prefix = raw[: hit.start()]
        pid = re.search(r"\[(\d+)\]", prefix)
        current = Entry(level, "", pid=int(pid[1]) if pid else None, line=n)
        current.fields["MESSAGE"] = body
        current.fields["PREFIX"] = prefix
        last = "MESSAGE"
    if current is not None:
        yield _finish(current)


def _finish(e: Entry) -> Entry:
    f = e.fields
    e.message = f.get("MESSAGE", "")
    e.detail = f.get("DETAIL", "")
    e.hint = f.get("HINT", "")
    e.context = f.get("CONTEXT", "")
    e.statement = f.get("STATEMENT", "")
    e.time = f.get("PREFIX", "").strip()
    return e


def _csvlog(text: str) -> Iterator[Entry]:
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        if len(row) < 23:
            continue
        yield Entry(
            severity=row[11],
            message=row[13],
            sqlstate=row[12],
            detail=row[14],
            hint=row[15],
            context=row[18],
            statement=row[19],
            pid=int(row[3]) if row[3].isdigit() else None,
            time=row[0],
            line=reader.line_num,
        )


def _jsonlog(text: str) -> Iterator[Entry]:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        pid = doc.get("pid")
        yield Entry(
            severity=str(doc.get("error_severity", "")),
            message=str(doc.get("message", "")),
            sqlstate=str(doc.get("state_code", "")),
            detail=str(doc.get("detail", "")),
            hint=str(doc.get("hint", "")),
            context=str(doc.get("context", "")),
            statement=str(doc.get("statement", "")),
            pid=pid if isinstance(pid, int) else None,
            time=str(doc.get("timestamp", "")),
            line=n,
        )


READERS = {"stderr": _stderr, "csvlog": _csvlog, "jsonlog": _jsonlog}


def entries(text: str, fmt: str = "auto") -> Iterator[Entry]:
    reader = READERS[detect(text) if fmt == "auto" else fmt]
    yield from reader(text)


def lock_reports(found: Iterable[Entry]) -> list[Entry]:
    """The deadlock and lock-not-available errors, in log order."""
    return [e for e in found if e.severity == "ERROR" and e.state in (DEADLOCK, LOCK_NOT_AVAILABLE)]
