"""`lockdocs diff --format markdown`: a pull-request comment.

GitHub renders it: a summary line, the new findings as a list (each with its file and line
linked when the repository URL and head revision are known, one line on why it matters, the
hint, and the proof folded away), then one folded section per kind of change, the changed
edges drawn as a Mermaid graph. A comment over 65,536 characters is refused, so long sections
are cut to fit and the comment says what was left out. A diff with no change is one line.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from lockdocs.diagnostics import printable
from lockdocs.diff.compare import count
from lockdocs.diff.text import sections, side_by_side, side_text
from lockdocs.rules.catalog import load_all

# GitHub refuses a comment over 65,536 characters; the workflow adds a marker line, so stay
# well below.
LIMIT = 65_000
_SEVERITY_ICON = {"error": "🔴", "warning": "🟠", "info": "🔵"}


# Markdown's inline punctuation, escaped with a backslash (the backslash itself first).
_MD_PUNCT = re.compile(r"([\\`*_\[\]|~])")
# A mention or an issue reference would notify people or link issues from a bot's comment:
# a zero-width space (as an entity, so the comment's source shows it) breaks each.
_PING = re.compile(r"([@#])(?=[A-Za-z0-9])|\b(GH)-(?=[0-9])", re.IGNORECASE)


def _md_escape(s: str) -> str:
    """Text a pull request wrote, as one inert line of a comment: controls, newlines, bidi and
    invisible characters shown as escapes (so no raw HTML, heading or `</details>` on a line
    of its own), no tag or entity, no emphasis, code or link syntax, no live @mention or issue
    reference."""
    s = _MD_PUNCT.sub(r"\\\1", printable(s))
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _PING.sub(lambda m: f"{m.group(1) or m.group(2) + '-'}&#8203;", s)


def _fence(rows: list[str], lang: str, indent: str = "") -> list[str]:
    """A fenced block of these lines, each indented (to sit inside a list item) and shown as
    `printable` shows it: a newline or carriage return a declaration holds is no line of its
    own (a carriage return ends a Markdown line too)."""
    lines = [printable(line) for line in rows]
    ticks = "```"
    while any(ticks in line for line in lines):
        ticks += "`"
    return [indent + line for line in [f"{ticks}{lang}", *lines, ticks]]


def _code(s: str) -> str:
    s = printable(s)
    ticks = "`"
    while ticks in s:
        ticks += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _side_md(side: dict[str, Any]) -> str:
    """A side as the comment's headline names it."""
    return side_text(side, _code, _md_escape)


def _url(link: dict[str, str] | None, file: str, line: int) -> str | None:
    """The head revision's file and line on the repository's web page, or None."""
    if not link or not file:
        return None
    path = f"{link['prefix']}/{file}" if link.get("prefix") else file
    anchor = f"#L{line}" if line else ""
    blob = link.get("blob", "blob")
    return f"{link['repo']}/{blob}/{quote(link['revision'], safe='')}/{quote(path)}{anchor}"


def _place(link: dict[str, str] | None, file: str, line: int) -> str:
    text = _code(f"{file}:{line}" if line else file)
    url = _url(link, file, line)
    return f"[{text}]({url})" if url else text


# --- the order graph ------------------------------------------------------------------------------

_EDGE_STYLE = {
    "added": "stroke:#1a7f37,stroke-width:3px,color:#1a7f37",
    "removed": "stroke:#cf222e,stroke-width:2px,stroke-dasharray:5 4,color:#cf222e",
    "context": "stroke:#8c959f,color:#8c959f",
}


def _mm_label(s: str) -> str:
    """Text inside a quoted Mermaid label: no quote, entity, tag or Markdown string (a label
    that starts with a backtick), every character as it reads."""
    s = printable(s).replace("#", "#35;").replace("&", "#38;").replace('"', "#quot;")
    return s.replace("<", "#lt;").replace(">", "#gt;").replace("`", "#96;")


