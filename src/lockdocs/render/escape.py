"""Escaping for each place a user string can land: Markdown text, table cells, code spans, HTML,
link targets, YAML front matter and DOT strings.

Templates run with autoescape off (the output is Markdown, not HTML), so every string from the
declarations goes through one of these filters. The aim is that no declared text can become
markup: no HTML (`<script>`), no link (`[x](javascript:...)`), no emphasis, no attribute list
(`{onclick=...}`, which `attr_list` would apply), no block of the site's extensions (an
admonition `!!! note`, a details block `??? note`, a fence), no table column, no link to
anything but http(s), mailto or an anchor (however its target is encoded) and no template syntax
(`{{ ... }}` is data, never rendered, and stays literal for Markdown-level macro plugins too).
The output renders the same under Python-Markdown (MkDocs) and CommonMark/GFM.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from lockdocs.render.hidden import code_lines, visible
from lockdocs.render.urls import safe_url

# Characters that start or end Markdown inline syntax; a backslash makes each literal in both
# Python-Markdown (all are in its ESCAPED_CHARS) and CommonMark (all are ASCII punctuation).
_BACKSLASHED = frozenset("\\`*[]{}#")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ORDERED_START = re.compile(r"^(\d+)([.)])")


def _inline(value: object) -> str:
    """One line of literal text: whitespace runs (newlines too) become one space, hidden
    characters their visible escape; None is ""."""
    if value is None:
        return ""
    return " ".join(visible(str(value)).split())


def _escape_chars(s: str) -> str:
    """Entities for HTML, backslashes for Markdown; see `text`."""
    out: list[str] = []
    for i, ch in enumerate(s):
        if ch in _HTML:
            out.append(_HTML[ch])
        elif ch in _BACKSLASHED:
            out.append("\\" + ch)
        elif ch == "_":
            # An underscore between two word characters never starts emphasis (both dialects),
            # so identifiers such as pool_id stay readable in the Markdown source.
            before = s[i - 1] if i else " "
            after = s[i + 1] if i + 1 < len(s) else " "
            out.append("_" if before.isalnum() and after.isalnum() else "\\_")
        else:
            out.append(ch)
    return "".join(out)


# Line starts that open a block in the site's extensions: admonitions (`!!! note`), details
# (`??? note`, `???+ note`), tilde fences (`~~~`), setext underlines and tabs (`===`). An entity
# (or, for `!`, a backslash: both dialects know it) keeps each literal.
_BLOCK_START = {"!": "\\!", "?": "&#63;", "~": "&#126;", "=": "&#61;", ":": "&#58;"}


def _guard_line_start(s: str) -> str:
    """Stop a line from opening a block: a list item, a definition, a thematic break, an
    admonition or details block, a fence."""
    if s[:1] in ("-", "+"):
        return "\\" + s
    if s[:1] in _BLOCK_START:
        return _BLOCK_START[s[0]] + s[1:]
    m = _ORDERED_START.match(s)
    if m:
        return m.group(1) + "\\" + s[len(m.group(1)) :]
    return s


def text(value: object) -> str:
    """Inline prose: literal text on one line, safe in a paragraph, list item, heading, link
    text or table cell (a pipe is escaped everywhere: MkDocs always loads the tables extension,
    which makes `\\|` an escape, and CommonMark knows it anyway)."""
    return _guard_line_start(_escape_chars(_inline(value)).replace("|", "\\|"))


_END = re.compile(r"[\s.]*$")


def ends_once(s: str) -> str:
    """Plain text that ends with exactly one full stop (or its own !, ? or the colon that leads
    into a list): user strings are
    joined into sentences, and a declared "message." must never become "message..". Text that
    ends in a code span keeps it: a period follows the span."""
    body = _END.sub("", s)
    if not body:
        return ""
    return body if body[-1] in "!?:" else body + "."


def clause(value: object) -> str:
    """Inline prose inside a sentence the page goes on with: literal text without a closing
    full stop (the page adds its own punctuation after it)."""
    return text(_END.sub("", _inline(value)))


def sentence(value: object) -> str:
    """Inline prose as one sentence: literal text ending with exactly one full stop."""
    return text(ends_once(_inline(value)))


def para(value: object) -> str:
    """Block prose: paragraphs (split at blank lines) of literal text, each ending once."""
    if value is None:
        return ""
    blocks = re.split(r"\n[ \t]*\n", str(value).strip())
    return "\n\n".join(sentence(b) for b in blocks if b.strip())


def capital(value: object) -> str:
    """Inline text starting with a capital letter (a step written as words, not a name)."""
    s = _inline(value)
    return text(s[:1].upper() + s[1:])


def summary(value: object) -> str:
    """The title of a collapsible block (`??? note "..."`): inline text, no double quote."""
    return text(value).replace('"', "&quot;")


_INLINE_MD = re.compile(r"(`+)(.+?)\1|\[([^\[\]\n]+)\]\(([^()\s]+)\)|(?<![\w/&#])#(\d{1,9})\b")
_ITEM = re.compile(r"^(?:[-*]|(\d{1,3})[.)])\s+")


def _literal_piece(segment: str) -> str:
    """A stretch of literal text between kept forms, keeping its edge spaces."""
    body = text(segment)
    if not body:
        return " " if segment and segment.isspace() else ""
    lead = " " if segment[:1].isspace() else ""
    trail = " " if segment[-1:].isspace() else ""
    return lead + body + trail


def _inline_md(value: str, issues: str | None = None, narrow: bool = False) -> str:
    """Inline prose with `code` and [text](safe link) kept, and #123 linked through the
    project's issue template when it has one; `narrow` (a table cell): code that may break
    between its names."""
    value = _inline(value)
    out: list[str] = []
    pos = 0
    for m in _INLINE_MD.finditer(value):
        out.append(_literal_piece(value[pos : m.start()]))
        if m.group(1):
            out.append(tcode(m.group(2)) if narrow else code(m.group(2)))
        elif m.group(5):
            number = m.group(5)
            href = issues.replace("{number}", number) if issues else None
            out.append(link(Link(f"#{number}", href)))
        else:
            out.append(link(Link(m.group(3), m.group(4))))
        pos = m.end()
    out.append(_literal_piece(value[pos:]))
    return _guard_line_start("".join(out).strip())


def sentence_md(value: object, issues: str | None = None) -> str:
    """One sentence of author prose: `code`, safe links and #123 issue links kept, everything
    else literal, ending with exactly one full stop."""
    return _inline_md(ends_once(_inline(value)), issues)


def clause_md(value: object, issues: str | None = None) -> str:
    """Author prose inside a sentence the page goes on with (a note after a dash): `code`,
    safe links and #123 kept, no closing full stop."""
    return _inline_md(_END.sub("", _inline(value)), issues)


