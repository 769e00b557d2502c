"""What a logged statement locks, read with PostgreSQL's own parser (pglast), never by pattern.

`statements(text)` parses a logged query string (one statement or several sent as one) into
`Statement`s: its transaction control (BEGIN, COMMIT, SAVEPOINT, ...), the locks its tree
takes as the SQL scan finds them (`scan.tree.Walker`: locking clauses with OF, NOWAIT and SKIP
LOCKED, the implicit row locks of UPDATE, DELETE and upserts, INSERTs for the foreign keys
`references:` declares, LOCK TABLE and advisory calls) plus the table locks of DDL, and the
functions it calls. An advisory call keeps its key's argument nodes, so `advisory(spec,
params)` computes the key from the statement's literals and the parameters the log gives for
an extended-protocol execution ($1 = '...'), with Postgres's exact hashes.

`read()` is what `explain` uses: one statement's relations and advisory calls, flattened.
`masked()` replaces the literals with $n, so statements that differ only in their values
compare equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pglast.parser import normalize

from lockdocs import pghash, pgparse
from lockdocs.scan.keyshape import func_name, unwrap
from lockdocs.scan.tree import ADVISORY, Walker
from lockdocs.schema.vocabulary import TABLE_MODES

Node = dict[str, Any]
MAX_KEY_TEXT = 1 << 20  # a key text longer than this is not hashed (nothing declares one)
# The nesting (of the parse tree's objects and lists) of an advisory key past which it is not
# computed: a key is read, templated and computed by recursion on the calling thread, where a
# few thousand levels would overflow; a real one (hashtextextended('a:' || $1 || ':' || $2))
# nests about 20.
MAX_KEY_DEPTH = 200


class KeyPart(NamedTuple):
    """One argument of pg_advisory_*: a number, or hashtext/hashtextextended of a text. A
    named tuple: one is made per key a log shows."""

    value: int | None = None  # when it is a literal (or computable from literal text)
    function: str | None = None  # hashtext | hashtextextended
    text: str | None = None  # the whole text, when literal
    prefix: str | None = None  # the literal text the expression starts with
    seed: int = 0


class AdvisoryCall(NamedTuple):
    """One pg_advisory_* call with its key (a named tuple: one per key a log shows)."""

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
        except (ValueError, OverflowError):
            return None
        return None


@dataclass(frozen=True)
class LockSpec:
    """One lock a statement takes, as its text says (the key of an advisory lock as nodes)."""

    kind: str  # row | table | advisory | write (an UPDATE/INSERT whose row lock depends on keys)
    table: str | None = None  # as written: schema.table or table
    mode: str = ""
    option: str | None = None  # nowait | skip locked
    of: tuple[str, ...] = ()
    how: str = ""  # what in the statement says so
    implicit: str | None = None  # update | delete | upsert | insert
    columns: tuple[str, ...] = ()  # the columns an UPDATE sets or an INSERT fills
    order_by: tuple[str, ...] = ()  # a locking SELECT's ORDER BY columns
    function: str | None = None  # advisory: as called
    scope: str | None = None
    try_: bool = False
    args: tuple[Any, ...] = ()  # advisory: the key's argument nodes
    offset: int = 0  # where in the text


@dataclass(frozen=True)
class Statement:
    """One statement of a logged query string."""

    kind: str  # the parse node: SelectStmt, TransactionStmt, ...
    control: str | None = None  # begin | commit | rollback | savepoint | release | rollback_to
    # | prepare | commit_prepared | rollback_prepared, for transaction control
    savepoint: str | None = None
    chain: bool = False  # COMMIT AND CHAIN / ROLLBACK AND CHAIN
    locks: tuple[LockSpec, ...] = ()
    calls: tuple[str, ...] = ()  # the functions it calls (not the advisory ones)
    literal_keys: bool = False  # an advisory key reads a literal of the text
    start: int = 0
    end: int = 0


_CONTROL = {
    "TRANS_STMT_BEGIN": "begin",
    "TRANS_STMT_START": "begin",
    "TRANS_STMT_COMMIT": "commit",
    "TRANS_STMT_ROLLBACK": "rollback",
    "TRANS_STMT_SAVEPOINT": "savepoint",
    "TRANS_STMT_RELEASE": "release",
    "TRANS_STMT_ROLLBACK_TO": "rollback_to",
    "TRANS_STMT_PREPARE": "prepare",
    "TRANS_STMT_COMMIT_PREPARED": "commit_prepared",
    "TRANS_STMT_ROLLBACK_PREPARED": "rollback_prepared",
}

_STRENGTH_WORDS = {
    "for key share": "FOR KEY SHARE",
    "for share": "FOR SHARE",
    "for no key update": "FOR NO KEY UPDATE",
    "for update": "FOR UPDATE",
}

# The table lock DDL takes on the table it names, as PostgreSQL 15 takes it (tested on the
# server in tests/test_pg_observe.py): node -> (mode, the words for it).
_DDL = {
    "TruncateStmt": ("access exclusive", "TRUNCATE"),
    "RefreshMatViewStmt": ("access exclusive", "REFRESH MATERIALIZED VIEW"),
    "ClusterStmt": ("access exclusive", "CLUSTER"),
    "CreateTrigStmt": ("share row exclusive", "CREATE TRIGGER"),
}
_ALTER_WEAK = {
    "AT_ValidateConstraint": "share update exclusive",
    "AT_SetStatistics": "share update exclusive",
    "AT_ClusterOn": "share update exclusive",
    "AT_DropCluster": "share update exclusive",
    "AT_SetRelOptions": "share update exclusive",
    "AT_ResetRelOptions": "share update exclusive",
}


def _rel(node: Any) -> str | None:
    kind, body = unwrap(node)
    body = body if kind == "RangeVar" else node if isinstance(node, dict) else {}
    name = body.get("relname")
    if not name:
        return None
    schema = body.get("schemaname")
    return f"{schema}.{name}" if schema else str(name)


def _ddl(kind: str, body: Node) -> list[LockSpec]:
    """The table locks of one DDL statement (none for what lockdocs does not know)."""
    out: list[LockSpec] = []
    if kind in _DDL:
        mode, words = _DDL[kind]
        if kind == "RefreshMatViewStmt" and body.get("concurrent"):
            mode, words = "exclusive", "REFRESH MATERIALIZED VIEW CONCURRENTLY"
        rels = body.get("relations") or [body.get("relation")]
        for r in rels:
            name = _rel(r)
            if name:
                out.append(LockSpec("table", name, mode, how=words))
    elif kind == "AlterTableStmt" and body.get("objtype") == "OBJECT_TABLE":
        name = _rel(body.get("relation"))
        subtypes = [unwrap(c)[1].get("subtype", "") for c in body.get("cmds", [])]
        weak = [_ALTER_WEAK.get(s) for s in subtypes]
        if name and all(weak):
            out.append(LockSpec("table", name, "share update exclusive", how="ALTER TABLE"))
        elif name:
            out.append(LockSpec("table", name, "access exclusive", how="ALTER TABLE"))
    elif kind == "IndexStmt":
        name = _rel(body.get("relation"))
        if name:
            concurrent = bool(body.get("concurrent"))
            out.append(
                LockSpec(
                    "table",
                    name,
                    "share update exclusive" if concurrent else "share",
                    how="CREATE INDEX CONCURRENTLY" if concurrent else "CREATE INDEX",
                )
            )
    elif kind == "DropStmt" and body.get("removeType") == "OBJECT_TABLE":
        for obj in body.get("objects", []):
            items = unwrap(obj)[1].get("items", [])
            names = [str(unwrap(i)[1].get("sval", "")) for i in items]
            if names:
                out.append(LockSpec("table", ".".join(names), "access exclusive", how="DROP TABLE"))
    return out


def _walk(root: Any) -> tuple[dict[int, Node], list[str], dict[int, tuple[str, ...]], bool]:
    """One pass over a statement's tree: the advisory calls by location, the other functions
    called, each locking SELECT's ORDER BY columns (by the location of its FROM tables), and
    whether an advisory call's arguments hold a literal. Iterative: trees can be deep."""
    advisory: dict[int, Node] = {}
    calls: list[str] = []
    order: dict[int, tuple[str, ...]] = {}
    literal = False
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, in_key = stack.pop()
        if isinstance(node, list):
            stack.extend((x, in_key) for x in node)
            continue
        if not isinstance(node, dict):
            continue
        if len(node) == 1:
            ((kind, body),) = node.items()
            if isinstance(body, dict) and kind[:1].isupper():
                if kind == "FuncCall":
                    name = func_name(body)
                    if name.removeprefix("pg_catalog.") in ADVISORY:
                        advisory[int(body.get("location", -1))] = body
                        stack.extend((a, True) for a in body.get("args", []))
                        continue
                    calls.append(name)
                elif kind == "A_Const" and in_key:
                    literal = True
                elif kind == "SelectStmt" and body.get("lockingClause") and body.get("sortClause"):
                    cols = _order_columns(body["sortClause"])
                    for item in body.get("fromClause", []):
                        for loc in _range_locations(item):
                            order[loc] = cols
                stack.extend((v, in_key) for v in body.values() if isinstance(v, dict | list))
                continue
        stack.extend((v, in_key) for v in node.values() if isinstance(v, dict | list))
    return advisory, calls, order, literal


