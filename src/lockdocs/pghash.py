"""Pure-Python PostgreSQL ``hashtext`` / ``hashtextextended`` for advisory-lock keys.

Applications commonly derive advisory-lock keys from names with
``pg_advisory_lock(hashtext('name'))`` or ``hashtextextended('name', seed)``.
lockdocs computes those keys offline, so that collisions between declared locks
(and between the bigint and the two-int4 key spaces) can be checked in CI
without a running server.

The functions here reproduce PostgreSQL's ``hash_bytes`` / ``hash_bytes_extended``
(``src/common/hashfn.c``; Bob Jenkins' lookup3 hash, reached through ``hash_any`` /
``hash_any_extended``) bit for bit, as computed on a **little-endian** server
(x86-64, aarch64).  Big-endian servers produce different values.

Caveats, all matching what the server does:

* ``hashtext`` hashes the UTF-8 bytes of the text, i.e. it assumes a UTF8
  server encoding.  No Unicode normalization is applied.
* Under a nondeterministic (ICU) collation the server hashes a sort key
  instead of the raw bytes, so these values do not apply there.
* The low 32 bits of ``hashtextextended(x, 0)`` always equal ``hashtext(x)``.
"""

from __future__ import annotations

import struct

__all__ = [
    "bigint_to_tag",
    "hash_bytes",
    "hash_bytes_extended",
    "hashtext",
    "hashtextextended",
    "int4pair_to_tag",
]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = _M64
_GOLDEN = 0x9E3779B9 + 3923095  # initial state constant used by hashfn.c

_TAIL = struct.Struct("<3I")


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    """hashfn.c ``mix(a, b, c)`` on uint32 values."""
    m = _M32
    a = (a - c) & m
    a ^= ((c << 4) | (c >> 28)) & m
    c = (c + b) & m
    b = (b - a) & m
    b ^= ((a << 6) | (a >> 26)) & m
    a = (a + c) & m
    c = (c - b) & m
    c ^= ((b << 8) | (b >> 24)) & m
    b = (b + a) & m
    a = (a - c) & m
    a ^= ((c << 16) | (c >> 16)) & m
    c = (c + b) & m
    b = (b - a) & m
    b ^= ((a << 19) | (a >> 13)) & m
    a = (a + c) & m
    c = (c - b) & m
    c ^= ((b << 4) | (b >> 28)) & m
    b = (b + a) & m
    return a, b, c


def _hash_state(data: bytes, a: int, b: int, c: int) -> tuple[int, int]:
    """Run the lookup3 body over *data* from state (a, b, c); return final (b, c).

    On a little-endian machine the aligned (word fetch) and unaligned (byte
    fetch) paths of hashfn.c agree: each 12-byte block is three little-endian
    uint32 words.  For the last 0..11 bytes, bytes 0-3 go into ``a`` and 4-7
    into ``b`` as little-endian words, and bytes 8-10 go into ``c`` shifted
    left by 8 (the low byte of ``c`` is left alone).
    """
    m = _M32
    n = len(data)
    full = n - n % 12
    if full:
        words = struct.unpack_from(f"<{full // 4}I", data)
        for i in range(0, len(words), 3):
            a = (a + words[i]) & m
            b = (b + words[i + 1]) & m
            c = (c + words[i + 2]) & m
            # _mix(a, b, c), inlined: a key is hashed per logged statement that takes it
            a = (a - c) & m
            a ^= ((c << 4) | (c >> 28)) & m
            c = (c + b) & m
            b = (b - a) & m
            b ^= ((a << 6) | (a >> 26)) & m
            a = (a + c) & m
            c = (c - b) & m
            c ^= ((b << 8) | (b >> 24)) & m
            b = (b + a) & m
            a = (a - c) & m
            a ^= ((c << 16) | (c >> 16)) & m
            c = (c + b) & m
            b = (b - a) & m
            b ^= ((a << 19) | (a >> 13)) & m
            a = (a + c) & m
            c = (c - b) & m
            c ^= ((b << 4) | (b >> 28)) & m
            b = (b + a) & m

    rest = n - full
    if rest:
        ta, tb, tc = _TAIL.unpack(data[full:] + bytes(12 - rest))
        a = (a + ta) & m
        b = (b + tb) & m
        c = (c + (tc << 8)) & m  # tc < 2**24, so the shift stays within 32 bits

    # final(a, b, c)
    c ^= b
    c = (c - (((b << 14) | (b >> 18)) & m)) & m
    a ^= c
    a = (a - (((c << 11) | (c >> 21)) & m)) & m
    b ^= a
    b = (b - (((a << 25) | (a >> 7)) & m)) & m
    c ^= b
    c = (c - (((b << 16) | (b >> 16)) & m)) & m
    a ^= c
    a = (a - (((c << 4) | (c >> 28)) & m)) & m
    b ^= a
    b = (b - (((a << 14) | (a >> 18)) & m)) & m
    c ^= b
    c = (c - (((b << 24) | (b >> 8)) & m)) & m
    return b, c


