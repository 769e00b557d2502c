"""Resolving locks.yaml's `rules:` (one check each, naming declared locks and transaction
kinds) and `exceptions:`, whose rule codes are checked against the rule catalog, loaded only
when there are exceptions.
"""

from __future__ import annotations

from typing import Any

from lockdocs import model as m
from lockdocs.project.state import Resolver, did_you_mean


def resolve_rules(
    rv: Resolver, locks: dict[str, m.Lock], transactions: dict[str, m.TransactionKind]
) -> dict[str, m.Rule]:
    out: dict[str, m.Rule] = {}
    checks = ("first", "before", "sorted", "scope", "order", "lock_before_write")
    for rid, raw in (rv.data.get("rules") or {}).items():
        base = ("rules", rid)
        present = [c for c in checks if c in raw]
        if len(present) > 1:
            rv.err(
                "LD003",
                rv.ld.loc(base, key=True),
                f"rule '{rid}' gives several checks: " + ", ".join(present),
                "a rule has one check; split it into several rules",
            )
        check = present[0] if present else None
        params: dict[str, Any] = dict(raw[check]) if check else {}
        if check in ("first", "sorted", "lock_before_write"):
            rv.lock_ref(rv.ld, (*base, check, "lock"), params["lock"], locks)
        if check == "first" and params.get("mode") and params["lock"] in locks:
            rv.mode_ok(rv.ld, (*base, check), locks[params["lock"]], params["mode"])
        if check == "first":
            for i, t in enumerate(params.get("transactions") or []):
                if t not in transactions:
                    rv.err(
                        "LD004",
                        rv.ld.loc((*base, check, "transactions", i)),
                        f"unknown transaction kind '{t}'",
                        did_you_mean(t, list(transactions)),
                    )
        if check == "before":
            for k in ("first", "then"):
                rv.lock_ref(rv.ld, (*base, check, k), params[k], locks)
        if check == "order":
            seen: dict[str, int] = {}
            for li, level in enumerate(params["levels"]):
                for ji, lid in enumerate(level):
                    p = (*base, check, "levels", li, ji)
                    if not rv.lock_ref(rv.ld, p, lid, locks):
                        continue
                    if lid in seen:
                        rv.err(
                            "LD506",
                            rv.ld.loc(p),
                            f"lock '{lid}' stands in levels {seen[lid] + 1} and {li + 1}",
                            "a lock has one place in the written order",
                        )
                    seen[lid] = li
            params["levels"] = tuple(tuple(level) for level in params["levels"])
        for k, v in list(params.items()):
            if isinstance(v, list):
                params[k] = tuple(v)
        out[rid] = m.Rule(
            id=rid,
            title=raw["title"],
            location=rv.ld.loc(base, key=True),
            check=check,
            params=tuple(sorted(params.items())),
            text=raw.get("text"),
            issues=tuple(raw.get("issues") or ()),
            examples=tuple(
                m.Example(str(ex["code"]), ex.get("title"), ex.get("language"))
                for ex in raw.get("example") or ()
            ),
        )
    return out


def resolve_waivers(
    rv: Resolver, rules: dict[str, m.Rule], paths: dict[str, m.Path], locks: dict[str, m.Lock]
) -> tuple[m.Waiver, ...]:
    exceptions = rv.data.get("exceptions") or []
    registry: dict[str, object] = {}
    if exceptions:
        # The lazy boundary of the rule catalog: only exceptions name rule codes to check.
        from lockdocs.rules.catalog import load_all

        registry = dict(load_all())
    out: list[m.Waiver] = []
    for i, raw in enumerate(exceptions):
        base = ("exceptions", i)
        rule = raw["rule"]
        if rule not in rules and rule not in registry:
            rv.err(
                "LD004",
                rv.ld.loc((*base, "rule")),
                f"unknown rule '{rule}'",
                did_you_mean(rule, [*rules, *registry]),
            )
        pid = raw.get("path")
        if pid is not None and pid not in paths:
            rv.err(
                "LD004",
                rv.ld.loc((*base, "path")),
                f"unknown path '{pid}'",
                did_you_mean(pid, list(paths)),
            )
        lid = raw.get("lock")
        if lid is not None:
            rv.lock_ref(rv.ld, (*base, "lock"), lid, locks)
        out.append(
            m.Waiver(
                index=i,
                rule=rule,
                why=raw["why"],
                location=rv.ld.loc(base),
                path=pid,
                lock=lid,
                issue=raw.get("issue"),
                title=raw.get("title"),
                branch=raw.get("branch"),
                taker=raw.get("taker"),
            )
        )
    return tuple(out)
