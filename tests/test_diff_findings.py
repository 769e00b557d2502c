"""How `lockdocs diff` tells a finding whose text changed from a new one plus a fixed one
(issue 25, item 6): the pairing rules, on findings built here."""

from __future__ import annotations

from pathlib import Path

from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.diff.compare import compare
from lockdocs.diff.findings import compare_findings, still_waived
from lockdocs.diff.sides import Side, empty_model


def _d(
    code: str,
    message: str,
    *,
    file: str = "paths/a.yaml",
    line: int = 3,
    paths: tuple[str, ...] = (),
    locks: tuple[str, ...] = (),
    severity: Severity = Severity.ERROR,
    waived_by: str = "",
) -> Diagnostic:
    return Diagnostic(
        code,
        severity,
        message,
        Location(file, line, 1),
        paths=paths,
        locks=locks,
        waived_by=waived_by,
    )


def test_a_finding_that_reaches_one_more_path_is_changed_not_new_and_fixed() -> None:
    old = _d("LD202", "path 'a' takes rows of t in no order (with b)", paths=("a", "b"))
    new = _d("LD202", "path 'a' takes rows of t in no order (with b, c)", paths=("a", "b", "c"))
    got = compare_findings([old], [new], {})
    assert got["new"] == got["fixed"] == []
    [changed] = got["changed"]
    assert changed["was"] == old.message
    assert changed["message"] == new.message
    assert changed["new_paths"] == ["c"]


def test_lines_moving_is_no_change_at_all() -> None:
    old = _d("LD202", "path 'a' holds one taken at line 4", line=3, paths=("a",))
    new = _d("LD202", "path 'a' holds one taken at line 9", line=8, paths=("a",))
    got = compare_findings([old], [new], {})
    assert all(v == [] for v in got.values())


def test_unrelated_findings_of_one_rule_are_new_and_fixed() -> None:
    # Same rule and file, but about other locks and paths: a real fix and a real new finding.
    old = _d("LD201", "lock-order cycle: a -> b -> a", paths=("p", "q"), locks=("a", "b"))
    new = _d("LD201", "lock-order cycle: c -> d -> c", paths=("r", "s"), locks=("c", "d"))
    got = compare_findings([old], [new], {})
    assert [f["message"] for f in got["new"]] == [new.message]
    assert [f["message"] for f in got["fixed"]] == [old.message]
    assert got["changed"] == []


def test_each_finding_pairs_with_its_closest_counterpart() -> None:
    """Two LD301 findings in one file (two transaction kinds) each keep their own identity."""
    base = [
        _d("LD301", "kind 'plain' sets no lock_timeout; 2 paths (a, b)", file="locks.yaml"),
        _d("LD301", "kind 'work' sets no lock_timeout; 2 paths (c, d)", file="locks.yaml"),
    ]
    head = [
        _d("LD301", "kind 'plain' sets no lock_timeout; 3 paths (a, b, e)", file="locks.yaml"),
        _d("LD301", "kind 'work' sets no lock_timeout; 1 path (c)", file="locks.yaml"),
    ]
    got = compare_findings(base, head, {})
    assert got["new"] == got["fixed"] == []
    pairs = sorted((c["was"], c["message"]) for c in got["changed"])
    assert pairs == sorted([(base[0].message, head[0].message), (base[1].message, head[1].message)])


def test_a_changed_finding_that_loses_its_waiver_is_no_longer_waived() -> None:
    old = _d("LD202", "path 'a' (with b)", paths=("a", "b"), waived_by="exception 1")
    new = _d("LD202", "path 'a' (with b, c)", paths=("a", "b", "c"))
    got = compare_findings([old], [new], {})
    assert [f["message"] for f in got["no_longer_waived"]] == [new.message]
    assert got["changed"] == got["new"] == got["fixed"] == []
    # waived on both sides with new text: unchanged and waived, not a change
    both = _d("LD202", "path 'a' (with b, c)", paths=("a", "b", "c"), waived_by="exception 1")
    again = compare_findings([old], [both], {})
    assert all(v == [] for v in again.values())
    assert still_waived([old], [both], {}) == 1


def test_a_renamed_lock_still_pairs() -> None:
    old = _d("LD202", "path 'a' takes several acct (b)", paths=("a", "b"), locks=("acct",))
    new = _d(
        "LD202", "path 'a' takes several account (b, c)", paths=("a", "b", "c"), locks=("account",)
    )
    got = compare_findings([old], [new], {"acct": "account"})
    assert [c["new_paths"] for c in got["changed"]] == [["c"]]


def test_a_changed_error_that_reaches_a_new_path_fails_the_gate(tmp_path: Path) -> None:
    """--fail-on new-findings: a finding that now also holds on a new path is new there."""
    old = _d("LD202", "path 'a' takes rows of t in no order (with b)", paths=("a", "b"))
    grown = _d("LD202", "path 'a' takes rows of t in no order (with b, c)", paths=("a", "b", "c"))
    reworded = _d("LD202", "path 'a' takes the rows of t in no order (with b)", paths=("a", "b"))
    model = empty_model(tmp_path)
    base = Side("base", model, [old])
    assert compare(base, Side("head", model, [grown]))["new_unwaived"] == 1
    assert compare(base, Side("head", model, [reworded]))["new_unwaived"] == 0
