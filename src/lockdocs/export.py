"""The model as JSON: a documented contract that other tools and the tests rely on.

Objects have sorted keys; lists keep declaration order. See docs/export.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lockdocs import model as m
from lockdocs.analysis.budget import EVENT, Budget
from lockdocs.analysis.events import Event
from lockdocs.analysis.flatten import Flattener
from lockdocs.analysis.walkbase import Stop
from lockdocs.keys import key_sql

EXPORT_VERSION = 2


def _key_text(kt: m.KeyText | m.IntegerPart | int | None) -> Any:
    if kt is None or isinstance(kt, int):
        return kt
    if isinstance(kt, m.IntegerPart):
        return {"integer": {"of": kt.of, "bits": kt.bits}}
    return {
        "text": kt.text,
        "prefix": kt.prefix,
        "parts": list(kt.parts),
        "separator": kt.separator,
        "seed": kt.seed,
        "cardinality": kt.cardinality,
    }


def key_json(key: m.Key) -> dict[str, Any]:
    return {
        "construction": key.construction,
        "sql": key_sql(key),
        "space": key.space,
        "bits": key.bits,
        "input": _key_text(key.text) if key.text else None,
        "constant": (
            {"value": key.constant_value, "bytes": key.constant_bytes, "name": key.constant_name}
            if key.construction == "constant"
            else None
        ),
        "pair": (
            {"first": _key_text(key.first), "second": _key_text(key.second)}
            if key.construction == "int4pair"
            else None
        ),
        "integer": (
            {"of": key.integer.of, "bits": key.integer.bits} if key.integer is not None else None
        ),
        "function": key.function,
        "algorithm": key.algorithm,
        "multiplier": key.multiplier,
        "value": key.value,
        "int4_pair_value": list(key.pair) if key.pair else None,
        "tag": list(key.tag) if key.tag else None,
    }


def lock_json(lock: m.Lock) -> dict[str, Any]:
    return {
        "id": lock.id,
        **{name: getattr(lock, name) for name in m.as_declared(m.Lock)},
        "kind": lock.kind,
        "scope": lock.scope,
        "key": key_json(lock.key) if lock.key else None,
        "modes": [{"mode": mode, "taken_when": text} for mode, text in lock.modes],
        "options": list(lock.options),
        "queue": lock.queue,
        "singleton": lock.singleton,
        "referenced_by_foreign_keys": lock.referenced_by_foreign_keys,
        "references": [{"table": r.table, "column": r.column} for r in lock.references],
        "instance_order": lock.instance_order,
        "within": lock.within,
        "cluster_wide": lock.cluster_wide,
        "backends": [
            {
                "name": b.name,
                "kind": b.kind,
                "scope": b.scope,
                "table": b.table,
                "mode": b.mode,
                "how": b.how,
            }
            for b in lock.backends
        ],
        "taken_by": [
            {
                "name": t.name,
                "kind": t.kind,
                "mode": t.mode,
                "via": list(t.via),
                "called_by": list(t.called_by),
                "module": t.module,
                "note": t.note,
            }
            for t in lock.takers
        ],
        "issues": list(lock.issues),
        "line": lock.location.line,
    }


def step_json(step: m.Step) -> dict[str, Any]:
    out = STEP_JSON[type(step)](step)
    out["backend"] = step.backend
    return out


def _take(step: m.Take) -> dict[str, Any]:
    return {
        "type": "take",
        "lock": step.lock,
        "mode": step.mode,
        "via": list(step.via),
        "note": step.note,
        "instance": step.instance,
        "again": step.again,
        "order": step.order,
        "option": step.option,
        "try": step.attempt,
        "under": step.under,
        "implicit": step.implicit,
        "derived": step.derived,
        "recheck": step.recheck,
        "line": step.location.line,
    }


def _loop(step: m.Loop) -> dict[str, Any]:
    return {
        "type": "loop",
        "over": step.label,
        "order": step.order,
        "note": step.note,
        "steps": [step_json(s) for s in step.steps],
        "line": step.location.line,
    }


def _branches(step: m.Branches) -> dict[str, Any]:
    if step.statement:  # a set take: one statement, shown as its takes
        return {
            "type": "set",
            "note": step.note,
            "line": step.location.line,
            "takes": [step_json(t) for t in step.statement],
        }
    return {
        "type": "branches",
        "note": step.note,
        "line": step.location.line,
        "branches": [
            {"name": n, "steps": [step_json(s) for s in alt]} for n, alt in step.alternatives
        ],
    }


def _run(step: m.Run) -> dict[str, Any]:
    return {"type": "run", "path": step.path, "note": step.note, "line": step.location.line}


def _call(step: m.Call) -> dict[str, Any]:
    return {"type": "call", "name": step.name, "note": step.note, "line": step.location.line}


def _external(step: m.External) -> dict[str, Any]:
    return {"type": "external", "name": step.name, "note": step.note, "line": step.location.line}


def _write(step: m.Write) -> dict[str, Any]:
    return {
        "type": "write",
        "what": step.what,
        "insert": step.insert,
        "update": step.update,
        "columns": list(step.columns),
        "instance": step.instance,
        "via": list(step.via),
        "note": step.note,
        "line": step.location.line,
    }


def _begin(step: m.Begin) -> dict[str, Any]:
    return {
        "type": "begin",
        "transaction": step.transaction,
        "note": step.note,
        "line": step.location.line,
    }


def _end(step: m.End) -> dict[str, Any]:
    return {"type": step.how, "note": step.note, "line": step.location.line}


def _release(step: m.Release) -> dict[str, Any]:
    return {
        "type": "release",
        "lock": step.lock,
        "via": list(step.via),
        "note": step.note,
        "line": step.location.line,
    }


# A step's JSON, by its kind: one entry per member of m.Step (tests/test_step_kinds.py checks).
STEP_JSON: dict[type[m.Step], Callable[[Any], dict[str, Any]]] = {
    m.Take: _take,
    m.Loop: _loop,
    m.Branches: _branches,
    m.Run: _run,
    m.Call: _call,
    m.External: _external,
    m.Write: _write,
    m.Begin: _begin,
    m.End: _end,
    m.Release: _release,
}


def acquisition_json(ev: Event) -> dict[str, Any]:
    return {
        "lock": ev.lock,
        "mode": ev.mode,
        "event": ev.kind,
        "via": list(ev.via),
        "file": ev.location.file,
        "line": ev.location.line,
        "held": [
            {"lock": h.lock, "mode": h.mode, "instance": h.instance, "maybe": h.maybe}
            for h in ev.held
        ],
        "branch": list(ev.branch),
        "repeated": ev.repeated,
        "order": ev.order,
        "instance": ev.instance,
        "transaction": ev.transaction,
        "transaction_kind": ev.txkind,
        "through": list(ev.through),
        "option": ev.option,
        "implicit": ev.implicit,
    }


class TooLarge(Exception):
    """A path whose acquisitions the export cannot list within the analysis's bounds (its
    own work, limits.path_work, or the whole run's, limits.analysis_work): the export stops
    rather than run for minutes or write gigabytes."""

    def __init__(self, path: m.Path, why: str) -> None:
        super().__init__(why)
        self.path = path
        self.why = why


def path_json(
    model: m.Model, path: m.Path, flattener: Flattener, budget: Budget | None = None
) -> dict[str, Any]:
    flattener.events = []
    flattener.seen = set()
    start = flattener.units
    if budget is not None:
        flattener.cap = start + budget.left
    try:
        flattener.path(path)
    except Stop:
        why = "it needs more work to flatten than limits.path_work allows"
        raise TooLarge(path, why) from None
    acq = [e for e in flattener.events if e.kind in ("acquire", "retake", "upgrade")]
    # what the walk cost, and what listing it costs: each acquisition names its run: chain
    cost = flattener.units - start + EVENT * len(flattener.events)
    if budget is not None and not budget.spend(cost + sum(len(e.through) for e in acq)):
        raise TooLarge(path, budget.words() + " here")
    return {
        "id": path.id,
        "title": path.title,
        "group": path.group,
        "file": path.file,
        "line": path.location.line,
        "entry": list(path.entry),
        "transaction": path.transaction,
        "standalone": path.standalone,
        "summary": path.summary,
        "notes": path.notes,
        "issues": list(path.issues),
        "steps": [step_json(s) for s in path.steps],
        "acquisitions": [acquisition_json(e) for e in acq],
    }


def export_model(model: m.Model) -> dict[str, Any]:
    """The model as plain data; raises TooLarge at a path past the analysis's bounds."""
    flattener = Flattener(model)
    budget = Budget.of(model.limits)
    return {
        "lockdocs_export": EXPORT_VERSION,
        "page": {
            "title": model.page.title,
            "audience": model.page.audience,
            "summary": model.page.summary,
            "output": model.page.output,
        },
        "issue_url": model.issue_url,
        "replicas": [{"backend": backend, "replicas": n} for backend, n in model.replicas],
        "locks": [lock_json(lk) for lk in model.locks.values()],
        "transactions": [
            {
                "id": t.id,
                "title": t.title,
                "opened_by": t.opened_by,
                "first": {"lock": t.first_lock, "mode": t.first_mode} if t.first_lock else None,
                "isolation": t.isolation,
                "lock_timeout": t.lock_timeout or "none",
                "on_timeout": t.on_timeout,
                "database": t.database,
                "notes": t.notes,
            }
            for t in model.transactions.values()
        ],
        "groups": [
            {
                "title": g.title,
                "file": g.file,
                "order": g.order,
                "paths": list(g.paths),
                "transaction": g.transaction,
            }
            for g in model.groups
        ],
        "paths": [path_json(model, p, flattener, budget) for p in model.paths.values()],
        "rules": [
            {
                "id": r.id,
                "title": r.title,
                "text": r.text,
                "check": r.check,
                "params": dict(r.params),
                "issues": list(r.issues),
            }
            for r in model.rules.values()
        ],
        "exceptions": [
            {
                "rule": w.rule,
                "path": w.path,
                "lock": w.lock,
                "issue": w.issue,
                "title": w.title,
                "why": w.why,
                "branch": w.branch,
                "line": w.location.line,
            }
            for w in model.waivers
        ],
        "differences": [
            {
                "title": d.title,
                "why": d.why,
                "issue": d.issue,
                "paths": list(d.paths),
                "locks": list(d.locks),
            }
            for d in model.differences
        ],
        "planned": [
            {"issue": p.issue, "title": p.title, "affects": list(p.affects)} for p in model.planned
        ],
    }


def export_json(model: m.Model) -> str:
    return (
        json.dumps(_plain(export_model(model)), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