def cell_md(value: object, issues: str | None = None) -> str:
    """Author prose in a table cell: as clause_md, with code spans that may break between
    names (see tcode), so a long call does not widen its column."""
    return _inline_md(_END.sub("", _inline(value)), issues, narrow=True)


def _list_items(lines: list[str]) -> tuple[bool, list[str]] | None:
    """(ordered, items) when the block is one list, continuation lines indented."""
    items: list[str] = []
    ordered = bool(_ITEM.match(lines[0]) and _ITEM.match(lines[0]).group(1))  # type: ignore[union-attr]
    for ln in lines:
        m = _ITEM.match(ln)
        if m and bool(m.group(1)) == ordered:
            items.append(ln[m.end() :])
        elif items and ln[:1].isspace():
            items[-1] += " " + ln.strip()
        else:
            return None
    return ordered, items


def prose(value: object, issues: str | None = None) -> str:
    """Author prose (intros, notes): paragraphs and lists (`-`, `*` or `1.`), with `code` and
    [links](https://...) kept; everything else literal, exactly as `text` makes it (no HTML,
    no other markup). A paragraph ends with exactly one full stop."""
    if value is None:
        return ""
    blocks = re.split(r"\n[ \t]*\n", str(value).strip())
    out: list[str] = []
    for block in blocks:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        if not lines:
            continue
        found = _list_items(lines) if _ITEM.match(lines[0]) else None
        if found is not None:
            ordered, items = found
            out.append(
                "\n".join(
                    (f"{i}. " if ordered else "- ") + _inline_md(item, issues)
                    for i, item in enumerate(items, start=1)
                )
            )
        else:
            out.append(_inline_md(ends_once(" ".join(ln.strip() for ln in lines)), issues))
    return "\n\n".join(out)


def cell(value: object) -> str:
    """A table cell: inline text; never empty, so the row keeps its shape."""
    return text(value) or "—"


