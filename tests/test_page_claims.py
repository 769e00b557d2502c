"""The consistency pass (LD606): two claims of the page that disagree stop the build. One test
per kind of contradiction the issue found on the flagship page, each with the declarations (or,
where the declarations cannot make the page disagree, the view) that would make it, and the
same project without the contradiction to show the pass stays quiet on a true page.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from conftest import REPO, run_cli, write_project
from lockdocs.api import analyse, load
from lockdocs.diagnostics import Diagnostic, sort_diagnostics
from lockdocs.render.pages import render_outputs
from lockdocs.render.targets import RenderError
from lockdocs.render.view.base import PageContext
from lockdocs.render.view.claims import PageView as Claimed
from lockdocs.render.view.claims import contradictions
from lockdocs.render.view.page import build_page

ROWS = """\
lockdocs: 1
page: {title: Locks}
transactions:
  plain: {title: plain transaction, lock_timeout: none}
  worker: {title: worker transaction, opened_by: BeginWork, lock_timeout: 2s}
locks:
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for update: every writer}
    instances: {order: ascending id}
    serializes: Postings to one ledger.
  tag:
    title: Tag row
    kind: row
    table: app.tags
    modes: {for update: a rename, for no key update: a count change}
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for update: every writer}
    serializes: Changes to one account.
"""

ONE_WAY = """\
group: Money
transaction: plain
paths:
  post:
    title: Post
    steps:
      - take: ledger
      - take: account
  refund:
    title: Refund
    steps:
      - take: ledger
      - take: account
"""


def _page(root: Path) -> tuple[list[Diagnostic], str]:
    """(the LD606 findings, the page) of a project: the findings when rendering stops."""
    model, diags = load(root)
    assert model is not None, diags
    try:
        files = render_outputs(model, sort_diagnostics(diags + analyse(model)))
    except RenderError as exc:
        assert all(d.code == "LD606" for d in exc.diagnostics), exc.diagnostics
        return exc.diagnostics, ""
    return [], files[f"docs/{model.page.output}"]


def _project(tmp_path: Path, locks: str = ROWS, paths: str = ONE_WAY, name: str = "p") -> Path:
    return write_project(tmp_path / name, {"locks.yaml": locks, "paths/money.yaml": paths})


def test_a_consistent_project_renders(tmp_path: Path) -> None:
    found, page = _page(_project(tmp_path))
    assert not found and "# Locks" in page


# --- 1. direction: "never deadlock" beside a deadlock ------------------------------------------


TWO_WAYS = ONE_WAY.replace(
    "  refund:\n    title: Refund\n    steps:\n      - take: ledger\n      - take: account\n",
    "  refund:\n    title: Refund\n    steps:\n      - take: account\n      - take: ledger\n",
)


def test_prose_that_says_never_deadlock_beside_a_deadlock_stops_the_build(tmp_path: Path) -> None:
    prose = ROWS.replace(
        "serializes: Postings to one ledger.",
        "serializes: Postings to one ledger; a post and a refund only ever wait in one direction.",
    )
    found, _ = _page(_project(tmp_path, prose, TWO_WAYS))
    assert found, "the contradiction went through"
    assert "only ever wait in one direction" in found[0].message
    assert "LD201" in found[0].message and found[0].location.file == "locks.yaml"
    # the same prose is true where the paths take the locks one way only
    assert not _page(_project(tmp_path, prose, ONE_WAY, "one-way"))[0]
    # and a deadlock the prose does not deny is no contradiction
    assert not _page(_project(tmp_path, ROWS, TWO_WAYS, "no-claim"))[0]


def test_a_waived_deadlock_contradicts_never_deadlock_too(tmp_path: Path) -> None:
    prose = ROWS.replace(
        "serializes: Changes to one account.",
        "serializes: Changes to one account; it can never deadlock.",
    ) + (
        "exceptions:\n  - rule: LD201\n    path: refund\n    title: Refund takes them the other way\n"
        "    why: rare, and retried\n"
    )
    found, _ = _page(_project(tmp_path, prose, TWO_WAYS))
    assert found and "exception 1 says it can deadlock" in found[0].message


# --- 2. order: one take's order named two ways -------------------------------------------------


def test_a_loop_and_its_take_that_name_two_orders_stop_the_build(tmp_path: Path) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  batch:
    title: Batch
    steps:
      - loop: each ledger of the batch
        order: ascending id
        steps:
          - take: ledger
            order: creation order
"""
    found, _ = _page(_project(tmp_path, ROWS, paths))
    assert found and "ascending id" in found[0].message and "creation order" in found[0].message
    agreed = paths.replace("            order: creation order\n", "")
    assert not _page(_project(tmp_path, ROWS, agreed, "agreed"))[0]


