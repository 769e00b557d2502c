"""LD1xx: advisory keys. Every family has its own prefix, prefixes are prefix-free, 32-bit keys
are flagged with their collision odds, and fixed keys are computed exactly and must not collide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lockdocs import pghash
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.keys import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, family_prefix, key_sql
from lockdocs.model import Key, KeyText, Lock
from lockdocs.rules.context import Context
from lockdocs.rules.registry import rule


def _locks(head: str, body: str) -> dict[str, str]:
    return {"locks.yaml": "lockdocs: 1\npage: {title: Locks}\nlocks:\n" + head + body}


def _advisory(ctx: Context) -> list[tuple[Lock, Key]]:
    return [(lk, lk.key) for lk in ctx.model.locks.values() if lk.key is not None]


def _key_loc(lock: Lock) -> object:
    return lock.location


@rule(
    "LD101",
    "key-without-prefix",
    Severity.WARNING,
    summary="An advisory key family hashes a bare id with no family prefix.",
    what="Reports a key built from runtime parts with no prefix naming its family.",
    why=(
        "Two families that hash bare ids share one key space: a subscription id and a product "
        "id that hash alike serialize two unrelated operations. A prefix per family ('invoice:') "
        "keeps the families apart."
    ),
    example=_locks(
        "",
        """\
  invoice:
    title: Invoice
    kind: advisory
    key: {hashtextextended: {parts: [invoice id]}}
    modes: {exclusive: reconcile}
""",
    ),
    use_instead={
        "locks.yaml": (
            "    key: {hashtextextended: {parts: [invoice id]}}\n",
            '    key: {hashtextextended: {prefix: "invoice:", parts: [invoice id]}}\n',
        ),
    },
)
def no_prefix(ctx: Context) -> Iterable[Diagnostic]:
    raw = [lk.id for lk, k in _advisory(ctx) if k.construction == "integer"]
    for lock, key in _advisory(ctx):
        if key.construction == "integer" and key.integer is not None:
            others = [r for r in raw if r != lock.id]
            verb = "does" if len(others) == 1 else "do"
            shared = f" (as {verb} {', '.join(others)}: equal ids are one lock)" if others else ""
            yield Diagnostic(
                "LD101",
                Severity.WARNING,
                f"key of {lock.id} is {key.integer.of} used as a bigint, with nothing that marks "
                f"its family: it shares the bigint space with every other family{shared}",
                lock.location,
                f"take it in the two-int4 form pg_advisory_xact_lock(<class id>, "
                f"<{key.integer.of}>) with a class id no other family uses, or hash a prefixed "
                f"text: hashtextextended('{lock.id}:' || <{key.integer.of}>, 0)",
                locks=(lock.id,),
            )
            continue
        if key.text is None or not key.text.parts or key.text.prefix:
            continue
        if key.construction == "application":
            hint = (
                f"pass {key.function} a prefixed text ('{lock.id}:' || ...) so no other family "
                "can make the same text"
            )
        else:
            hint = (
                f"build it as {key.construction}('{lock.id}:' || ...) so no other family can "
                "make the same text"
            )
        yield Diagnostic(
            "LD101",
            Severity.WARNING,
            f"key of {lock.id} ({key_sql(key)}) has no family prefix",
            lock.location,
            hint,
            locks=(lock.id,),
        )


@rule(
    "LD102",
    "prefix-not-prefix-free",
    Severity.ERROR,
    summary="One family's prefix is the start of another's.",
    what="Compares every pair of family prefixes; reports one that begins another.",
    why=(
        "With prefixes 'user:' and 'user:admin:', the user id 'admin:7' builds the same text as "
        "the admin id '7': two families lock each other's objects."
    ),
    example=_locks(
        "",
        """\
  user:
    title: User
    kind: advisory
    key: {hashtextextended: {prefix: "user:", parts: [user id]}}
    modes: {exclusive: writes}
  admin:
    title: Admin
    kind: advisory
    key: {hashtextextended: {prefix: "user:admin:", parts: [admin id]}}
    modes: {exclusive: writes}
