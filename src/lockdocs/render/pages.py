"""The renderer: a model and its findings -> every generated text file (the page and its DOT
diagrams), and the SVG of each DOT. Pure but for reading the project's templates; nothing is
written. Loaded only when a page is rendered: a check whose docs the manifest vouches for
(`manifest.vouch`) never imports it (nor jinja2)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lockdocs import model as m
from lockdocs.diagnostics import Diagnostic, sort_diagnostics
from lockdocs.render.coverage import coverage_view
from lockdocs.render.dot import path_dot
from lockdocs.render.dot_order import legend_dot, lock_order_dot
from lockdocs.render.edges import cycle_pairs
from lockdocs.render.manifest import svg_path
from lockdocs.render.markdown import TemplateProblem, render_page
from lockdocs.render.stamps import dot_hash, svg_stamp
from lockdocs.render.svg import DOT_TIMEOUT, Drawing, start
from lockdocs.render.targets import (
    Confinement,
    RenderError,
    output_diagnostics,
    page_location,
    read_or_none,
)
from lockdocs.render.view import PageView, build_page

if TYPE_CHECKING:
    from lockdocs.progress import Progress
    from lockdocs.rules.context import CheckContext
    from lockdocs.scan.decls import Coverage


@dataclass(frozen=True)
class Prepared:
    """What a page needs before its templates run: the view and every DOT diagram (so the
    diagrams can be drawn while the templates render)."""

    page_path: str
    view: PageView
    dots: dict[str, str]


def prepare(
    model: m.Model, diagnostics: list[Diagnostic], facts: CheckContext | None = None
) -> Prepared:
    """The page's view and its DOT files ({posix path relative to the root: DOT}); `facts`,
    the analysis's, saves the page building the lock-order graph again (`EdgeSet`).

    Raises RenderError for a page.output outside docs/ or claims of the page that disagree
    (LD606)."""
    bad = output_diagnostics(model)
    if bad:
        raise RenderError(bad)
    page_path, stem = page_location(model)
    diagnostics = sort_diagnostics(list(diagnostics))
    view = build_page(model, diagnostics, stem, facts)
    if view.contradictions:
        raise RenderError(sort_diagnostics(list(view.contradictions)))
    cycles = cycle_pairs(diagnostics)
    folder = str(PurePosixPath(stem).parent)
    dots = {f"{stem}/legend.dot": legend_dot(model, any(cycles))}
    for part in view.order.components:
        if part.diagram_dot:
            dots[str(PurePosixPath(folder) / part.diagram_dot)] = lock_order_dot(
                model,
                part.name,
                view.edge_pairs,
                tuple(view.order.layer_ids[i] for i in part.diagram_parts),
                view.order.two_way_ids,
                cycles,
            )
    for group in view.groups:
        for path in group.paths:
            rel = str(PurePosixPath(folder) / path.diagram_dot)
            dots[rel] = path_dot(model, model.paths[path.id], path.held_marks)
    return Prepared(page_path, view, dots)


def page_files(model: m.Model, prepared: Prepared, coverage: Coverage | None) -> dict[str, str]:
    """The page's Markdown and its DOT files, sorted by path. Raises RenderError for a broken
    project template."""
    try:
        markdown = render_page(Path(model.root), prepared.view, coverage_view(model, coverage))
    except TemplateProblem as exc:
        raise RenderError([exc.diagnostic]) from None
    return dict(sorted({prepared.page_path: markdown, **prepared.dots}.items()))


def render_outputs(
    model: m.Model, diagnostics: list[Diagnostic], coverage: Coverage | None = None
) -> dict[str, str]:
    """Every generated text file: {posix path relative to the root: content}, sorted by path.
    `coverage` (when locks.yaml has code:) gives the page its line about the scanned SQL.

    Raises RenderError for a page.output outside docs/, a broken project template, or claims of
    the page that disagree (LD606).
    """
    return page_files(model, prepare(model, diagnostics), coverage)


class Svgs:
    """The SVG of every DOT (`start_svgs`): the ones on disk whose stamps match, and the
    drawing of the others, under way."""

    def __init__(self, kept: dict[str, str], drawing: Drawing | None) -> None:
        self.kept = kept
        self.drawing = drawing
        drawn = () if drawing is None else tuple(svg_path(rel) for rel in drawing.dots)
        self.names = tuple(sorted((*kept, *drawn)))  # every SVG's path

    def chunks(self) -> Iterator[dict[str, str]]:
        """{svg path: SVG}: the kept ones, then the drawn ones as the `dot` runs finish;
        raises GraphvizError."""
        if self.kept:
            yield dict(self.kept)
        if self.drawing is not None:
            for drawn in self.drawing.chunks():
                yield {svg_path(rel): svg_text for rel, svg_text in drawn.items()}

    def cancel(self) -> None:
        if self.drawing is not None:
            self.drawing.cancel()


def start_svgs(
    root: Path,
    dots: dict[str, str],
    *,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> Svgs:
    """Start on an SVG for every DOT: the one on disk when its stamp says it was drawn from
    this very DOT (the cache: a diagram whose DOT is unchanged is never drawn again), else
    drawn in the background, many to a `dot` process and one process per core
    (`svg.start`). Raises GraphvizError when there is no `dot` to draw with."""
    kept: dict[str, str] = {}
    todo: dict[str, str] = {}
    confined = Confinement(root)
    for rel, text in dots.items():
        old = read_or_none(root / svg_path(rel)) if confined(svg_path(rel)) else None
        if old is not None and svg_stamp(old) == dot_hash(text):
            kept[svg_path(rel)] = old
        else:
            todo[rel] = text
    if not todo:
        return Svgs(kept, None)

    def shown(done: int, total: int) -> None:
        if progress is not None:
            progress.count("drawing diagrams", done, total)

    return Svgs(kept, start(todo, timeout=timeout or DOT_TIMEOUT, progress=shown))
