"""`lockdocs diff` as text (a terminal) and JSON (a machine); the sections both text and
Markdown print."""

from __future__ import annotations

import json
from collections.abc import Callable
from difflib import SequenceMatcher
from typing import Any

from lockdocs.diagnostics import printable


def _finding_text(f: dict[str, Any]) -> str:
    where = f"{f['file']}:{f['line']}:{f['column'] or 1}" if f["line"] else f["file"]
    waived = f" (waived: {f['waived_by']})" if f["waived_by"] else ""
    return f"{where}: {f['code']} {f['severity']}{waived}: {f['message']}"


def _exception_text(e: dict[str, Any]) -> str:
    on = [f"path {e['path']}" if e["path"] else "", f"lock {e['lock']}" if e["lock"] else ""]
    scope = " on " + ", ".join(x for x in on if x) if any(on) else ""
    issue = f" (#{e['issue']})" if e["issue"] else ""
    return f"{e['rule']}{scope}{issue}: {e['why']}"


def _edge_text(e: dict[str, Any]) -> str:
    return f"{e['src']} -> {e['dst']}  ({', '.join(e['paths'])})"


def side_by_side(before: list[str], after: list[str], *, reordered: bool = False) -> list[str]:
    """Two columns. A reordering pairs the lines by position ('~' where they differ); any other
    change aligns the lines the sides share ('-' a line gone, '+' a line new)."""
    width = max([len("before"), *(len(x) for x in before)]) + 2
    rows = [f"  {'before'.ljust(width)}  after"]
    if reordered:
        for a, b in zip(before, after, strict=True):
            rows.append(f"{'~' if a != b else ' '} {a.ljust(width)}  {b}")
        return [r.rstrip() for r in rows]
    ops = SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        left, right = before[i1:i2], after[j1:j2]
        for k in range(max(len(left), len(right))):
            a = left[k] if k < len(left) else ""
            b = right[k] if k < len(right) else ""
            mark = " " if tag == "equal" else "~" if a and b else "-" if a else "+"
            rows.append(f"{mark} {a.ljust(width)}  {b}")
    return [r.rstrip() for r in rows]


def sections(result: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, lines) per non-empty section, shared by the text and Markdown outputs."""
    locks, edges, paths = result["locks"], result["edges"], result["paths"]
    out: list[tuple[str, list[str]]] = []

    lines: list[str] = []
    for lk in locks["added"]:
        lines.append(f"+ {lk['id']}: {lk['title']} ({_lock_kind_text(lk)})")
    for lk in locks["removed"]:
        lines.append(f"- {lk['id']}: {lk['title']} ({_lock_kind_text(lk)})")
    for r in locks["renamed"]:
        lines.append(f"~ {r['from']} -> {r['to']}: renamed ({r['matched_by']})")
        lines += [_change_text(c) for c in r["changes"]]
    for c in locks["changed"]:
        lines.append(f"~ {c['id']}:")
        lines += [_change_text(x) for x in c["changes"]]
    if lines:
        out.append(("Locks", lines))

    lines = [f"+ {_edge_text(e)}" for e in edges["added"]]
    lines += [f"- {_edge_text(e)}" for e in edges["removed"]]
    if lines:
        out.append(("Order edges (held -> taken next)", lines))

    lines = []
    for p in paths["added"]:
        lines.append(f"+ {p['id']}: {p['title']} ({p['file']})")
        lines += [f"    {x}" for x in p["acquisitions"]]
    for p in paths["removed"]:
        lines.append(f"- {p['id']}: {p['title']} ({p['file']})")
    for p in paths["changed"]:
        what = "reordered" if p["reordered"] else "takes other locks"
        lines.append(f"~ {p['id']}: {what} ({p['file']})")
        rows = side_by_side(p["before"], p["after"], reordered=p["reordered"])
        lines += [f"  {x}" for x in rows]
    if lines:
        out.append(("Paths", lines))

    f = result["findings"]
    lines = []
    for label, key in (("new", "new"), ("unwaived", "no_longer_waived")):
        for x in f[key]:
            lines.append(f"{label:<12} {_finding_text(x)}")
            lines += [f"    {d}" if d else "" for d in x["details"]]
            lines += [f"    hint: {x['hint']}"] if x["hint"] else []
    for x in f["changed"]:
        lines.append(f"{'changed':<12} {_finding_text(x)}")
        lines.append(f"    was: {x['was']}")
        if x["new_paths"]:
            lines.append(f"    now also on: {', '.join(x['new_paths'])}")
    for label, key in (("fixed", "fixed"), ("now waived", "newly_waived")):
        lines += [f"{label:<12} {_finding_text(x)}" for x in f[key]]
    if lines:
        out.append(("Findings", lines))

    lines = [f"+ {r['id']}: {r['title']}" for r in result["rules"]["added"]]
    lines += [f"- {r['id']}: {r['title']}" for r in result["rules"]["removed"]]
    lines += [f"~ {r['id']}: {r['title']} (its check changed)" for r in result["rules"]["changed"]]
    if lines:
        out.append(("Rules", lines))

    lines = [f"+ {_exception_text(e)}" for e in result["exceptions"]["added"]]
    lines += [f"- {_exception_text(e)}" for e in result["exceptions"]["removed"]]
    if lines:
        out.append(("Exceptions", lines))
    return out


def _lock_kind_text(lk: dict[str, Any]) -> str:
    detail = lk["key"] or lk["table"]
    return f"{lk['kind']}, {detail}" if detail else lk["kind"]


def _change_text(c: dict[str, str]) -> str:
    return f"    {c['field']}: {c['before'] or '(none)'} -> {c['after'] or '(none)'}"


def _plain(s: str) -> str:
    return s


def side_text(
    side: dict[str, Any],
    name: Callable[[str], str] = _plain,
    prose: Callable[[str], str] = _plain,
) -> str:
    """What a side is, as the headline names it: a revision and the commit it resolved to, a
    folder, or the working tree. `name` writes a name or a commit, `prose` the revision's note
    (Markdown's code spans and escapes; as they are in text)."""
    if side["kind"] == "revision":
        note = f", {prose(side['note'])}" if side.get("note") else ""
        return f"{name(side['name'])} (revision {name(str(side['commit'])[:12])}{note})"
    if side["kind"] == "folder":
        return f"folder {name(side['name'])}"
    return "working tree"


def format_text(result: dict[str, Any]) -> str:
    """For a terminal: every declared string shown with its control characters escaped."""

    sides = result["sides"]
    head = printable(f"lockdocs diff {side_text(sides['base'])} -> {side_text(sides['head'])}")
    if not result["changed"]:  # one line: nothing to read
        return f"{head}: {result['summary']}\n"
    lines = [head]
    for title, body in sections(result):
        lines += ["", title, *(f"  {printable(x)}" for x in body)]
    lines += ["", result["summary"]]
    return "\n".join(lines) + "\n"


def format_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
