"""One SQL text -> its statements (sites), locks, unique keys and waivers, via pglast.

Statements are named by a preceding sqlc comment (`-- name: LockPools :many`), by the function
they define (CREATE FUNCTION core.confer ...: the locks of its body are core.confer's), or by
the source function the literal stands in. PL/pgSQL bodies (functions and DO blocks) are parsed
with pglast.parse_plpgsql; each expression of the body is parsed again as SQL and its offsets
mapped back through the body to the file, loops marked.
"""

from __future__ import annotations

import contextlib
import json
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pglast.parser import ParseError, parse_plpgsql_json, parse_sql_json, scan

from lockdocs.scan.found import FoundLock, Site, SqlWaiver, Warning
from lockdocs.scan.keyshape import unwrap
from lockdocs.scan.sources import Lines, Unit, dotted_aliases, driver_placeholders
from lockdocs.scan.tree import Raw, Walker

LOOPS = {
    "PLpgSQL_stmt_loop",
    "PLpgSQL_stmt_while",
    "PLpgSQL_stmt_fori",
    "PLpgSQL_stmt_fors",
    "PLpgSQL_stmt_forc",
    "PLpgSQL_stmt_foreach_a",
    "PLpgSQL_stmt_dynfors",
}
WAIVER_CODES = tuple(f"LD7{n:02d}" for n in range(1, 100))


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


@dataclass
class Result:
    """What one file's texts yield; sites are indexed across the whole file."""

    sites: list[Site] = field(default_factory=list)
    locks: list[FoundLock] = field(default_factory=list)
    keys: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    waivers: list[SqlWaiver] = field(default_factory=list)
    warnings: list[Warning] = field(default_factory=list)
    names: set[str] = field(default_factory=set)


@dataclass
class _Comment:
    start: int
    end: int
    text: str


