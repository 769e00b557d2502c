"""The flagship checks itself end to end: its code/ folder (the queries, SQL functions and Go
helpers the page names) scans with full coverage and check stays clean; changing one
statement gives exactly the expected finding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_cli

NO_CACHE = {"LOCKDOCS_CACHE": "off"}


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "flagship"
    root.mkdir()
    shutil.copy(REPO / "locks.yaml", root / "locks.yaml")
    for folder in ("paths", "code", "src/lockdocs/schema"):
        shutil.copytree(REPO / folder, root / folder)
    return root


def _code_findings(root: Path) -> set[tuple[str, str, int]]:
    result = run_cli("check", "--no-drift", "--format", "json", "--root", str(root), env=NO_CACHE)
    assert "Traceback" not in result.err
    return {
        (d["code"], d["file"], d["line"])
        for d in result.json()["diagnostics"]
        if d["code"].startswith("LD7")
    }


def test_the_flagship_code_is_fully_covered_and_clean() -> None:
    result = run_cli("scan", "--coverage", env=NO_CACHE)
    assert result.code == 0 and not result.err
    assert result.out.endswith(
        "coverage: 32 of 32 declared takers found in the code; 34 of 34 locking statements on "
        "declared locks are declared\n"
    )
    check = run_cli("check", "--format", "json", env=NO_CACHE)
    assert check.code == 0, check.out
    doc = check.json()
    assert not [d for d in doc["diagnostics"] if d["code"].startswith("LD7")]
    cov = doc["coverage"]
    assert (cov["takers"], cov["takers_found"]) == (32, 32)
    assert (cov["statements"], cov["statements_declared"], cov["statements_on_no_lock"]) == (
        34,
        34,
        0,
    )
    page = (REPO / "docs" / "database-locks.md").read_text(encoding="utf-8")
    assert "32 of 32 are found there" in page.split("## How this page is checked")[1]


def _taker_line(name: str) -> int:
    lines = (REPO / "locks.yaml").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == f"- name: {name}")


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        pytest.param(
            "code/queries/usage.sql",
            "WHERE pool_id = $1 AND resource_key_id = $2\nFOR UPDATE;",
            "WHERE pool_id = $1 AND resource_key_id = $2\nFOR NO KEY UPDATE;",
            {("LD703", "code/queries/usage.sql", 6)},
            id="a mode",
        ),
        pytest.param(
            "code/queries/fedwiki.sql",
            "'lifecycle:'",
            "'lifecycle-'",
            {("LD705", "code/queries/fedwiki.sql", 10)},
            id="a prefix",
        ),
        pytest.param(
            "code/go/web/workspace.go",
            "hashtext($1::text)::bigint",
            "hashtextextended($1::text, 0)",
            {("LD705", "code/go/web/workspace.go", 16)},
            id="hashtextextended for hashtext",
        ),
        pytest.param(
            "code/queries/desiredstate.sql",
            "FOR UPDATE SKIP LOCKED",
            "FOR UPDATE",
            {("LD703", "code/queries/desiredstate.sql", 35)},
            id="SKIP LOCKED dropped",
        ),
        pytest.param(
            "code/queries/entitlements.sql",
            "-- name: LockEntitlementSet :one\nSELECT set_id, version\nFROM core.entitlement_sets\n"
            "WHERE set_id = $1\nFOR UPDATE;\n",
            "",
            {("LD701", "locks.yaml", _taker_line("LockEntitlementSet"))},
            id="a dropped query",
        ),
        pytest.param(
            "code/queries/pools.sql",
            "FOR UPDATE OF p;",
            "FOR UPDATE;",
            {("LD702", "code/queries/pools.sql", 14)},
            id="OF dropped: the grant row is locked too",
        ),
    ],
)
def test_one_changed_statement_gives_exactly_its_finding(
    tmp_path: Path, file: str, old: str, new: str, expected: set[tuple[str, str, int]]
) -> None:
    root = _copy(tmp_path)
    assert _code_findings(root) == set()
    target = root / file
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert _code_findings(root) == expected