def test_a_deviation_said_two_ways_in_the_table_and_the_order_is_caught(tmp_path: Path) -> None:
    """The lock table and the lock order derive a deviation from one fact; the pass holds them
    to it (here the order's copy is made to say something else)."""
    paths = """\
group: Money
transaction: plain
paths:
  batch:
    title: Batch
    steps:
      - loop: each ledger of the batch
        order: creation order
        steps:
          - take: ledger
"""
    _, ctx, claimed = _claimed(_project(tmp_path, ROWS, paths))
    assert not contradictions(ctx, claimed)
    comp = claimed.order.components[0]
    ledger = next(o for level in comp.levels for o in level if o.deviations)
    moved = dataclasses.replace(
        ledger,
        deviations=(dataclasses.replace(ledger.deviations[0], how="them in no set order"),),
    )
    levels = tuple(tuple(moved if o is ledger else o for o in level) for level in comp.levels)
    order = dataclasses.replace(
        claimed.order, components=(dataclasses.replace(comp, levels=levels),)
    )
    found = contradictions(ctx, dataclasses.replace(claimed, order=order))
    assert found and "in creation order" in found[0].message and "no set order" in found[0].message


# --- 3. planned work the paths already do ------------------------------------------------------


def test_planned_work_that_has_landed_stops_the_build(tmp_path: Path) -> None:
    planned = ROWS + (
        "planned:\n  - issue: 7\n    title: Refund takes the account row under the ledger\n"
        "    adds: [{path: refund, lock: account, holding: ledger}]\n"
    )
    found, _ = _page(_project(tmp_path, planned))
    assert found and "#7" in found[0].message and "refund takes account" in found[0].message
    # before it lands (the refund takes only the ledger), the page calls it planned
    before = ONE_WAY.replace(
        "  refund:\n    title: Refund\n    steps:\n      - take: ledger\n      - take: account\n",
        "  refund:\n    title: Refund\n    steps:\n      - take: ledger\n",
    )
    found, page = _page(_project(tmp_path, planned, before, "before"))
    assert not found and "## Planned work" in page


# --- 4. transactions: a path's kinds against the kinds its steps run in -------------------------


def test_a_path_said_to_run_in_one_kind_while_its_steps_run_in_another_is_caught(
    tmp_path: Path,
) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  post:
    title: Post
    transaction: plain
    steps:
      - take: ledger
      - commit
      - begin: worker
      - take: account
      - commit
"""
    _, ctx, claimed = _claimed(_project(tmp_path, ROWS, paths))
    assert not contradictions(ctx, claimed)
    group = claimed.groups[0]
    post = group.paths[0]
    assert [k.id for k in post.kinds] == ["plain", "worker"]
    # the header that named one kind only (as "single statement, 2 in all" did)
    one = dataclasses.replace(post, kinds=post.kinds[:1])
    groups = (dataclasses.replace(group, paths=(one,)),)
    found = contradictions(ctx, dataclasses.replace(claimed, groups=groups))
    assert found and "worker" in found[0].message and "'post'" in found[0].message


# --- 5. a key change declared in a mode a key change cannot take --------------------------------


def test_a_key_change_declared_for_no_key_update_stops_the_build(tmp_path: Path) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  rename:
    title: Rename
    steps:
      - take: tag
        mode: for no key update
        implicit: UPDATE
        changes_key: true
      - write: tag name
"""
    found, _ = _page(_project(tmp_path, ROWS, paths))
    assert found and "changes a key column" in found[0].message
    assert "FOR NO KEY UPDATE" in found[0].message
    fixed = paths.replace("mode: for no key update", "mode: for update")
    found, page = _page(_project(tmp_path, ROWS, fixed, "fixed"))
    assert not found
    assert "which changes a column of a unique key, so Postgres takes FOR UPDATE" in page
    assert "or deletes the row" not in page


