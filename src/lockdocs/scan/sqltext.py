"""One SQL text -> its statements (sites), locks, unique keys and waivers, via pglast.

Statements are named by a preceding sqlc comment (`-- name: LockPools :many`), by the function
they define (CREATE FUNCTION core.confer ...: the locks of its body are core.confer's, read by
`plpgsql.py`), or by the source function the literal stands in. `sqlbase.py` holds what the
parts share.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pglast.parser import ParseError, scan

from lockdocs import pgparse
from lockdocs.records import replace
from lockdocs.scan.found import Site, SqlWaiver
from lockdocs.scan.keyshape import unwrap
from lockdocs.scan.plpgsql import Bodies
from lockdocs.scan.sources import SourceComment, Unit, driver_placeholders
from lockdocs.scan.sqlbase import Comment, Result, byte_offsets
from lockdocs.scan.statements import Chunk, chunks
from lockdocs.scan.tree import Walker

__all__ = ["Analyser", "Result"]

WAIVER_CODES = tuple(f"LD7{n:02d}" for n in range(1, 100))


class Analyser(Bodies):
    """Adds one `Unit` after another to a `Result`: its statements, their locks, and the
    waivers written in its comments."""

    def add(self, unit: Unit) -> bool:
        """Analyse one text; False when a source literal turns out not to be SQL. A long text
        is read on pgparse's deep stack: the walks below recurse over its tree."""
        if len(unit.text) < pgparse.SHORT:
            return self._add(unit)
        return pgparse.deep(self._add, unit)

    def _add(self, unit: Unit) -> bool:
        text = unit.text
        try:
            tree = pgparse.parse_json(text)
        except ParseError:
            if unit.from_source:
                swapped = driver_placeholders(text) if "%" in text else None
                if swapped is None:
                    return False
                return (
                    self.add(replace(unit, text=swapped, from_source=True))
                    if swapped != text
                    else False
                )
            self._statement_by_statement(unit)
            return True
        stmts = tree.get("stmts", [])
        if unit.from_source and not stmts:
            return False
        self._read(unit, stmts)
        return True

    def _read(self, unit: Unit, stmts: list[Any], waive: bool = True) -> None:
        """The statements of a text that parsed, with the waivers in its comments (unless its
        caller reads those)."""
        text = unit.text
        comments = self._comments(unit)
        if comments is None:
            return
        loc = byte_offsets(text)
        first_site = len(self.r.sites)
        previous_end = 0
        for raw in stmts:
            start = loc(int(raw.get("stmt_location", 0)))
            length = raw.get("stmt_len")
            end = loc(int(raw.get("stmt_location", 0)) + int(length)) if length else len(text)
            start = _skip_blank(text, start)
            self._statement(unit, raw["stmt"], start, end, previous_end, comments, loc)
            previous_end = end
        if waive:
            self._waivers(unit, comments, first_site)

    def _comments(self, unit: Unit) -> list[Comment] | None:
        text = unit.text
        if "--" not in text and "/*" not in text:
            return []
        try:
            tokens = scan(text)
        except ParseError as exc:  # the text parsed, so this is not expected; never silent
            site = self._site(unit, 0, len(text), unit.name, "statement")
            at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
            self.unread(unit, 0, len(text), at, "LD709", str(exc.args[0]), site)
            return None
        return [
            Comment(t.start, t.end + 1, text[t.start : t.end + 1])
            for t in tokens
            if t.name in ("SQL_COMMENT", "C_COMMENT")
        ]

    def _statement_by_statement(self, unit: Unit) -> None:
        """A text with a syntax error: each statement on its own, so one bad statement (even
        one the lexer stops in) costs only itself; what is not read is recorded as such."""
        text = unit.text
        first_site = len(self.r.sites)
        comments: list[Comment] = []
        for c in chunks(text):
            comments += (Comment(a, b, text[a:b]) for a, b in c.comments)
            if c.begin is None and c.fault is None:
                continue  # comments only
            piece = text[c.start : c.end]
            sub = Unit(piece, [(0, unit.file_offset(c.start))], unit.name, unit.aliases)
            if c.fault is not None:
                self._unread_chunk(unit, c, c.fault.message, c.fault.at)
                continue
            try:
                tree = pgparse.parse_json(piece)
            except ParseError as exc:
                at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else None
                message = str(exc.args[0]) if exc.args else str(exc)
                self._unread_chunk(unit, c, message, c.start + at if at is not None else c.end)
                continue
            if len(piece) < pgparse.SHORT:
                self._read(sub, tree.get("stmts", []), False)
            else:
                pgparse.deep(self._read, sub, tree.get("stmts", []), False)
        # The waivers last, so a comment after a statement's `;` still finds that statement.
        self._waivers(unit, comments, first_site)

    def _unread_chunk(self, unit: Unit, c: Chunk, message: str, at: int) -> None:
        """A statement that does not parse: a site (named by its sqlc comment, so a taker of
        that name is 'not checked' rather than missing) and its lines, unread."""
        text = unit.text
        begin = c.begin if c.begin is not None else min(at, c.end)
        comments = [Comment(a, b, text[a:b]) for a, b in c.comments]
        name = _sqlc_name(comments, c.start, begin + 1)
        site = self._site(unit, begin, c.end, name or unit.name, "query" if name else "statement")
        self.unread(unit, begin, c.end, at, "LD709", message, site)

    def _statement(
        self,
        unit: Unit,
        stmt: Any,
        start: int,
        end: int,
        previous_end: int,
        comments: list[Comment],
        loc: Callable[[int], int],
    ) -> None:
        kind, body = unwrap(stmt)
        name = _sqlc_name(comments, previous_end, start)
        site_kind = "query" if name else ("source" if unit.from_source else "statement")
        name = name or unit.name
        if kind in ("CreateFunctionStmt", "DoStmt"):
            self._function(unit, kind, body, start, end, loc, comments)
            return
        walker = Walker(loc)
        walker.node(stmt)
        self.r.keys += walker.keys
        site = self._site(unit, start, end, name, site_kind)
        self._emit(unit, walker.out, site, lambda k: k, unit.text, False)

    def _waivers(self, unit: Unit, comments: list[Comment], first_site: int) -> None:
        sites = list(range(first_site, len(self.r.sites)))
        for c in comments:
            inner = c.text[2:-2] if c.text.startswith("/*") else c.text[2:]
            inner = inner.strip()
            if not inner.startswith("lockdocs:"):
                continue
            line, col = self.at(unit, c.start)
            codes, reason, problem = read_waiver(inner)
            trailing = bool(
                self.file_text[self.lines.offset(line, 1) : self.lines.offset(line, col)].strip()
            )
            target = _waiver_site(self.r.sites, sites, line, col, trailing)
            self.r.waivers.append(
                SqlWaiver(
                    line,
                    col,
                    codes,
                    reason,
                    () if target is None else (target,),
                    problem,
                )
            )

    def add_sources(self, units: list[Unit], comments: list[SourceComment]) -> None:
        """A Python or Go file's literals, and the waiver comments above their statements: a
        comment covers the SQL of the statement that starts on the next line of code, or of a
        literal on that line."""
        by_line: dict[int, list[int]] = {}
        for i, c in enumerate(comments):
            if c.next_line:
                by_line.setdefault(c.next_line, []).append(i)
        covered: list[list[int]] = [[] for _ in comments]
        for unit in units:
            first = len(self.r.sites)
            self.add(unit)
            own = self.lines.at(unit.file_offset(0))[0]
            for i in {*by_line.get(unit.stmt_line, ()), *by_line.get(own, ())}:
                covered[i] += range(first, len(self.r.sites))
        for c, sites in zip(comments, covered, strict=True):
            self.source_waiver(c, sites)

    def source_waiver(self, c: SourceComment, sites: list[int]) -> None:
        """A `# lockdocs:` or `// lockdocs:` comment above a Python or Go statement: it covers
        the SQL of that statement's literals (`sites`; none: it waives nothing)."""
        line, col = self.lines.at(c.offset)
        codes, reason, problem = read_waiver(c.text)
        self.r.waivers.append(
            SqlWaiver(line, col, codes, reason, tuple(sorted(set(sites))), problem)
        )