""",
    ),
    use_instead={
        "locks.yaml": (
            '    key: {hashtextextended: {prefix: "user:admin:", parts: [admin id]}}\n',
            '    key: {hashtextextended: {prefix: "admin:", parts: [admin id]}}\n',
        ),
    },
)
def prefix_free(ctx: Context) -> Iterable[Diagnostic]:
    fams = sorted(
        ((family_prefix(k), lk) for lk, k in _advisory(ctx) if family_prefix(k)),
        key=lambda t: (t[0] or "", t[1].id),
    )
    # Sorted prefixes: a prefix of another sorts right before it, but not only before it,
    # so compare each with the following ones while they still start with it (linear in
    # practice: the inner loop stops at the first that does not).
    for i, (p, lock) in enumerate(fams):
        assert p is not None
        for q, other in fams[i + 1 :]:
            assert q is not None
            if not q.startswith(p):
                break
            if lock.key and other.key and lock.key.construction != other.key.construction:
                continue
            same = "is the same as" if p == q else "is the start of"
            yield Diagnostic(
                "LD102",
                Severity.ERROR,
                f"prefix '{p}' of {lock.id} {same} prefix '{q}' of {other.id}",
                other.location,
                "give each family a prefix that no other prefix starts with (end each with a "
                "separator that never occurs in a family name, such as ':')",
                locks=(lock.id, other.id),
            )


def collision_odds(n: int, bits: int) -> float:
    """Birthday bound: the chance that n distinct keys hold two equal ones."""
    return -math.expm1(-n * (n - 1) / (2.0 * 2.0**bits))


@rule(
    "LD103",
    "hashtext-32-bit",
    Severity.INFO,
    summary="A key uses hashtext, which gives 32 bits.",
    what=(
        "Reports keys built with hashtext (widened to bigint), with the collision odds for the "
        "family's declared cardinality."
    ),
    why=(
        "32 bits collide at about 1% with 9,300 live keys and at 50% with 77,000. A collision "
        "serializes two unrelated objects; it never loses mutual exclusion, but it costs waits "
        "that nobody can explain. hashtextextended gives 64 bits."
    ),
    example=_locks(
        "",
        """\
  subscription:
    title: Subscription
    kind: advisory
    key: {hashtext: {prefix: "subscription:", parts: [subscription id], cardinality: 50000}}
    modes: {exclusive: reconcile}
""",
    ),
    use_instead={
        "locks.yaml": (
            '    key: {hashtext: {prefix: "subscription:", parts: [subscription id], cardinality: 50000}}\n',
            '    key: {hashtextextended: {prefix: "subscription:", parts: [subscription id]}}\n',
        ),
    },
)
def hashtext_32(ctx: Context) -> Iterable[Diagnostic]:
    for lock, key in _advisory(ctx):
        for what, kt, hint in _32_bit_families(key):
            n = kt.cardinality
            odds = (
                f"; with {n:,} live keys the chance of a collision is {collision_odds(n, 32):.2%}"
                if n
                else "; declare cardinality: to see the collision odds"
            )
            yield Diagnostic(
                "LD103",
                Severity.INFO,
                f"{what.format(lock=lock.id)}{odds}",
                lock.location,
                hint,
                locks=(lock.id,),
            )


def _family(kt: KeyText | None) -> bool:
    return kt is not None and not kt.fixed


def _32_bit_families(key: Key) -> list[tuple[str, KeyText, str]]:
    """The parts of a key that hash a family of texts into 32 bits: (what, input, hint)."""
    out: list[tuple[str, KeyText, str]] = []
    if key.construction == "hashtext" and key.text is not None and not key.text.fixed:
        out.append(
            (
                "key of {lock} is hashtext (32 bits) widened to bigint",
                key.text,
                "use hashtextextended(..., 0) for 64 bits",
            )
        )
    if key.construction == "application" and _family(key.text) and key.bits <= 32:
        assert key.text is not None
        out.append(
            (
                f"key of {{lock}} is {key.algorithm} (32 bits)",
                key.text,
                "use a 64-bit hash (fnv-1a 64, or hashtextextended in SQL)",
            )
        )
    if key.construction == "int4pair":
        for which, half in (("first", key.first), ("second", key.second)):
            if isinstance(half, KeyText) and not half.fixed:
                out.append(
                    (
                        f"the {which} int4 of the key of {{lock}} is hashtext (32 bits)",
                        half,
                        "each half of a pair holds 32 bits; for 64, hash a prefixed text "
                        "with hashtextextended(..., 0) in the bigint space",
                    )
                )
    return out


@rule(
    "LD104",
    "key-collision",
    Severity.ERROR,
    summary="Two fixed or constant keys are the same lock.",
    what=(
        "Computes every fixed-name and constant key exactly (Postgres's hashtext and "
        "hashtextextended, reproduced bit for bit) and compares their lock tags, so a "
        "hashtext value widened to bigint meets a bigint constant, and an int4 pair never "
        "meets a bigint. A constant inside the range that a family fills (hashtext's 32 bits, "
        "an oid's or a 32-bit application hash's [0, 2^32), a raw bigint id's every value) "
        "is reported too."
    ),
    why="Two locks with one tag are one lock: they serialize each other, or deadlock.",
    example=_locks(
        "",
        """\
  registry:
    title: Registry
    kind: advisory
    key: {constant: {value: 7}}
    modes: {exclusive: allocations}
  billing:
    title: Nightly billing
    kind: advisory
    key: {constant: {value: 7}}
    modes: {exclusive: the nightly job}
