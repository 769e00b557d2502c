"""LD1xx: advisory keys. Every family has its own prefix, prefixes are prefix-free, 32-bit keys
are flagged with their collision odds, and fixed keys are computed exactly and must not collide.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lockdocs import pghash
from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.keys import INT32_MAX, INT32_MIN, family_prefix, key_sql
from lockdocs.model import Key, Lock
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
    for lock, key in _advisory(ctx):
        if key.text is None or not key.text.parts or key.text.prefix:
            continue
        yield Diagnostic(
            "LD101",
            Severity.WARNING,
            f"key of {lock.id} ({key_sql(key)}) has no family prefix",
            lock.location,
            f"build it as {key.construction}('{lock.id}:' || ...) so no other family can make "
            "the same text",
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
        if key.construction != "hashtext" or key.text is None or key.text.fixed:
            continue
        n = key.text.cardinality
        odds = (
            f"; with {n:,} live keys the chance of a collision is {collision_odds(n, 32):.2%}"
            if n
            else "; declare cardinality: to see the collision odds"
        )
        yield Diagnostic(
            "LD103",
            Severity.INFO,
            f"key of {lock.id} is hashtext (32 bits) widened to bigint{odds}",
            lock.location,
            "use hashtextextended(..., 0) for 64 bits",
            locks=(lock.id,),
        )


@rule(
    "LD104",
    "key-collision",
    Severity.ERROR,
    summary="Two fixed or constant keys are the same lock.",
    what=(
        "Computes every fixed-name and constant key exactly (Postgres's hashtext and "
        "hashtextextended, reproduced bit for bit) and compares their lock tags, so a "
        "hashtext value widened to bigint meets a bigint constant, and an int4 pair never "
        "meets a bigint. A constant inside the 32-bit range that hashtext families use is "
        "reported too."
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
    hashtext_families = [
        lk
        for lk, k in _advisory(ctx)
        if k.construction == "hashtext" and k.text and not k.text.fixed
    ]
    if not hashtext_families:
        return
    for lock, key in _advisory(ctx):
        if key.construction != "constant" or key.value is None:
            continue
        if INT32_MIN <= key.value <= INT32_MAX:
            yield Diagnostic(
                "LD104",
                Severity.WARNING,
                f"constant key of {lock.id} ({key.value}) lies in the 32-bit range that "
                "hashtext families (" + ", ".join(f.id for f in hashtext_families) + ") fill",
                lock.location,
                "use a constant outside [-2^31, 2^31), or a hashtextextended fixed name",
                locks=(lock.id, *(f.id for f in hashtext_families)),
            )


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
                if first is not None and first.fixed and first.text
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
