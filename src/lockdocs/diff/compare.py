"""Compare two analysed sides: locks (renames told apart from a removal and an addition),
order edges, each path's acquisition sequence, findings, rules and exceptions. The result is
one JSON-ready dict that every output format only prints."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, assert_never

from lockdocs import model as m
from lockdocs.analysis.graph import build_graph
from lockdocs.api import analyse
from lockdocs.diagnostics import Severity, sort_diagnostics
from lockdocs.diff.findings import (
    compare_exceptions,
    compare_findings,
    compare_rules,
    still_waived,
)
from lockdocs.diff.sides import Side
from lockdocs.keys import key_sql
from lockdocs.rules.context import CheckContext

FAILING = (Severity.ERROR, Severity.WARNING)


def _lock_signature(lock: m.Lock) -> tuple[str, str] | None:
    """What makes a lock the same lock under another id: its key, else its table."""

    if lock.key is not None:
        return ("key", f"{lock.key.construction}|{key_sql(lock.key)}|{lock.key.value}")
    if lock.table:
        return ("table", lock.table)
    return None


def _renames(base: m.Model, head: m.Model) -> dict[str, tuple[str, str]]:
    """base id -> (head id, what matched), when exactly one removed and one added lock agree."""
    removed = [lid for lid in base.locks if lid not in head.locks]
    added = [lid for lid in head.locks if lid not in base.locks]
    out: dict[str, tuple[str, str]] = {}
    for lid in removed:
        lock = base.locks[lid]
        sig = _lock_signature(lock)
        if sig is None:
            continue
        olds = [x for x in removed if _lock_signature(base.locks[x]) == sig]
        news = [
            x
            for x in added
            if head.locks[x].kind == lock.kind and _lock_signature(head.locks[x]) == sig
        ]
        if len(olds) == 1 and len(news) == 1:
            what = "same key" if sig[0] == "key" else f"same table {sig[1]}"
            out[lid] = (news[0], what)
    return out


# A lock's text fields as declared (model.locks.AS_DECLARED) are compared without a list of
# their own, so a new one shows in the diff as it is added; these are left out: prose a reviewer
# reads in the YAML's own diff, too long for a row of the comment.
NOT_COMPARED = frozenset({"notes"})
_DECLARED = m.as_declared(m.Lock)


def _lock_facts(lock: m.Lock) -> dict[str, str]:
    takers = [f"{t.name} ({t.mode})" if t.mode else t.name for t in lock.takers]
    facts = {
        "title": lock.title,
        "kind": lock.kind,
        "scope": lock.scope,
        "key": key_sql(lock.key) if lock.key else "",
        "table": lock.table or "",
        "modes": ", ".join(lock.mode_names),
        "takers": ", ".join(takers),
    }
    for name in _DECLARED:
        if name not in facts and name not in NOT_COMPARED:
            facts[name] = getattr(lock, name) or ""
    return facts


def _lock_brief(lock: m.Lock) -> dict[str, Any]:
    facts = _lock_facts(lock)
    return {
        "id": lock.id,
        "title": lock.title,
        "kind": lock.kind,
        "key": facts["key"] or None,
        "table": lock.table,
        "modes": list(lock.mode_names),
    }


def _lock_changes(before: m.Lock, after: m.Lock) -> list[dict[str, str]]:
    a, b = _lock_facts(before), _lock_facts(after)
    return [{"field": k, "before": a[k], "after": b[k]} for k in a if a[k] != b[k]]


def _compare_locks(
    base: m.Model, head: m.Model, renames: dict[str, tuple[str, str]]
) -> dict[str, list[dict[str, Any]]]:
    renamed_to = {new for new, _ in renames.values()}
    added = [
        _lock_brief(lk)
        for lid, lk in head.locks.items()
        if lid not in base.locks and lid not in renamed_to
    ]
    removed = [
        _lock_brief(lk)
        for lid, lk in base.locks.items()
        if lid not in head.locks and lid not in renames
    ]
    renamed = [
        {
            "from": old,
            "to": new,
            "matched_by": what,
            "changes": _lock_changes(base.locks[old], head.locks[new]),
        }
        for old, (new, what) in sorted(renames.items())
    ]
    changed = []
    for lid, lock in head.locks.items():
        if lid in base.locks:
            changes = _lock_changes(base.locks[lid], lock)
            if changes:
                changed.append({"id": lid, "changes": changes})
    return {"added": added, "removed": removed, "renamed": renamed, "changed": changed}


def order_edges(model: m.Model, mapping: dict[str, str]) -> dict[tuple[str, str], list[str]]:
    """(held, wanted) -> the paths that create the edge, over every backend."""

    ctx = CheckContext(model)
    out: dict[tuple[str, str], set[str]] = {}
    for backend in ctx.backends:
        for e in build_graph(ctx, backend).edges:
            pair = (mapping.get(e.src, e.src), mapping.get(e.dst, e.dst))
            out.setdefault(pair, set()).add(e.path)
    return {pair: sorted(paths) for pair, paths in sorted(out.items())}


def _compare_edges(
    base: dict[tuple[str, str], list[str]], head: dict[tuple[str, str], list[str]]
) -> dict[str, list[dict[str, Any]]]:
    """Edges added and removed, and as context the unchanged edges among the locks they join."""

    def row(pair: tuple[str, str], paths: list[str]) -> dict[str, Any]:
        return {"src": pair[0], "dst": pair[1], "paths": paths}

    added = [p for p in head if p not in base]
    removed = [p for p in base if p not in head]
    nodes = {lock for pair in added + removed for lock in pair}
    context = [p for p in head if p in base and p[0] in nodes and p[1] in nodes]
    return {
        "added": [row(p, head[p]) for p in added],
        "removed": [row(p, base[p]) for p in removed],
        "context": [row(p, head[p]) for p in context],
    }


def acquisition_sequence(
    model: m.Model, path: m.Path, mapping: dict[str, str] | None = None
) -> list[str]:
    """The order a path takes its locks, one line per take, loops and branches indented.

    Read from the steps, not the flattened events: no line numbers and no doubled loop
    iterations, so two sides compare by what a reader sees.
    """
    names = mapping or {}

    def lock(lid: str) -> str:
        return names.get(lid, lid)

    def first_take(tx: str | None, indent: str) -> list[str]:
        kind = model.transactions.get(tx) if tx else None
        if kind is None or not kind.first_lock:
            return []
        return [f"{indent}{lock(kind.first_lock)} {kind.first_mode or 'exclusive'} (first in {tx})"]

    def walk(steps: tuple[m.Step, ...], indent: str, depth: int) -> list[str]:
        out: list[str] = []
        for s in steps:
            match s:
                case m.Take():
                    extra = " again" if s.again else ""
                    extra += f" [{s.backend}]" if s.backend else ""
                    out.append(f"{indent}{lock(s.lock)} {s.mode}{extra}")
                case m.Loop():
                    inner = walk(s.steps, indent + "  ", depth)
                    if inner:
                        order = (
                            f", {'no order' if s.order == 'none' else s.order}" if s.order else ""
                        )
                        out += [f"{indent}each of {s.label}{order}:", *inner]
                case m.Branches() if s.statement:
                    elements = ", ".join(f"{lock(t.lock)} {t.mode}" for t in s.statement)
                    out.append(f"{indent}in one statement, in no order: {elements}")
                case m.Branches():
                    for name, alt in s.alternatives:
                        inner = walk(alt, indent + "  ", depth)
                        if inner:
                            out += [f"{indent}if {name}:", *inner]
                case m.Run():
                    if s.path in model.paths and depth < 16:
                        inner = walk(model.paths[s.path].steps, indent + "  ", depth + 1)
                        if inner:
                            out += [f"{indent}run {s.path}:", *inner]
                case m.Begin():
                    out += [f"{indent}begin {s.transaction}", *first_take(s.transaction, indent)]
                case m.End():
                    if s.how != "leave_open":
                        out.append(f"{indent}{s.how}")
                case m.Release():
                    out.append(f"{indent}release {lock(s.lock)}")
                case m.Leaf():
                    pass  # a call, a call out or a write: no lock, not part of the order
                case _:
                    assert_never(s)
        return out

    lines = first_take(path.transaction, "") + walk(path.steps, "", 0)
    # A trailing commit says nothing about order.
    while lines and lines[-1] in ("commit", "rollback"):
        lines.pop()
    return lines


def _compare_paths(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def brief(model: m.Model, p: m.Path, seq: list[str]) -> dict[str, Any]:
        return {
            "id": p.id,
            "title": p.title,
            "file": p.file,
            "line": p.location.line,
            "acquisitions": seq,
        }

    added = [
        brief(head, p, acquisition_sequence(head, p))
        for pid, p in head.paths.items()
        if pid not in base.paths
    ]
    removed = [
        brief(base, p, acquisition_sequence(base, p, mapping))
        for pid, p in base.paths.items()
        if pid not in head.paths
    ]
    changed = []
    for pid, p in head.paths.items():
        if pid not in base.paths:
            continue
        before = acquisition_sequence(base, base.paths[pid], mapping)
        after = acquisition_sequence(head, p)
        if before != after:
            changed.append(
                {
                    "id": pid,
                    "title": p.title,
                    "file": p.file,
                    "line": p.location.line,
                    "reordered": sorted(before) == sorted(after),
                    "before": before,
                    "after": after,
                }
            )
    return {"added": added, "removed": removed, "changed": changed}


def blamed_paths(paths: dict[str, list[dict[str, Any]]]) -> frozenset[str]:
    """The paths a change added or reordered (else those it made take other locks): a new
    cycle's hint names one of them before a path the change left alone."""
    first = [p["id"] for p in paths["added"]]
    first += [p["id"] for p in paths["changed"] if p["reordered"]]
    return frozenset(first or [p["id"] for p in paths["changed"]])


