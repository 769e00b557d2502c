"""LD101-LD103: advisory key families. Every family has its own prefix, prefixes are
prefix-free, and 32-bit keys are flagged with their collision odds. The key helpers the other
key rules share (`keyclash.py`: LD104-LD106) are here too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from lockdocs.diagnostics import Diagnostic, Severity
from lockdocs.keys import family_prefix, key_sql
from lockdocs.model import Key, KeyText, Lock
from lockdocs.rules.context import CheckContext
from lockdocs.rules.finder import Finder
from lockdocs.rules.registry import Option, rule


def locks_example(head: str, body: str) -> dict[str, str]:
    return {"locks.yaml": "lockdocs: 1\npage: {title: Locks}\nlocks:\n" + head + body}


def advisory(ctx: CheckContext) -> list[tuple[Lock, Key]]:
    return [(lk, lk.key) for lk in ctx.model.locks.values() if lk.key is not None]


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
    example=locks_example(
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
def no_prefix(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    raw = [lk.id for lk, k in advisory(ctx) if k.construction == "integer"]
    for lock, key in advisory(ctx):
        if key.construction == "integer" and key.integer is not None:
            others = [r for r in raw if r != lock.id]
            verb = "does" if len(others) == 1 else "do"
            shared = f" (as {verb} {', '.join(others)}: equal ids are one lock)" if others else ""
            yield finding(
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
        yield finding(
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
    example=locks_example(
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
def prefix_free(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    fams = sorted(
        ((family_prefix(k), lk) for lk, k in advisory(ctx) if family_prefix(k)),
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
            yield finding(
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
    example=locks_example(
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
    options={
        "min_odds": Option(
            {"type": "number", "minimum": 0, "maximum": 1},
            0,
            "A family whose declared cardinality gives a smaller chance of a collision than "
            "this (0.01: one in a hundred) is not reported; one without a cardinality still "
            "is, since its odds are unknown.",
        )
    },
)
def hashtext_32(ctx: CheckContext, finding: Finder) -> Iterable[Diagnostic]:
    min_odds = finding.options["min_odds"]
    assert isinstance(min_odds, int | float)
    for lock, key in advisory(ctx):
        for what, kt, hint in _32_bit_families(key):
            n = kt.cardinality
            bits = key.bits if key.construction == "application" else 32
            if n and collision_odds(n, bits) < min_odds:
                continue
            odds = (
                f"; with {n:,} live keys the chance of a collision is {collision_odds(n, bits):.2%}"
                if n
                else "; declare cardinality: to see the collision odds"
            )
            yield finding(
                f"{what.format(lock=lock.id)}{odds}",
                lock.location,
                hint,
                locks=(lock.id,),
            )


def is_family(kt: KeyText | None) -> bool:
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
    if key.construction == "application" and is_family(key.text) and key.bits <= 32:
        assert key.text is not None
        out.append(
            (
                f"key of {{lock}} is {key.algorithm} ({key.bits} bits)",
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
