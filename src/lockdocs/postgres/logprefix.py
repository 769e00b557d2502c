"""`log_line_prefix` -> a reader of what the server wrote before each stderr log line's level.

The stderr log format is `<prefix>LEVEL:  text`, where the prefix is whatever the server's
`log_line_prefix` setting prints (postgresql.conf; its escapes are in the server docs, "What to
log"). `Prefix(spec)` turns a setting into a reader of the values it carries: the process id
(%p), the session id (%c), the session line number (%l), the virtual and real transaction ids
(%v, %x), the application, user and database names (%a, %u, %d). These are the server's own
output format, not SQL, so they are read as text here.

The reader never backtracks: a free-text value (a name, a host) runs to the first character
of the literal that follows it, and a line whose prefix does not fit is simply not a match.
`detect` picks the setting of a log from the common ones when the user does not give it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from operator import itemgetter
from typing import NamedTuple

LEVELS: tuple[str, ...] = ("DEBUG5", "DEBUG4", "DEBUG3", "DEBUG2", "DEBUG1", "LOG", "INFO")
LEVELS += ("NOTICE", "WARNING", "ERROR", "FATAL", "PANIC")
FIELDS = ("DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT")
_WORDS = "|".join(LEVELS + FIELDS)
# The level word and the two spaces the server writes after it (elog.c).
LEVEL = re.compile(rf"(?P<level>{_WORDS}):  ")

# The most common settings, tried in this order when a log's is not given: PostgreSQL's
# default, Debian's, the ones pgBadger and Amazon RDS document, and lockdocs' own servers'.
COMMON = (
    "%m [%p] ",
    "%m [%p] %q%u@%d ",
    "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
    "%t [%p]: [%l-1] ",
    "%t [%p]: ",
    "%t:%r:%u@%d:[%p]:",
    "%m [%p] %l %v %x %a ",
    "%m [%p] %q%u@%d %e %x ",
    "%m %p %l %v ",
    "%m [%p] %l ",
)

_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? ?[A-Za-z0-9+:\-]*"
_FIXED = {
    "p": r"(?P<p>\d+)",
    "P": r"\d*",
    "l": r"(?P<l>\d+)",
    "c": r"(?P<c>[0-9a-f]+\.[0-9a-f]+)",
    "v": r"(?P<v>\d+/\d+)?",
    "x": r"(?P<x>\d+)",
    "e": r"[0-9A-Z]{5}",
    "t": _TIME,
    "m": _TIME,
    "s": _TIME,
    "n": r"\d+(?:\.\d+)?",
    "Q": r"-?\d+",
}
# Escapes whose value is free text; these are read up to the next literal character.
_FREE = {"a": "a", "u": "u", "d": "d", "r": None, "h": None, "b": None, "i": None}
# What a prefix reader carries: group name -> Entry field.
CARRIES = {
    "p": "pid",
    "l": "session line",
    "c": "session id",
    "v": "virtual transaction id",
    "x": "transaction id",
}


class Values(NamedTuple):
    """What one line's prefix says (empty where the setting does not carry it)."""

    pid: int | None = None
    session: str = ""
    session_line: int | None = None
    vxid: str = ""
    xid: str = ""
    application: str = ""
    user: str = ""
    database: str = ""


# The groups `Values` is read from, in its order.
_VALUES = ("p", "c", "l", "v", "x", "a", "u", "d")
_new_values = tuple.__new__


