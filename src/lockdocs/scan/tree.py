"""The locks in one parse tree (libpg_query's JSON form, as pglast returns it).

Row locks follow Postgres's rules for locking clauses: a clause without OF locks every table
in its SELECT's FROM, sub-selects in FROM included, but not the WITH queries it reads (they
need clauses of their own); OF names tables by alias. UPDATE, DELETE and INSERT ... ON
CONFLICT DO UPDATE lock their target rows implicitly; an INSERT is kept as a write, for the
FOR KEY SHARE a declared foreign key gives it. Advisory locks are the pg_advisory_* calls
anywhere in the tree, and LOCK TABLE takes table locks. Offsets are characters of the text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockdocs.records import record
from lockdocs.scan.found import KeyShape
from lockdocs.scan.keyshape import func_name, shape_of_args, unwrap
from lockdocs.schema.vocabulary import TABLE_MODES  # weakest first: lock level 1 to 8

Node = dict[str, Any]

ROW_STRENGTH = {
    "LCS_FORKEYSHARE": "for key share",
    "LCS_FORSHARE": "for share",
    "LCS_FORNOKEYUPDATE": "for no key update",
    "LCS_FORUPDATE": "for update",
}
WAIT = {"LockWaitSkip": "skip locked", "LockWaitError": "nowait"}


def _advisory() -> dict[str, tuple[str, str, bool]]:
    out = {}
    for try_ in (False, True):
        for xact in (False, True):
            for shared in (False, True):
                name = (
                    "pg_"
                    + ("try_" if try_ else "")
                    + "advisory_"
                    + ("xact_" if xact else "")
                    + "lock"
                    + ("_shared" if shared else "")
                )
                out[name] = (
                    "shared" if shared else "exclusive",
                    "transaction" if xact else "session",
                    try_,
                )
    return out


ADVISORY = _advisory()


@record
class Raw:
    """A lock before its offsets are mapped to the file."""

    offset: int
    kind: str  # row | table | advisory | write
    mode: str = ""
    option: str | None = None
    of: tuple[str, ...] = ()
    table: str | None = None
    function: str | None = None
    scope: str | None = None
    try_: bool = False
    call: int | None = None  # where the advisory call starts (for the key as written)
    shape: KeyShape | None = None
    implicit: str | None = None
    columns: tuple[str, ...] = ()


@record
class _Clause:
    mode: str
    option: str | None
    names: tuple[str, ...] | None  # OF list; None: every table
    of: tuple[str, ...]


def _relname(rv: Node) -> str:
    name = str(rv.get("relname", ""))
    schema = rv.get("schemaname")
    return f"{schema}.{name}" if schema else name


def _strings(nodes: list[Any]) -> tuple[str, ...]:
    return tuple(str(unwrap(n)[1].get("sval", "")) for n in nodes)


class Walker:
    """Collects `Raw` locks and unique keys of one statement; `loc` maps a byte location of
    the parsed text to a character offset."""

    def __init__(self, loc: Callable[[int], int]) -> None:
        self.loc = loc
        self.out: list[Raw] = []
        self.keys: list[tuple[str, tuple[str, ...]]] = []

    # -- generic walk ---------------------------------------------------------------------------

    def node(self, n: Any, ctes: frozenset[str] = frozenset()) -> None:
        if isinstance(n, list):
            for x in n:
                self.node(x, ctes)
            return
        if not isinstance(n, dict):
            return
        if len(n) == 1:
            ((kind, body),) = n.items()
            if kind in _LEAVES:
                return
            if isinstance(body, dict) and kind[:1].isupper():
                handler = _HANDLERS.get(kind)
                if handler is not None:
                    handler(self, body, ctes)
                    return
                self.fields(body, ctes)
                return
        self.fields(n, ctes)

    def fields(self, body: Node, ctes: frozenset[str], skip: tuple[str, ...] = ()) -> None:
        for k, v in body.items():
            if k not in skip and isinstance(v, dict | list):
                self.node(v, ctes)

    def _with(self, body: Node, ctes: frozenset[str]) -> frozenset[str]:
        """Walk the WITH queries (each with its own clauses); return the names in scope."""
        with_clause = body.get("withClause") or {}
        items = [unwrap(c)[1] for c in with_clause.get("ctes", [])]
        scope = ctes | {str(c.get("ctename", "")) for c in items}
        for c in items:
            self.node(c.get("ctequery"), scope)
        return scope

    # -- SELECT and its locking clauses ---------------------------------------------------------

    def on_SelectStmt(
        self, sel: Node, ctes: frozenset[str], inherited: tuple[_Clause, ...] = ()
    ) -> None:
        ctes = self._with(sel, ctes)
        if sel.get("op", "SETOP_NONE") != "SETOP_NONE":
            for side in ("larg", "rarg"):
                if sel.get(side):
                    self.on_SelectStmt(sel[side], ctes, inherited)
            self.fields(sel, ctes, skip=("larg", "rarg", "withClause"))
            return
        clauses = list(inherited)
        for raw in sel.get("lockingClause", []):
            lc = unwrap(raw)[1]
            rels = tuple(str(unwrap(r)[1].get("relname", "")) for r in lc.get("lockedRels", []))
            clauses.append(
                _Clause(
                    ROW_STRENGTH.get(str(lc.get("strength")), "for update"),
                    WAIT.get(str(lc.get("waitPolicy"))),
                    rels or None,
                    rels,
                )
            )
        for item in sel.get("fromClause", []):
            self._from_item(item, ctes, tuple(clauses))
        self.fields(sel, ctes, skip=("fromClause", "lockingClause", "withClause"))

    def _from_item(self, item: Any, ctes: frozenset[str], clauses: tuple[_Clause, ...]) -> None:
        kind, body = unwrap(item)
        if kind == "RangeVar":
            alias = (body.get("alias") or {}).get("aliasname")
            ref = alias or str(body.get("relname", ""))
            name = _relname(body)
            if name in ctes:
                return  # a WITH query: locking clauses of the outer query do not reach it
            for c in clauses:
                if c.names is None or ref in c.names:
                    self.out.append(
                        Raw(
                            self.loc(int(body.get("location", 0))),
                            "row",
                            c.mode,
                            c.option,
                            c.of,
                            table=name,
                        )
                    )
        elif kind == "JoinExpr":
            for side in ("larg", "rarg"):
                self._from_item(body.get(side), ctes, clauses)
            self.fields(body, ctes, skip=("larg", "rarg"))
        elif kind == "RangeSubselect":
            alias = (body.get("alias") or {}).get("aliasname")
            passed = tuple(
                _Clause(c.mode, c.option, None, c.of)
                for c in clauses
                if c.names is None or alias in c.names
            )
            sub_kind, sub = unwrap(body.get("subquery"))
            if sub_kind == "SelectStmt":
                self.on_SelectStmt(sub, ctes, passed)
            else:
                self.node(body.get("subquery"), ctes)
        else:
            self.node(item, ctes)

    # -- writes ---------------------------------------------------------------------------------

    def _target(self, body: Node, implicit: str, mode: str, columns: tuple[str, ...]) -> None:
        rel = body.get("relation") or {}
        self.out.append(
            Raw(
                self.loc(int(rel.get("location", 0))),
                "write" if implicit in ("update", "upsert", "insert") else "row",
                mode,
                table=_relname(rel),
                implicit=implicit,
                columns=columns,
            )
        )

    @staticmethod
    def _set_columns(targets: list[Any]) -> tuple[str, ...]:
        return tuple(str(unwrap(t)[1].get("name", "")) for t in targets)

    def on_UpdateStmt(self, body: Node, ctes: frozenset[str]) -> None:
        scope = self._with(body, ctes)
        self._target(body, "update", "", self._set_columns(body.get("targetList", [])))
        self.fields(body, scope, skip=("relation", "withClause"))

    def on_DeleteStmt(self, body: Node, ctes: frozenset[str]) -> None:
        scope = self._with(body, ctes)
        self._target(body, "delete", "for update", ())
        self.fields(body, scope, skip=("relation", "withClause"))

    def on_InsertStmt(self, body: Node, ctes: frozenset[str]) -> None:
        scope = self._with(body, ctes)
        self._target(body, "insert", "", self._set_columns(body.get("cols", [])))
        conflict = body.get("onConflictClause") or {}
        if conflict.get("action") == "ONCONFLICT_UPDATE":
            self._target(body, "upsert", "", self._set_columns(conflict.get("targetList", [])))
        self.fields(body, scope, skip=("relation", "withClause"))

    # -- LOCK TABLE and advisory calls ----------------------------------------------------------

    def on_LockStmt(self, body: Node, ctes: frozenset[str]) -> None:
        level = int(body.get("mode", 8))
        mode = TABLE_MODES[min(max(level, 1), 8) - 1]
        for r in body.get("relations", []):
            rv = unwrap(r)[1]
            self.out.append(
                Raw(
                    self.loc(int(rv.get("location", 0))),
                    "table",
                    mode,
                    "nowait" if body.get("nowait") else None,
                    table=_relname(rv),
                )
            )

    def on_FuncCall(self, body: Node, ctes: frozenset[str]) -> None:
        name = func_name(body)
        short = name.removeprefix("pg_catalog.")
        if short in ADVISORY:
            mode, scope, try_ = ADVISORY[short]
            start = self.loc(int(body.get("location", 0)))
            self.out.append(
                Raw(
                    start,
                    "advisory",
                    mode,
                    function=name,
                    scope=scope,
                    try_=try_,
                    call=start,
                    shape=shape_of_args(body.get("args", [])),
                )
            )
        self.fields(body, ctes)

    # -- unique keys (for the strength of an UPDATE) ---------------------------------------------

    def _constraint(self, table: str, con: Node, column: str | None = None) -> None:
        if con.get("contype") not in ("CONSTR_PRIMARY", "CONSTR_UNIQUE"):
            return
        cols = _strings(con.get("keys", [])) or ((column,) if column else ())
        if cols:
            self.keys.append((table, cols))

    def on_CreateStmt(self, body: Node, ctes: frozenset[str]) -> None:
        table = _relname(body.get("relation") or {})
        for elt in body.get("tableElts", []):
            kind, e = unwrap(elt)
            if kind == "ColumnDef":
                for c in e.get("constraints", []):
                    self._constraint(table, unwrap(c)[1], str(e.get("colname", "")))
            elif kind == "Constraint":
                self._constraint(table, e)

    def on_AlterTableStmt(self, body: Node, ctes: frozenset[str]) -> None:
        table = _relname(body.get("relation") or {})
        for cmd in body.get("cmds", []):
            c = unwrap(cmd)[1]
            kind, d = unwrap(c.get("def"))
            if kind == "Constraint":
                self._constraint(table, d)
            elif kind == "ColumnDef":
                for con in d.get("constraints", []):
                    self._constraint(table, unwrap(con)[1], str(d.get("colname", "")))

    def on_IndexStmt(self, body: Node, ctes: frozenset[str]) -> None:
        if not body.get("unique") or body.get("whereClause"):
            return  # a partial index cannot back a foreign key, so it is no key
        cols = []
        for p in body.get("indexParams", []):
            elem = unwrap(p)[1]
            if "name" not in elem:
                return  # an expression index is no key either
            cols.append(str(elem["name"]))
        self.keys.append((_relname(body.get("relation") or {}), tuple(cols)))


# Nodes that hold no statement and no call: the walk does not go into them.
_LEAVES = frozenset(
    {"String", "A_Const", "ColumnRef", "ParamRef", "TypeName", "Alias", "SortBy", "A_Star"}
)
_HANDLERS = {name[3:]: getattr(Walker, name) for name in dir(Walker) if name.startswith("on_")}