class Analyser:
    """Adds one `Unit` after another to a `Result`; `lines` maps file offsets."""

    def __init__(self, file_text: str, result: Result) -> None:
        self.file_text = file_text
        self.lines = Lines(file_text)
        self.r = result

    # -- positions ------------------------------------------------------------------------------

    def at(self, unit: Unit, offset: int) -> tuple[int, int]:
        return self.lines.at(unit.file_offset(offset))

    def warn(self, unit: Unit, offset: int, code: str, message: str, hint: str) -> None:
        line, col = self.at(unit, offset)
        self.r.warnings.append(Warning(line, col, code, message, hint))

    # -- a unit -----------------------------------------------------------------------------------

    def add(self, unit: Unit) -> bool:
        """Analyse one text; False when a source literal turns out not to be SQL."""
        text = unit.text
        try:
            tree = json.loads(parse_sql_json(text))
        except ParseError as exc:
            if unit.from_source:
                swapped = driver_placeholders(text) if "%" in text else None
                if swapped is None:
                    return False
                return (
                    self.add(replace(unit, text=swapped, from_source=True))
                    if swapped != text
                    else False
                )
            self._statement_by_statement(unit, exc)
            return True
        stmts = tree.get("stmts", [])
        if unit.from_source and not stmts:
            return False
        comments = self._comments(unit)
        if comments is None:
            return True
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
        self._waivers(unit, comments, first_site)
        return True

    def _comments(self, unit: Unit) -> list[_Comment] | None:
        text = unit.text
        if "--" not in text and "/*" not in text:
            return []
        try:
            tokens = scan(text)
        except ParseError as exc:
            self._syntax(unit, exc, 0)
            return None
        return [
            _Comment(t.start, t.end + 1, text[t.start : t.end + 1])
            for t in tokens
            if t.name in ("SQL_COMMENT", "C_COMMENT")
        ]

    def _syntax(self, unit: Unit, exc: ParseError, base: int) -> None:
        message = str(exc.args[0]) if exc.args else str(exc)
        index = int(exc.args[1]) if len(exc.args) > 1 else 0
        self.warn(
            unit,
            base + index,
            "LD709",
            f"SQL syntax error: {message}; the statement is skipped",
            "fix the statement so Postgres can parse it, or leave the file out of code:",
        )

    def _statement_by_statement(self, unit: Unit, first: ParseError) -> None:
        """A file with a syntax error: parse each statement on its own, so one bad statement
        costs only itself."""
        text = unit.text
        try:
            tokens = scan(text)
        except ParseError as exc:
            self._syntax(unit, exc, 0)
            return
        chunks: list[tuple[int, int]] = []
        begin = 0
        for t in tokens:
            if t.name == "ASCII_59":
                chunks.append((begin, t.start))
                begin = t.end + 1
        chunks.append((begin, len(text)))
        for a, b in chunks:
            piece = text[a:b]
            if not piece.strip():
                continue
            sub = Unit(piece, [(0, unit.file_offset(a))], unit.name, unit.aliases)
            try:
                parse_sql_json(piece)
            except ParseError as exc:
                self._syntax(sub, exc, 0)
                continue
            self.add(sub)

    # -- one statement -------------------------------------------------------------------------

    def _site(self, unit: Unit, start: int, end: int, name: str | None, kind: str) -> int:
        line, col = self.at(unit, start)
        end_line, _ = self.at(unit, max(end - 1, start))
        aliases = dotted_aliases(name.split(".")) if name and not unit.aliases else unit.aliases
        if name and unit.aliases and name != unit.name:
            aliases = dotted_aliases(name.split("."))
        self.r.sites.append(Site(line, col, end_line, name, aliases, kind))
        if name:
            self.r.names.add(name)
        return len(self.r.sites) - 1

    def _statement(
        self,
        unit: Unit,
        stmt: Any,
        start: int,
        end: int,
        previous_end: int,
        comments: list[_Comment],
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
            key = _call_args(text, raw.call) if raw.call is not None else None
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

    # -- functions and DO blocks -----------------------------------------------------------------

    def _function(
        self,
        unit: Unit,
        kind: str,
        body: dict[str, Any],
        start: int,
        end: int,
        loc: Callable[[int], int],
        comments: list[_Comment],
    ) -> None:
        options = {}
        for o in body.get("options" if kind == "CreateFunctionStmt" else "args", []):
            d = unwrap(o)[1]
            options[d.get("defname")] = d.get("arg")
        language = str(
            unwrap(options.get("language"))[1].get("sval", "plpgsql" if kind == "DoStmt" else "sql")
        )
        name = None
        if kind == "CreateFunctionStmt":
            name = ".".join(str(unwrap(n)[1].get("sval", "")) for n in body.get("funcname", []))
        site = self._site(unit, start, end, name, "function" if name else "statement")
        walker = Walker(loc)
        walker.node(body.get("sql_body"))
        self._emit(unit, walker.out, site, lambda k: k, unit.text, False)
        kind_of_as, as_body = unwrap(options.get("as"))
        strings = as_body.get("items", []) if kind_of_as == "List" else [options.get("as")]
        code = str(unwrap(strings[0])[1].get("sval", "")) if strings and strings[0] else ""
        if not code:
            return
        stmt_text = unit.text[start:end]
        body_at = _body_offset(stmt_text, code)
        base = start + body_at if body_at is not None else start
        if body_at is not None and ("--" in code or "/*" in code):
            with contextlib.suppress(ParseError):  # the body's own parse reports it
                comments += [
                    _Comment(base + t.start, base + t.end + 1, code[t.start : t.end + 1])
                    for t in scan(code)
                    if t.name in ("SQL_COMMENT", "C_COMMENT")
                ]
        if language == "plpgsql":
            self._plpgsql(unit, kind, stmt_text, code, base, body_at is not None, name, site)
        elif language == "sql":
            self._sql_body(unit, code, base, body_at is not None, name, site)

    def _sql_body(
        self, unit: Unit, code: str, base: int, exact: bool, name: str | None, site: int
    ) -> None:
        try:
            tree = json.loads(parse_sql_json(code))
        except ParseError as exc:
            self._syntax(unit, exc, base if exact else 0)
            return
        loc = byte_offsets(code)
        walker = Walker(loc)
        walker.node(tree.get("stmts", []))
        self._emit(unit, walker.out, site, lambda k: base + k if exact else base, code, False)

    def _plpgsql(
        self,
        unit: Unit,
        kind: str,
        stmt_text: str,
        code: str,
        base: int,
        exact: bool,
        name: str | None,
        fn_site: int,
    ) -> None:
        source = stmt_text
        if kind == "DoStmt":  # parse_plpgsql wants a function: wrap the block in one
            source = (
                "CREATE FUNCTION pg_temp.lockdocs_do() RETURNS void LANGUAGE plpgsql AS "
                "$lockdocs_do$" + code + "$lockdocs_do$"
            )
        try:
            tree = json.loads(parse_plpgsql_json(source))
        except ParseError as exc:
            self.warn(
                unit,
                base,
                "LD709",
                f"PL/pgSQL syntax error in {name or 'a DO block'}: {exc.args[0] if exc.args else exc}; "
                "its body is skipped",
                "fix the function body so Postgres can compile it",
            )
            return
        body_lines = Lines(code)
        sites: dict[int, int] = {}

        def visit(node: Any, lineno: int, loop: bool, stmt_kind: str) -> None:
            if isinstance(node, list):
                for x in node:
                    visit(x, lineno, loop, stmt_kind)
                return
            if not isinstance(node, dict):
                return
            k, b = unwrap(node)
            if k == "PLpgSQL_expr":
                self._expression(
                    unit,
                    b,
                    lineno,
                    loop,
                    stmt_kind,
                    code,
                    body_lines,
                    base,
                    exact,
                    name,
                    sites,
                    fn_site,
                )
                return
            if k.startswith("PLpgSQL_stmt"):
                lineno = int(b.get("lineno", lineno))
                stmt_kind = k
                for key, v in b.items():
                    # a loop's own query runs once; its body runs once per row
                    visit(v, lineno, loop or (k in LOOPS and key == "body"), stmt_kind)
                return
            for v in (b or node).values():
                if isinstance(v, dict | list):
                    visit(v, lineno, loop, stmt_kind)

        visit(tree, 1, False, "")

    def _expression(
        self,
        unit: Unit,
        expr: dict[str, Any],
        lineno: int,
        loop: bool,
        stmt_kind: str,
        code: str,
        body_lines: Lines,
        base: int,
        exact: bool,
        name: str | None,
        sites: dict[int, int],
        fn_site: int,
    ) -> None:
        query = str(expr.get("query", ""))
        mode = int(expr.get("parseMode", 0))
        # `sql` is what is parsed; an offset k in it is offset k + shift of `query`. `search`
        # is the part of `query` written verbatim in the body, search_shift characters in.
        sql, shift = query, 0
        if mode == 0 and stmt_kind == "PLpgSQL_stmt_perform" and query.startswith("SELECT "):
            search, search_shift = query[7:], 7  # PERFORM x is kept as SELECT x
        elif mode >= 3:  # an assignment: `target := expression`
            rest = _after_assign(query)
            if rest is None:
                return
            sql, shift = "SELECT " + query[rest:], rest - 7
            search, search_shift = query, 0
        elif mode == 2:
            sql, shift = "SELECT " + query, -7
            search, search_shift = query, 0
        else:
            search, search_shift = query, 0
        if not any(w in sql.lower() for w in ("lock", "for ", "update", "delete", "insert")):
            return  # nothing in it can take a lock; skip the second parse
        line_start = body_lines.starts[min(max(lineno, 1), len(body_lines.starts)) - 1]
        try:
            tree = json.loads(parse_sql_json(sql))
        except ParseError as exc:
            self.warn(
                unit,
                base + line_start if exact else base,
                "LD709",
                f"SQL syntax error in {name or 'a DO block'}: "
                f"{exc.args[0] if exc.args else exc}; the statement is skipped",
                "fix the statement so Postgres can parse it",
            )
            return
        walker = Walker(byte_offsets(sql))
        walker.node(tree.get("stmts", []))
        if not walker.out:
            return
        found = code.find(search, line_start) if search and exact else -1
        if found == -1 and exact and "  " in search:
            # SELECT ... INTO: PL/pgSQL blanks the INTO clause out, keeping every offset
            head = search.split("  ")[0]
            found = code.find(head, line_start) if head else -1
        if found == -1:
            indent = len(code[line_start:]) - len(code[line_start:].lstrip(" \t"))
            anchor = line_start + indent if exact else 0

            def to_unit(k: int) -> int:
                return base + anchor

            stmt_start, stmt_len = anchor, 0
        else:
            origin = found - search_shift  # the body offset of the query's first character

            def to_unit(k: int) -> int:
                return base + max(origin + k + shift, found)

            stmt_start, stmt_len = found, len(search)
        if lineno not in sites:
            indent = len(code[line_start:]) - len(code[line_start:].lstrip(" \t"))
            if exact and code.count("\n", line_start, stmt_start) == 0:
                stmt_start = line_start + indent  # the statement's first word
            line, col = self.at(unit, base + stmt_start)
            end_line, _ = self.at(unit, base + stmt_start + max(stmt_len - 1, 0))
            fn = self.r.sites[fn_site]
            sites[lineno] = len(self.r.sites)
            self.r.sites.append(Site(line, col, end_line, fn.name, fn.aliases, fn.kind))
        self._emit(unit, walker.out, sites[lineno], to_unit, sql, loop)

    # -- waivers --------------------------------------------------------------------------------

    def _waivers(self, unit: Unit, comments: list[_Comment], first_site: int) -> None:
        sites = list(range(first_site, len(self.r.sites)))
        for c in comments:
            inner = c.text[2:-2] if c.text.startswith("/*") else c.text[2:]
            inner = inner.strip()
            if not inner.startswith("lockdocs:"):
                continue
            line, col = self.at(unit, c.start)
            words = inner[len("lockdocs:") :].split()
            problem = None
            codes: list[str] = []
            reason = ""
            if not words or words[0] != "ignore":
                problem = "a lockdocs comment must read '-- lockdocs: ignore LD7xx reason'"
            else:
                rest = words[1:]
                while rest and rest[0].rstrip(",").upper().startswith("LD"):
                    codes += [x for x in rest.pop(0).split(",") if x]
                reason = " ".join(rest)
                bad = [x for x in codes if x.upper() not in WAIVER_CODES]
                if not codes:
                    problem = "the waiver names no rule code"
                elif bad:
                    problem = f"only LD7xx findings can be waived in the SQL, not {', '.join(bad)}"
                elif not reason:
                    problem = "the waiver gives no reason"
            trailing = bool(
                self.file_text[self.lines.offset(line, 1) : self.lines.offset(line, col)].strip()
            )
            target = _waiver_site(self.r.sites, sites, line, col, trailing)
            self.r.waivers.append(
                SqlWaiver(line, col, tuple(x.upper() for x in codes), reason, target, problem)
            )


def _skip_blank(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _sqlc_name(comments: list[_Comment], lo: int, hi: int) -> str | None:
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


def _body_offset(stmt_text: str, code: str) -> int | None:
    """Where a function's body starts in its CREATE statement (a dollar-quoted or plain
    string constant), or None when it cannot be mapped one to one."""
    try:
        tokens = scan(stmt_text)
    except ParseError:
        return None
    for t in tokens:
        if t.name != "SCONST":
            continue
        raw = stmt_text[t.start : t.end + 1]
        if raw.startswith("$"):
            tag = raw[: raw.index("$", 1) + 1]
            if raw[len(tag) : len(raw) - len(tag)] == code:
                return t.start + len(tag)
        elif raw.startswith("'") and raw[1:-1] == code:
            return t.start + 1
    return None


def _after_assign(query: str) -> int | None:
    """The offset just after `:=` (or `=`) in an assignment expression."""
    try:
        tokens = scan(query)
    except ParseError:
        return None
    for t in tokens:
        if t.name == "COLON_EQUALS" or query[t.start : t.end + 1] == "=":
            return t.end + 1
    return None


def _call_args(text: str, call: int) -> str | None:
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
