"""The two stamps lockdocs puts in every SVG it draws, read back: the sha256 of the DOT it was
drawn from, and the sha256 of the SVG's own text as drawn (so a hand edit shows). Reading them
needs no Graphviz and none of the drawing machinery (`svg.py`): the drift check and the manifest's
check read them for every diagram.
"""

from __future__ import annotations

import hashlib
import re

STAMP = "lockdocs-dot-sha256"
CONTENT_STAMP = "lockdocs-svg-sha256"
_STAMP_RE = re.compile(r"<!-- " + STAMP + r": ([0-9a-f]{64}) -->")
_CONTENT_RE = re.compile(r"<!-- " + CONTENT_STAMP + r": ([0-9a-f]{64}) -->\n")
_STAMP_BYTES = re.compile(rb"<!-- " + STAMP.encode() + rb": ([0-9a-f]{64}) -->")
_CONTENT_BYTES = re.compile(rb"<!-- " + CONTENT_STAMP.encode() + rb": ([0-9a-f]{64}) -->\n")


def dot_hash(dot_text: str) -> str:
    """The stamp of a DOT text: sha256 of its UTF-8 bytes."""
    return hashlib.sha256(dot_text.encode("utf-8")).hexdigest()


def content_digest(svg: str) -> str:
    """The sha256 of an SVG's text (line ends as LF, so a checkout with CRLF is no edit)."""
    return hashlib.sha256(svg.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def _intact(svg: str) -> bool:
    """Whether the SVG is as lockdocs drew it: its text, less the content stamp, hashes to
    that stamp."""
    svg = svg.replace("\r\n", "\n")
    found = _CONTENT_RE.search(svg[:4096])
    if found is None:
        return False
    rest = svg[: found.start()] + svg[found.end() :]
    return content_digest(rest) == found.group(1)


def content_stamped(svg: str) -> bool:
    """Whether the SVG carries the hash of its own text (lockdocs 0.1.0's first builds did
    not)."""
    return _CONTENT_RE.search(svg[:4096].replace("\r\n", "\n")) is not None


def drawn_from(svg: str) -> str | None:
    """The DOT hash an SVG was stamped with, edited or not, or None."""
    found = _STAMP_RE.search(svg[:4096])
    return found.group(1) if found else None


def svg_stamp(svg: str) -> str | None:
    """The DOT hash of an SVG as lockdocs drew it, or None (no stamp, or edited since)."""
    digest = drawn_from(svg)
    return digest if digest is not None and _intact(svg) else None


def svg_stamp_of(data: bytes) -> str | None:
    """`svg_stamp` of an SVG file's bytes, read as bytes when that says the same (no CR, an
    ASCII head): no decoding, no copy of the text, one hash (a check reads thousands)."""
    head = data[:4096]
    if b"\r" in data or not head.isascii():
        return svg_stamp(data.decode("utf-8", "replace"))
    drawn = _STAMP_BYTES.search(head)
    content = _CONTENT_BYTES.search(head)
    if drawn is None or content is None:
        return None
    h = hashlib.sha256(data[: content.start()])
    h.update(data[content.end() :])
    return drawn.group(1).decode() if h.hexdigest().encode() == content.group(1) else None