# --- 6. a re-take of a lock nothing holds -------------------------------------------------------


def test_a_retake_of_a_lock_no_step_holds_stops_the_build(tmp_path: Path) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  post:
    title: Post
    steps:
      - take: account
      - take: ledger
        again: true
"""
    found, _ = _page(_project(tmp_path, ROWS, paths))
    assert found and "again: true" in found[0].message and "ledger" in found[0].message
    held = paths.replace("      - take: account\n", "      - take: ledger\n      - take: account\n")
    found, page = _page(_project(tmp_path, ROWS, held, "held"))
    assert not found and "already held" in page


# --- 7. in the caller's transaction, or in one of its own ---------------------------------------


def test_a_path_run_in_its_callers_transaction_that_opens_its_own_stops_the_build(
    tmp_path: Path,
) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  post:
    title: Post
    steps:
      - take: ledger
      - run: audit
      - commit
  audit:
    title: Audit
    standalone: false
    steps:
      - begin: worker
      - take: account
      - commit
"""
    found, _ = _page(_project(tmp_path, ROWS, paths))
    assert any("standalone: false" in d.message for d in found), found
    # run after the caller's commit, it opens its own: the page says "Run only by"
    after = paths.replace(
        "      - run: audit\n      - commit\n", "      - commit\n      - run: audit\n"
    )
    found, page = _page(_project(tmp_path, ROWS, after, "after"))
    assert not found and "**Run only by:** [Post](#path-post)" in page
    assert "in the caller's transaction" not in page


def test_a_caller_said_to_lend_its_transaction_that_runs_with_none_open_is_caught(
    tmp_path: Path,
) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  post:
    title: Post
    steps:
      - take: ledger
      - commit
      - run: audit
  audit:
    title: Audit
    standalone: false
    steps:
      - write: audit row
"""
    _, ctx, claimed = _claimed(_project(tmp_path, ROWS, paths))
    assert not contradictions(ctx, claimed)
    group = claimed.groups[0]
    audit = next(p for p in group.paths if p.id == "audit")
    assert not audit.run_inside and audit.run_by  # run after the commit: not "inside"
    wrong = dataclasses.replace(audit, run_inside=audit.run_by, run_by=())
    groups = (
        dataclasses.replace(group, paths=tuple(wrong if p is audit else p for p in group.paths)),
    )
    found = contradictions(ctx, dataclasses.replace(claimed, groups=groups))
    assert found and "no transaction open" in found[0].message


# --- 8. a deviation with no exception, no finding and no reason ---------------------------------


def test_a_deviation_named_with_nothing_behind_it_is_caught(tmp_path: Path) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  batch:
    title: Batch
    steps:
      - loop: each ledger of the batch
        order: creation order
        steps:
          - take: ledger
"""
    exception = ROWS + (
        "exceptions:\n  - rule: LD202\n    path: batch\n    lock: ledger\n"
        "    title: The batch goes in creation order\n    why: one batch runs at a time\n"
    )
    _, ctx, claimed = _claimed(_project(tmp_path, exception, paths))
    assert not contradictions(ctx, claimed)
    table = next(t for t in claimed.lock_tables if t.kind == "row")
    ledger = next(lk for lk in table.locks if lk.id == "ledger")
    (dev,) = ledger.several.deviations
    assert dev.exceptions  # exception 1 is named beside it
    bare = dataclasses.replace(dev, exceptions=(), why="")
    several = dataclasses.replace(ledger.several, deviations=(bare,))
    table2 = dataclasses.replace(
        table,
        locks=tuple(
            dataclasses.replace(lk, several=several) if lk is ledger else lk for lk in table.locks
        ),
    )
    tables = tuple(table2 if t is table else t for t in claimed.lock_tables)
    found = contradictions(ctx, dataclasses.replace(claimed, lock_tables=tables))
    assert found and "no exception, no finding and no reason" in found[0].message


