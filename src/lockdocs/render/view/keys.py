"""How keys are built: the advisory key constructions, each with the locks built that way."""

from __future__ import annotations

from dataclasses import dataclass

from lockdocs import model as m
from lockdocs.render.escape import Link
from lockdocs.render.view.base import Context
from lockdocs.render.words import CATEGORIES, CATEGORY_ORDER, explain, key_category, key_expression


@dataclass(frozen=True)
class KeyMemberView:
    """One advisory lock under its key construction (keys.md.j2)."""

    lock: Link
    sql: str
    value: int | None
    tag: tuple[int, int, int] | None
    pair: tuple[int, int] | None
    prefix: str | None
    parts: tuple[str, ...]
    cardinality: int | None
    constant_name: str | None
    constant_bytes: str | None
    outside_int32: bool


@dataclass(frozen=True)
class KeyGroupView:
    """One way keys are built, with the locks built that way (keys.md.j2)."""

    number: int
    anchor: str
    function: str | None  # hashtextextended | hashtext | None
    shape: str  # the words after the function
    explanation: str
    members: tuple[KeyMemberView, ...]


def key_groups(ctx: Context) -> tuple[tuple[KeyGroupView, ...], dict[str, KeyGroupView]]:
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
        members = tuple(key_member(ctx, lk, has_hashtext) for lk in locks)
        view = KeyGroupView(
            number=len(groups) + 1,
            anchor=anchor,
            function=function,
            shape=shape,
            explanation=explain(cat, locks, has_hashtext),
            members=members,
        )
        groups.append(view)
        for lk in locks:
            by_lock[lk.id] = view
    return tuple(groups), by_lock


def key_member(ctx: Context, lock: m.Lock, has_hashtext: bool) -> KeyMemberView:
    """One lock's line under its key construction."""
    key = lock.key
    assert key is not None
    kt = key.text
    outside = key.value is not None and not -(2**31) <= key.value < 2**31
    return KeyMemberView(
        lock=ctx.lock_link(lock.id),
        sql=key_expression(key),
        value=key.value if key.construction not in ("int4pair", "constant") else None,
        tag=key.tag,
        pair=key.pair,
        prefix=kt.prefix if kt else None,
        parts=kt.parts if kt else (),
        cardinality=kt.cardinality if kt else None,
        constant_name=key.constant_name,
        constant_bytes=key.constant_bytes,
        outside_int32=outside and key.construction == "constant" and has_hashtext,
    )
