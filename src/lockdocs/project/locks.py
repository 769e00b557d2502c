"""Resolving locks.yaml's `locks:`: each lock's kind, modes, key, scope, instances, backends
and takers, the parent a lock's instances belong to, and `replicas:` (which names backends).
"""

from __future__ import annotations

from typing import Any

from lockdocs import model as m
from lockdocs.grammar import an
from lockdocs.keys import resolve_key
from lockdocs.model.columns import key_columns, part_column
from lockdocs.modes import modes_for_kind
from lockdocs.project.state import Resolver, did_you_mean, via

# The lock's fields read as they are written (model.locks.AS_DECLARED).
_AS_DECLARED = m.as_declared(m.Lock)


def resolve_locks(rv: Resolver) -> dict[str, m.Lock]:
    out: dict[str, m.Lock] = {}
    for lid, raw in rv.data.get("locks", {}).items():
        base = ("locks", lid)
        loc = rv.ld.loc(base, key=True)
        kind = raw["kind"]
        valid = modes_for_kind(kind)
        modes: list[tuple[str, str]] = []
        for mode, text in (raw.get("modes") or {}).items():
            if mode not in valid:
                rv.err(
                    "LD006",
                    rv.ld.loc((*base, "modes", mode), key=True),
                    f"{an(kind)} lock has no mode '{mode}'",
                    "modes of a " + kind + " lock: " + ", ".join(valid),
                )
            modes.append((mode, str(text)))
        if not modes:
            modes = [(valid[-1], "")]
        key = None
        if "key" in raw:
            if kind != "advisory":
                rv.err(
                    "LD003",
                    rv.ld.loc((*base, "key"), key=True),
                    f"{an(kind)} lock has no advisory key",
                    "remove key:, or make the lock kind: advisory",
                )
            else:
                key, key_diags = resolve_key(raw["key"], rv.ld, (*base, "key"))
                rv.diags += key_diags
        elif kind == "advisory":
            rv.err(
                "LD003",
                loc,
                f"advisory lock '{lid}' declares no key",
                "add key: with hashtextextended, hashtext, constant, integer, application "
                "or int4pair",
            )
        if kind in ("row", "table") and not raw.get("table"):
            rv.err("LD003", loc, f"{kind} lock '{lid}' names no table", "add table: schema.name")
        scope = lock_scope(rv, lid, kind, raw)
        singleton = raw.get("singleton")
        if singleton is None:
            singleton = bool(key is not None and key.one_lock) or kind == "table"
        takers = []
        for i, t in enumerate(raw.get("taken_by") or []):
            tmode = t.get("mode")
            if tmode and tmode not in valid:
                rv.err(
                    "LD006",
                    rv.ld.loc((*base, "taken_by", i, "mode")),
                    f"{an(kind)} lock has no mode '{tmode}'",
                    "modes of a " + kind + " lock: " + ", ".join(valid),
                )
            takers.append(
                m.Taker(
                    name=t["name"],
                    kind=t.get("kind"),
                    mode=tmode,
                    via=via(t.get("via")),
                    called_by=tuple(t.get("called_by") or ()),
                    module=t.get("module"),
                    note=t.get("note"),
                    location=rv.ld.loc((*base, "taken_by", i)),
                )
            )
        backends = tuple(
            m.Backend(
                name,
                b["kind"],
                b.get("table"),
                b.get("mode"),
                b.get("how"),
                backend_scope(rv, lid, name, b, scope),
            )
            for name, b in (raw.get("backends") or {}).items()
        )
        for b in backends:
            if b.mode and b.mode not in modes_for_kind(b.kind):
                rv.err(
                    "LD006",
                    rv.ld.loc((*base, "backends", b.name, "mode")),
                    f"{an(b.kind)} lock has no mode '{b.mode}'",
                    "modes: " + ", ".join(modes_for_kind(b.kind)),
                )
        out[lid] = m.Lock(
            id=lid,
            **{name: raw.get(name) for name in _AS_DECLARED},
            kind=kind,
            scope=scope,
            location=loc,
            key=key,
            modes=tuple(modes),
            mode_text=raw.get("mode_text"),
            options=tuple(raw.get("options") or ()),
            queue=bool(raw.get("queue", False)),
            referenced_by_foreign_keys=bool(
                raw.get("referenced_by_foreign_keys", False) or raw.get("references")
            ),
            references=resolve_references(rv, lid, kind, raw),
            singleton=bool(singleton),
            instance_order=(raw.get("instances") or {}).get("order"),
            within=(raw.get("instances") or {}).get("within"),
            columns=instance_columns(raw, key, singleton),
            cluster_wide=cluster_wide(rv, lid, kind, raw),
            backends=backends,
            takers=tuple(takers),
            issues=tuple(raw.get("issues") or ()),
        )
    return out


def instance_columns(raw: dict[str, Any], key: m.Key | None, singleton: object) -> tuple[str, ...]:
    """The columns one instance is named by: `instances: {key: [...]}`, else the parts of a
    family key when each part names a column (`account_id::text`); () for prose."""
    if singleton:
        return ()
    declared = (raw.get("instances") or {}).get("key")
    if declared:
        return tuple(str(c).strip().lower() for c in declared)
    if key is not None and key.text is not None and not key.text.fixed:
        return key_columns(key.text.parts)
    return ()


