"""How keys are built: the advisory key constructions, the locks built each way, and what the
key checks (LD101-LD105) found, in words."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.grammar import an
from lockdocs.render.escape import Link
from lockdocs.render.view.base import PageContext
from lockdocs.render.words import CATEGORIES, CATEGORY_ORDER, key_category
from lockdocs.rules.keyrules import collision_odds


@dataclass(frozen=True)
class VerdictView:
    """One key check's outcome for a construction: `ok` (checked, nothing found), or a finding
    an exception waives (`exception`), or one `lockdocs check` reports."""

    text: str
    ok: bool
    exception: Link | None
    issue: Link | None


@dataclass(frozen=True)
class KeyGroupView:
    """One way keys are built, with the locks built that way and the checks' verdicts."""

    number: int
    anchor: str
    function: str | None  # hashtextextended | hashtext | None
    shape: str  # the words after the function
    locks: tuple[Link, ...]
    verdicts: tuple[VerdictView, ...]


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def _verdict(
    ctx: PageContext, code: str, members: list[m.Lock], ok: str, found: str
) -> VerdictView:
    ids = {lk.id for lk in members}
    hits = [d for d in ctx.diags if d.code == code and ids & set(d.locks)]
    if not hits:
        return VerdictView(ok, True, None, None)
    waiver = ctx.waiver_of(hits[0].waived_by) if all(d.waived_by for d in hits) else None
    return VerdictView(
        found,
        False,
        ctx.exception_link(waiver) if waiver else None,
        ctx.issue(waiver.issue) if waiver and waiver.issue else None,
    )


def _verdicts(
    ctx: PageContext, cat: str, locks: list[m.Lock], has_hashtext: bool
) -> list[VerdictView]:
    n = len(locks)
    out: list[VerdictView] = []
    if cat == "application-fixed" and any(
        lk.key is not None and lk.key.value is None for lk in locks
    ):
        names = sorted({lk.key.algorithm or "?" for lk in locks if lk.key and lk.key.value is None})
        out.append(
            VerdictView(
                "Its value is not computed here: the hash "
                + ", ".join(names)
                + " is the application's own",
                True,
                None,
                None,
            )
        )
    elif cat.endswith("-fixed") or cat == "constant":
        values = "its value equals" if n == 1 else "their values equal"
        who = "the application" if cat.startswith("application-") else "Postgres"
        computed = "Its value" if n == 1 else "Their values"
        agree = "equals" if n == 1 else "equal"
        ok = f"{computed}, computed as {who} computes {_plural(n, 'it', 'them')}, {agree} no other key here"
        if (
            cat == "constant"
            and has_hashtext
            and all(
                lk.key is not None
                and lk.key.value is not None
                and not -(2**31) <= lk.key.value < 2**31
                for lk in locks
            )
        ):
            ok = (
                f"Above the 32-bit range, so no hashtext key can equal "
                f"{_plural(n, 'it', 'them')}; {values} no other key here"
            )
        out.append(_verdict(ctx, "LD104", locks, ok, "Equal to another key here"))
    if cat.endswith("-prefix"):
        out.append(
            _verdict(
                ctx,
                "LD102",
                locks,
                "No prefix starts another, so no family can build another family's text",
                "One prefix starts another, so two families can build the same text",
            )
        )
    if cat.endswith("-bare") or cat == "integer":
        out.append(
            _verdict(
                ctx,
                "LD101",
                locks,
                "",
                "Nothing marks the family: an equal id of another family is the same key"
                if cat == "integer"
                else "No family prefix: another family that hashes the same text gets the same key",
            )
        )
    narrow = [
        lk
        for lk in locks
        if lk.key is not None
        and (
            (cat.startswith("application-") and lk.key.bits <= 32 and not cat.endswith("-fixed"))
            or (cat == "int4pair" and _hashed_half(lk.key))
        )
    ]
    if narrow:
        out.append(
            _verdict(ctx, "LD103", narrow, "", "32 bits: such keys collide far sooner than 64 bits")
        )
    if cat.startswith("hashtext-"):
        share = (
            f"these {n} families share one space of 2^32 keys"
            if n > 1
            else "its keys share one space of 2^32 keys with every hashtext key"
        )
        odds = ""
        cards = [lk.key.text.cardinality for lk in locks if lk.key and lk.key.text]
        if cards and all(cards):
            total = sum(c for c in cards if c)
            odds = f"; with {total:,} keys live at once, a collision has {an(f'{collision_odds(total, 32):.2%}')} chance"
        out.append(_verdict(ctx, "LD103", locks, "", f"32 bits: {share}{odds}"))
    if cat == "int4pair":
        out.append(
            _verdict(
                ctx,
                "LD105",
                locks,
                "Each pair namespace belongs to one family",
                "Two families share a pair namespace",
            )
        )
    return [v for v in out if v.text]


def _hashed_half(key: m.Key) -> bool:
    """Does one half of a pair key hash a family of texts (32 bits)?"""
    return any(isinstance(h, m.KeyText) and not h.fixed for h in (key.first, key.second))


def key_groups(ctx: PageContext) -> tuple[tuple[KeyGroupView, ...], dict[str, KeyGroupView]]:
    """The key constructions in a fixed order, and each advisory lock's group."""
    buckets: dict[str, list[m.Lock]] = {}
    for lock in ctx.model.locks.values():
        if lock.key is not None:
            buckets.setdefault(key_category(lock.key), []).append(lock)
    has_hashtext = any(c.startswith("hashtext-") for c in buckets)
    groups: list[KeyGroupView] = []
    by_lock: dict[str, KeyGroupView] = {}
    for cat in CATEGORY_ORDER:
        locks = buckets.get(cat)
        if not locks:
            continue
        function, shape, anchor = CATEGORIES[cat]
        view = KeyGroupView(
            number=len(groups) + 1,
            anchor=anchor,
            function=function,
            shape=shape,
            locks=tuple(ctx.lock_link(lk.id) for lk in locks),
            verdicts=tuple(_verdicts(ctx, cat, locks, has_hashtext)),
        )
        groups.append(view)
        for lk in locks:
            by_lock[lk.id] = view
    return tuple(groups), by_lock
