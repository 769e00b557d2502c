"""The DOT writer: reported cycles in red, the written order as ranks, edges with or without the
checker's graph module, and output that is valid for the real `dot`."""

from __future__ import annotations

import importlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import write_project
from lockdocs import model as m
from lockdocs.api import analyse, load
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.render import edges as edges_mod
from lockdocs.render.dot import RED, group_dot, lock_order_dot
from lockdocs.render.view import build_page
from lockdocs.rules.registry import load_all

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"

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


def _model(root: Path) -> m.Model:
    model, diags = load(root)
    assert model is not None, diags
    return model


def _edge_line(dot: str, src: str, dst: str) -> str:
    return next(line for line in dot.splitlines() if line.strip().startswith(f'"{src}" -> "{dst}"'))


def test_a_reported_cycle_is_red(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"locks.yaml": CYCLE_LOCKS, "paths/money.yaml": CYCLE_PATHS})
    model = _model(root)
    found = analyse(model)
    cycles = [d for d in found if d.code == "LD201"]
    assert cycles and not cycles[0].waived_by
    dot = lock_order_dot(model, found)
    for src, dst in (("account", "ledger"), ("ledger", "account")):
        line = _edge_line(dot, src, dst)
        assert f'color="{RED}"' in line and "penwidth=2" in line
    page = build_page(model, found, "docs/database-locks")
    assert {e.cycle for e in page.edges} == {"reported"}
    assert page.reported_cycles == 1


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
    dot = lock_order_dot(model, [waived])
    line = _edge_line(dot, "account", "ledger")
    assert f'color="{RED}"' in line and "style=dashed" in line


def test_no_cycle_no_red() -> None:
    model = _model(FIXTURE)
    assert RED not in lock_order_dot(model, analyse(model))


def test_edges_without_the_checkers_graph_module(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(FIXTURE)
    with_graph = [(e.src, e.dst, e.paths) for e in edges_mod.lock_edges(model)]
    real = importlib.import_module

    def no_graph(name: str, package: str | None = None) -> Any:
        if name == "lockdocs.analysis.graph":
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(edges_mod.importlib, "import_module", no_graph)
    derived = [(e.src, e.dst, e.paths) for e in edges_mod.lock_edges(model)]
    assert derived == with_graph
    assert ("stock-row", "stock-row", ("place-order", "cancel-order", "change-catalog")) in derived


def test_node_ids_are_local_to_each_path() -> None:
    """Editing one path must not renumber the nodes of another (small DOT diffs)."""
    model = _model(FIXTURE)
    group = model.groups[0]
    dot = group_dot(model, group, "checkout")
    assert '"place-order:1"' in dot and '"cancel-order:1"' in dot


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_every_fixture_graph_is_valid_dot() -> None:
    model = _model(FIXTURE)
    found = analyse(model)
    sources = [lock_order_dot(model, found)]
    sources += [group_dot(model, g, f"g{i}") for i, g in enumerate(model.groups)]
    for source in sources:
        proc = subprocess.run(
            ["dot", "-Tsvg"], input=source.encode(), capture_output=True, timeout=60, check=False
        )
        assert proc.returncode == 0 and not proc.stderr, proc.stderr.decode()
