"""Advisory key declarations -> `Key`, with the exact bigint of every fixed key.

Postgres's hash functions are deterministic public code (see `pghash`), so a fixed name or a
constant maps to one lock tag that can be compared offline; the tag tells the bigint key space
from the two-int4 one.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from typing import Any

from lockdocs import pghash
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.load import Document
from lockdocs.model import IntegerPart, Key, KeyText

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _sha256_mod_2_63(data: bytes) -> int:
    return int(hashlib.sha256(data).hexdigest(), 16) % (2**63)


def _crc32(data: bytes) -> int:
    return zlib.crc32(data)  # the IEEE polynomial, as Go's crc32.ChecksumIEEE and Ruby's Zlib


def fnv1a(data: bytes, bits: int) -> int:
    """FNV-1a with the standard offset basis and prime of its width."""
    if bits == 32:
        h, prime, mask = 0x811C9DC5, 0x01000193, 0xFFFFFFFF
    else:
        h, prime, mask = 0xCBF29CE484222325, 0x100000001B3, 0xFFFFFFFFFFFFFFFF
    for byte in data:
        h = ((h ^ byte) * prime) & mask
    return h


# Application-side key functions lockdocs can reproduce, so their fixed keys join the exact
# collision check: dstack's string_to_lock_id, Rails' and golang-migrate's CRC-32 times a salt,
# FNV-1a. Each gives an unsigned integer of its width.
APPLICATION_HASHES: dict[str, tuple[Callable[[bytes], int], int]] = {
    "sha256 mod 2^63": (_sha256_mod_2_63, 63),
    "crc32": (_crc32, 32),
    "fnv-1a 32": (lambda data: fnv1a(data, 32), 32),
    "fnv-1a 64": (lambda data: fnv1a(data, 64), 64),
}


def application_value(
    algorithm: str, text: str, multiplier: int | None, bits: int | None, signed: bool | None
) -> int | None:
    """The bigint an application hash gives for a fixed text: the hash, times the multiplier,
    in arithmetic of `bits` bits (64 by default: Rails' crc32 * salt; 32 for golang-migrate's
    uint32), read signed when asked (by default at 64 bits, as a cast to int64 does). None
    when the result cannot be a bigint."""
    fn, _ = APPLICATION_HASHES[algorithm]
    size = bits or 64
    value = fn(text.encode("utf-8"))
    if multiplier is not None:
        value *= multiplier
    value %= 1 << size
    if (signed if signed is not None else size == 64) and value >= 1 << (size - 1):
        value -= 1 << size
    if not INT64_MIN <= value <= INT64_MAX:
        return None
    return value


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


def _half(raw: Any) -> KeyText | IntegerPart | int:
    if isinstance(raw, int):
        return raw
    if "integer" in raw:
        return IntegerPart(str(raw["integer"]["of"]), 32)
    return _text(raw)


def _int4(value: KeyText | IntegerPart | int | None) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, KeyText) and value.fixed and value.text is not None:
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
    if construction == "integer":
        raw_int = IntegerPart(str(body["of"]), int(body.get("bits", 64)))
        return Key("integer", integer=raw_int), diags
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
        multiplier = body.get("multiplier")
        bits = body.get("bits")
        signed = body.get("signed")
        if bits is not None and bits > 64:
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    f"an advisory key has at most 64 bits, not {bits}",
                    doc.loc((*path, construction, "bits")),
                    "give the width of the application's arithmetic: 32 or 64",
                )
            )
            bits = None
        if multiplier is not None and algorithm not in APPLICATION_HASHES:
            diags.append(
                Diagnostic(
                    "LD003",
                    Severity.ERROR,
                    "multiplier: applies to a named algorithm only",
                    doc.loc((*path, construction, "multiplier")),
                    "name the hash: algorithm: " + " | ".join(APPLICATION_HASHES),
                )
            )
        value = tag = None
        if kt.fixed and kt.text is not None and algorithm in APPLICATION_HASHES:
            value = application_value(algorithm, kt.text, multiplier, bits, signed)
            if value is None:
                diags.append(
                    Diagnostic(
                        "LD003",
                        Severity.ERROR,
                        f"'{kt.text}' hashes to an unsigned value above 2^63-1: no bigint holds it",
                        doc.loc((*path, construction), key=True),
                        "the code must read it signed (signed: true), or use fewer bits",
                    )
                )
            else:
                tag = pghash.bigint_to_tag(value)
        return (
            Key(
                "application",
                text=kt,
                function=body.get("function"),
                algorithm=algorithm,
                declared_bits=bits,
                multiplier=multiplier,
                signed=signed,
                value=value,
                tag=tag,
            ),
            diags,
        )
    # int4pair
    first, second = _half(body["first"]), _half(body["second"])
    for name, part in (("first", first), ("second", second)):
        if isinstance(part, IntegerPart):
            continue
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
    if key.construction == "integer" and key.integer is not None:
        return f"<{key.integer.of}>::bigint"
    if key.construction == "application" and key.text is not None:
        inner = _text_sql("hashtext", key.text)[len("hashtext(") : -1]
        out = f"{key.function}({inner})"
        if key.multiplier is not None:
            out += f" * {key.multiplier}"
        return out
    if key.construction == "constant":
        if key.constant_bytes is not None:
            return f"the bytes of '{key.constant_bytes}' as a bigint"
        return str(key.constant_value)
    halves = []
    for part in (key.first, key.second):
        if isinstance(part, IntegerPart):
            halves.append(f"<{part.of}>")
        elif isinstance(part, KeyText):
            halves.append(_text_sql("hashtext", part))
        else:
            halves.append(str(part))
    return "(" + ", ".join(halves) + ")"


def family_prefix(key: Key) -> str | None:
    """The prefix that separates this family's keys from others', when it has parts."""
    if key.text is not None and key.text.parts:
        return key.text.prefix or None
    return None
