"""Diagnostics are data: every problem, from a YAML typo to a deadlock, is one of these.

Loading, checking and drift all return lists of `Diagnostic` so the user reads one sorted list
and every reporter (text, JSON, GitHub, SARIF) formats the same thing.
"""

from __future__ import annotations

import enum
import functools
import re
from typing import Any, NamedTuple

from lockdocs.records import field, record


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@record(order=True)
class Location:
    """A place in a declaration file; line and column are 1-based."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column or 1}"
        return self.file


class Related(NamedTuple):
    """Another place a finding is about (a cycle's other hop), with what happens there."""

    location: Location
    message: str


@record
class Diagnostic:
    code: str
    severity: Severity
    message: str
    location: Location
    hint: str = ""
    # Extra lines printed under the message (a cycle's proof, a diff).
    details: tuple[str, ...] = ()
    # Set when an exception in the declarations waives this finding.
    waived_by: str = ""
    # Keys used to match exceptions: the path and lock the finding is about, and the
    # declared rule id when the finding comes from a declared rule.
    paths: tuple[str, ...] = ()
    locks: tuple[str, ...] = ()
    rule_id: str = ""
    branches: tuple[str, ...] = ()  # the branch the finding is in, outermost first
    takers: tuple[str, ...] = ()  # LD7xx: every name of the taker or statement it is about
    # Other places the finding is about (SARIF relatedLocations, JSON `related`).
    related: tuple[Related, ...] = ()
    # The interleaving that makes a deadlock: one thread per transaction, each the steps it
    # runs in order (SARIF codeFlows).
    threads: tuple[tuple[Related, ...], ...] = ()
    extra: dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        return (loc.file, loc.line, loc.column, self.code, self.message)

    @property
    def blocking(self) -> bool:
        """Only an unwaived error fails a check."""
        return self.severity is Severity.ERROR and not self.waived_by


def sort_diagnostics(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Sorted and de-duplicated, so output never depends on discovery order."""
    seen: set[tuple[str, int, int, str, str]] = set()
    out: list[Diagnostic] = []
    for d in sorted(diags, key=Diagnostic.sort_key):
        k = d.sort_key()
        if k in seen:
            continue
        seen.add(k)
        out.append(d)
    return out


def _place(loc: Location) -> list[Any]:
    return [loc.file, loc.line, loc.column]


def _related(items: tuple[Related, ...]) -> list[Any]:
    return [[_place(r.location), r.message] for r in items]


def to_record(d: Diagnostic) -> list[Any]:
    """A finding as plain JSON data, every field but `extra` (which no reporter reads but
    drift's), so a result can be stored and the same finding read back (`from_record`)."""
    return [
        d.code,
        d.severity.value,
        d.message,
        _place(d.location),
        d.hint,
        list(d.details),
        d.waived_by,
        list(d.paths),
        list(d.locks),
        d.rule_id,
        list(d.branches),
        list(d.takers),
        _related(d.related),
        [_related(t) for t in d.threads],
    ]


def _unrelated(items: list[Any]) -> tuple[Related, ...]:
    return tuple(Related(Location(*place), message) for place, message in items)


def from_record(r: list[Any]) -> Diagnostic:
    """The finding `to_record` stored (a malformed record raises TypeError or ValueError)."""
    (code, severity, message, place, hint, details, waived_by, paths, locks, rule_id) = r[:10]
    branches, takers, related, threads = r[10:]
    return Diagnostic(
        str(code),
        Severity(severity),
        str(message),
        Location(*place),
        str(hint),
        tuple(details),
        str(waived_by),
        tuple(paths),
        tuple(locks),
        str(rule_id),
        tuple(branches),
        tuple(takers),
        _unrelated(related),
        tuple(_unrelated(t) for t in threads),
    )


# C0 and C1 controls, DEL, and the bidirectional overrides that reorder what a terminal shows;
# then every other format character (Unicode's Cf, Zl and Zp: zero-width spaces and joiners,
# the word joiner, BOMs, invisible operators, line and paragraph separators, tag characters)
# and the characters that draw nothing (the combining grapheme joiner, Hangul fillers,
# Mongolian and supplementary variation selectors), which hide or fake text in a review.
_UNSAFE_CLASS = (
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u00ad\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200d\u2028\u2029"
    "\u2060-\u2064\u206a-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u3164\uffa0\u180b-\u180d\u180f\U000e0100-\U000e01ef]"
)


@functools.cache
def _unsafe() -> re.Pattern[str]:
    """The pattern, compiled at its first use (about 1.5 ms: every run imports this module,
    and most print only plain ASCII, which `printable` tells without it)."""
    return re.compile(_UNSAFE_CLASS)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(m: re.Match[str]) -> str:
    ch = m.group(0)
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: str) -> str:
    """A user string as a terminal may show it: every control character (ESC, so no colours
    or OSC clipboard writes; a newline, so no fake second line), bidirectional override and
    invisible character (a zero-width space, a tag character) written as an escape."""
    if text.isascii() and text.isprintable():  # no control character, nothing invisible
        return text
    unsafe = _unsafe()
    return unsafe.sub(_escaped, text) if unsafe.search(text) else text