def _order_columns(sort: list[Any]) -> tuple[str, ...]:
    out = []
    for s in sort:
        by = unwrap(s)[1]
        kind, ref = unwrap(by.get("node"))
        if kind != "ColumnRef":
            return ()
        fields = [unwrap(f)[1].get("sval") for f in ref.get("fields", [])]
        if not fields or not fields[-1]:
            return ()
        desc = by.get("sortby_dir") == "SORTBY_DESC"
        out.append(f"{'descending' if desc else 'ascending'} {fields[-1]}")
    return tuple(out)


def _range_locations(item: Any) -> list[int]:
    kind, body = unwrap(item)
    if kind == "RangeVar":
        return [int(body.get("location", -1))]
    if kind == "JoinExpr":
        return _range_locations(body.get("larg")) + _range_locations(body.get("rarg"))
    return []


def _how(raw: Any) -> str:
    if raw.kind == "advisory":
        return f"{raw.function}(...)"
    if raw.kind == "table":
        return "LOCK TABLE"
    if raw.implicit == "delete":
        return "DELETE"
    if raw.implicit in ("update", "upsert"):
        return "UPDATE" if raw.implicit == "update" else "INSERT ... ON CONFLICT DO UPDATE"
    if raw.implicit == "insert":
        return "INSERT"
    return f"SELECT ... {_STRENGTH_WORDS.get(raw.mode, raw.mode.upper())}"