def code(value: object) -> str:
    """An inline code span, whatever backticks or pipes the value holds.

    A pipe inside backticks still splits a GFM table row, and `\\|` inside backticks shows its
    backslash in Python-Markdown, so a value with a pipe becomes an HTML `<code>` element whose
    text is escaped like prose and whose pipe is an entity: right in both dialects.
    """
    s = _inline(value)
    if not s:
        return ""
    if "|" in s:
        return "<code>" + _escape_chars(s).replace("|", "&#124;") + "</code>"
    longest = max((len(run) for run in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


_BREAK_AFTER = re.compile(r"([._(/:,])(?=\w)")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def tcode(value: object) -> str:
    """A code span for a narrow table cell: an HTML `<code>` whose identifiers may break after
    a dot, an underscore, a bracket or a slash and between camel-case words (`<wbr>`, which
    leaves the text as it is), so a column can be narrow without "core.resource_p" / "ools"."""
    s = _inline(value)
    if not s:
        return ""
    body = _escape_chars(s).replace("|", "&#124;")
    body = _CAMEL.sub("<wbr>", _BREAK_AFTER.sub(r"\1<wbr>", body))
    return "<code>" + body + "</code>"


def tcodes(values: tuple[str, ...] | list[str], sep: str = ", ") -> str:
    """Several names as table-cell code spans."""
    return sep.join(tcode(v) for v in values if str(v).strip())


def html(value: object) -> str:
    """Text inside raw HTML, attribute values included."""
    return (
        visible(str(value))
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#39;")
    )


@dataclass(frozen=True)
class Link:
    """A link in the page: its text (escaped when rendered) and its target (None: plain)."""

    text: str
    href: str | None = None


@lru_cache(maxsize=1 << 16)
def link(value: Link) -> str:
    """A Markdown link whose text cannot close the brackets and whose target is checked
    (cached: a large page links the same lock or path thousands of times)."""
    label = text(value.text)
    target = safe_url(value.href) if value.href is not None else None
    if target is None:
        return label
    return f"[{label}]({target})"


def links(values: tuple[Link, ...] | list[Link], sep: str = ", ") -> str:
    """Several links, joined in the order the view gave them."""
    return sep.join(link(v) for v in values)


def codes(values: tuple[str, ...] | list[str], sep: str = ", ") -> str:
    """Several names as code spans."""
    return sep.join(code(v) for v in values if str(v).strip())


def names(values: tuple[str, ...] | list[str], sep: str = ", ") -> str:
    """Several names: an identifier as a code span, a phrase in words ('the demonstration
    seed') as text."""
    return sep.join(
        code(v) if " " not in str(v).strip() else text(v) for v in values if str(v).strip()
    )


def chain(values: tuple[str, ...] | list[str]) -> str:
    """A call chain, outermost first: `settlePool` → `LockPools`."""
    return codes(values, " → ")


def yaml_str(value: object) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is a subset of it)."""
    return json.dumps(visible(str(value)), ensure_ascii=True)


def slug(value: str, fallback: str = "item") -> str:
    """A file-name and anchor-safe slug: lowercase ASCII letters, digits and hyphens."""
    plain = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode("ascii")
    out = re.sub(r"[^a-z0-9]+", "-", plain.lower()).strip("-")
    return out or fallback


def dot_str(value: object) -> str:
    """A DOT quoted string showing the value literally.

    Backslashes are doubled so `\\N`, `\\G` or `\\l` in data are not Graphviz escapes, and `&` is
    written as an entity because Graphviz decodes entities in labels; Graphviz escapes `<` and
    `>` itself when it writes SVG.
    """
    s = _inline(value)
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    return f'"{s}"'


def dot_label(lines: list[str]) -> str:
    """A multi-line DOT label: each line escaped, joined with centred line breaks."""
    parts = [dot_str(line)[1:-1] for line in lines]
    return '"' + "\\n".join(parts) + '"'


_ANCHOR_ID = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*\Z")


def anchor(value: str) -> str:
    """An attr_list id for a heading, `{#lock-pool-row}`; written by a filter because `{#`
    opens a Jinja comment. Ids come from schema-checked slugs; anything else is slugged."""
    ident = value if _ANCHOR_ID.match(value) else slug(value, "section")
    return "{#" + ident + "}"


def attr(value: str) -> str:
    """A block attribute list giving the paragraph above an id, `{: #path-commit }`."""
    return "{: " + anchor(value)[1:-1] + " }"


__all__ = ["FILTERS", "Link", "code_lines", "safe_url", "visible"]

FILTERS = {
    "anchor": anchor,
    "attr": attr,
    "text": text,
    "para": para,
    "sentence": sentence,
    "clause": clause,
    "summary": summary,
    "capital": capital,
    "prose": prose,
    "cell": cell,
    "code": code,
    "html": html,
    "link": link,
    "links": links,
    "codes": codes,
    "tcode": tcode,
    "tcodes": tcodes,
    "names": names,
    "sentence_md": sentence_md,
    "clause_md": clause_md,
    "cell_md": cell_md,
    "chain": chain,
    "yaml_str": yaml_str,
}