def test_a_deviation_no_exception_covers_says_so(tmp_path: Path) -> None:
    paths = """\
group: Money
transaction: plain
paths:
  batch:
    title: Batch
    steps:
      - loop: each ledger of the batch
        order: creation order
        steps:
          - take: ledger
  sweep:
    title: Sweep
    steps:
      - loop: each ledger
        order: ascending id
        steps:
          - take: ledger
"""
    found, page = _page(_project(tmp_path, ROWS, paths))
    assert not found
    assert "takes them in creation order, a deadlock risk no exception covers" in page


FK_LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  account:
    title: Account
    kind: row
    table: app.accounts
    modes: {for no key update: moves, for update: closing}
    instances: {order: ascending account_id}
    references: [{table: app.transfers, column: src}]
"""

FK_PATHS = """\
group: Money
paths:
  move:
    title: Move
    steps:
      - loop: each account
        order: ascending account_id
        steps:
          - take: account
            mode: for no key update
      - write: transfer
        insert: app.transfers
"""


def test_a_foreign_key_check_after_an_ordered_loop_renders_and_says_why_it_is_safe(
    tmp_path: Path,
) -> None:
    """The insert's FOR KEY SHARE on an account after the loop is out of the accounts' order,
    but no other taker holds a mode it waits for: the page once stopped here with LD606 ("a bug
    in lockdocs' page") though check found nothing."""
    found, page = _page(_project(tmp_path, FK_LOCKS, FK_PATHS))
    assert not found, found
    assert (
        "[Move](#path-move) takes them in ascending account_id order, then one more in a "
        "foreign-key check, in no set order, safely: in these modes no two such takers can wait "
        "for each other"
    ) in page
    # a closer that holds accounts FOR UPDATE in that order makes the check's wait real: the
    # page names no reason then, and the check reports it
    closing = FK_PATHS + (
        "  close:\n    title: Close\n    steps:\n      - loop: each account\n"
        "        order: ascending account_id\n        steps:\n          - take: account\n"
        "            mode: for update\n"
    )
    root = _project(tmp_path, FK_LOCKS, closing, name="closing")
    found, page = _page(root)
    assert not found, found
    assert "safely: in these modes" not in page
    assert "a deadlock risk no exception covers" in page
    codes = run_cli("check", "--no-drift", "--root", str(root), "--format", "json").json()
    assert {d["code"] for d in codes["diagnostics"]} & {"LD201", "LD202"}


# --- and two exceptions with one title ----------------------------------------------------------


def test_two_exceptions_with_one_title_stop_the_build(tmp_path: Path) -> None:
    twice = ROWS + (
        "exceptions:\n"
        "  - rule: LD201\n    path: refund\n    title: Refund goes the other way\n"
        "    why: rare\n"
        "  - rule: LD201\n    path: post\n    title: Refund goes the other way.\n    why: rare\n"
    )
    found, _ = _page(_project(tmp_path, twice, TWO_WAYS))
    assert found and "exceptions 1 and 2 have one title" in found[0].message


def test_the_cli_stops_with_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    prose = ROWS.replace(
        "serializes: Postings to one ledger.", "serializes: Postings; they never deadlock."
    )
    root = _project(tmp_path, prose, TWO_WAYS)
    result = run_cli("build", "--root", str(root))
    assert result.code == 2, result.out + result.err
    assert "LD606" in result.out + result.err and "Traceback" not in result.err
    assert not (root / "docs" / "database-locks.md").exists()


@pytest.mark.parametrize("root", [REPO, REPO / "examples" / "dstack"])
def test_the_shipped_pages_have_no_contradiction(root: Path) -> None:
    found, page = _page(root)
    assert not found, found
    assert page


def _claimed(root: Path) -> tuple[object, PageContext, Claimed]:
    model, diags = load(root)
    assert model is not None, diags
    found = sort_diagnostics(diags + analyse(model))
    view = build_page(model, found, "database-locks")
    ctx = PageContext(model, found, "database-locks")
    return model, ctx, Claimed(view.groups, view.lock_tables, view.order)
