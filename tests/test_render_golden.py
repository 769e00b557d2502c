"""Golden files: the page and the DOT of tests/fixtures/render_project, exactly.

The fixture declares every lock kind, every key construction, every step kind, an exception
with an issue and findings the check leaves standing (the page states the key checks' verdicts).
After an intended change to the renderer, rewrite the files with
`pytest tests/test_render_golden.py --update-golden` and review the diff.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lockdocs.api import analyse, analysis, load
from lockdocs.diagnostics import sort_diagnostics
from lockdocs.render.edges import EdgeSet
from lockdocs.render.pages import page_files, prepare, render_outputs

FIXTURE = Path(__file__).parent / "fixtures" / "render_project"
GOLDEN = Path(__file__).parent / "golden" / "render_project"


def _outputs(root: Path) -> dict[str, str]:
    model, diags = load(root)
    assert model is not None, diags
    return render_outputs(model, sort_diagnostics(diags + analyse(model)))


def test_page_and_dot_match_the_golden_files(update_golden: bool) -> None:
    outputs = _outputs(FIXTURE)
    if update_golden:
        shutil.rmtree(GOLDEN, ignore_errors=True)
        for rel, content in outputs.items():
            target = GOLDEN / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8"))
        pytest.skip("golden files rewritten")
    golden = {
        p.relative_to(GOLDEN).as_posix(): p.read_bytes().decode("utf-8")
        for p in sorted(GOLDEN.rglob("*"))
        if p.is_file()
    }
    assert sorted(outputs) == sorted(golden), "files added or removed; run with --update-golden"
    for rel, content in outputs.items():
        assert content == golden[rel], f"{rel} differs; run with --update-golden and review"


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("spent", [False, True], ids=["reused", "budget-spent"])
@pytest.mark.parametrize(
    "root", [FIXTURE, REPO, REPO / "examples" / "dstack"], ids=["fixture", "flagship", "dstack"]
)
def test_the_builds_page_with_the_analysis_graph_is_the_same_page(root: Path, spent: bool) -> None:
    """`lockdocs build` hands the page the analysis's facts (its flattened paths and lock-order
    graphs) instead of building them again: the files must be the very ones rendered without.
    An analysis whose budget ran out is not reused (its walks stop where its checks left off):
    the page then builds its own, and is the same page too."""
    model, diags = load(root)
    assert model is not None, diags
    done = analysis(model)
    if spent:
        done.facts.budget.spend(model.limits.analysis_work + 1)
        assert done.facts.budget.out == "work"
    found = sort_diagnostics(diags + done.findings)
    assert (EdgeSet(model, done.facts).ctx is done.facts) is not spent  # reused, or not
    prepared = prepare(model, found, done.facts)
    assert page_files(model, prepared, done.coverage) == render_outputs(model, found, done.coverage)


def test_outputs_do_not_depend_on_where_the_project_is(tmp_path: Path) -> None:
    copy = tmp_path / "somewhere" / "else"
    shutil.copytree(FIXTURE, copy)
    assert _outputs(copy) == _outputs(FIXTURE)


def test_the_golden_page_carries_every_kind_of_fact() -> None:
    """A guard on the fixture itself: it keeps exercising what the golden files are for."""
    page = (GOLDEN / "docs" / "database-locks.md").read_text(encoding="utf-8")
    for needle in (
        "### Advisory locks",
        "### Row locks",
        "### Table locks",
        "### In-process locks",
        '??? info "Details of each advisory lock"',
        "of a fixed name",
        "of a prefix plus parts",
        "of a bare id, widened to bigint",
        "A literal constant",
        "The two-int4 form",
        "in `pg_locks`",
        "equals no other key here.",
        "Takes [Catalog gate](#lock-catalog-gate) **shared** first, in `BeginCheckout`",
        "For each line's SKU",
        "One of (by the order's status)",
        "**already cancelled:** nothing more",
        "Runs [Enqueue a notice](#path-enqueue-notice) in this transaction",
        "Calls `pg_notify`",
        "Calls out to *Mail: send the notices* **while holding**",
        "Writes stock",
        "Opens a transaction of the [plain](#tx-plain) kind",
        "stays held",
        "Rolls back",
        "Returns with the transaction still open",
        "Releases [Cache warm-up]",
        "already held",
        "## The lock order the paths follow",
        "**Taken while holding:**",
        "**Held while taking:**",
        '??? abstract "**Place an order** (`PlaceOrder`): Catalog gate shared',
        "; waits up to 5s",
        "## How this page is checked",
        "{: #path-place-order }",
        "{ .lockdocs-path-diagram }",
        "## Where the paths differ",
        "[\\#12](https://tracker.invalid/shop/issues/12)",
        "## Planned work",
        "level 1 of [rule 5 (One written order)]",
        "![Legend",
    ):
        assert needle in page, needle
    for gone in (
        "Remaining findings",
        "**LD302**",
        "Declared in:",
        "(sql-function)",
        "..",
        ": checked",
        "*Checked:*",
        "Not checked by lockdocs",
        "`lockdocs check`",
        "sometimes already held",
        "in no declared order",
    ):
        assert gone not in page.replace("...", ""), gone
    order = (GOLDEN / "docs" / "database-locks" / "lock-order-catalog-gate.dot").read_text(
        encoding="utf-8"
    )
    assert "-> " in order and "lockdocs-title: Lock order" in order
