"""The page's one line about the scanned SQL: which patterns, and how much of it the
declarations cover. Its own small view (and template, coverage.md.j2) so the page's other
sections do not depend on the scanner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockdocs import model as m

if TYPE_CHECKING:
    from lockdocs.scan.decls import Coverage


@dataclass(frozen=True)
class CoverageView:
    patterns: tuple[str, ...]
    takers: int
    takers_found: int
    statements: int
    statements_declared: int
    statements_waived: int
    statements_unread: int = 0  # statements (or function bodies) the scan could not read
    takers_unchecked: int = 0  # declared takers whose code was not read


def coverage_view(model: m.Model, coverage: Coverage | None) -> CoverageView | None:
    if coverage is None or not model.code:
        return None
    return CoverageView(
        patterns=tuple(g.pattern for g in model.code),
        takers=coverage.total("takers"),
        takers_found=coverage.total("takers_found"),
        statements=coverage.total("statements"),
        statements_declared=coverage.total("statements_declared"),
        statements_waived=coverage.total("statements_waived"),
        statements_unread=coverage.unread,
        takers_unchecked=sum(len(c.unchecked) for c in coverage.locks.values()),
    )
