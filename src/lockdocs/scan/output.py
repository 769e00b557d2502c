"""A scan as text or JSON, and coverage as a table or one sentence for the page."""

from __future__ import annotations

import json
from typing import Any

from lockdocs.diagnostics import printable
from lockdocs.scan.collect import Item, ScanResult
from lockdocs.scan.decls import Coverage, describe_lock


def item_json(it: Item) -> dict[str, Any]:
    lk = it.lock
    out: dict[str, Any] = {
        "file": it.file,
        "line": lk.line,
        "column": lk.column,
        "name": it.site.name,
        "statement": {"kind": it.site.kind, "line": it.site.line, "column": it.site.column},
        "kind": lk.kind,
        "mode": lk.mode,
        "implicit": lk.implicit,
        "in_loop": lk.loop,
    }
    if lk.kind == "advisory":
        shape = lk.shape.to_json() if lk.shape else {}
        out.update(
            function=lk.function,
            scope=lk.scope,
            try_lock=lk.try_,
            key=lk.key,
            prefix=shape.get("prefix"),
            construction=shape,
        )
    else:
        out.update(table=lk.table, option=lk.option, of=list(lk.of))
    return out


def item_text(it: Item) -> str:
    lk = it.lock
    extras = []
    if lk.kind == "advisory":
        form = "try, " if lk.try_ else ""
        what = f"advisory {lk.mode} ({form}{lk.scope}) key {lk.key}"
        if lk.shape and lk.shape.prefix:
            what += f" [prefix '{lk.shape.prefix}']"
    else:
        what = f"{lk.kind} {describe_lock(it)}"
        if lk.of:
            extras.append("OF " + ", ".join(lk.of))
    if lk.loop:
        extras.append("in a loop")
    tail = f" ({'; '.join(extras)})" if extras else ""
    return f"{it.file}:{lk.line}:{lk.column}: {it.site.name or '-'}: {what}{tail}"


def scan_text(scan: ScanResult) -> str:
    """One line per lock; what the code holds (names, tables, keys) is escaped for a
    terminal, so no escape sequence in a scanned file reaches it."""
    lines = [printable(item_text(it)) for it in scan.items]
    files = len(scan.files)
    statements = len({(it.file, it.site.line, it.site.column) for it in scan.items})
    unread = len(scan.unread())
    lines.append(
        f"{len(scan.items)} lock{'s' if len(scan.items) != 1 else ''} in {statements} "
        f"statement{'s' if statements != 1 else ''} of {files} file{'s' if files != 1 else ''}"
        + (f"; {unread} statement{'s' if unread != 1 else ''} not read" if unread else "")
    )
    return "\n".join(lines) + "\n"


def scan_json(scan: ScanResult, warnings: list[dict[str, Any]], coverage: Coverage | None) -> str:
    doc: dict[str, Any] = {
        "files": [rel for rel, _ in scan.files],
        "locks": [item_json(it) for it in scan.items],
        "warnings": warnings,
        "not_read": [
            {
                "file": rel,
                "line": u.line,
                "column": u.column,
                "lines": [u.first, u.last],
                "name": site.name,
                "code": u.code,
                "reason": u.reason,
            }
            for rel, site, u in scan.unread()
        ],
    }
    if coverage is not None:
        doc["coverage"] = coverage.to_json()
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def coverage_text(cov: Coverage) -> str:
    width = max([len(lid) for lid in cov.locks] + [4])
    lines = [
        f"{'lock':<{width}}  takers found  statements declared",
    ]
    for lid, c in sorted(cov.locks.items()):
        waived = f" ({c.statements_waived} waived)" if c.statements_waived else ""
        lines.append(
            f"{lid:<{width}}  {c.takers_found:>5} / {c.takers:<4}  "
            f"{c.statements_declared:>5} / {c.statements}{waived}"
        )
        if c.missing:
            lines.append(f"{'':<{width}}  not found taking it: {', '.join(c.missing)}")
        if c.unchecked:
            lines.append(f"{'':<{width}}  not checked (not read): {', '.join(c.unchecked)}")
    lines.append(coverage_summary(cov))
    return "\n".join(printable(line) for line in lines) + "\n"


def coverage_summary(cov: Coverage) -> str:
    takers, found = cov.total("takers"), cov.total("takers_found")
    stmts, declared = cov.total("statements"), cov.total("statements_declared")
    waived = cov.total("statements_waived")
    out = (
        f"coverage: {found} of {takers} declared takers found in the code; {declared} of "
        f"{stmts} locking statements on declared locks are declared"
    )
    if waived:
        out += f" ({waived} waived)"
    if cov.unmatched:
        out += f"; {cov.unmatched} on no declared lock"
    unchecked = sum(len(c.unchecked) for c in cov.locks.values())
    if cov.unread:
        out += f"; {cov.unread} statement{'s' if cov.unread != 1 else ''} not read" + (
            f" ({unchecked} declared taker{'s' if unchecked != 1 else ''} not checked)"
            if unchecked
            else ""
        )
    return out
