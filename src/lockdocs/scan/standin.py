"""A PL/pgSQL function again, with stand-in types, for the reader that knows no database.

pglast's PL/pgSQL parser compiles a body the way the server does, but against a catalog that
holds only the built-in types of pg_catalog: a variable of an enum or composite type of the
application counts as a record (so `SELECT a, b INTO v_state, r` is refused: "record variable
cannot be part of multiple-item INTO list"), an array of one as a record array ("PL/pgSQL
functions cannot accept type _record"), and a type in any other schema is not looked up at all
("LookupExplicitNamespace only supports pg_catalog and public"). Which lock a statement takes
never depends on those types, so when a body is refused it is read again with every parameter,
result and variable type stood in: `record` for a value whose fields the body reads (`v.id`),
`text` for any other value (then `record` for every value, if that still fails), `text[]` for
an array. Only the types change: the body keeps its lines, and the function its name (a label
of its parameters), so every position still maps to the file.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from pglast.parser import ParseError, scan

from lockdocs.scan.keyshape import unwrap

_STOPS = {"COLLATE", "NOT", "DEFAULT", "COLON_EQUALS", "ASCII_59"}
_SKIP = {"ALIAS", "CURSOR", "NO", "SCROLL"}
_KEEP = {"trigger", "event_trigger", "void"}
_TAG = "$lockdocs_body$"


def stood_in(kind: str, fn: dict[str, Any], code: str, scalar: str) -> str | None:
    """The CREATE FUNCTION (or the DO block, as a function) with stand-in types, `scalar`
    for a single value the body reads no field of; None when the body cannot be lexed."""
    try:
        tokens = scan(code)
    except ParseError:
        return None
    fielded = {
        code[a.start : a.end + 1].lower()
        for a, b in pairwise(tokens)
        if b.name == "ASCII_46" and b.start == a.end + 1
    }
    body = _declarations(code, tokens, scalar, fielded)
    if _TAG in body:
        return None
    head = "CREATE FUNCTION pg_temp.lockdocs_do() RETURNS void"
    if kind == "CreateFunctionStmt":
        head = _header(fn, scalar, fielded)
    return f"{head} LANGUAGE plpgsql AS {_TAG}{body}{_TAG}"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _type(tn: dict[str, Any], scalar: str) -> str:
    return "text[]" if tn.get("arrayBounds") else scalar


def _header(fn: dict[str, Any], scalar: str, fielded: set[str]) -> str:
    params: list[str] = []
    table: list[str] = []
    outs = 0
    for raw in fn.get("parameters", []):
        p = unwrap(raw)[1]
        mode = str(p.get("mode", "FUNC_PARAM_DEFAULT"))
        tn = p.get("argType") or {}
        name = _ident(str(p["name"])) if p.get("name") else ""
        one = "record" if str(p.get("name", "")).lower() in fielded else scalar
        if mode == "FUNC_PARAM_TABLE":
            table.append(f"{name} {_type(tn, one)}")
            continue
        word = {"FUNC_PARAM_OUT": "OUT", "FUNC_PARAM_INOUT": "INOUT"}.get(mode, "")
        if mode == "FUNC_PARAM_VARIADIC":
            word, kind = "VARIADIC", "text[]"
        else:
            kind = _type(tn, one)
        outs += word in ("OUT", "INOUT")
        params.append(" ".join(x for x in (word, name, kind) if x))
    # The function's own name, unqualified: it labels the parameters (`f.p_id`).
    own = str(unwrap((fn.get("funcname") or [{}])[-1])[1].get("sval", "lockdocs_f"))
    routine = "PROCEDURE" if fn.get("is_procedure") else "FUNCTION"
    head = f"CREATE {routine} pg_temp.{_ident(own)}("
    head += ", ".join(params) + ")"
    if fn.get("is_procedure"):
        return head
    rt = fn.get("returnType") or {}
    last = str(unwrap((rt.get("names") or [{}])[-1])[1].get("sval", "")) if rt else ""
    setof = "SETOF " if rt.get("setof") else ""
    if table:
        return f"{head} RETURNS TABLE({', '.join(table)})"
    if last in _KEEP and not setof:
        return f"{head} RETURNS {last}"
    result = "record" if outs > 1 else "text"
    return f"{head} RETURNS {setof}{result}"


def _declarations(code: str, tokens: list[Any], scalar: str, fielded: set[str]) -> str:
    """`code` with the type of every variable of its DECLARE sections stood in."""
    spans: list[tuple[int, int, str]] = []
    i, n = 0, len(tokens)
    while i < n:
        if tokens[i].name != "DECLARE":
            i += 1
            continue
        i += 1
        while i < n and tokens[i].name != "BEGIN_P":  # one declaration per turn
            if tokens[i].name in ("SQL_COMMENT", "C_COMMENT", "ASCII_59"):
                i += 1
                continue
            j = i + 1  # past the variable's name
            if j < n and tokens[j].name == "CONSTANT":
                j += 1
            end, depth = j, 0
            while end < n and (depth or tokens[end].name not in _STOPS):
                depth += {"ASCII_40": 1, "ASCII_41": -1}.get(tokens[end].name, 0)
                end += 1
            if j < end and tokens[j].name not in _SKIP and tokens[j].name != "BEGIN_P":
                var = code[tokens[i].start : tokens[i].end + 1].lower()
                new = _stand(code, tokens, j, end, "record" if var in fielded else scalar)
                spans.append((tokens[j].start, tokens[end - 1].end + 1, new))
            while end < n and tokens[end].name != "ASCII_59" and tokens[end].name != "BEGIN_P":
                end += 1  # past a default value
            i = end
    out, at = [], 0
    for a, b, new in spans:
        out += [code[at:a], new + "\n" * code.count("\n", a, b)]
        at = b
    out.append(code[at:])
    return "".join(out)


def _stand(code: str, tokens: list[Any], j: int, end: int, scalar: str) -> str:
    """The stand-in for the type written as tokens[j:end]."""
    words = [code[t.start : t.end + 1].lower() for t in tokens[j:end]]
    if words == ["record"]:
        return "record"
    if "rowtype" in words:
        return "record"
    if "[" in words or "array" in words:
        return "text[]"
    return scalar