def mermaid_diagram(result: dict[str, Any]) -> str:
    """The changed part of the order graph: added edges green, removed red and dashed,
    unchanged edges among the same locks grey. GitHub renders ```mermaid blocks."""
    edges = result["edges"]
    added_locks = {lk["id"] for lk in result["locks"]["added"]}
    removed_locks = {lk["id"] for lk in result["locks"]["removed"]}
    renamed = {r["to"]: r["from"] for r in result["locks"]["renamed"]}
    rows = [
        *((e, "added") for e in edges["added"]),
        *((e, "removed") for e in edges["removed"]),
        *((e, "context") for e in edges["context"]),
    ]
    nodes = sorted({e["src"] for e, _ in rows} | {e["dst"] for e, _ in rows})
    ids = {n: f"n{i}" for i, n in enumerate(nodes)}
    lines = ["graph LR"]
    for n in nodes:
        label = n + (f" (was {renamed[n]})" if n in renamed else "")
        lines.append(f'  {ids[n]}["{_mm_label(label)}"]')
    for e, kind in rows:
        arrow = "-.->" if kind == "removed" else "-->"
        label = _mm_label(", ".join(e["paths"]))
        lines.append(f'  {ids[e["src"]]} {arrow}|"{label}"| {ids[e["dst"]]}')
    for i, (_, kind) in enumerate(rows):
        lines.append(f"  linkStyle {i} {_EDGE_STYLE[kind]}")
    lines.append("  classDef added stroke:#1a7f37,stroke-width:3px")
    lines.append("  classDef removed stroke:#cf222e,stroke-dasharray:5 4")
    for n in nodes:
        if n in added_locks:
            lines.append(f"  class {ids[n]} added")
        elif n in removed_locks:
            lines.append(f"  class {ids[n]} removed")
    return "\n".join(lines) + "\n"


# --- findings ------------------------------------------------------------------------------------


def _why(code: str) -> str:
    """Why a finding of this rule matters, in one sentence (the rule's own docs)."""

    info = load_all().get(code)
    if info is None:
        return ""
    first = info.why.split(". ")[0].rstrip(".")
    return first + "."


def _finding_md(f: dict[str, Any], link: dict[str, str] | None, label: str) -> list[str]:
    icon = _SEVERITY_ICON.get(f["severity"], "")
    waived = f" (waived: {_md_escape(f['waived_by'])})" if f["waived_by"] else ""
    out = [
        f"- {icon} **{f['code']}** {f['severity']}{waived}, {label}, at "
        f"{_place(link, f['file'], f['line'])}: {_md_escape(f['message'])}"
    ]
    if "was" in f:  # a finding whose text changed: what it said before
        out.append(f"  <br>Was: {_md_escape(f['was'])}")
        if f["new_paths"]:
            out.append(f"  <br>Now also on: {_md_escape(', '.join(f['new_paths']))}")
    why = _why(f["code"])
    if why and label != "fixed":
        out.append(f"  <br>Why it matters: {_md_escape(why)}")
    if f["hint"] and label != "fixed":
        out.append(f"  <br>Fix: {_md_escape(f['hint'])}")
    if f["details"] and label != "fixed":
        out += [
            "",
            "  <details><summary>The proof</summary>",
            "",
            *_fence(f["details"], "text", "  "),
            "",
            "  </details>",
        ]
    return out


def _finding_items(result: dict[str, Any], link: dict[str, str] | None) -> list[list[str]]:
    f = result["findings"]
    items = [_finding_md(x, link, "new") for x in f["new"]]
    items += [_finding_md(x, link, "no longer waived") for x in f["no_longer_waived"]]
    items += [_finding_md(x, link, "changed") for x in f["changed"]]
    items += [_finding_md(x, None, "fixed") for x in f["fixed"]]
    items += [_finding_md(x, link, "now waived") for x in f["newly_waived"]]
    return items