def check_parents(rv: Resolver, locks: dict[str, m.Lock]) -> None:
    """instances: {within: P}: P is another declared lock with instances of its own, and
    following within: from any lock never comes back to it. instances: {key: [...]} names
    columns."""
    for lid, lock in locks.items():
        declared = ((rv.data.get("locks") or {}).get(lid) or {}).get("instances") or {}
        for n, col in enumerate(declared.get("key") or ()):
            if part_column(str(col)) is None:
                rv.err(
                    "LD003",
                    rv.ld.loc(("locks", lid, "instances", "key", n)),
                    f"'{col}' is not a column name",
                    "name the column as the rows a loop walks carry it: letters, digits and "
                    "'_', e.g. account_id",
                )
        if lock.instance_order == "none":
            rv.err(
                "LD003",
                rv.ld.loc(("locks", lid, "instances", "order")),
                f"lock '{lid}' declares its instance order as 'none', which is the word for "
                "a loop whose iterations come in no order",
                "name the order the code sorts by, e.g. order: ascending id, or remove "
                "order: if the code has none",
            )
        parent = lock.within
        if parent is None:
            continue
        where = ("locks", lid, "instances", "within")
        if not rv.lock_ref(rv.ld, where, parent, locks):
            continue
        if lock.singleton:
            rv.err(
                "LD003",
                rv.ld.loc(where),
                f"'{lid}' is one lock for the whole database; it has no instances to "
                "belong to a parent",
                "remove within:, or the fixed key / singleton: that makes it one lock",
            )
        elif locks[parent].singleton:
            rv.err(
                "LD003",
                rv.ld.loc(where),
                f"'{parent}' is one lock for the whole database, so it already keeps "
                "every holder apart; its instances cannot own others",
                "remove within:; holding a singleton in conflicting modes is a gate anyway",
            )
        seen = [lid]
        while parent is not None and parent in locks and parent not in seen:
            seen.append(parent)
            parent = locks[parent].within
        if parent == lid:
            rv.err(
                "LD003",
                rv.ld.loc(where),
                "within: comes back to '" + lid + "': " + " -> ".join([*seen, lid]),
                "each instance belongs to an instance of another lock; break the loop",
            )


def lock_scope(rv: Resolver, lid: str, kind: str, raw: dict[str, Any]) -> str:
    """A memory lock is process-local unless it says session; only memory locks can be."""
    scope = raw.get("scope")
    if scope is None:
        return "process" if kind == "memory" else "transaction"
    where = rv.ld.loc(("locks", lid, "scope"))
    if scope == "process" and kind != "memory":
        rv.err(
            "LD003",
            where,
            f"{an(kind)} lock lives in the database, not in one process",
            "scope: process is for kind: memory; use transaction or session",
        )
    if scope == "transaction" and kind == "memory":
        rv.err(
            "LD003",
            where,
            "a memory lock is not released by a commit, so it is not transaction-scoped",
            "use scope: process (one server process, the default) or session (a lock "
            "every process shares)",
        )
    return str(scope)


def backend_scope(rv: Resolver, lid: str, name: str, raw: dict[str, Any], scope: str) -> str:
    declared = raw.get("scope")
    kind = raw["kind"]
    if declared is None:
        if kind == "memory":
            return scope if scope in ("process", "session") else "process"
        return scope if scope in ("transaction", "session") else "transaction"
    where = rv.ld.loc(("locks", lid, "backends", name, "scope"))
    if (declared == "process") != (kind == "memory") and declared != "session":
        rv.err(
            "LD003",
            where,
            f"{an(kind)} lock cannot be {declared}-scoped",
            "memory locks are process or session; database locks transaction or session",
        )
    return str(declared)


def cluster_wide(rv: Resolver, lid: str, kind: str, raw: dict[str, Any]) -> bool:
    if raw.get("cluster_wide") and kind != "advisory":
        rv.err(
            "LD003",
            rv.ld.loc(("locks", lid, "cluster_wide"), key=True),
            f"{an(kind)} lock lives in one database; only an advisory key can name an object "
            "of the whole cluster",
            "remove cluster_wide:, or make the lock kind: advisory",
        )
    return bool(raw.get("cluster_wide", False))


def resolve_replicas(rv: Resolver, locks: dict[str, m.Lock]) -> tuple[tuple[str | None, int], ...]:
    raw = rv.data.get("replicas")
    if raw is None:
        return ()
    if isinstance(raw, int):
        return ((None, raw),)
    named = sorted({b.name for lock in locks.values() for b in lock.backends})
    for name in raw:
        if name not in named:
            rv.err(
                "LD004",
                rv.ld.loc(("replicas", name), key=True),
                f"no lock has a backend '{name}'",
                did_you_mean(name, named)
                if named
                else "give replicas: as one number when locks declare no backends:",
            )
    return tuple(sorted(raw.items()))


def resolve_references(
    rv: Resolver, lid: str, kind: str, raw: dict[str, Any]
) -> tuple[m.Reference, ...]:
    refs = raw.get("references") or ()
    if refs and kind != "row":
        rv.err(
            "LD003",
            rv.ld.loc(("locks", lid, "references"), key=True),
            f"{an(kind)} lock has no rows for a foreign key to reference",
            "references: belongs on a row lock; remove it here",
        )
    return tuple(m.Reference(r["table"], r.get("column")) for r in refs)