def compare(base: Side, head: Side) -> dict[str, Any]:
    """The whole comparison as plain data: what every output format prints."""
    renames = _renames(base.model, head.model)
    mapping = {old: new for old, (new, _) in renames.items()}
    paths = _compare_paths(base.model, head.model, mapping)
    blame = blamed_paths(paths)
    if blame and any(d.code == "LD201" for d in head.findings):
        again = analyse(head.model, blame=blame)
        head = replace(head, findings=sort_diagnostics([*head.loaded, *again]))
    findings = compare_findings(base.findings, head.findings, mapping)
    failing = [
        f
        # A changed finding fails too when it now reaches a path it did not (a cycle the
        # change extends to a new path is a new way to deadlock there).
        for f in findings["new"]
        + findings["no_longer_waived"]
        + [c for c in findings["changed"] if c["new_paths"]]
        if not f["waived_by"] and Severity(f["severity"]) in FAILING
    ]
    result: dict[str, Any] = {
        "base": base.title,
        "head": head.title,
        # What each side is: a revision (with the commit it resolved to), a folder, or the
        # working tree; the outputs say which was compared.
        "sides": {"base": base.describe(), "head": head.describe()},
        "locks": _compare_locks(base.model, head.model, renames),
        "edges": _compare_edges(order_edges(base.model, mapping), order_edges(head.model, {})),
        "paths": paths,
        "findings": findings,
        "exceptions": compare_exceptions(base.model, head.model, mapping),
        "rules": compare_rules(base.model, head.model, mapping),
        "new_unwaived": len(failing),
        # Waived on both sides and unchanged: not a change, only counted.
        "unchanged_waived": still_waived(base.findings, head.findings, mapping),
    }
    result["changed"] = bool(summary_counts(result))
    result["summary"] = summary_line(result)
    return result