class Prefix:
    """One `log_line_prefix` setting, compiled."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.escapes: set[str] = set()
        pattern = self._compile(spec)
        # A value the setting does not print is an empty group at the end, which matches
        # nothing: then `values` reads every line's values in one C call, with no test per field.
        named = re.compile(pattern, re.DOTALL).groupindex
        pattern += "".join(f"(?P<{k}>)" for k in _VALUES if k not in named)
        self.regex = re.compile(pattern, re.DOTALL)
        # The prefix and the level word after it, in one match: the common case of a line.
        self.line = re.compile(pattern + LEVEL.pattern, re.DOTALL)
        index = self.regex.groupindex  # the same groups, numbered alike, in both
        # indexes into Match.groups() (group n is at n - 1)
        self._pick = itemgetter(*(index[k] - 1 for k in _VALUES))

    def _compile(self, spec: str) -> str:
        out: list[str] = []
        optional = 0
        i = 0
        while i < len(spec):
            ch = spec[i]
            if ch != "%" or i + 1 >= len(spec):
                out.append(re.escape(ch))
                i += 1
                continue
            j = i + 1
            while j < len(spec) and (spec[j].isdigit() or spec[j] == "-"):
                j += 1  # padding (%-10a): the value is padded with spaces
            padded = j > i + 1
            if j >= len(spec):
                break
            esc = spec[j]
            i = j + 1
            if esc == "%":
                out.append("%")
                continue
            if esc == "q":
                # Processes that are not sessions stop printing here: the rest may be absent.
                out.append("(?:")
                optional += 1
                continue
            pad = " *" if padded else ""
            if esc in _FIXED:
                self.escapes.add(esc)
                out.append(pad + _FIXED[esc] + pad)
            elif esc in _FREE:
                self.escapes.add(esc)
                stop = spec[i] if i < len(spec) and spec[i] != "%" else ""
                charset = f"[^{re.escape(stop)}\\n]" if stop else "[^\\n]"
                name = _FREE[esc]
                body = f"{charset}*+" if stop else f"{charset}*?"
                out.append(f"(?P<{name}>{body})" if name else body)
            else:
                out.append("")  # an escape the server prints nothing for
        out.append(")?" * optional)
        return "".join(out)

    @property
    def carries(self) -> tuple[str, ...]:
        """The escapes of CARRIES this setting prints, in a stable order."""
        return tuple(e for e in CARRIES if e in self.escapes)

    def read(self, line: str, end: int) -> Values | None:
        """The values of `line[:end]`, the text before the level word; None when it is not
        what the setting prints."""
        hit = self.regex.fullmatch(line, 0, end)
        if hit is None:
            return None
        return self.values(hit)

    def values(self, hit: re.Match[str]) -> Values:
        """The values a match of `regex` or `line` read (the hot path of a stderr log: every
        group by index in one call, no dictionary)."""
        pid, session, sline, vxid, xid, app, user, db = self._pick(hit.groups())
        # tuple.__new__ skips the NamedTuple's Python-level __new__ (one a log line)
        return _new_values(
            Values,
            (
                int(pid) if pid and len(pid) < 12 else None,
                session or "",
                int(sline) if sline and len(sline) < 19 else None,
                vxid or "",
                xid or "",
                app or "",
                user or "",
                db or "",
            ),
        )


_BRACKETED_PID = re.compile(r"\[(\d{1,11})\]")


def loose(prefix: str) -> Values:
    """What a prefix of an unknown setting shows for sure: a process id in brackets."""
    hit = _BRACKETED_PID.search(prefix)
    return Values(pid=int(hit[1]) if hit else None)


def level_at(line: str, limit: int = 4096) -> re.Match[str] | None:
    """Where the level word of a stderr line is (the first one within `limit` characters)."""
    return LEVEL.search(line, 0, limit)


def detect(lines: Iterable[str], candidates: Iterable[str] = COMMON) -> Prefix | None:
    """The first common setting that reads every prefix of `lines` (the first lines of a log
    that have a level word) and carries the process id; None when none does."""
    prefixes = []
    for line in lines:
        hit = level_at(line)
        if hit is not None and not line.startswith("\t"):
            prefixes.append((line, hit.start()))
    if not prefixes:
        return None
    for spec in candidates:
        p = Prefix(spec)
        if "p" in p.escapes and all(p.read(line, end) is not None for line, end in prefixes):
            return p
    return None
