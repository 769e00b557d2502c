"""What the SQL reader's parts share: the result of reading one file (its sites, locks, keys,
waivers, warnings, the lines it could not read), positions mapped from a text back to the file,
and a found lock written down at its site."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable

from pglast.parser import ParseError, scan

from lockdocs.records import field, record, replace
from lockdocs.scan.found import FoundLock, Site, SqlWaiver, Unread, Warning
from lockdocs.scan.sources import Lines, Unit, dotted_aliases
from lockdocs.scan.tree import Raw


def byte_offsets(text: str) -> Callable[[int], int]:
    """libpg_query's JSON locations count UTF-8 bytes; everything else here counts
    characters."""
    if text.isascii():
        return lambda b: b
    starts = []
    n = 0
    for ch in text:
        starts.append(n)
        n += len(ch.encode("utf-8"))
    return lambda b: max(bisect_right(starts, b) - 1, 0)


@record(frozen=False)
class Result:
    """What one file's texts yield; sites are indexed across the whole file."""

    sites: list[Site] = field(default_factory=list)
    locks: list[FoundLock] = field(default_factory=list)
    keys: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    waivers: list[SqlWaiver] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    unread: list[Unread] = field(default_factory=list)


@record(frozen=False)
class Comment:
    start: int
    end: int
    text: str


class Reader:
    """Adds what one file's texts say to a `Result`; `lines` maps file offsets."""

    def __init__(self, file_text: str, result: Result) -> None:
        self.file_text = file_text
        self.lines = Lines(file_text)
        self.r = result

    def at(self, unit: Unit, offset: int) -> tuple[int, int]:
        return self.lines.at(unit.file_offset(offset))

    def warn(self, unit: Unit, offset: int, code: str, message: str, hint: str) -> None:
        line, col = self.at(unit, offset)
        self.r.warnings.append(Warning(line, col, code, message, hint))

    def unread(
        self, unit: Unit, begin: int, end: int, at: int, code: str, reason: str, site: int
    ) -> None:
        """Lines `begin`..`end` of `unit` were not read (the parser stopped at `at`): the site
        says so, and so will a finding."""
        last = begin + len(unit.text[begin:end].rstrip())
        first_line, _ = self.at(unit, begin)
        last_line, _ = self.at(unit, max(last - 1, begin))
        line, col = self.at(unit, min(max(at, 0), max(len(unit.text) - 1, 0)))
        self.r.sites[site] = replace(self.r.sites[site], unread=True)
        self.r.unread.append(
            Unread(site, line, col, first_line, max(last_line, first_line), code, brief(reason))
        )

    def _site(
        self, unit: Unit, start: int, end: int, name: str | None, kind: str, unread: bool = False
    ) -> int:
        line, col = self.at(unit, start)
        end_line, _ = self.at(unit, max(end - 1, start))
        aliases = dotted_aliases(name.split(".")) if name and not unit.aliases else unit.aliases
        if name and unit.aliases and name != unit.name:
            aliases = dotted_aliases(name.split("."))
        self.r.sites.append(Site(line, col, end_line, name, aliases, kind, unread))
        if name:
            self.r.names.add(name)
        return len(self.r.sites) - 1

    def _emit(
        self,
        unit: Unit,
        raws: list[Raw],
        site: int,
        to_unit: Callable[[int], int],
        text: str,
        loop: bool,
    ) -> None:
        for raw in raws:
            line, col = self.at(unit, to_unit(raw.offset))
            key = call_args(text, raw.call) if raw.call is not None else None
            self.r.locks.append(
                FoundLock(
                    site=site,
                    line=line,
                    column=col,
                    kind=raw.kind,
                    mode=raw.mode,
                    option=raw.option,
                    of=raw.of,
                    table=raw.table,
                    function=raw.function,
                    scope=raw.scope,
                    try_=raw.try_,
                    key=key,
                    shape=raw.shape,
                    implicit=raw.implicit,
                    columns=raw.columns,
                    loop=loop,
                )
            )


def call_args(text: str, call: int) -> str | None:
    """The arguments of the call at `call`, as written (whitespace runs collapsed)."""
    try:
        tokens = scan(text[call:])
    except ParseError:
        return None
    depth = 0
    open_at = None
    for t in tokens:
        piece = text[call + t.start : call + t.end + 1]
        if piece == "(":
            depth += 1
            if open_at is None:
                open_at = call + t.end + 1
        elif piece == ")":
            depth -= 1
            if depth == 0 and open_at is not None:
                return " ".join(text[open_at : call + t.start].split())
    return None


def brief(message: str) -> str:
    """The parser's words, with the text it quotes ('at or near "..."') cut short: for an
    unterminated quote that is the rest of the file."""
    head, sep, quoted = message.partition(' at or near "')
    if sep and len(quoted) > 42:
        return f'{head}{sep}{quoted[:40]}..."'
    return message
