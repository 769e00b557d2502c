"""The DOT writer: reported cycles in red, pairs taken both ways in blue, re-takes dashed, the
derived order as ranks, edges with or without the checker's graph module, a title and a
description in every SVG, and output that is valid for the real `dot`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import write_project
from lockdocs import model as m
from lockdocs.api import analyse, load
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.render import edges as edges_mod
from lockdocs.render.dot import BLUE, RED, wrap
from lockdocs.render.dot_order import EDGE_WRAP
from lockdocs.render.pages import render_outputs
from lockdocs.render.svg import render_svg
from lockdocs.render.view import build_page
from lockdocs.rules.catalog import load_all

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
REPO = Path(__file__).resolve().parents[1]

CYCLE_LOCKS = """\
lockdocs: 1
page: {title: Money}
locks:
  account:
    title: Account
    kind: row
    table: app.accounts
    modes: {for update: writers}
  ledger:
    title: Ledger
    kind: row
    table: app.ledgers
    modes: {for update: writers}
"""
CYCLE_PATHS = load_all()["LD201"].example["paths/money.yaml"]  # the rule's own cycle
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def _model(root: Path) -> m.Model:
    model, diags = load(root)
    assert model is not None, diags
    return model


def _dots(model: m.Model, diags: list[Diagnostic]) -> dict[str, str]:
    """Every DOT file the build writes, by its path under docs/."""
    return {
        rel.removeprefix("docs/"): text
        for rel, text in render_outputs(model, diags).items()
        if rel.endswith(".dot")
    }


def _order_dots(dots: dict[str, str]) -> str:
    return "".join(text for rel, text in dots.items() if "/lock-order-" in rel)


def _edge_line(dot: str, src: str, dst: str) -> str:
    return next(line for line in dot.splitlines() if line.strip().startswith(f'"{src}" -> "{dst}"'))


def test_a_reported_cycle_is_red(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"locks.yaml": CYCLE_LOCKS, "paths/money.yaml": CYCLE_PATHS})
    model = _model(root)
    found = analyse(model)
    cycles = [d for d in found if d.code == "LD201"]
    assert cycles and not cycles[0].waived_by
    dot = _order_dots(_dots(model, found))
    for src, dst in (("account", "ledger"), ("ledger", "account")):
        line = _edge_line(dot, src, dst)
        assert f'color="{RED}"' in line and "penwidth=2" in line
    page = build_page(model, found, "docs/database-locks")
    assert {e.cycle for e in page.order.edges} == {"reported"}
    assert page.order.reported_cycles == 1
    assert [b.cycle for b in page.order.both_ways] == ["reported"]


def test_a_waived_cycle_is_dashed_red(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"locks.yaml": CYCLE_LOCKS, "paths/money.yaml": CYCLE_PATHS})
    model = _model(root)
    waived = Diagnostic(
        "LD201",
        Severity.ERROR,
        "cycle",
        Location("paths/money.yaml", 6, 9),
        locks=("ledger", "account"),
        waived_by="exception 1, #4",
    )
    line = _edge_line(_order_dots(_dots(model, [waived])), "account", "ledger")
    assert f'color="{RED}"' in line and "style=dashed" in line


def test_no_cycle_no_red() -> None:
    model = _model(FIXTURE)
    assert RED not in _order_dots(_dots(model, analyse(model)))


def test_a_pair_taken_both_ways_under_a_gate_is_blue_and_explained() -> None:
    """The flagship's pool row and change obligation row: Commit and Drain take the obligation
    row after the pool row, Commit also the next pool row after an obligation row; the
    rendezvous (exclusive in Commit) keeps the two orders from running at once."""
    model = _model(REPO)
    found = analyse(model)
    dot = _order_dots(_dots(model, found))
    forward = _edge_line(dot, "pool-row", "change-obligation-row")
    back = _edge_line(dot, "change-obligation-row", "pool-row")
    for line in (forward, back):
        assert f'color="{BLUE}"' in line and "style=dashed" in line
    assert "constraint=false" in back and "constraint=false" not in forward
    page = build_page(model, found, "docs/database-locks")
    # (the pool row and the resource-key row are a second pair, since the key rows' foreign key)
    (pair,) = [p for p in page.order.both_ways if p.then.text == "Change obligation row"]
    assert pair.first.text == "Pool row"
    assert [p.text for p in pair.forward] == ["Commit", "Drain"]
    assert [p.text for p in pair.backward] == ["Commit"]
    assert pair.gate is not None and pair.gate.text == "Materialization rendezvous"
    assert pair.gate_backward == "exclusive"


def test_edge_labels_list_every_path_title() -> None:
    model = _model(REPO)
    found = analyse(model)
    line = _edge_line(_order_dots(_dots(model, found)), "rendezvous", "pool-row")
    assert "more" not in line
    for title in ("Issue or confer a grant", "Tier removal with holders", "Reorder", "Drain"):
        assert title in line, title
    # Commit reaches the pool rows through the entitlement set rows it holds first.
    assert "Commit" not in line


def _arrows(dot: str) -> dict[tuple[str, str], set[str]]:
    """Each arrow of a lock-order DOT file and the lines of its label."""
    out: dict[tuple[str, str], set[str]] = {}
    for line in dot.splitlines():
        found = re.match(r'  "([^"]+)" -> "([^"]+)" \[label="([^"]*)"', line)
        if found:
            out[(found[1], found[2])] = set(found[3].split("\\n"))
    return out


@pytest.mark.parametrize("root", [REPO, REPO / "examples" / "dstack"], ids=["flagship", "dstack"])
def test_the_order_graph_leaves_out_only_arrows_its_path_implies(root: Path) -> None:
    """For every path, every lock it takes while holding another is reachable along arrows that
    name that path: an arrow left out is one the path's own arrows imply (A -> B -> C says A
    before C), never one whose order would be lost."""
    model = _model(root)
    found = analyse(model)
    arrows = _arrows(_order_dots(_dots(model, found)))
    drawn = {a for (a, b) in arrows} | {b for (a, b) in arrows}
    left_out = 0
    for e in edges_mod.lock_edges(model):
        if e.src == e.dst or e.src not in drawn:
            continue
        for pid in e.paths:
            title = set(wrap(model.paths[pid].title, EDGE_WRAP))
            mine = {pair for pair, lines in arrows.items() if title <= lines}
            seen, todo = {e.src}, [e.src]
            while todo:
                at = todo.pop()
                for a, b in mine:
                    if a == at and b not in seen:
                        seen.add(b)
                        todo.append(b)
            assert e.dst in seen, (pid, e.src, e.dst)
            left_out += not title <= arrows.get((e.src, e.dst), set())
    if root == REPO:
        assert left_out > 0, "the flagship's largest set has arrows its paths imply"


def test_a_lock_already_held_is_drawn_dashed_in_its_path() -> None:
    """What the steps say (already held) is what the diagram shows: Revoke takes the pool row,
    the lineage head, then the pool row again inside core.end_conferral."""
    model = _model(REPO)
    dot = _dots(model, analyse(model))["database-locks/paths/revoke-grant.dot"]
    takes = [line for line in dot.splitlines() if "Pool row" in line]
    assert len(takes) == 3
    assert "already held" not in takes[0] and "dashed" not in takes[0]
    assert all("already held" in t and "dashed" in t for t in takes[1:])


def test_node_ids_are_local_to_each_path() -> None:
    """Editing one path must not renumber the nodes of another (small DOT diffs)."""
    model = _model(FIXTURE)
    dots = _dots(model, analyse(model))
    assert '"place-order:1"' in dots["database-locks/paths/place-order.dot"]
    assert '"cancel-order:1"' in dots["database-locks/paths/cancel-order.dot"]


@needs_dot
def test_every_svg_has_a_title_and_a_description() -> None:
    model = _model(FIXTURE)
    for rel, source in _dots(model, analyse(model)).items():
        svg = render_svg(source)
        head = svg[: svg.index("<g ")]
        assert 'role="img"' in head, rel
        assert "<title>" in head and "<desc>" in head, rel


@needs_dot
def test_every_fixture_graph_is_valid_dot() -> None:
    model = _model(FIXTURE)
    for rel, source in _dots(model, analyse(model)).items():
        proc = subprocess.run(
            ["dot", "-Tsvg"], input=source.encode(), capture_output=True, timeout=60, check=False
        )
        assert proc.returncode == 0 and not proc.stderr, (rel, proc.stderr.decode())
