"""The second half of a diff: findings (new, fixed, newly waived, no longer waived, told apart
across renames and moved lines), the declared rules and the exceptions, compared between the
two sides."""

from __future__ import annotations

import re
from difflib import SequenceMatcher
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


def _identity(d: Diagnostic) -> tuple[str, str, str]:
    """What two findings must share to be one finding whose text changed."""
    return (d.code, d.location.file, d.rule_id)


def _related(a: Diagnostic, b: Diagnostic, mapping: dict[str, str]) -> bool:
    """Whether base finding `a` and head finding `b` are about the same things: a lock or a
    path in common, or neither about any."""
    locks_a = {mapping.get(x, x) for x in a.locks}
    if locks_a & set(b.locks) or set(a.paths) & set(b.paths):
        return True
    return not (a.locks or a.paths or b.locks or b.paths)


def _similarity(a: Diagnostic, b: Diagnostic, mapping: dict[str, str]) -> float:
    old = rename_text(_LINE.sub("line", _LOCATION.sub(r"\1", a.message)), mapping)
    new = _LINE.sub("line", _LOCATION.sub(r"\1", b.message))
    return SequenceMatcher(a=old, b=new, autojunk=False).ratio()


def _pairs(
    gone: list[Diagnostic], came: list[Diagnostic], mapping: dict[str, str]
) -> list[tuple[int, int]]:
    """(index in gone, index in came) of the findings that are one finding whose text changed
    (LD301 naming one more path, a cycle through one more path): same rule, same file, about
    the same locks or paths; the most alike paired first, each once."""
    scored: list[tuple[float, int, int]] = []
    for i, a in enumerate(gone):
        for j, b in enumerate(came):
            if _identity(a) == _identity(b) and _related(a, b, mapping):
                score = _similarity(a, b, mapping)
                if score >= 0.5:
                    scored.append((-score, i, j))
    taken_i: set[int] = set()
    taken_j: set[int] = set()
    out: list[tuple[int, int]] = []
    for _, i, j in sorted(scored):
        if i not in taken_i and j not in taken_j:
            taken_i.add(i)
            taken_j.add(j)
            out.append((i, j))
    return sorted(out)


def compare_findings(
    base: list[Diagnostic], head: list[Diagnostic], mapping: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """New, fixed, changed, newly waived and no longer waived findings. A finding whose text
    changed is one `changed` entry (its head form, with `was` the base's message and
    `new_paths` the paths it now reaches that it did not), never a new plus a fixed one."""
    before: dict[tuple[Any, ...], Diagnostic] = {}
    for d in base:
        before.setdefault(finding_key(d, mapping), d)
    after: dict[tuple[Any, ...], Diagnostic] = {}
    for d in head:
        after.setdefault(finding_key(d, {}), d)
    gone = [d for k, d in before.items() if k not in after]
    came = [d for k, d in after.items() if k not in before]
    pairs = _pairs(gone, came, mapping)
    paired_gone = {i for i, _ in pairs}
    paired_came = {j for _, j in pairs}
    matched = [(before[k], d) for k, d in after.items() if k in before]
    matched += [(gone[i], came[j]) for i, j in pairs]
    changed = []
    for i, j in pairs:
        old, new = gone[i], came[j]
        if old.waived_by and new.waived_by:
            continue  # waived on both sides: counted with the unchanged waived ones
        if bool(old.waived_by) != bool(new.waived_by):
            continue  # listed as newly waived or no longer waived below
        grown = sorted(set(new.paths) - set(old.paths))
        changed.append({**_finding(new), "was": old.message, "new_paths": grown})
    return {
        "new": [_finding(d) for j, d in enumerate(came) if j not in paired_came],
        "fixed": [_finding(d) for i, d in enumerate(gone) if i not in paired_gone],
        "changed": changed,
        "newly_waived": [_finding(d) for old, d in matched if d.waived_by and not old.waived_by],
        "no_longer_waived": [
            _finding(d) for old, d in matched if not d.waived_by and old.waived_by
        ],
    }


def still_waived(base: list[Diagnostic], head: list[Diagnostic], mapping: dict[str, str]) -> int:
    """Findings waived on both sides, their text changed or not."""
    before = {finding_key(d, mapping): d for d in base if d.waived_by}
    after = {finding_key(d, {}): d for d in head if d.waived_by}
    same = set(before) & set(after)
    gone = [d for k, d in before.items() if k not in same]
    came = [d for k, d in after.items() if k not in same]
    return len(same) + len(_pairs(gone, came, mapping))


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