""",
    ),
    use_instead=_locks(
        "",
        """\
  registry:
    title: Registry
    kind: advisory
    key: {constant: {value: 7}}
    modes: {exclusive: allocations}
  billing:
    title: Nightly billing
    kind: advisory
    key: {hashtextextended: {text: nightly-billing}}
    modes: {exclusive: the nightly job}
""",
    ),
)
def collisions(ctx: Context) -> Iterable[Diagnostic]:
    by_tag: dict[tuple[int, int, int], list[Lock]] = {}
    for lock, key in _advisory(ctx):
        if key.tag is not None:
            by_tag.setdefault(key.tag, []).append(lock)
    for tag, locks in sorted(by_tag.items()):
        if len(locks) < 2:
            continue
        first = locks[0]
        for other in locks[1:]:
            yield Diagnostic(
                "LD104",
                Severity.ERROR,
                f"{other.id} and {first.id} have the same advisory key "
                f"({_tag_text(tag)}): they are one lock",
                other.location,
                "change one key's text, seed or value",
                locks=(first.id, other.id),
            )
    ranges = [(lk, r) for lk, k in _advisory(ctx) if (r := _filled_range(k)) is not None]
    if not ranges:
        return
    for lock, key in _advisory(ctx):
        if key.construction != "constant" or key.value is None:
            continue
        value = key.value
        inside = [lk for lk, (lo, hi) in ranges if lo <= value <= hi]
        if inside:
            constructions = {f.key.construction for f in inside if f.key is not None}
            families = (
                "32-bit range that hashtext families"
                if constructions == {"hashtext"}
                else "range that raw-integer families"
                if constructions == {"integer"}
                else "range that 32-bit families"
                if "integer" not in constructions
                else "range that raw-integer and 32-bit families"
            )
            yield Diagnostic(
                "LD104",
                Severity.WARNING,
                f"constant key of {lock.id} ({value}) lies in the {families} ("
                + ", ".join(f.id for f in inside)
                + ") fill",
                lock.location,
                (
                    "put the raw-integer families in the two-int4 form, each with a class id "
                    "of its own, or use a hashtextextended fixed name"
                )
                if any(f.key is not None and f.key.construction == "integer" for f in inside)
                else f"use a constant outside {_range_text(inside, ranges)}, or a "
                "hashtextextended fixed name",
                locks=(lock.id, *(f.id for f in inside)),
            )


def _range_text(inside: list[Lock], ranges: list[tuple[Lock, tuple[int, int]]]) -> str:
    mine = [r for lk, r in ranges if lk in inside]
    lo, hi = min(r[0] for r in mine), max(r[1] for r in mine)
    names = {INT32_MIN: "-2^31", 0: "0", INT32_MAX: "2^31", 2**32 - 1: "2^32"}
    return f"[{names.get(lo, str(lo))}, {names.get(hi, str(hi + 1))})"


def _filled_range(key: Key) -> tuple[int, int] | None:
    """The bigints a family's keys spread over when that is a range a constant can fall in:
    hashtext's signed int4, an oid's or an unsigned 32-bit hash's [0, 2^32), a raw bigint id's
    every value."""
    if key.construction == "hashtext" and key.text is not None and not key.text.fixed:
        return (INT32_MIN, INT32_MAX)
    if key.construction == "integer" and key.integer is not None:
        # an oid or an int4 is below 2^32; a bigint id may be any value
        return (INT32_MIN, 2**32 - 1) if key.integer.bits == 32 else (INT64_MIN, INT64_MAX)
    # A multiplier in 64-bit arithmetic (Rails' crc32 * salt) spreads the keys further.
    narrow = key.multiplier is None or (key.declared_bits or 64) <= 32
    if key.construction == "application" and _family(key.text) and key.bits <= 32 and narrow:
        return (INT32_MIN, INT32_MAX) if key.signed else (0, 2**32 - 1)
    return None


def _tag_text(tag: tuple[int, int, int]) -> str:
    hi, lo, space = tag
    if space == 2:
        return f"int4 pair ({_s32(hi)}, {_s32(lo)})"
    value = (hi << 32) | lo
    if value >= 2**63:
        value -= 2**64
    return f"bigint {value}"


def _s32(v: int) -> int:
    return v - 2**32 if v >= 2**31 else v


@rule(
    "LD105",
    "pair-namespace-shared",
    Severity.ERROR,
    summary="Two int4-pair families use the same first half (namespace).",
    what=(
        "Reports two families built with the two-int4 form whose first int is the same fixed "
        "value: their second halves share one space."
    ),
    why=(
        "pg_advisory_xact_lock(ns, id) is only as separate as its namespace: with one ns, "
        "order 7 and invoice 7 are one lock."
    ),
    example=_locks(
        "",
        """\
  order:
    title: Order
    kind: advisory
    key: {int4pair: {first: 1, second: {parts: [order id]}}}
    modes: {exclusive: writes}
  invoice:
    title: Invoice
    kind: advisory
    key: {int4pair: {first: 1, second: {parts: [invoice id]}}}
    modes: {exclusive: writes}
