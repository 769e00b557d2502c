"""Which link targets a page may hold: http(s), mailto and same-page anchors, judged after
HTML-entity and percent decoding (a browser decodes what Markdown keeps as written), and
written so that nothing in them can end or break a Markdown link."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape as html_unescape
from urllib.parse import quote, unquote

_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def _fixpoint(value: str, decode: Callable[[str], str]) -> str:
    """`decode` applied until nothing changes (so `&amp;#58;` and `%253A` are seen through)."""
    for _ in range(8):
        step = decode(value)
        if step == value:
            break
        value = step
    return value


def _scheme_ok(url: str) -> bool:
    m = _SCHEME.match(url)
    return m is not None and m.group(1).lower() in _SAFE_SCHEMES


def safe_url(value: str) -> str | None:
    """A link target Markdown can hold, or None for one that must not become a link.

    Only http(s) and mailto URLs and same-page anchors are kept, judged after HTML-entity and
    percent decoding: Python-Markdown keeps `javascript&#58;...` in href as written and the
    browser decodes it. The target is written entity-decoded, so what a browser reads is what
    was checked; the characters that would end or break a Markdown link destination are
    percent-encoded.
    """
    written = _fixpoint(value.strip(), html_unescape)
    seen = _fixpoint(written, lambda v: unquote(html_unescape(v)))
    if not written or not seen.isprintable() or any(c.isspace() for c in seen):
        return None
    same_page = written.startswith("#") and seen.startswith("#")
    if not same_page and not (_scheme_ok(written) and _scheme_ok(seen)):
        return None
    return quote(written, safe="/:?#&=%+@,;~!$'*-._")
