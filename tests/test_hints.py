"""A cycle's hint proposes a fix the declared rules allow, and the fix works: applying it to
the files makes the cycle (and any rule finding) go away."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli, write_project

LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  customer:
    title: Customer row
    kind: row
    table: app.customers
    modes: {for no key update: writers}
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: writers}
"""

PATHS = """\
group: Money
paths:
  open:
    title: Open an account
    steps:
      - take: customer
      - take: account
  transfer:
    title: Transfer
    steps:
      - take: account
      - take: customer
"""

RULES = {
    "before": "rules:\n  customer-first:\n    title: Customer first\n"
    "    before: {first: customer, then: account}\n",
    "levels": "rules:\n  written-order:\n    title: The written order\n"
    "    order: {levels: [[customer], [account]]}\n",
}


def _findings(root: Path) -> list[dict[str, Any]]:
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(root))
    assert "Traceback" not in result.err
    diags: list[dict[str, Any]] = result.json()["diagnostics"]
    return diags


def _cycle_hint(root: Path) -> str:
    [cycle] = [d for d in _findings(root) if d["code"] == "LD201"]
    return str(cycle["hint"])


@pytest.mark.parametrize("kind", sorted(RULES))
def test_the_hint_reorders_the_path_the_rule_forbids(tmp_path: Path, kind: str) -> None:
    # Both orders of transfer/open make the cycle; the rule says customer comes first, so the
    # fix must move 'transfer', whichever edge the search meets last.
    for flip in (False, True):
        paths = PATHS if not flip else PATHS.replace("  open:", "  aaa-open:")
        root = write_project(
            tmp_path / f"{kind}-{flip}", {"locks.yaml": LOCKS + RULES[kind], "paths/m.yaml": paths}
        )
        rid = "customer-first" if kind == "before" else "written-order"
        assert _cycle_hint(root) == (
            f"make 'transfer' take customer before account, as rule '{rid}' requires"
        )
        # the fix works, and breaks no rule
        fixed = paths.replace(
            "      - take: account\n      - take: customer\n",
            "      - take: customer\n      - take: account\n",
        )
        write_project(root, {"paths/m.yaml": fixed})
        assert _findings(root) == []


def test_without_a_rule_the_hint_says_which_path_does_it_the_other_way(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "paths/m.yaml": PATHS})
    hint = _cycle_hint(root)
    assert hint in (
        "make 'transfer' take customer before account, as 'open' does",
        "make 'open' take account before customer, as 'transfer' does",
    )


KEY_SHARE = """\
lockdocs: 1
page: {title: Locks}
locks:
  order:
    title: Order row
    kind: row
    table: app.orders
    modes: {for update: the shipper, for key share: foreign-key checks of new items}
  shipment:
    title: Shipment row
    kind: row
    table: app.shipments
    modes: {for no key update: writers}
"""

KEY_SHARE_PATHS = """\
group: Orders
paths:
  add-item:
    title: Add an item
    steps:
      - take: order
        mode: for key share
        implicit: INSERT INTO items (the foreign key to orders)
      - take: shipment
  ship:
    title: Ship
    steps:
      - take: shipment
      - take: order
        mode: for update
"""


def test_for_update_against_for_key_share_suggests_for_no_key_update(tmp_path: Path) -> None:
    locks = KEY_SHARE.replace(
        "modes: {for update: the shipper,", "modes: {for update: the shipper, for no key update: x,"
    )
    root = write_project(tmp_path / "p", {"locks.yaml": locks, "paths/o.yaml": KEY_SHARE_PATHS})
    hint = _cycle_hint(root)
    assert hint.startswith(
        "take order FOR NO KEY UPDATE instead of FOR UPDATE in 'ship' unless it changes a key "
        "column: it does not conflict with the FOR KEY SHARE of 'add-item', so that wait cannot "
        "happen; or make "
    ), hint
    # the fix works
    write_project(
        root, {"paths/o.yaml": KEY_SHARE_PATHS.replace("for update", "for no key update")}
    )
    assert [d["code"] for d in _findings(root) if d["code"] == "LD201"] == []


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_diff_blames_the_path_the_change_added(tmp_path: Path) -> None:
    """check alone blames one of the two paths; on the pull request that adds the other one,
    diff names the added path, whichever check picked."""
    for added in ("open", "transfer"):
        repo = tmp_path / added
        kept = "transfer" if added == "open" else "open"
        first, second = PATHS.split("  transfer:")
        parts = {"open": first.split("paths:\n")[1], "transfer": "  transfer:" + second}
        head = "group: Money\npaths:\n" + parts["open"] + parts["transfer"]
        write_project(
            repo, {"locks.yaml": LOCKS, "paths/m.yaml": "group: Money\npaths:\n" + parts[kept]}
        )
        _git("init", "-q", cwd=repo)
        _git("add", "-A", cwd=repo)
        _git("commit", "-q", "-m", "base", cwd=repo)
        write_project(repo, {"paths/m.yaml": head})
        result = run_cli("diff", "HEAD", "--format", "json", cwd=repo)
        assert result.code == 0, result.err
        [new] = result.json()["findings"]["new"]
        assert new["code"] == "LD201"
        assert new["hint"].startswith(f"make '{added}' take "), (added, new["hint"])