def _statement(stmt: Node, start: int, end: int) -> Statement:
    kind, body = unwrap(stmt)
    if kind == "TransactionStmt":
        return Statement(
            kind,
            control=_CONTROL.get(str(body.get("kind"))),
            savepoint=body.get("savepoint_name"),
            chain=bool(body.get("chain")),
            start=start,
            end=end,
        )
    advisory, calls, order, literal = _walk(stmt)
    walker = Walker(lambda offset: offset)
    walker.node(stmt)
    locks: list[LockSpec] = []
    for raw in walker.out:
        args: tuple[Any, ...] = ()
        if raw.kind == "advisory":
            args = tuple((advisory.get(raw.offset) or {}).get("args", ()))
            if _deeper(args, MAX_KEY_DEPTH):
                # its key is computed (and templated) on the calling thread, per execution
                raise pgparse.TooDeep(
                    f"its advisory key nests deeper than {MAX_KEY_DEPTH} levels, too deep for "
                    "lockdocs to compute",
                    raw.offset,
                )
        locks.append(
            LockSpec(
                raw.kind,
                raw.table,
                raw.mode,
                raw.option,
                raw.of,
                _how(raw),
                raw.implicit,
                raw.columns,
                order.get(raw.offset, ()),
                raw.function,
                raw.scope,
                raw.try_,
                args,
                raw.offset,
            )
        )
    locks.extend(_ddl(kind, body))
    return Statement(kind, None, None, False, tuple(locks), tuple(calls), literal, start, end)


