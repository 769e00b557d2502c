"""LD104-LD106: advisory keys that are the same lock. Fixed and constant keys are computed
exactly (Postgres's hashtext, reproduced) and must not collide with each other or fall in the
range a family fills; an int4 pair must not share its namespace with a bigint; a key must not
be read as another cluster object's lock.
"""

from __future__ import annotations

from collections.abc import Iterable

from lockdocs import pghash
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.keys import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from lockdocs.model import Key, KeyText, Lock
from lockdocs.rules.context import CheckContext
from lockdocs.rules.finder import Finder
from lockdocs.rules.keyrules import advisory, is_family, locks_example
from lockdocs.rules.registry import rule

# golang-migrate's Postgres lock: its key is the crc32 of the database name times a constant
# (`GenerateAdvisoryLockId`), so it can land on any 32-bit value, a team's constants included.
_MIGRATIONS = """\
  migrations:
    title: Schema migrations
    kind: advisory
    key:
      application:
        function: GenerateAdvisoryLockId
        algorithm: crc32
        multiplier: 1486364155
        bits: 32
        text: database_name
    modes: {exclusive: the migrator}
"""


@rule(
    "LD104",
    "key-collision",
    Severity.ERROR,
    summary="Two fixed or constant keys are the same lock.",
    what=(
        "Computes every fixed-name and constant key exactly (Postgres's hashtext and "
        "hashtextextended, reproduced bit for bit, and an application's crc32 or FNV-1a hash "
        "of a fixed text, with its multiplier) and compares their lock tags, so a "
        "hashtext value widened to bigint meets a bigint constant, and an int4 pair never "
        "meets a bigint. A constant inside the range that a family fills (hashtext's 32 bits, "
        "an oid's or a 32-bit application hash's [0, 2^32), a raw bigint id's every value) "
        "is reported too."
    ),
    why="Two locks with one tag are one lock: they serialize each other, or deadlock.",
    example=locks_example(
        "",
        """\
  registry:
    title: Registry
    kind: advisory
    key: {constant: {value: 1764327054}}
    modes: {exclusive: allocations}
"""
        + _MIGRATIONS,
    ),
    use_instead=locks_example(
        "",
        """\
  registry:
    title: Registry
    kind: advisory
    key: {hashtextextended: {text: registry}}
    modes: {exclusive: allocations}
"""
        + _MIGRATIONS,
    ),
)
def collisions(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    by_tag: dict[tuple[int, int, int], list[Lock]] = {}
    for lock, key in advisory(ctx):
        if key.tag is not None:
            by_tag.setdefault(key.tag, []).append(lock)
    for tag, locks in sorted(by_tag.items()):
        if len(locks) < 2:
            continue
        first = locks[0]
        for other in locks[1:]:
            yield finding(
                f"{other.id} and {first.id} have the same advisory key "
                f"({_tag_text(tag)}): they are one lock",
                other.location,
                "change one key's text, seed or value",
                locks=(first.id, other.id),
            )
    ranges = [(lk, r) for lk, k in advisory(ctx) if (r := _filled_range(k)) is not None]
    if not ranges:
        return
    for lock, key in advisory(ctx):
        if key.construction != "constant" or key.value is None:
            continue
        value = key.value
        inside = [lk for lk, (lo, hi) in ranges if lo <= value <= hi]
        if inside:
            constructions = {f.key.construction for f in inside if f.key is not None}
            widths = "/".join(
                str(b)
                for b in sorted(
                    {f.key.bits for f in inside if f.key and f.key.construction != "integer"}
                )
            )
            families = (
                "32-bit range that hashtext families"
                if constructions == {"hashtext"}
                else "range that raw-integer families"
                if constructions == {"integer"}
                else f"range that {widths}-bit families"
                if "integer" not in constructions
                else f"range that raw-integer and {widths}-bit families"
            )
            yield finding(
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
                severity=Severity.WARNING,
            )


def _range_text(inside: list[Lock], ranges: list[tuple[Lock, tuple[int, int]]]) -> str:
    mine = [r for lk, r in ranges if lk in inside]
    lo, hi = min(r[0] for r in mine), max(r[1] for r in mine)
    return f"[{_power(lo)}, {_power(hi + 1)})"


def _power(n: int) -> str:
    """-2^31, 0, 2^32 for the bounds of a range of n-bit values."""
    if n and abs(n) & (abs(n) - 1) == 0:
        return f"{'-' if n < 0 else ''}2^{abs(n).bit_length() - 1}"
    return str(n)


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
    if key.construction == "application" and is_family(key.text) and key.bits <= 32 and narrow:
        w = key.bits
        return (-(2 ** (w - 1)), 2 ** (w - 1) - 1) if key.signed else (0, 2**w - 1)
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
    example=locks_example(
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
def pair_namespaces(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    seen: dict[int, Lock] = {}
    for lock, key in advisory(ctx):
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
            yield finding(
                f"{lock.id} and {seen[ns].id} share the int4-pair namespace {ns}",
                lock.location,
                "give each family its own first int (or hashtext of its own name)",
                locks=(seen[ns].id, lock.id),
            )
        else:
            seen[ns] = lock


PER_CALL = "per call"  # transactions: {kind: {database: per call}}


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
def cluster_object(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
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
        # a kind whose database each call picks is several databases at once
        if len(dbs) < 2 and PER_CALL not in dbs:
            continue
        lock = ctx.model.locks[lock_id]
        named = sorted(dbs, key=lambda d: (d is None, d or ""))
        parts = [
            (
                f"the database each call picks ({', '.join(dbs[d])})"
                if d == PER_CALL
                else f"{'database ' + repr(d) if d else 'the default database'} "
                f"({', '.join(dbs[d])})"
            )
            for d in named
        ]
        yield finding(
            f"{lock_id} names an object of the whole cluster, but is taken on "
            + " and on ".join(parts)
            + (", which may be several" if len(dbs) == 1 else "")
            + ": each database has its own advisory locks, so these never exclude each other",
            lock.location,
            "take it from one database only (a connection to the same database in every path), "
            "or lock a row that stands for the object in a table all of them share",
            paths=tuple(dict.fromkeys(p for d in named for p in dbs[d])),
            locks=(lock_id,),
        )