""",
    ),
    use_instead={
        "locks.yaml": (
            "    key: {int4pair: {first: 1, second: {parts: [invoice id]}}}\n",
            "    key: {int4pair: {first: 2, second: {parts: [invoice id]}}}\n",
        ),
    },
)
def pair_namespaces(ctx: Context) -> Iterable[Diagnostic]:
    seen: dict[int, Lock] = {}
    for lock, key in _advisory(ctx):
        if key.construction != "int4pair" or key.tag is not None:
            continue
        first = key.first
        ns = (
            first
            if isinstance(first, int)
            else (
                pghash.hashtext(first.text)
                if isinstance(first, KeyText) and first.fixed and first.text
                else None
            )
        )
        if ns is None:
            continue
        if ns in seen:
            yield Diagnostic(
                "LD105",
                Severity.ERROR,
                f"{lock.id} and {seen[ns].id} share the int4-pair namespace {ns}",
                lock.location,
                "give each family its own first int (or hashtext of its own name)",
                locks=(seen[ns].id, lock.id),
            )
        else:
            seen[ns] = lock


@rule(
    "LD106",
    "cluster-object-per-database",
    Severity.ERROR,
    summary="A key names an object of the whole cluster and is taken from several databases.",
    what=(
        "For an advisory lock declared `cluster_wide: true` (its key names a role, a database, "
        "a tablespace), reports when paths take it from transaction kinds of more than one "
        "`database:` (kinds that name none share the default one), listing the paths on each."
    ),
    why=(
        "Postgres puts the database's oid in every advisory lock tag, so the same key taken "
        "on a connection to another database is another lock: two transactions that lock "
        "one role from two databases are not serialized at all."
    ),
    example={
        "locks.yaml": """\
lockdocs: 1
page: {title: Locks}
transactions:
  app: {database: app}
  reports: {database: reports}
locks:
  role:
    title: Role grants
    kind: advisory
    cluster_wide: true
    key: {int4pair: {first: 42, second: {integer: {of: the role's oid}}}}
    modes: {exclusive: whoever changes the role's grants}
""",
        "paths/roles.yaml": """\
group: Roles
paths:
  grant:
    title: Grant from the app
    transaction: app
    steps:
      - take: role
  revoke:
    title: Revoke from the reports database
    transaction: reports
    steps:
      - take: role
""",
    },
    use_instead={
        "paths/roles.yaml": (
            "    transaction: reports\n",
            "    transaction: app\n",
        ),
    },
)
def cluster_object(ctx: Context) -> Iterable[Diagnostic]:
    wide = {lk.id for lk in ctx.model.locks.values() if lk.cluster_wide}
    if not wide:
        return
    where: dict[str, dict[str | None, list[str]]] = {}
    for ev in ctx.all_events:
        if ev.kind not in ("acquire", "retake", "upgrade") or ev.lock not in wide:
            continue
        tk = ctx.model.transactions.get(ev.txkind or "")
        db = tk.database if tk is not None else None
        paths = where.setdefault(ev.lock, {}).setdefault(db, [])
        if ev.path not in paths:
            paths.append(ev.path)
    for lock_id in sorted(where):
        dbs = where[lock_id]
        if len(dbs) < 2:
            continue
        lock = ctx.model.locks[lock_id]
        named = sorted(dbs, key=lambda d: (d is None, d or ""))
        parts = [
            f"{'database ' + repr(d) if d else 'the default database'} ({', '.join(dbs[d])})"
            for d in named
        ]
        yield Diagnostic(
            "LD106",
            Severity.ERROR,
            f"{lock_id} names an object of the whole cluster, but is taken on "
            + " and on ".join(parts)
            + ": each database has its own advisory locks, so these never exclude each other",
            lock.location,
            "take it from one database only (a connection to the same database in every path), "
            "or lock a row that stands for the object in a table all of them share",
            paths=tuple(dict.fromkeys(p for d in named for p in dbs[d])),
            locks=(lock_id,),
        )
