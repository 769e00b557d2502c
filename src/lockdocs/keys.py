"""Advisory key declarations -> `Key`, with the exact bigint of every fixed key.

Postgres's hash functions are deterministic public code (see `pghash`), so a fixed name or a
constant maps to one lock tag that can be compared offline; the tag tells the bigint key space
from the two-int4 one.
"""

from __future__ import annotations

from typing import Any

from lockdocs import pghash
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.load import Document
from lockdocs.model import Key, KeyText

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _sha256_mod_2_63(text: str) -> int:
    import hashlib

    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % (2**63)


# Application-side key functions lockdocs can reproduce, so their fixed keys join the exact
# collision check (dstack's string_to_lock_id is the first).
APPLICATION_HASHES = {"sha256 mod 2^63": _sha256_mod_2_63}


def _text(raw: dict[str, Any]) -> KeyText:
    return KeyText(
        text=raw.get("text"),
        prefix=raw.get("prefix"),
        parts=tuple(str(p) for p in raw.get("parts") or ()),
        separator=raw.get("separator", ""),
        seed=int(raw.get("seed", 0)),
        cardinality=raw.get("cardinality"),
    )


def _check_text(kt: KeyText, doc: Document, path: tuple[str | int, ...]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if kt.text is not None and (kt.parts or kt.prefix is not None):
        out.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "a key is either a fixed text or a prefix with parts, not both",
                doc.loc(path, key=True),
                "keep text: for one key, or prefix: and parts: for a family",
            )
        )
    if kt.text is None and not kt.parts:
        out.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "the key names neither a fixed text nor any runtime parts",
                doc.loc(path, key=True),
                "add text: (one fixed key) or parts: (the runtime values)",
            )
        )
    if not INT64_MIN <= kt.seed <= INT64_MAX:
        out.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "the seed does not fit in a bigint",
                doc.loc((*path, "seed")),
                "use a seed between -2^63 and 2^63-1",
            )
        )
    if kt.text is not None and "\x00" in kt.text:
        out.append(
            Diagnostic(
                "LD003",
                Severity.ERROR,
                "a Postgres text cannot hold a NUL character",
                doc.loc((*path, "text")),
                "remove the NUL",
            )
        )
    return out


def _int4(value: KeyText | int | None) -> int | None:
    if isinstance(value, int):
        return value
    if value is not None and value.fixed and value.text is not None:
        return pghash.hashtext(value.text)
    return None


