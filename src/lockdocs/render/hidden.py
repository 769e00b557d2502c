"""Characters that hide or reorder what a reader sees (C0 and C1 controls, bidi embeddings,
overrides and isolates, zero-width spaces and joiners), shown as escapes wherever lockdocs
writes a user's text: the page, a code block, the DOT and so the SVG, the front matter."""

from __future__ import annotations

import re

# Characters that hide or reorder what a reader sees: C0 and C1 controls, bidi embeddings,
# overrides and isolates, zero-width spaces and joiners, the BOM, line and paragraph
# separators, soft hyphens and the invisible operators.
_HIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]"
)


def visible(value: str) -> str:
    """Every character that could hide or reorder text shown as its escape (`\\u202e`), so
    a reader sees it is there: a bidi override in a name cannot flip what the page, a
    diagram or a terminal shows, and a zero-width character cannot make two names look
    alike."""
    return _HIDDEN.sub(lambda m: f"\\u{ord(m.group(0)):04x}", value)


def code_lines(code: str) -> tuple[str, ...]:
    """The lines of a code block, each literal: tabs as four spaces, trailing spaces dropped,
    and every character that could hide or reorder text (controls, bidi overrides, zero-width
    characters) shown as its escape, e.g. \\u202e."""
    lines = code.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    return tuple(visible(ln).rstrip() for ln in lines)
