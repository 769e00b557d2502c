"""The scan against the declarations: findings (LD701-LD708) and coverage.

A declared name (a taker, a name in its `via`, a name in a take step's `via`) is matched with
every scanned statement that answers to it: a sqlc query name, a SQL function, or the source
function (or constant) that holds a literal, by any dotted suffix. A found lock belongs to a
declared lock by its table (row and table locks) or its key construction (advisory locks).
Findings in the code can be waived there: `-- lockdocs: ignore LD7xx reason` in the SQL, or
`# lockdocs:` / `// lockdocs:` on the line above a Python or Go statement.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.grammar import an
from lockdocs.scan.collect import Item, ScanResult, same_table
from lockdocs.scan.decls import (
    SQL_KINDS,
    Coverage,
    Decl,
    LockCoverage,
    declarations,
    describe_lock,
    location_of,
    matches_shape,
    plain_name,
    same_via,
    statement_of,
    tables_of,
)
from lockdocs.scan.found import Site
from lockdocs.scan.howtaken import check_modes
from lockdocs.scan.keyshape import describe, key_differences
from lockdocs.scan.waiving import Findings, site_key


class Comparison(Findings):
    def __init__(self, model: m.Model, scan: ScanResult) -> None:
        self.model = model
        self.scan = scan
        self.takers, self.steps = declarations(model)
        self.names = scan.names()
        self.found: list[Diagnostic] = []
        self.sources = any(fs.kind in ("python", "go") for _, fs in scan.files)
        # lock id -> every name declared for it
        self.declared: dict[str, set[str]] = {
            lid: {
                plain_name(n)
                for d in [*self.takers.get(lid, []), *self.steps.get(lid, [])]
                for n in d.names
            }
            for lid in model.locks
        }
        # an unread statement -> the declarations that name it (not checked, or only partly)
        self.unchecked: dict[tuple[str, int, int], list[tuple[str, bool]]] = {}
        self.by_site: dict[tuple[str, int, int], list[Item]] = {}
        self.by_name: dict[str, list[Item]] = {}
        for it in scan.items:
            self.by_site.setdefault(site_key(it.file, it.site), []).append(it)
            if it.site.name:
                self.by_name.setdefault(it.site.name, []).append(it)
        self.locks = {lid: lk for lid, lk in model.locks.items() if lk.kind != "memory"}
        self.file_scans = dict(scan.files)
        # Candidate locks by the last part of their table, and the advisory ones: a found
        # lock is compared with these only.
        self.by_table: dict[str, list[str]] = {}
        self.advisory = [lid for lid, lk in self.locks.items() if lk.kind == "advisory"]
        for lid, lk in self.locks.items():
            for t in tables_of(lk):
                self.by_table.setdefault(t.rsplit(".", 1)[-1], []).append(lid)

    # -- what a name finds ------------------------------------------------------------------------

    def sites_named(self, names: Iterable[str]) -> list[tuple[str, Site]]:
        out: dict[tuple[str, int, int], tuple[str, Site]] = {}
        for n in names:
            for rel, site in self.names.get(plain_name(n), ()):
                out.setdefault(site_key(rel, site), (rel, site))
        return [out[k] for k in sorted(out)]

    def items_of(self, sites: list[tuple[str, Site]]) -> list[Item]:
        return [it for rel, s in sites for it in self.by_site.get(site_key(rel, s), [])]

    # -- the declarations' side -------------------------------------------------------------------

    def check_decl(
        self, d: Decl, lock: m.Lock, cov: LockCoverage | None, group: list[Decl] | None = None
    ) -> None:
        """One declaration against the code it names; `group`: several take steps of one path
        through this via, matched to its statements in order."""
        sites = self.sites_named(d.names)
        items = self.items_of(sites)
        of_lock = [
            it for it in items if matches_shape(it, lock) is not False and it.lock.kind == lock.kind
        ]
        what = d.names[0] if d.taker else " -> ".join(d.names)
        unread = [(rel, s) for rel, s in sites if s.unread]
        for rel, s in unread:
            label = f"{'taker' if d.taker else 'via'} '{what}' of lock '{lock.id}'"
            self.unchecked.setdefault(site_key(rel, s), []).append((label, bool(of_lock)))
        if unread and not of_lock:
            if cov is not None and d.taker is not None:
                cov.unchecked.append(d.taker.name)
            return  # the lines that would say are unread: LD709/LD712 there says so
        if of_lock:
            if cov is not None:
                cov.takers_found += 1
            if group is None or len(group) == 1:
                check_modes(self, d, lock, of_lock)
            elif len(group) == len(of_lock):
                ordered = sorted(of_lock, key=lambda it: (it.file, it.lock.line, it.lock.column))
                for step, it in zip(group, ordered, strict=True):
                    check_modes(self, step, lock, [it])
            else:  # as many takes as statements or not: each mode must be one the steps declare
                check_modes(self, d, lock, of_lock, {x.mode for x in group if x.mode})
            return
        if d.taker is None:
            taker_names = {n for t in self.takers.get(lock.id, []) for n in t.names}
            if set(d.names) & taker_names:
                return  # the taker's own check speaks for it
            if not sites:
                self.via_names_nothing(d, lock)
                return
        elif cov is not None:
            cov.missing.append(d.taker.name)
        same_kind = [it for it in items if it.lock.kind == lock.kind]
        if same_kind:
            self.mismatch(d, lock, same_kind)
            return
        if sites:
            rel, site = sites[0]
            self.add(
                "LD701",
                f"{'taker' if d.taker else 'via'} '{what}' of lock '{lock.id}' is found at "
                f"{rel}:{site.line}, but that code takes no {lock.kind} lock",
                d.location,
                f"the code no longer takes '{lock.id}': remove the declaration, or restore the lock",
                locks=(lock.id,),
                takers=d.names,
            )
            return
        assert d.taker is not None
        t = d.taker
        if not (t.kind in SQL_KINDS or t.via or (self.sources and t.kind != "transaction-kind")):
            return  # a function whose source is not scanned: coverage counts it, no finding
        looked = ", ".join(f"'{n}'" for n in d.names)
        self.add(
            "LD701",
            f"taker '{t.name}' of lock '{lock.id}' names nothing in the scanned code "
            f"(looked for {looked})",
            d.location,
            "the query or function is gone or renamed: update taken_by (and the paths' via), "
            "or add the file that defines it to code:",
            details=("scanned: " + ", ".join(self.scan.patterns),) if self.scan.patterns else (),
            locks=(lock.id,),
            takers=d.names,
        )

    def via_names_nothing(self, d: Decl, lock: m.Lock) -> None:
        """LD701 for a take step whose via names nothing scanned: a typo, or code gone. With no
        Python or Go scanned, a via may name a function of a source that is not read (as a
        taker of kind function may): it is reported when it names a SQL taker, or comes close
        to a name the scanned code has (a typo)."""
        sql_names = {
            n
            for ds in self.takers.values()
            for t in ds
            if t.taker and t.taker.kind in SQL_KINDS
            for n in t.names
        }
        known = sorted(self.names)
        close = [
            c for n in d.names for c in difflib.get_close_matches(plain_name(n), known, 1, 0.85)
        ]
        if not self.sources and not set(d.names) & sql_names and not close:
            return  # maybe a function of a source that is not scanned; a near miss is a typo
        looked = ", ".join(f"'{n}'" for n in d.names)
        self.add(
            "LD701",
            f"via {looked} of a step of path '{d.path}' taking lock '{lock.id}' names nothing "
            "in the scanned code",
            d.location,
            (f"did you mean '{close[0]}'? " if close else "")
            + "the query or function is gone or renamed, or the via has a typo: fix the step's "
            "via, or add the file that defines it to code:",
            details=("scanned: " + ", ".join(self.scan.patterns),) if self.scan.patterns else (),
            locks=(lock.id,),
            takers=d.names,
        )

    def mismatch(self, d: Decl, lock: m.Lock, items: list[Item]) -> None:
        first = items[0]
        if lock.kind in ("row", "table"):
            tables = sorted({it.lock.table or "" for it in items})
            self.add(
                "LD704",
                f"{statement_of(first)} is declared to take '{lock.id}' ({lock.table}), but it locks "
                f"rows of {', '.join(tables)}",
                location_of(first),
                f"fix the table in the SQL, or the table: of '{lock.id}' (or its taker) in "
                "locks.yaml",
                details=(f"declared at {d.location}",),
                locks=(lock.id,),
                item=first,
            )
            return
        assert lock.key is not None
        for it in items:
            diffs = key_differences(it.lock.shape, lock.key) if it.lock.shape else None
            if diffs:
                self.add(
                    "LD705",
                    f"{statement_of(it)} is declared to take '{lock.id}', but builds its key "
                    f"differently: {'; '.join(diffs)}",
                    location_of(it),
                    f"build the key as '{lock.id}' declares it, or fix the key: of '{lock.id}'",
                    details=(f"key as written: {it.lock.key}", f"declared at {d.location}"),
                    locks=(lock.id,),
                    item=it,
                )
                return

    # -- the code's side --------------------------------------------------------------------------

    def check_items(self, cov: dict[str, LockCoverage]) -> int:
        """Every found lock against the declarations; returns how many locking statements
        belong to no declared lock."""
        counted: set[tuple[str, tuple[str, int, int]]] = set()
        unmatched: set[tuple[str, int, int]] = set()
        for it in self.scan.items:
            key = site_key(it.file, it.site)
            aliases = set(it.site.aliases)
            named = [
                lid
                for lid, lk in self.locks.items()
                if lk.kind == it.lock.kind
                and aliases
                and not aliases.isdisjoint(self.declared[lid])
            ]
            candidates = (
                self.advisory
                if it.lock.kind == "advisory"
                else self.by_table.get((it.lock.table or "").rsplit(".", 1)[-1], [])
            )
            shaped = [
                lid for lid in dict.fromkeys(candidates) if matches_shape(it, self.locks[lid])
            ]
            opaque = it.lock.kind == "advisory" and any(
                matches_shape(it, self.locks[lid]) is None for lid in named
            )
            mine = [lid for lid in named if lid in shaped or opaque]
            for lid in mine:
                if (lid, key) not in counted:
                    counted.add((lid, key))
                    cov[lid].statements += 1
                    cov[lid].statements_declared += 1
            if mine:
                continue
            if shaped:
                lid = shaped[0]
                if (lid, key) in counted:
                    continue
                counted.add((lid, key))
                cov[lid].statements += 1
                others = ", ".join(f"'{x}'" for x in shaped)
                d = self.add(
                    "LD702",
                    f"{statement_of(it)} takes lock {others} ({describe_lock(it)}), but no "
                    "declaration names it",
                    location_of(it),
                    (
                        f"add '{it.site.name}' to taken_by of '{lid}' (or to a path's via), or "
                        + self.waive_here(it, "LD702")
                        if it.site.name
                        else "name the statement (a sqlc '-- name:' comment, or a function) and "
                        "declare it as a taker, or " + self.waive_here(it, "LD702")
                    ),
                    locks=tuple(shaped),
                    item=it,
                )
                if d.waived_by:
                    cov[lid].statements_waived += 1
                continue
            if named and not any(
                matches_shape(other, self.locks[lid])
                for other in self.by_name.get(it.site.name or "", [])
                for lid in named
            ):
                continue  # none of its code takes the lock it is declared for: check_decl says it
            if it.lock.kind == "advisory":
                unmatched.add(key)
                assert it.lock.shape is not None
                self.add(
                    "LD706",
                    f"{statement_of(it)} takes the advisory key {it.lock.key}, which matches no "
                    f"declared lock: {describe(it.lock.shape)}",
                    location_of(it),
                    "declare an advisory lock with this key construction and this statement "
                    "as its taker, or build the key the way a declared lock does",
                    item=it,
                )
            elif not it.lock.implicit:
                unmatched.add(key)
                table = it.lock.table or ""
                other = [
                    f"'{lid}' on it is {an(self.locks[lid].kind)} lock"
                    for lid in dict.fromkeys(self.by_table.get(table.rsplit(".", 1)[-1], []))
                    if any(same_table(table, t) for t in tables_of(self.locks[lid]))
                ]
                also = f" ({'; '.join(other)})" if other else ""
                self.add(
                    "LD702",
                    f"{statement_of(it)} takes {describe_lock(it)}, and no declared "
                    f"{it.lock.kind} lock is on {table}{also}",
                    location_of(it),
                    f"declare {an(it.lock.kind)} lock with table: {table} and this "
                    "statement as its taker, or " + self.waive_here(it, "LD702"),
                    item=it,
                )
        return len(unmatched)

    def run(self) -> Coverage:
        self.used: set[tuple[str, int, int]] = set()
        cov = {lid: LockCoverage() for lid in self.locks}
        unmatched = self.check_items(cov)
        for lid, lock in self.locks.items():
            for d in self.takers.get(lid, []):
                cov[lid].takers += 1
                self.check_decl(d, lock, cov[lid])
            for group in same_via(self.steps.get(lid, [])):
                self.check_decl(group[0], lock, None, group)
        self.unread_findings()
        self.waiver_findings()
        return Coverage(
            self.scan.patterns,
            len(self.scan.files),
            cov,
            unmatched,
            len(self.scan.unread()),
        )


def compare(model: m.Model, scan: ScanResult) -> tuple[list[Diagnostic], Coverage]:
    c = Comparison(model, scan)
    coverage = c.run()
    return c.found, coverage