def read_waiver(inner: str) -> tuple[tuple[str, ...], str, str | None]:
    """The codes, the reason and what is wrong (None: nothing) of a waiver comment, its
    text from `lockdocs:` on."""
    words = inner[len("lockdocs:") :].split()
    problem = None
    codes: list[str] = []
    reason = ""
    if not words or words[0] != "ignore":
        problem = "a lockdocs comment must read 'lockdocs: ignore LD7xx reason'"
    else:
        rest = words[1:]
        while rest and rest[0].rstrip(",").upper().startswith("LD"):
            codes += [x for x in rest.pop(0).split(",") if x]
        reason = " ".join(rest)
        bad = [x for x in codes if x.upper() not in WAIVER_CODES]
        if not codes:
            problem = "the waiver names no rule code"
        elif bad:
            problem = f"only LD7xx findings can be waived in the code, not {', '.join(bad)}"
        elif not reason:
            problem = "the waiver gives no reason"
    return tuple(x.upper() for x in codes), reason, problem


def _skip_blank(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _sqlc_name(comments: list[Comment], lo: int, hi: int) -> str | None:
    name = None
    for c in comments:
        if lo <= c.start < hi and c.text.startswith("--"):
            words = c.text[2:].split()
            if len(words) >= 2 and words[0] == "name:":
                name = words[1]
    return name


def _waiver_site(
    all_sites: list[Site], candidates: list[int], line: int, col: int, trailing: bool
) -> int | None:
    """A trailing comment covers the statement on its line; a comment on lines of its own
    covers the next statement."""
    if trailing:
        best = None
        for i in candidates:
            s = all_sites[i]
            if (s.line, s.column) <= (line, col) and s.end_line >= line:
                best = (
                    i
                    if best is None
                    or (all_sites[best].line, all_sites[best].column) <= (s.line, s.column)
                    else best
                )
        if best is not None:
            return best
    after = [i for i in candidates if (all_sites[i].line, all_sites[i].column) > (line, col)]
    if after:
        return min(after, key=lambda i: (all_sites[i].line, all_sites[i].column))
    return None