def _path_items(result: dict[str, Any], link: dict[str, str] | None) -> list[list[str]]:
    paths = result["paths"]
    items: list[list[str]] = []
    for p in paths["added"]:
        head = f"- ➕ **{_md_escape(p['id'])}** ({_md_escape(p['title'])}), {_place(link, p['file'], p['line'])}"
        items.append([head, *_fence(p["acquisitions"], "text", "  ")])
    for p in paths["removed"]:
        items.append(
            [f"- ➖ **{_md_escape(p['id'])}** ({_md_escape(p['title'])}), {_code(p['file'])}"]
        )

    for p in paths["changed"]:
        what = "reordered" if p["reordered"] else "takes other locks"
        head = f"- ✏️ **{_md_escape(p['id'])}** {what}, {_place(link, p['file'], p['line'])}"
        rows = side_by_side(p["before"], p["after"], reordered=p["reordered"])
        items.append([head, *_fence(rows, "text", "  ")])
    return items


# --- the comment ---------------------------------------------------------------------------------


def _details(
    title: str, items: list[list[str]], keep: int | None, opened: bool = False
) -> list[str]:
    shown = items if keep is None else items[:keep]
    body = [line for item in shown for line in item]
    if len(shown) < len(items):
        body.append(f"- ... {len(items) - len(shown)} more not shown (see below)")
    head = f"<details{' open' if opened else ''}><summary><b>{title}</b> ({count(len(items), 'change')})</summary>"
    return ["", head, "", *body, "", "</details>"]


def _render(result: dict[str, Any], keep: int | None) -> tuple[str, list[str]]:
    """The comment with at most `keep` items per section (None: all); and what was cut."""
    link = result.get("link")
    summary = _md_escape(result["summary"])
    lines = [
        f"**lockdocs diff** {_side_md(result['sides']['base'])} → {_side_md(result['sides']['head'])}",
        "",
        f"⚠️ {summary}" if result["new_unwaived"] else summary,
    ]
    cut: list[str] = []
    findings = _finding_items(result, link)
    if findings:
        lines += _details("Findings", findings, keep, opened=bool(result["new_unwaived"]))
        if keep is not None and len(findings) > keep:
            cut.append(f"{len(findings) - keep} of {len(findings)} findings")
    if result["edges"]["added"] or result["edges"]["removed"]:
        graph = _fence(mermaid_diagram(result).rstrip("\n").split("\n"), "mermaid")
        if keep is not None and keep < 50:
            graph = ["The graph is left out to fit; run `lockdocs diff` locally."]
            cut.append("the order graph")
        lines += [
            "",
            "<details open><summary><b>Order graph</b> (the changed part: added edges green, "
            "removed red and dashed, unchanged grey)</summary>",
            "",
            *graph,
            "",
            "</details>",
        ]
    path_items = _path_items(result, link)
    if path_items:
        lines += _details("Paths", path_items, keep)
        if keep is not None and len(path_items) > keep:
            cut.append(f"{len(path_items) - keep} of {len(path_items)} paths")
    for name, body in sections(result):
        if name in ("Findings", "Paths"):
            continue
        heads = [x for x in body if x[:1] not in (" ", "")]
        shown = body if keep is None else body[: max(keep, 1) * 4]
        if len(shown) < len(body):
            cut.append(f"part of the {name.lower()} section")
        lines += [
            "",
            f"<details><summary><b>{name}</b> ({count(len(heads), 'change')})</summary>",
            "",
            *_fence(shown, "diff"),
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n", cut


def format_markdown(result: dict[str, Any]) -> str:
    """The comment, cut to fit GitHub's limit when it has to be."""
    if not result["changed"]:
        return (
            f"**lockdocs diff** {_side_md(result['sides']['base'])} → {_side_md(result['sides']['head'])}: "
            f"{_md_escape(result['summary'])}\n"
        )
    text, _ = _render(result, None)
    keep = 200
    while len(text) > LIMIT and keep >= 1:
        text, cut = _render(result, keep)
        if len(text) <= LIMIT - 400:
            note = (
                f"\n_Cut to fit GitHub's comment limit: {', '.join(cut)} left out. Run "
                "`lockdocs diff` locally (or read the job summary) for everything._\n"
            )
            return text + note
        keep //= 2
    if len(text) > LIMIT:  # even one item per section is too long: the summary alone
        head = text.split("\n\n<details", 1)[0]
        return head[: LIMIT - 200] + (
            "\n\n_Cut to fit GitHub's comment limit: every section left out. Run "
            "`lockdocs diff` locally for the changes._\n"
        )
    return text
