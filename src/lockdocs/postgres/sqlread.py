"""What a logged statement locks, read with PostgreSQL's own parser (pglast), never by pattern.

`read()` finds the advisory lock calls (their function, scope, mode and key expression) and the
row or table locks (the table the statement names and the strength it asks for). `masked()`
replaces the literals with $n, so statements that differ only in their values compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pglast import ast, visitors
from pglast.parser import normalize

from lockdocs import pghash, pgparse
from lockdocs.schema.vocabulary import TABLE_MODES

_STRENGTH = {1: "for key share", 2: "for share", 3: "for no key update", 4: "for update"}


@dataclass(frozen=True)
class KeyPart:
    """One argument of pg_advisory_*: a number, or hashtext/hashtextextended of a text."""

    value: int | None = None  # when it is a literal (or computable from literal text)
    function: str | None = None  # hashtext | hashtextextended
    text: str | None = None  # the whole text, when literal
    prefix: str | None = None  # the literal text the expression starts with
    seed: int = 0


@dataclass(frozen=True)
class AdvisoryCall:
    function: str
    scope: str  # transaction | session
    mode: str  # shared | exclusive
    parts: tuple[KeyPart, ...]
    tries: bool = False

    @property
    def tag(self) -> tuple[int, int, int] | None:
        """The lock tag, when every part is computable."""
        values = [p.value for p in self.parts]
        if any(v is None for v in values):
            return None
        try:
            if len(values) == 1:
                return pghash.bigint_to_tag(int(values[0] or 0))
            if len(values) == 2:
                return pghash.int4pair_to_tag(int(values[0] or 0), int(values[1] or 0))
        except ValueError:
            return None
        return None


@dataclass(frozen=True)
class RelationLock:
    schema: str | None
    table: str
    mode: str  # a row mode, or a table mode for LOCK TABLE
    kind: str  # row | table | foreign key (an insert or update whose check locks a parent row)
    how: str  # what in the statement says so


@dataclass(frozen=True)
class Reading:
    advisory: tuple[AdvisoryCall, ...] = ()
    relations: tuple[RelationLock, ...] = ()
    error: str = ""  # the statement did not parse (cut off in the log, say)
    notes: tuple[str, ...] = field(default=())


def _const(node: Any) -> object:
    if isinstance(node, ast.TypeCast):
        return _const(node.arg)
    if isinstance(node, ast.A_Const) and not node.isnull:
        v = node.val
        if isinstance(v, ast.Integer):
            return int(v.ival or 0)
        if isinstance(v, ast.String):
            return str(v.sval)
        if isinstance(v, ast.Float):
            try:
                return int(str(v.fval))
            except ValueError:
                return None
    if isinstance(node, ast.A_Expr) and node.lexpr is None and _op(node) == "-":
        inner = _const(node.rexpr)
        return -inner if isinstance(inner, int) else None
    return None


def _op(node: Any) -> str:
    names = getattr(node, "name", None) or ()
    return str(names[-1].sval) if names else ""


def _text(node: Any) -> tuple[str | None, str | None]:
    """(whole literal text, literal prefix) of a text expression."""

    c = _const(node)
    if isinstance(c, str):
        return c, c
    if isinstance(node, ast.A_Expr) and _op(node) == "||":
        left_all, left_prefix = _text(node.lexpr)
        right_all, _ = _text(node.rexpr)
        if left_all is not None and right_all is not None:
            return left_all + right_all, left_all + right_all
        return None, left_all if left_all is not None else left_prefix
    if isinstance(node, ast.FuncCall) and _name(node) == "concat" and node.args:
        whole: list[str] = []
        for arg in node.args:
            text, _ = _text(arg)
            if text is None:
                return None, "".join(whole) or None
            whole.append(text)
        return "".join(whole), "".join(whole)
    return None, None


def _name(node: Any) -> str:
    return str(node.funcname[-1].sval) if node.funcname else ""


def _part(node: Any) -> KeyPart:
    c = _const(node)
    if isinstance(c, int):
        return KeyPart(value=c)
    if isinstance(node, ast.FuncCall) and _name(node) in ("hashtext", "hashtextextended"):
        fn = _name(node)
        args = node.args or ()
        text, prefix = _text(args[0]) if args else (None, None)
        seed = _const(args[1]) if len(args) > 1 else 0
        seed = seed if isinstance(seed, int) else 0
        value = None
        if text is not None and "\x00" not in text:
            value = (
                pghash.hashtext(text) if fn == "hashtext" else pghash.hashtextextended(text, seed)
            )
        return KeyPart(value, fn, text, prefix, seed)
    return KeyPart()


def _advisory(node: Any) -> AdvisoryCall | None:
    name = _name(node)
    if not name.startswith(("pg_advisory_", "pg_try_advisory_")) or "unlock" in name:
        return None
    tries = name.startswith("pg_try_")
    return AdvisoryCall(
        name,
        "transaction" if "_xact_" in name else "session",
        "shared" if name.endswith("_shared") else "exclusive",
        tuple(_part(a) for a in node.args or ()),
        tries,
    )


def read(statement: str) -> Reading:
    """What one logged statement locks; a long one is read on pgparse's deep stack, since the
    visitor below walks the tree recursively."""
    try:
        if len(statement) < pgparse.SHORT:
            return _read(statement)
        return pgparse.deep(_read, statement)
    except pgparse.ParseError as exc:
        return Reading(error=f"the statement does not parse: {exc}")


def _read(statement: str) -> Reading:
    stmts = pgparse.parse(statement)
    calls: list[AdvisoryCall] = []
    relations: list[RelationLock] = []

    class _Calls(visitors.Visitor):
        def visit_FuncCall(self, ancestors: Any, node: Any) -> None:
            call = _advisory(node)
            if call is not None:
                calls.append(call)

    for raw in stmts:
        _Calls()(raw)
        s = raw.stmt
        if isinstance(s, ast.SelectStmt) and s.lockingClause:
            strength = max(int(c.strength) for c in s.lockingClause)
            for rv in _ranges(s.fromClause or ()):
                relations.append(
                    RelationLock(
                        rv.schemaname,
                        rv.relname,
                        _STRENGTH.get(strength, "for update"),
                        "row",
                        f"SELECT ... {_STRENGTH.get(strength, '?').upper()}",
                    )
                )
        elif isinstance(s, ast.UpdateStmt) and s.relation is not None:
            relations.append(
                RelationLock(
                    s.relation.schemaname,
                    s.relation.relname or "",
                    "for no key update",
                    "row",
                    "UPDATE (FOR NO KEY UPDATE, or FOR UPDATE when it changes a key column)",
                )
            )
        elif isinstance(s, ast.DeleteStmt) and s.relation is not None:
            relations.append(
                RelationLock(
                    s.relation.schemaname, s.relation.relname or "", "for update", "row", "DELETE"
                )
            )
        elif isinstance(s, ast.InsertStmt) and s.relation is not None:
            relations.append(
                RelationLock(
                    s.relation.schemaname,
                    s.relation.relname or "",
                    "for key share",
                    "foreign key",
                    "INSERT (its foreign-key checks lock the referenced rows FOR KEY SHARE)",
                )
            )
        elif isinstance(s, ast.LockStmt):
            n = int(s.mode or 0)
            mode = TABLE_MODES[n - 1] if 0 < n <= len(TABLE_MODES) else ""
            for rv in s.relations or ():
                if isinstance(rv, ast.RangeVar) and rv.relname:
                    relations.append(
                        RelationLock(rv.schemaname, rv.relname, mode, "table", "LOCK TABLE")
                    )
    return Reading(tuple(calls), tuple(relations))


def _ranges(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, ast.RangeVar) and item.relname:
            out.append(item)
        elif isinstance(item, ast.JoinExpr):
            out.extend(_ranges((item.larg, item.rarg)))
    return out


def masked(statement: str) -> str:
    """The statement with its literals replaced by $1, $2, ... (pg_query's normalizer) and its
    layout on one line; a statement that does not parse (cut off in the log) is returned with
    its layout flattened only."""

    try:
        # With every literal now a $n, splitting on white space cannot cut a string apart.
        text = str(
            normalize(statement)
            if len(statement) < pgparse.SHORT
            else pgparse.deep(normalize, statement)
        )
        return " ".join(text.split())
    except pgparse.ParseError:
        return " ".join(statement.split())
