"""The renderer: a model and its findings -> every generated text file (the page and its DOT
diagrams), and the SVG of each DOT. Pure but for reading the project's templates; nothing is
written. Loaded only when a page is rendered: a check whose docs the manifest vouches for
(`manifest.vouch`) never imports it (nor jinja2)."""

from __future__ import annotations

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
from lockdocs.render.svg import DOT_TIMEOUT, render_svgs
from lockdocs.render.targets import (
    Confinement,
    RenderError,
    output_diagnostics,
    page_location,
    read_or_none,
)
from lockdocs.render.view import build_page

if TYPE_CHECKING:
    from lockdocs.progress import Progress
    from lockdocs.scan.decls import Coverage


def render_outputs(
    model: m.Model, diagnostics: list[Diagnostic], coverage: Coverage | None = None
) -> dict[str, str]:
    """Every generated text file: {posix path relative to the root: content}, sorted by path.
    `coverage` (when locks.yaml has code:) gives the page its line about the scanned SQL.

    Raises RenderError for a page.output outside docs/, a broken project template, or claims of
    the page that disagree (LD606).
    """
    bad = output_diagnostics(model)
    if bad:
        raise RenderError(bad)
    page_path, stem = page_location(model)
    diagnostics = sort_diagnostics(list(diagnostics))
    view = build_page(model, diagnostics, stem)
    if view.contradictions:
        raise RenderError(sort_diagnostics(list(view.contradictions)))
    try:
        markdown = render_page(Path(model.root), view, coverage_view(model, coverage))
    except TemplateProblem as exc:
        raise RenderError([exc.diagnostic]) from None
    cycles = cycle_pairs(diagnostics)
    folder = str(PurePosixPath(stem).parent)
    files = {page_path: markdown, f"{stem}/legend.dot": legend_dot(model, any(cycles))}
    for part in view.order.components:
        if part.diagram_dot:
            files[str(PurePosixPath(folder) / part.diagram_dot)] = lock_order_dot(
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
            files[rel] = path_dot(model, model.paths[path.id], path.held_marks)
    return dict(sorted(files.items()))


def draw_svgs(
    root: Path,
    files: dict[str, str],
    *,
    timeout: float | None = None,
    progress: Progress | None = None,
) -> dict[str, str]:
    """An SVG for every DOT: the one on disk when its stamp says it was drawn from this very
    DOT (the cache: a diagram whose DOT is unchanged is never drawn again), else drawn now,
    many to a `dot` process and one process per core (`svg.render_svgs`)."""
    out: dict[str, str] = {}
    todo: dict[str, str] = {}
    confined = Confinement(root)
    for rel in (r for r in files if r.endswith(".dot")):
        old = read_or_none(root / svg_path(rel)) if confined(svg_path(rel)) else None
        if old is not None and svg_stamp(old) == dot_hash(files[rel]):
            out[svg_path(rel)] = old
        else:
            todo[rel] = files[rel]
    if todo:

        def shown(done: int, total: int) -> None:
            if progress is not None:
                progress.count("drawing diagrams", done, total)

        drawn = render_svgs(todo, timeout=timeout or DOT_TIMEOUT, progress=shown)
        out.update({svg_path(rel): svg_text for rel, svg_text in drawn.items()})
    return out
