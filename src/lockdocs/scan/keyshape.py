"""Advisory key expressions (parse-tree nodes) -> `KeyShape`, and a shape against a declared key.

The shape is what the SQL text says about the key: which hash, the literal prefix, how many
runtime parts are joined with which separators, the seed, or the constant. A declared key and a
found shape either agree, differ in named ways ("prefix 'lifecycle-' found, 'lifecycle:'
declared"), or cannot be compared (a key passed in as a parameter).
"""

from __future__ import annotations

from typing import Any

from lockdocs import model as m
from lockdocs.scan.found import KeyShape

Node = dict[str, Any]


def unwrap(node: Any) -> tuple[str, Node]:
    """A wrapped node {"Type": {...}} -> ("Type", {...}); anything else -> ("", {})."""
    if isinstance(node, dict) and len(node) == 1:
        ((kind, body),) = node.items()
        if isinstance(body, dict):
            return kind, body
    return "", {}


def strip_casts(node: Any) -> tuple[str, Node]:
    kind, body = unwrap(node)
    while kind == "TypeCast":
        kind, body = unwrap(body.get("arg"))
    return kind, body


def func_name(body: Node) -> str:
    names = [unwrap(n)[1].get("sval", "") for n in body.get("funcname", [])]
    return ".".join(names)


def int_const(node: Any) -> int | None:
    kind, body = strip_casts(node)
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP" and "lexpr" not in body:
        op = [unwrap(n)[1].get("sval") for n in body.get("name", [])]
        value = int_const(body.get("rexpr"))
        return -value if op == ["-"] and value is not None else None
    if kind != "A_Const":
        return None
    if "ival" in body:
        return int(body["ival"].get("ival", 0))
    if "fval" in body:
        # A number past int64 is no key Postgres takes (nor one Python should convert: past
        # 4,300 digits int() refuses): not a constant.
        text = str(body["fval"].get("fval", "")).lstrip("-")
        if text.isascii() and text.isdigit() and len(text) <= 20:
            value = int(body["fval"].get("fval", ""))
            return value if -(2**63) <= value < 2**63 else None
    return None


def str_const(node: Any) -> str | None:
    kind, body = strip_casts(node)
    if kind == "A_Const" and "sval" in body:
        return str(body["sval"].get("sval", ""))
    return None


def _operands(node: Any) -> list[Any]:
    """The operands of a `||` chain or a concat() call, in order."""
    kind, body = strip_casts(node)
    if kind == "A_Expr" and body.get("kind") == "AEXPR_OP":
        op = [unwrap(n)[1].get("sval") for n in body.get("name", [])]
        if op == ["||"] and "lexpr" in body:
            return [*_operands(body["lexpr"]), *_operands(body["rexpr"])]
    if kind == "FuncCall" and func_name(body) in ("concat", "pg_catalog.concat"):
        out: list[Any] = []
        for a in body.get("args", []):
            out += _operands(a)
        return out
    return [node]


def _text_shape(construction: str, node: Any, seed: int | None) -> KeyShape:
    pieces: list[str | None] = [str_const(op) for op in _operands(node)]  # None: a part
    if all(p is not None for p in pieces):
        return KeyShape(construction, literal="".join(p or "" for p in pieces), seed=seed)
    parts = sum(1 for p in pieces if p is None)
    first = pieces.index(None)
    last = len(pieces) - 1 - pieces[::-1].index(None)
    separators: list[str] = []
    between = ""
    for p in pieces[first + 1 : last + 1]:
        if p is None:
            separators.append(between)
            between = ""
        else:
            between += p
    prefix = "".join(p or "" for p in pieces[:first]) if first else None
    suffix = "".join(p or "" for p in pieces[last + 1 :]) if last < len(pieces) - 1 else None
    return KeyShape(
        construction,
        prefix=prefix,
        parts=parts,
        separators=tuple(separators),
        suffix=suffix,
        seed=seed,
    )


def shape_of(node: Any) -> KeyShape:
    """One key argument (bigint, or one int4 half)."""
    kind, body = strip_casts(node)
    if kind == "FuncCall":
        name = func_name(body).removeprefix("pg_catalog.")
        args = body.get("args", [])
        if name == "hashtextextended" and len(args) == 2:
            return _text_shape("hashtextextended", args[0], int_const(args[1]))
        if name == "hashtext" and len(args) == 1:
            return _text_shape("hashtext", args[0], None)
        if name in ("sqlc.arg", "sqlc.narg"):
            return KeyShape("parameter")
        return KeyShape("expression", function=name)
    value = int_const(node)
    if value is not None:
        return KeyShape("constant", value=value)
    if kind in ("ParamRef", "ColumnRef"):
        return KeyShape("parameter")
    return KeyShape("expression")