def count(n: int, word: str, plural: str = "") -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def summary_counts(result: dict[str, Any]) -> list[str]:
    """The non-zero counts, in reading order."""
    locks, edges, paths = result["locks"], result["edges"], result["paths"]
    findings, exceptions, rules = result["findings"], result["exceptions"], result["rules"]
    parts = [
        (len(locks["added"]), "lock", "", "added"),
        (len(locks["removed"]), "lock", "", "removed"),
        (len(locks["renamed"]), "lock", "", "renamed"),
        (len(locks["changed"]), "lock", "", "changed"),
        (len(edges["added"]), "order edge", "", "added"),
        (len(edges["removed"]), "order edge", "", "removed"),
        (len(paths["added"]), "path", "", "added"),
        (len(paths["removed"]), "path", "", "removed"),
        (len([p for p in paths["changed"] if p["reordered"]]), "path", "", "reordered"),
        (len([p for p in paths["changed"] if not p["reordered"]]), "path", "", "changed"),
        (len(rules["added"]), "rule", "", "added"),
        (len(rules["removed"]), "rule", "", "removed"),
        (len(rules["changed"]), "rule", "", "changed"),
        (len(exceptions["added"]), "exception", "", "added"),
        (len(exceptions["removed"]), "exception", "", "removed"),
        (len(findings["new"]), "new finding", "new findings", ""),
        (len(findings["no_longer_waived"]), "finding", "", "no longer waived"),
        (len(findings["changed"]), "finding", "", "changed"),
        (len(findings["fixed"]), "finding", "", "fixed"),
        (len(findings["newly_waived"]), "finding", "", "newly waived"),
    ]
    return [
        f"{count(n, word, plural)}{' ' + verb if verb else ''}"
        for n, word, plural, verb in parts
        if n
    ]


def summary_line(result: dict[str, Any]) -> str:
    counts = summary_counts(result)
    if not counts:
        return "no change to the locks, their order or the findings"
    line = ", ".join(counts)
    if result["new_unwaived"]:
        line += f"; {count(result['new_unwaived'], 'new unwaived finding')} to fix or waive"
    return line
