"""The architecture page (lockdocs/devdocs/architecture.py): drawn from the code, current, and
checked like the reference pages."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from lockdocs import devdocs
from lockdocs.devdocs import architecture
from lockdocs.devdocs import imports as arch
from lockdocs.render.stamps import dot_hash, svg_stamp

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PAGE = architecture.architecture_pages()


def test_the_page_names_every_module_with_its_docstring() -> None:
    text = PAGE["architecture.md"]
    for name, path in arch.modules(architecture.SRC, "lockdocs").items():
        rel = path.relative_to(architecture.SRC).as_posix()
        assert f"- `{rel}`: " in text, name
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc, f"{rel} opens with no docstring saying what it owns"
        first = " ".join(doc.split("\n\n")[0].split())
        assert first.split()[-1].replace("<", "&lt;") in text, rel


def test_the_page_lists_every_layer_in_order() -> None:
    text = PAGE["architecture.md"]
    places = [text.index(f"| {name} | ") for name, _, _ in arch.LAYERS]
    assert places == sorted(places)


def test_the_diagram_has_one_box_per_part_and_only_reduced_arrows() -> None:
    dot = PAGE[architecture.DOT]
    units = {architecture.unit_of(m) for m in arch.modules(architecture.SRC, "lockdocs")}
    for unit in units:
        assert f'"{unit}" [label=' in dot, unit
    assert dot.count("subgraph cluster_") == len(arch.LAYERS)
    # rules -> analysis is drawn; rules -> model is not (rules -> analysis -> model says it).
    assert '"lockdocs.rules" -> "lockdocs.analysis"' in dot
    assert '"lockdocs.rules" -> "lockdocs.model"' not in dot
    # A lazy boundary is dashed: the api loads the renderer only when it builds.
    assert '"lockdocs.api" -> "lockdocs.render" [style=dashed];' in dot


def test_reduction_keeps_only_arrows_no_longer_path_implies() -> None:
    edges = {"a": {"b", "c", "d"}, "b": {"c"}, "c": {"d"}, "d": set()}
    assert architecture._reduced(edges) == {"a": {"b"}, "b": {"c"}, "c": {"d"}, "d": set()}


def test_the_committed_svg_is_drawn_from_the_committed_dot() -> None:
    svg = (DOCS / architecture.SVG).read_text(encoding="utf-8")
    assert svg_stamp(svg) == dot_hash(PAGE[architecture.DOT])
    assert "<title>The import graph of the lockdocs package</title>" in svg


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_a_stale_diagram_or_page_fails_the_check(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    assert devdocs.main(["--docs", str(docs)]) == 0
    assert devdocs.main(["--docs", str(docs), "--check"]) == 0
    svg = docs / architecture.SVG
    svg.write_text(svg.read_text(encoding="utf-8").replace("lockdocs-dot-sha256: ", "x"))
    assert devdocs.drift(docs) == [
        "docs/architecture/imports.svg is not drawn from the current "
        "docs/architecture/imports.dot\n"
    ]
    assert devdocs.main(["--docs", str(docs)]) == 0
    assert devdocs.drift(docs) == []
    page = docs / "architecture.md"
    page.write_text(page.read_text(encoding="utf-8").replace("Layer: rules.", "Layer: ?"))
    assert devdocs.main(["--docs", str(docs), "--check"]) == 1
