"""The second half of a diff: findings (new, fixed, newly waived, no longer waived, told apart
across renames and moved lines), the declared rules and the exceptions, compared between the
two sides."""

from __future__ import annotations

import re
from typing import Any

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic
from lockdocs.report import diagnostic_json


def rename_text(text: str, mapping: dict[str, str]) -> str:
    """Old lock ids in a message, replaced by the new ones (whole ids only)."""
    for old, new in mapping.items():
        text = re.sub(rf"(?<![\w.-]){re.escape(old)}(?![\w-]|\.\w)", new, text)
    return text


_LOCATION = re.compile(r"(\b[\w./-]+\.ya?ml):\d+(?::\d+)?")
_LINE = re.compile(r"\bline \d+")


def finding_key(d: Diagnostic, mapping: dict[str, str]) -> tuple[Any, ...]:
    """What makes a finding the same finding on both sides: not its line numbers."""
    message = _LINE.sub("line", _LOCATION.sub(r"\1", d.message))
    return (
        d.code,
        tuple(d.paths),
        tuple(sorted(mapping.get(x, x) for x in d.locks)),
        rename_text(message, mapping),
    )


def _finding(d: Diagnostic) -> dict[str, Any]:
    return diagnostic_json(d)


def compare_findings(
    base: list[Diagnostic], head: list[Diagnostic], mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    before: dict[tuple[Any, ...], Diagnostic] = {}
    for d in base:
        before.setdefault(finding_key(d, mapping), d)
    after: dict[tuple[Any, ...], Diagnostic] = {}
    for d in head:
        after.setdefault(finding_key(d, {}), d)
    new = [_finding(d) for k, d in after.items() if k not in before]
    fixed = [_finding(d) for k, d in before.items() if k not in after]
    newly_waived = [
        _finding(d)
        for k, d in after.items()
        if k in before and d.waived_by and not before[k].waived_by
    ]
    unwaived = [
        _finding(d)
        for k, d in after.items()
        if k in before and not d.waived_by and before[k].waived_by
    ]
    return {
        "new": new,
        "fixed": fixed,
        "newly_waived": newly_waived,
        "no_longer_waived": unwaived,
    }


def still_waived(base: list[Diagnostic], head: list[Diagnostic], mapping: dict[str, str]) -> int:
    before = {finding_key(d, mapping) for d in base if d.waived_by}
    return len({finding_key(d, {}) for d in head if d.waived_by} & before)


def compare_exceptions(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def row(w: m.Waiver, lock: str | None) -> dict[str, Any]:
        return {
            "rule": w.rule,
            "path": w.path,
            "lock": lock,
            "issue": w.issue,
            "title": w.title,
            "why": w.why,
        }

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["rule"], r["path"], r["lock"], r["issue"])

    before = [row(w, mapping.get(w.lock, w.lock) if w.lock else None) for w in base.waivers]
    after = [row(w, w.lock) for w in head.waivers]
    keys_before = {key(r) for r in before}
    keys_after = {key(r) for r in after}
    return {
        "added": [r for r in after if key(r) not in keys_before],
        "removed": [r for r in before if key(r) not in keys_after],
    }


def _renamed_params(value: object, mapping: dict[str, str]) -> object:
    """A rule's parameters with old lock ids replaced, so a rename alone changes no rule."""
    if isinstance(value, str):
        return mapping.get(value, value)
    if isinstance(value, tuple | list):
        return tuple(_renamed_params(v, mapping) for v in value)
    return value


def compare_rules(
    base: m.Model, head: m.Model, mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    def row(r: m.Rule) -> dict[str, Any]:
        return {"id": r.id, "title": r.title, "check": r.check}

    def check(r: m.Rule, names: dict[str, str]) -> object:
        return (r.check, tuple((k, _renamed_params(v, names)) for k, v in r.params))

    changed = [
        row(r)
        for rid, r in head.rules.items()
        if rid in base.rules and check(base.rules[rid], mapping) != check(r, {})
    ]
    return {
        "added": [row(r) for rid, r in head.rules.items() if rid not in base.rules],
        "removed": [row(r) for rid, r in base.rules.items() if rid not in head.rules],
        "changed": changed,
    }