def hash_bytes(data: bytes) -> int:
    """PostgreSQL ``hash_bytes`` (``hash_any``) of *data*, as an unsigned 32-bit int."""
    init = (_GOLDEN + len(data)) & _M32
    _, c = _hash_state(data, init, init, init)
    return c


def hash_bytes_extended(data: bytes, seed: int) -> int:
    """PostgreSQL ``hash_bytes_extended`` (``hash_any_extended``), unsigned 64-bit.

    *seed* is the C ``uint64`` seed; it may be given as a signed int64 (as SQL
    passes it) or as an unsigned uint64, i.e. any value in ``-2**63 .. 2**64-1``.
    Seed 0 means "no seed".
    """
    if not _INT64_MIN <= seed <= _UINT64_MAX:
        raise ValueError(f"seed {seed} is outside the 64-bit range -2**63 .. 2**64-1")
    useed = seed & _M64
    a = b = c = (_GOLDEN + len(data)) & _M32
    if useed != 0:
        a = (a + (useed >> 32)) & _M32
        b = (b + (useed & _M32)) & _M32
        a, b, c = _mix(a, b, c)
    b, c = _hash_state(data, a, b, c)
    return (b << 32) | c


def _text_bytes(text: str) -> bytes:
    if "\x00" in text:
        raise ValueError("PostgreSQL text cannot contain NUL characters")
    # Strict UTF-8: lone surrogates raise UnicodeEncodeError (a ValueError),
    # as they cannot be stored in a UTF8 database either.
    return text.encode("utf-8")


def hashtext(text: str) -> int:
    """``hashtext(text)`` as PostgreSQL returns it: a signed int4.

    Assumes a UTF8 server encoding and a deterministic collation.
    """
    c = hash_bytes(_text_bytes(text))
    return c - (1 << 32) if c > _INT32_MAX else c


def hashtextextended(text: str, seed: int = 0) -> int:
    """``hashtextextended(text, seed)`` as PostgreSQL returns it: a signed int8.

    *seed* is the SQL ``bigint`` argument; a :class:`ValueError` is raised when it
    is outside ``-2**63 .. 2**63-1``.
    """
    if not _INT64_MIN <= seed <= _INT64_MAX:
        raise ValueError(f"seed {seed} is outside the bigint range -2**63 .. 2**63-1")
    h = hash_bytes_extended(_text_bytes(text), seed)
    return h - (1 << 64) if h > _INT64_MAX else h


def bigint_to_tag(key: int) -> tuple[int, int, int]:
    """Lock-tag fields (field2, field3, field4) of ``pg_advisory_lock(bigint)``.

    As in ``SET_LOCKTAG_INT64``: ``((uint32)(key >> 32), (uint32) key, 1)``.
    These are the ``classid``, ``objid`` and ``objsubid`` columns of ``pg_locks``.
    """
    if not _INT64_MIN <= key <= _INT64_MAX:
        raise ValueError(f"key {key} is outside the bigint range -2**63 .. 2**63-1")
    return ((key >> 32) & _M32, key & _M32, 1)


def int4pair_to_tag(k1: int, k2: int) -> tuple[int, int, int]:
    """Lock-tag fields (field2, field3, field4) of ``pg_advisory_lock(int4, int4)``.

    ``((uint32) k1, (uint32) k2, 2)``; the 2 in field4 keeps this key space
    apart from the bigint one, which uses 1.
    """
    for name, k in (("k1", k1), ("k2", k2)):
        if not _INT32_MIN <= k <= _INT32_MAX:
            raise ValueError(f"{name} {k} is outside the int4 range -2**31 .. 2**31-1")
    return (k1 & _M32, k2 & _M32, 2)