def shape_of_args(args: list[Any]) -> KeyShape:
    if len(args) == 2:
        return KeyShape("int4pair", pair=(shape_of(args[0]), shape_of(args[1])))
    return shape_of(args[0]) if args else KeyShape("expression")


# --- against the declarations --------------------------------------------------------------------


def _q(text: str | None) -> str:
    return "no prefix" if not text else f"prefix '{text}'"


def _text_differences(shape: KeyShape, kt: m.KeyText) -> list[str]:
    out: list[str] = []
    if kt.text is not None and not kt.parts:
        if shape.literal is None:
            out.append(
                f"a key built from {shape.parts} runtime part(s) found, the fixed text '{kt.text}' declared"
            )
        elif shape.literal != kt.text:
            out.append(f"text '{shape.literal}' found, '{kt.text}' declared")
        return out
    if shape.literal is not None:
        return [f"the fixed text '{shape.literal}' found, a family of keys declared"]
    if (shape.prefix or "") != (kt.prefix or ""):
        out.append(f"{_q(shape.prefix)} found, {_q(kt.prefix)} declared")
    if shape.parts != len(kt.parts):
        out.append(f"{shape.parts} runtime part(s) found, {len(kt.parts)} declared")
    bad = sorted({s for s in shape.separators if s != kt.separator})
    if bad:
        shown = ", ".join(f"'{s}'" if s else "none" for s in bad)
        want = f"'{kt.separator}'" if kt.separator else "none"
        out.append(f"separator {shown} found, {want} declared")
    if shape.suffix:
        out.append(f"text '{shape.suffix}' after the last part found, none declared")
    return out


def _half_differences(
    shape: KeyShape, half: m.KeyText | m.IntegerPart | int | None, which: str
) -> list[str]:
    if isinstance(half, m.IntegerPart):
        if shape.construction in ("parameter", "expression"):
            return []
        return [f"the {which} int4 is {shape.construction}, a raw integer declared"]
    if isinstance(half, int):
        if shape.construction != "constant":
            return [f"the {which} int4 is {shape.construction}, the constant {half} declared"]
        if shape.value != half:
            return [f"the {which} int4 is {shape.value}, {half} declared"]
        return []
    if half is None or shape.construction == "parameter":
        return []
    if shape.construction != "hashtext":
        return [f"the {which} int4 is {shape.construction}, hashtext declared"]
    return [f"the {which} int4: {d}" for d in _text_differences(shape, half)]


def key_differences(shape: KeyShape, key: m.Key) -> list[str] | None:
    """How a found key differs from a declared one: [] when it matches, None when the SQL
    does not say enough to tell (a parameter or an expression lockdocs cannot read)."""
    if key.construction == "application":
        return []
    if shape.construction in ("parameter", "expression"):
        return None
    if key.construction == "int4pair":
        if shape.construction != "int4pair" or shape.pair is None:
            return [f"a bigint key ({shape.construction}) found, the two-int4 form declared"]
        return [
            *_half_differences(shape.pair[0], key.first, "first"),
            *_half_differences(shape.pair[1], key.second, "second"),
        ]
    if shape.construction == "int4pair":
        return [f"the two-int4 form found, {key.construction} declared"]
    if key.construction == "integer":
        return [f"{shape.construction} found, a raw integer declared"]
    if key.construction == "constant":
        if shape.construction != "constant":
            return [f"{shape.construction} found, a constant declared"]
        want = key.value if key.value is not None else key.constant_value
        return [] if shape.value == want else [f"the constant {shape.value} found, {want} declared"]
    hashes = ("hashtext", "hashtextextended")
    if shape.construction != key.construction and shape.construction not in hashes:
        return [f"{shape.construction} found, {key.construction} declared"]
    assert key.text is not None
    out = (
        []
        if shape.construction == key.construction
        else [f"{shape.construction} found, {key.construction} declared"]
    )
    out += _text_differences(shape, key.text)
    seeded = key.construction == "hashtextextended" and shape.seed is not None
    if seeded and shape.seed != key.text.seed:
        out.append(f"seed {shape.seed} found, {key.text.seed} declared")
    return out


def describe(shape: KeyShape) -> str:
    """The shape in words, for messages about a key no family declares."""
    if shape.construction == "constant":
        return f"the constant {shape.value}"
    if shape.construction == "int4pair" and shape.pair:
        return f"the two-int4 form ({describe(shape.pair[0])}, {describe(shape.pair[1])})"
    if shape.construction in ("parameter", "expression"):
        fn = f" ({shape.function})" if shape.function else ""
        return f"a key passed in as {'a parameter' if shape.construction == 'parameter' else 'an expression'}{fn}"
    if shape.literal is not None:
        return f"{shape.construction} of the fixed text '{shape.literal}'"
    return f"{shape.construction} with {_q(shape.prefix)} and {shape.parts} runtime part(s)"