def unread(exc: pgparse.ParseError) -> str:
    """Why a statement is not read, in words: Postgres's grammar refused it, or it nests
    deeper than lockdocs walks (pgparse.TooDeep, the grammar having accepted it)."""
    if isinstance(exc, pgparse.TooDeep):
        return str(exc.args[0]) if exc.args else str(exc)
    return f"the statement does not parse: {exc}"


def reads_parameters(spec: LockSpec) -> bool:
    """Whether an advisory spec's key reads an execution's parameters ($n)."""
    stack: list[object] = list(spec.args)
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "ParamRef" in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _deeper(node: object, limit: int) -> bool:
    """Whether a parse tree nests deeper than `limit` (measured without recursion)."""
    stack: list[tuple[object, int]] = [(node, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return False


def statements(text: str) -> tuple[Statement, ...]:
    """The statements of a logged query string; raises pgparse.ParseError when it does not
    parse (cut off in the log, or not SQL). A long one is read on pgparse's deep stack."""
    if len(text) < pgparse.SHORT:
        return _statements(text)
    return pgparse.deep(_statements, text)


def _statements(text: str) -> tuple[Statement, ...]:
    tree = pgparse.parse_json(text)
    out = []
    for raw in tree.get("stmts", []):
        start = int(raw.get("stmt_location", 0))
        length = raw.get("stmt_len")
        end = start + int(length) if length else -1
        out.append(_statement(raw.get("stmt", {}), start, end))
    return tuple(out)


# --- advisory keys ---------------------------------------------------------------------------

_INT_TYPES = frozenset({"int2", "int4", "int8", "integer", "bigint", "smallint", "oid"})


def _type_name(node: Node) -> str:
    names = [unwrap(n)[1].get("sval", "") for n in (node.get("typeName") or {}).get("names", [])]
    return str(names[-1]) if names else ""


class Env(NamedTuple):
    """What a key expression reads besides its text: an execution's parameters ($n, as the
    log gives them) and, for a shape read once, the literals of this text (`Literal` nodes,
    by their index among the text's constants)."""

    params: Sequence[str | None] = ()
    literals: Sequence[object] = ()


def _value(node: Any, env: Env) -> object:
    """A literal, a parameter (its logged text) or a cast of one; None when not known."""
    kind, body = unwrap(node)
    if kind == "TypeCast":
        inner = _value(body.get("arg"), env)
        if _type_name(body) in _INT_TYPES:
            return _as_int(inner)
        return inner
    if kind == "A_Const" and not body.get("isnull"):
        if "ival" in body:
            return int(body["ival"].get("ival", 0))
        if "sval" in body:
            return str(body["sval"].get("sval", ""))
        if "fval" in body:
            return _as_int(str(body["fval"].get("fval", "")))
        return None
    if kind == "ParamRef":
        n = int(body.get("number", 0))
        return env.params[n - 1] if 0 < n <= len(env.params) else None
    if kind == LITERAL:
        i = int(body.get("index", -1))
        value = env.literals[i] if 0 <= i < len(env.literals) else None
        if body.get("negate"):
            number = _as_int(value)
            return -number if number is not None else None
        return value
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and "lexpr" not in body:
        op = [unwrap(n)[1].get("sval") for n in body.get("name", [])]
        inner = _as_int(_value(body.get("rexpr"), env))
        return -inner if op == ["-"] and inner is not None else None
    return None


def _as_int(v: object) -> int | None:
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        digits = s.lstrip("+-")
        if digits and len(digits) <= 20 and digits.isascii() and digits.isdigit():
            return int(s)
    return None


def advisory(
    spec: LockSpec, params: Sequence[str | None] = (), literals: Sequence[object] = ()
) -> AdvisoryCall:
    """An advisory lock spec with its key computed from literals and parameters."""
    name = (spec.function or "").removeprefix("pg_catalog.")
    env = Env(params, literals)
    return AdvisoryCall(
        name, spec.scope or "session", spec.mode or "exclusive", _key(spec)(env), spec.try_
    )


# A key's expression is read once per spec into a function of the environment: an execution
# then only computes, never walks the tree again (a log runs one statement a million times).
_KEYS: dict[int, tuple[LockSpec, Callable[[Env], tuple[KeyPart, ...]]]] = {}


def _key(spec: LockSpec) -> Callable[[Env], tuple[KeyPart, ...]]:
    hit = _KEYS.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    parts = [_compile_part(a) for a in spec.args]

    def key(env: Env) -> tuple[KeyPart, ...]:
        return tuple(p(env) for p in parts)

    if len(_KEYS) > 10_000:
        _KEYS.clear()
    _KEYS[id(spec)] = (spec, key)
    return key


def _compile_value(node: Any) -> Callable[[Env], object]:
    kind, body = unwrap(node)
    if kind == "TypeCast":
        inner = _compile_value(body.get("arg"))
        if _type_name(body) in _INT_TYPES:
            return lambda env: _as_int(inner(env))
        return inner
    if kind == "A_Const":
        value = _value(node, Env())
        return lambda env: value
    if kind == "ParamRef":
        n = int(body.get("number", 0))
        return lambda env: env.params[n - 1] if 0 < n <= len(env.params) else None
    if kind == LITERAL or (
        kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and "lexpr" not in body
    ):
        return lambda env: _value(node, env)
    return lambda env: None


def _compile_text(node: Any) -> Callable[[Env], tuple[str | None, str | None]]:
    kind, body = unwrap(node)
    if kind == "A_Expr" and [unwrap(n)[1].get("sval") for n in body.get("name", [])] == ["||"]:
        left, right = _compile_text(body.get("lexpr")), _compile_text(body.get("rexpr"))

        def concat2(env: Env) -> tuple[str | None, str | None]:
            whole, prefix = left(env)
            tail, _ = right(env)
            if whole is not None and tail is not None:
                return whole + tail, whole + tail
            return None, whole if whole is not None else prefix

        return concat2
    if kind == "FuncCall" and func_name(body) in ("concat", "pg_catalog.concat"):
        pieces = [_compile_text(a) for a in body.get("args", [])]

        def concat(env: Env) -> tuple[str | None, str | None]:
            whole: list[str] = []
            for piece in pieces:
                t, _ = piece(env)
                if t is None:
                    return None, "".join(whole) or None
                whole.append(t)
            return "".join(whole), "".join(whole)

        return concat
    value = _compile_value(node)

    def plain(env: Env) -> tuple[str | None, str | None]:
        v = value(env)
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v), str(v)
        if isinstance(v, str):
            return v, v
        return None, None

    return plain


def _compile_part(node: Any) -> Callable[[Env], KeyPart]:
    kind, body = unwrap(node)
    while kind == "TypeCast":
        cast_kind, cast_body = unwrap(body.get("arg"))
        if cast_kind != "FuncCall":
            break
        kind, body = cast_kind, cast_body
    fn = func_name(body).removeprefix("pg_catalog.") if kind == "FuncCall" else ""
    if fn in ("hashtext", "hashtextextended"):
        args = body.get("args", [])
        text_of = _compile_text(args[0]) if args else (lambda env: (None, None))
        seed_of = _compile_value(args[1]) if len(args) > 1 else (lambda env: 0)

        def hashed(env: Env) -> KeyPart:
            text, prefix = text_of(env)
            seed = _as_int(seed_of(env))
            value = None
            if text is not None and "\x00" not in text and len(text) <= MAX_KEY_TEXT:
                if fn == "hashtext":
                    value = pghash.hashtext(text)
                elif seed is not None:
                    value = pghash.hashtextextended(text, seed)
            return KeyPart(value, fn, text, prefix, seed or 0)

        return hashed
    value_of = _compile_value(node)

    def number(env: Env) -> KeyPart:
        n = _as_int(value_of(env))
        return KeyPart(value=n if n is not None and -(1 << 63) <= n < (1 << 63) else None)

    return number


# --- a shape's key literals, read by the lexer --------------------------------------------

LITERAL = "Literal"  # a node a shape template puts where a key's literal was
_CONSTANTS = frozenset({"SCONST", "ICONST", "FCONST"})


def literal_tokens(text: str, tokens: Sequence[tuple[str, int, int]]) -> list[object] | None:
    """The constants of a text in order, as values: a plain quoted string, an integer, a
    number. None when one is written another way (E'...', $$...$$, U&'...', a bit string):
    the text is then parsed whole."""
    out: list[object] = []
    for name, start, end in tokens:
        if name not in _CONSTANTS:
            if name in ("BCONST", "XCONST", "USCONST"):
                return None
            continue
        raw = text[start:end]
        if name == "SCONST":
            if not (raw.startswith("'") and raw.endswith("'")):
                return None
            out.append(raw[1:-1].replace("''", "'"))
        elif name == "ICONST":
            out.append(_as_int(raw))
        else:
            out.append(raw)
    return out


def template(spec: LockSpec, tokens: Sequence[tuple[str, int, int]], text: str) -> LockSpec | None:
    """The spec with each literal of its key replaced by a `Literal` node: its index among
    the text's constants (and whether a minus sign folded into it). None when a literal is
    not one the lexer shows as a plain constant."""
    starts = [start for name, start, _ in tokens if name in _CONSTANTS]
    index = {start: i for i, start in enumerate(starts)}
    ok = True

    def swap(node: Any) -> Any:
        nonlocal ok
        if isinstance(node, list):
            return [swap(x) for x in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1 and "A_Const" in node and isinstance(node["A_Const"], dict):
            loc = int(node["A_Const"].get("location", -1))
            negate = False
            if loc not in index and 0 <= loc < len(text) and text[loc] == "-":
                at = loc + 1
                while at < len(text) and text[at] in " \t\r\n":
                    at += 1
                loc, negate = at, True
            if loc not in index:
                ok = False
                return node
            return {LITERAL: {"index": index[loc], "negate": negate}}
        return {k: swap(v) for k, v in node.items()}

    args = tuple(swap(a) for a in spec.args)
    if not ok:
        return None
    return LockSpec(**{**spec.__dict__, "args": args})


# --- explain's reading of one statement --------------------------------------------------


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
    statements: int = 0  # how many statements the text holds


def _split(table: str) -> tuple[str | None, str]:
    schema, _, name = table.rpartition(".")
    return schema or None, name


def _relation(spec: LockSpec) -> RelationLock | None:
    if spec.table is None or spec.kind == "advisory":
        return None
    schema, name = _split(spec.table)
    if spec.implicit in ("update", "upsert"):
        return RelationLock(
            schema,
            name,
            "for no key update",
            "row",
            "UPDATE (FOR NO KEY UPDATE, or FOR UPDATE when it changes a key column)",
        )
    if spec.implicit == "insert":
        return RelationLock(
            schema,
            name,
            "for key share",
            "foreign key",
            "INSERT (its foreign-key checks lock the referenced rows FOR KEY SHARE)",
        )
    if spec.kind == "table":
        mode = spec.mode if spec.mode in TABLE_MODES else ""
        return RelationLock(schema, name, mode, "table", spec.how)
    return RelationLock(schema, name, spec.mode, "row", spec.how)


def read(statement: str) -> Reading:
    """What one logged statement locks (its literals as the keys' values)."""
    try:
        stmts = statements(statement)
    except pgparse.ParseError as exc:
        return Reading(error=unread(exc))
    calls: list[AdvisoryCall] = []
    relations: list[RelationLock] = []
    for s in stmts:
        for spec in s.locks:
            if spec.kind == "advisory":
                calls.append(advisory(spec))
                continue
            rel = _relation(spec)
            if rel is not None and rel not in relations:
                relations.append(rel)
    return Reading(tuple(calls), tuple(relations), statements=len(stmts))


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
