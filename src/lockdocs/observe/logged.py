"""Which log entries are statements, and what they ran: the text of a simple query
(`statement: ...`), of an extended-protocol execution (`execute <unnamed>: ...`, its values in
the DETAIL `parameters: $1 = '...', $2 = NULL`), or of `log_min_duration_statement`'s
`duration: ... ms  statement: ...`; and which entries end a statement in error or end a
session.

These are the server's own message formats (postgres.c, elog.c: English, lc_messages C or
en), read as text; the statements themselves are left to the parser.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from lockdocs.postgres.serverlog import Entry

_STATEMENT = "statement: "
_EXECUTE = "execute "
_DURATION = "duration: "
_PARAMETERS = "parameters: "
_SESSION_END = ("disconnection: ", "terminating connection")
_SESSION_START = ("connection authorized: ", "connection received: ")


class Logged(NamedTuple):
    """A statement the server ran: its text, and the parameters of an execution."""

    text: str
    params: tuple[str | None, ...] = ()
    prepared: str = ""  # the prepared statement's name ("" for a simple query or unnamed)


def statement_of(e: Entry) -> Logged | None:
    """The statement a LOG entry records, or None when it records none."""
    msg = e.message
    if msg.startswith(_DURATION):
        at = msg.find("  ", len(_DURATION))
        if at < 0:
            return None  # the duration alone: the statement was logged before it ran
        msg = msg[at + 2 :]
    # tuple.__new__ skips the NamedTuple's Python-level __new__ (one a logged statement)
    if msg.startswith(_STATEMENT):
        return _new(Logged, (msg[11:], (), ""))
    if msg.startswith(_EXECUTE):
        colon = msg.find(": ", 8)
        if colon < 0:
            return None
        name = msg[8:colon]
        detail = e.detail
        params = parameters(detail) if detail.startswith(_PARAMETERS) else ()
        return _new(Logged, (msg[colon + 2 :], params, "" if name == "<unnamed>" else name))
    return None


_new = tuple.__new__


# `$n = 'value'` or `$n = NULL`: with no doubled quote in the DETAIL, every quote delimits a
# value, and one C-speed pass reads them all (the common case).
_SIMPLE = re.compile(r"\$(\d{1,6}) = (?:'([^']*)'|NULL)(?:, |$)")


def parameters(detail: str) -> tuple[str | None, ...]:
    """`parameters: $1 = 'a''b', $2 = NULL` -> ('a'b', None). A value the server cut at
    log_parameter_max_length ends in '...': it is kept as logged (a key from it will not be
    found, and says so). Anything else in the DETAIL stops the reading there."""
    s = detail[len(_PARAMETERS) :] if detail.startswith(_PARAMETERS) else detail
    out: dict[int, str | None] = {}
    if "''" not in s:
        end = 0
        values: list[str | None] = []
        in_order = True
        for hit in _SIMPLE.finditer(s):
            if hit.start() != end:
                break
            end = hit.end()
            number = int(hit[1])
            found = hit[2] if hit.lastindex == 2 else None
            in_order = in_order and number == len(values) + 1
            values.append(found)
            out[number] = found
        if end == len(s):
            return tuple(values) if in_order else _ordered(out)
        out.clear()
    i, n = 0, len(s)
    while i < n:
        if s[i] != "$":
            break
        eq = s.find(" = ", i)
        if eq < 0 or not s[i + 1 : eq].isascii() or not s[i + 1 : eq].isdigit():
            break
        number = int(s[i + 1 : eq]) if eq - i < 8 else 0
        i = eq + 3
        if s.startswith("NULL", i):
            value: str | None = None
            i += 4
        elif i < n and s[i] == "'":
            parts = []
            j = i + 1
            while True:
                q = s.find("'", j)
                if q < 0:
                    return _ordered(out)  # cut off: keep what was whole
                parts.append(s[j:q])
                if q + 1 < n and s[q + 1] == "'":
                    parts.append("'")
                    j = q + 2
                    continue
                i = q + 1
                break
            value = "".join(parts)
        else:
            break
        if number:
            out[number] = value
        if s.startswith(", ", i):
            i += 2
        else:
            break
    return _ordered(out)


def _ordered(found: dict[int, str | None]) -> tuple[str | None, ...]:
    if not found:
        return ()
    top = min(max(found), 65535)
    return tuple(found.get(k) for k in range(1, top + 1))


def ends_session(e: Entry) -> bool:
    """A disconnection (log_disconnections) or a FATAL that ends the backend."""
    return (e.severity == "LOG" and e.message.startswith(_SESSION_END[0])) or (
        e.severity in ("FATAL", "PANIC")
    )


def starts_session(e: Entry) -> bool:
    """A new connection on this process (log_connections)."""
    return e.severity == "LOG" and e.message.startswith(_SESSION_START)


def is_error(e: Entry) -> bool:
    """An error that ends the statement the session is running."""
    return e.severity in ("ERROR", "FATAL", "PANIC")
