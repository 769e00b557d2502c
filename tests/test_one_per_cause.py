"""One finding per cause: a step of a shared path, reached through several callers, is
reported once at the step, naming the callers; an exception may name the path or a caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import run_cli, write_project

LOCKS = """\
lockdocs: 1
page: {title: Locks}
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: writers}
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for no key update: writers}
rules:
  ledger-first:
    title: The ledger row comes before the account rows
    before: {first: ledger, then: account}
"""

PATHS = """\
group: Money
paths:
  settle:
    title: Settle the accounts
    standalone: false
    steps:
      - loop: both accounts
        order: request order
        steps:
          - take: account
      - take: ledger
      - external: "bank API: confirm"
  pay:
    title: Pay
    steps:
      - run: settle
  refund:
    title: Refund
    steps:
      - run: settle
  payout:
    title: Payout
    steps:
      - run: settle
"""


def _check(root: Path, fmt: str = "json") -> Any:
    return run_cli("check", "--no-drift", "--format", fmt, "--root", str(root))


def test_a_shared_step_is_reported_once_naming_its_callers(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "paths/money.yaml": PATHS})
    diags = _check(root).json()["diagnostics"]
    by_code: dict[str, list[dict[str, Any]]] = {}
    for d in diags:
        by_code.setdefault(d["code"], []).append(d)
    assert sorted(by_code) == ["LD202", "LD302", "LD502"]
    assert all(len(v) == 1 for v in by_code.values()), [d["message"] for d in diags]
    callers = " (run from 'pay', 'payout' and 'refund')"
    assert by_code["LD302"][0]["message"] == (
        "path 'settle' calls 'bank API: confirm' while holding account (for no key update), "
        "ledger (for no key update)" + callers
    )
    assert by_code["LD202"][0]["message"].endswith(callers)
    assert by_code["LD202"][0]["message"].startswith("path 'settle' takes several instances")
    assert by_code["LD502"][0]["message"] == (
        "rule 'ledger-first': path 'settle' takes ledger while holding account" + callers
    )
    for d in diags:
        assert d["paths"][:4] == ["settle", "pay", "payout", "refund"], d
    # one annotation per cause on GitHub as well
    gh = _check(root, "github").out.splitlines()
    assert len([line for line in gh if line.startswith("::")]) == 3


def test_an_exception_naming_a_caller_or_the_path_waives_the_one_finding(tmp_path: Path) -> None:
    for named in ("settle", "refund"):
        locks = LOCKS + f"exceptions:\n  - rule: LD302\n    path: {named}\n    why: confirmed\n"
        root = write_project(tmp_path / named, {"locks.yaml": locks, "paths/money.yaml": PATHS})
        diags = _check(root).json()["diagnostics"]
        ld302 = [d for d in diags if d["code"] == "LD302"]
        assert len(ld302) == 1 and ld302[0]["waived_by"], ld302
        assert not [d for d in diags if d["code"] == "LD401"], "the exception is not stale"


def test_a_step_in_one_path_is_unchanged(tmp_path: Path) -> None:
    paths = PATHS.replace("    standalone: false\n", "")
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "paths/money.yaml": paths})
    diags = _check(root).json()["diagnostics"]
    ld302 = [d for d in diags if d["code"] == "LD302"]
    assert len(ld302) == 1
    assert ld302[0]["message"].endswith("(run from 'pay', 'payout' and 'refund')")
    only = PATHS.split("  pay:", maxsplit=1)[0].replace("    standalone: false\n", "")
    root = write_project(tmp_path / "q", {"locks.yaml": LOCKS, "paths/money.yaml": only})
    ld302 = [d for d in _check(root).json()["diagnostics"] if d["code"] == "LD302"]
    assert [d["message"] for d in ld302] == [
        "path 'settle' calls 'bank API: confirm' while holding account (for no key update), "
        "ledger (for no key update)"
    ]
    assert ld302[0]["paths"] == ["settle"]


CYCLE_PATHS = """\
group: Money
paths:
  post-core:
    title: Post core
    standalone: false
    steps:
      - take: account
      - take: ledger
  a1: {title: A1, steps: [{run: post-core}]}
  a2: {title: A2, steps: [{run: post-core}]}
  a3: {title: A3, steps: [{run: post-core}]}
  close:
    title: Close a ledger
    steps:
      - take: ledger
      - take: account
  adjust:
    title: Adjust
    steps:
      - take: ledger
      - take: account
  audit:
    title: Audit, under the books lock
    steps:
      - take: books
      - take: ledger
      - take: account
  post-books:
    title: Post under the books lock
    steps:
      - take: books
      - take: account
      - take: ledger
"""


def test_one_cycle_report_lists_every_pair_of_paths(tmp_path: Path) -> None:
    """Issue 14, item 8: a cycle is reported once, but every path that makes it is named, so
    a second pair over the same locks does not stay hidden until the first is fixed. A shared
    path is named once, with the paths that run it."""
    locks = LOCKS.split("rules:", maxsplit=1)[0] + (
        "  books:\n    title: Books\n    kind: advisory\n"
        "    key: {hashtextextended: {text: books}}\n    modes: {exclusive: the books}\n"
    )
    root = write_project(tmp_path / "p", {"locks.yaml": locks, "paths/money.yaml": CYCLE_PATHS})
    diags = _check(root).json()["diagnostics"]
    (cycle,) = [d for d in diags if d["code"] == "LD201"]
    details = cycle["details"]
    at = details.index("Every path that can stand in for a hop (each makes the same deadlock):")
    # audit and post-books both hold the books, which keeps the two apart, but each meets the
    # other side of the reported pair, which holds no books
    assert details[at + 1 : at + 3] == [
        "  1. account -> ledger: post-books; post-core (run from a1, a2, a3)",
        "  2. ledger -> account: adjust; audit; close",
    ], details