def resolve_key(
    raw: dict[str, Any], doc: Document, path: tuple[str | int, ...]
) -> tuple[Key, list[Diagnostic]]:
    diags: list[Diagnostic] = []
    ((construction, body),) = raw.items()
    if construction in ("hashtextextended", "hashtext"):
        kt = _text(body)
        diags += _check_text(kt, doc, (*path, construction))
        value = tag = None
        if kt.fixed and not diags and kt.text is not None:
            if construction == "hashtext":
                value = pghash.hashtext(kt.text)
            else:
                value = pghash.hashtextextended(kt.text, kt.seed)
            tag = pghash.bigint_to_tag(value)
        return Key(construction, text=kt, value=value, tag=tag), diags
    if construction == "constant":
        value = body.get("value")
        as_bytes = body.get("bytes")
        if (value is None) == (as_bytes is None):
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    "a constant key gives exactly one of value: or bytes:",
                    doc.loc((*path, "constant"), key=True),
                    'write value: 12345, or bytes: "domains"',
                )
            )
            return Key("constant", constant_name=body.get("name")), diags
        if as_bytes is not None:
            data = str(as_bytes).encode("utf-8")
            if len(data) > 8:
                diags.append(
                    Diagnostic(
                        "LD003",
                        Severity.ERROR,
                        f"'{as_bytes}' is {len(data)} bytes; a bigint holds 8",
                        doc.loc((*path, "constant", "bytes")),
                        "use at most eight ASCII characters",
                    )
                )
                return Key("constant", constant_bytes=str(as_bytes)), diags
            value = int.from_bytes(data, "big", signed=False)
            if value > INT64_MAX:
                value -= 2**64
        assert isinstance(value, int)
        if not INT64_MIN <= value <= INT64_MAX:
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    "the constant does not fit in a bigint",
                    doc.loc((*path, "constant", "value")),
                    "advisory keys are signed 64-bit integers",
                )
            )
            return Key("constant", constant_value=value), diags
        return (
            Key(
                "constant",
                constant_value=body.get("value"),
                constant_bytes=as_bytes,
                constant_name=body.get("name"),
                value=value,
                tag=pghash.bigint_to_tag(value),
            ),
            diags,
        )
    if construction == "application":
        kt = _text(body)
        if kt.text is None and not kt.parts:
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    "the key names neither a fixed text nor any runtime parts",
                    doc.loc((*path, construction), key=True),
                    "add text: (one fixed key) or parts: (the runtime values)",
                )
            )
        algorithm = body.get("algorithm")
        value = tag = None
        if kt.fixed and kt.text is not None and algorithm in APPLICATION_HASHES:
            value = APPLICATION_HASHES[algorithm](kt.text)
            tag = pghash.bigint_to_tag(value)
        return (
            Key(
                "application",
                text=kt,
                function=body.get("function"),
                algorithm=algorithm,
                declared_bits=body.get("bits"),
                value=value,
                tag=tag,
            ),
            diags,
        )
    # int4pair
    first = body["first"] if isinstance(body["first"], int) else _text(body["first"])
    second = body["second"] if isinstance(body["second"], int) else _text(body["second"])
    for name, part in (("first", first), ("second", second)):
        if isinstance(part, int):
            if not INT32_MIN <= part <= INT32_MAX:
                diags.append(
                    Diagnostic(
                        "LD003",
                        Severity.ERROR,
                        f"the {name} int4 does not fit in 32 bits",
                        doc.loc((*path, "int4pair", name)),
                        "each half of a pair key is a signed 32-bit integer",
                    )
                )
        else:
            diags += _check_text(part, doc, (*path, "int4pair", name))
    k1, k2 = _int4(first), _int4(second)
    pair = tag = None
    if k1 is not None and k2 is not None and not diags:
        pair = (k1, k2)
        tag = pghash.int4pair_to_tag(k1, k2)
    return Key("int4pair", first=first, second=second, pair=pair, tag=tag), diags


def _text_sql(fn: str, kt: KeyText) -> str:
    if kt.fixed:
        inner = "'" + (kt.text or "").replace("'", "''") + "'"
    else:
        pieces: list[str] = []
        if kt.prefix:
            pieces.append("'" + kt.prefix.replace("'", "''") + "'")
        for i, part in enumerate(kt.parts):
            if i and kt.separator:
                pieces.append("'" + kt.separator.replace("'", "''") + "'")
            pieces.append(f"<{part}>")
        inner = " || ".join(pieces)
    if fn == "hashtextextended":
        return f"hashtextextended({inner}, {kt.seed})"
    return f"hashtext({inner})"


def key_sql(key: Key) -> str:
    """The key as the SQL expression a reader would write, with runtime parts in <...>."""
    if key.construction == "hashtextextended" and key.text is not None:
        return _text_sql("hashtextextended", key.text)
    if key.construction == "hashtext" and key.text is not None:
        return _text_sql("hashtext", key.text) + "::bigint"
    if key.construction == "application" and key.text is not None:
        inner = _text_sql("hashtext", key.text)[len("hashtext(") : -1]
        return f"{key.function}({inner})"
    if key.construction == "constant":
        if key.constant_bytes is not None:
            return f"the bytes of '{key.constant_bytes}' as a bigint"
        return str(key.constant_value)
    halves = []
    for part in (key.first, key.second):
        halves.append(
            str(part) if isinstance(part, int) or part is None else _text_sql("hashtext", part)
        )
    return "(" + ", ".join(halves) + ")"


def family_prefix(key: Key) -> str | None:
    """The prefix that separates this family's keys from others', when it has parts."""
    if key.text is not None and key.text.parts:
        return key.text.prefix or None
    return None
