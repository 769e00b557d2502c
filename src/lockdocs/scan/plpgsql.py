"""Functions and DO blocks: a CREATE FUNCTION's SQL body, or a PL/pgSQL body parsed with
pglast.parse_plpgsql, each expression of it parsed again as SQL and its offsets mapped back
through the body to the file, loops marked; the locks found are the function's.

A body the PL/pgSQL reader refuses is read again with stand-in types (`standin`); one it still
cannot read is recorded as unread (LD712), with the function, so that its declared takers are
"not checked", never "takes no lock"."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from pglast.parser import ParseError, scan

from lockdocs import pgparse
from lockdocs.scan.found import Site
from lockdocs.scan.keyshape import unwrap
from lockdocs.scan.sources import Lines, Unit
from lockdocs.scan.sqlbase import Comment, Reader, byte_offsets
from lockdocs.scan.standin import stood_in
from lockdocs.scan.tree import Walker

LOOPS = {
    "PLpgSQL_stmt_loop",
    "PLpgSQL_stmt_while",
    "PLpgSQL_stmt_fori",
    "PLpgSQL_stmt_fors",
    "PLpgSQL_stmt_forc",
    "PLpgSQL_stmt_foreach_a",
    "PLpgSQL_stmt_dynfors",
}


class Bodies(Reader):
    """The reader of function and DO-block bodies (`sqltext.Analyser` adds the statements)."""

    def _function(
        self,
        unit: Unit,
        kind: str,
        body: dict[str, Any],
        start: int,
        end: int,
        loc: Callable[[int], int],
        comments: list[Comment],
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
                    Comment(base + t.start, base + t.end + 1, code[t.start : t.end + 1])
                    for t in scan(code)
                    if t.name in ("SQL_COMMENT", "C_COMMENT")
                ]
        if language == "plpgsql":
            self._plpgsql(unit, kind, body, stmt_text, code, base, body_at is not None, name, site)
        elif language == "sql":
            self._sql_body(unit, code, base, body_at is not None, name, site)

    def _sql_body(
        self, unit: Unit, code: str, base: int, exact: bool, name: str | None, site: int
    ) -> None:
        try:
            tree = pgparse.parse_json(code)
        except ParseError as exc:
            at = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
            self.unread(
                unit,
                base,
                base + len(code),
                base + at if exact else base,
                "LD709",
                str(exc.args[0]) if exc.args else str(exc),
                site,
            )
            return
        loc = byte_offsets(code)
        walker = Walker(loc)
        walker.node(tree.get("stmts", []))
        self._emit(unit, walker.out, site, lambda k: base + k if exact else base, code, False)

    def _plpgsql(
        self,
        unit: Unit,
        kind: str,
        fn: dict[str, Any],
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
        tree = _compiled(kind, fn, source, code)
        if isinstance(tree, ParseError):
            reason = str(tree.args[0]) if tree.args else str(tree)
            # The grammar's refusal is Postgres's too; any other is what lockdocs lacks.
            code_ = "LD709" if reason.startswith("syntax error") else "LD712"
            self.unread(unit, base, base + len(code), base, code_, reason, fn_site)
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
            tree = pgparse.parse_json(sql)
        except ParseError as exc:
            at = base + line_start if exact else base
            line_end = code.find("\n", line_start)
            self.unread(
                unit,
                at,
                base + (line_end if exact and line_end != -1 else len(code)),
                at,
                "LD712",
                str(exc.args[0]) if exc.args else str(exc),
                fn_site,
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


def _compiled(kind: str, fn: dict[str, Any], source: str, code: str) -> Any:
    """The PL/pgSQL tree of `source`; when the reader refuses it, of the same function with
    stand-in types (text, then record, for a single value). Else the refusal that says most:
    a syntax error as it stands, or what is left once the types are stood in."""
    try:
        return pgparse.parse_plpgsql_json(source)
    except ParseError as exc:
        refusal = exc
    if _syntax(refusal):
        return refusal  # no type makes a syntax error go away
    for n, scalar in enumerate(("text", "record")):
        again = stood_in(kind, fn, code, scalar)
        if again is None:
            break
        try:
            return pgparse.parse_plpgsql_json(again)
        except ParseError as exc:
            if n == 0 or _syntax(exc):
                refusal = exc
            if _syntax(exc):
                break
    return refusal


def _syntax(exc: ParseError) -> bool:
    return str(exc.args[0] if exc.args else "").startswith("syntax error")
