"""lockdocs scan and check's comparison with the code, through the real CLI, on
tests/fixtures/scan: realistic SQL (sqlc queries with every locking clause and option, advisory
calls in every form, CTEs, PL/pgSQL functions that lock in loops), SQL in Python and Go string
literals, a file with a syntax error, a file that is not SQL and one that is not UTF-8.

The exact outputs are golden files under tests/golden/scan/; after an intended change rewrite
them with `pytest tests/test_scan.py --update-golden` and review the diff line by line. The SARIF
golden keeps, of the rules SARIF embeds, only those the results name (renumbered), so that a
new rule does not rewrite it; tests/test_sarif.py checks the whole rule list.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Run, run_cli, write_project

FIXTURE = Path(__file__).parent / "fixtures" / "scan"
GOLDEN = Path(__file__).parent / "golden" / "scan"
NO_CACHE = {"LOCKDOCS_CACHE": "off"}
PREFIX = "tests/fixtures/scan/"


def _golden(name: str, text: str, update: bool) -> None:
    target = GOLDEN / name
    if update:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return
    assert text == target.read_text(encoding="utf-8"), f"{name} differs from its golden file"


def _run(*args: str, cwd: Path = FIXTURE, env: dict[str, str] | None = None) -> Run:
    result = run_cli(*args, cwd=cwd, env={**NO_CACHE, **(env or {})})
    assert "Traceback" not in result.err, result.err
    return result


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_scan_lists_every_lock_exactly(fmt: str, update_golden: bool) -> None:
    result = _run("scan", "--format", fmt)
    assert result.code == 0, result.err
    _golden(f"scan.{fmt}", result.out, update_golden)
    if fmt == "text":
        _golden("scan.stderr", result.err, update_golden)


def test_scan_json_items_carry_the_promised_fields() -> None:
    doc = _run("scan", "--format", "json").json()
    for item in doc["locks"]:
        assert {"file", "line", "column", "name", "kind", "mode"} <= set(item)
        assert ("table" in item) != ("key" in item)
    by_name = {(i["name"], i["kind"], i.get("table")): i for i in doc["locks"]}
    # the Go raw string spans lines: the lock points at its own line and column in the file
    claim = by_name[("store.claimNext", "row", "shop.jobs")]
    assert (claim["line"], claim["column"], claim["option"]) == (18, 18, "skip locked")
    # Python's implicit concatenation of three literals, with a psycopg placeholder
    checkout = by_name[("code.repo.OrderRepo.lock_for_checkout", "row", "shop.orders")]
    assert (checkout["line"], checkout["column"], checkout["mode"]) == (16, 41, "for update")
    # the key as written, the two-int4 form, the prefix of a concatenation
    warehouse = next(i for i in doc["locks"] if i["name"] == "LockWarehouse")
    assert warehouse["key"] == "7, hashtext($1::text)"
    assert warehouse["construction"]["construction"] == "int4pair"
    cart = next(i for i in doc["locks"] if i["name"] == "LockCart")
    assert cart["prefix"] == "cart-"
    loops = {(i["name"], i["line"]) for i in doc["locks"] if i["in_loop"]}
    assert ("shop.reserve_lines", 12) in loops and ("shop.reprice_orders", 29) in loops
    warnings = {(w["file"], w["code"]) for w in doc["warnings"]}
    assert warnings == {
        ("code/broken.sql", "LD709"),
        ("code/notes.txt", "LD710"),
        ("migrations/0002_latin1.sql", "LD710"),
    }


def test_scan_coverage(update_golden: bool) -> None:
    result = _run("scan", "--coverage")
    assert result.code == 0
    _golden("coverage.text", result.out[result.out.index("\nlock ") + 1 :], update_golden)
    doc = _run("scan", "--coverage", "--format", "json").json()
    assert doc["coverage"]["takers"] == 22
    assert doc["coverage"]["locks"]["stock-row"]["takers_missing"] == ["ReleaseStock"]


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_check_reports_each_mismatch_located(fmt: str, update_golden: bool) -> None:
    result = _run("check", "--no-drift", "--format", fmt)
    assert result.code == 1, result.err
    out = _fired_rules_only(result.out) if fmt == "sarif" else result.out
    _golden(f"check.{fmt}", out, update_golden)


def _fired_rules_only(text: str) -> str:
    """A SARIF log with only the rules its results name, each result's ruleIndex pointing
    into that shorter list (after checking that it pointed at its rule in the whole list)."""
    doc = json.loads(text)
    for run in doc["runs"]:
        rules = run["tool"]["driver"]["rules"]
        fired = sorted({r["ruleId"] for r in run["results"]})
        for r in run["results"]:
            assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
            r["ruleIndex"] = fired.index(r["ruleId"])
        run["tool"]["driver"]["rules"] = [rule for rule in rules if rule["id"] in fired]
        assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == fired
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_check_findings_are_the_expected_ones() -> None:
    doc = _run("check", "--no-drift", "--format", "json").json()
    # JSON names files from the repository top; the fixture sits in tests/fixtures/scan
    found = {
        (d["code"], d["file"].removeprefix(PREFIX), d["line"])
        for d in doc["diagnostics"]
        if not d["waived_by"]
    }
    assert found == {
        ("LD701", "locks.yaml", 37),  # ReleaseStock names nothing
        ("LD103", "locks.yaml", 80),  # warehouse: the second int4 is hashtext (32 bits)
        ("LD702", "code/functions.sql", 25),  # the customer lock inside shop.reprice_orders
        ("LD702", "code/functions.sql", 43),  # LOCK TABLE inside shop.nightly_import
        ("LD702", "code/queries.sql", 18),  # ReadOrderLines: FOR SHARE OF o
        ("LD702", "code/queries.sql", 52),  # an explicit lock on an undeclared table
        ("LD702", "code/store.go", 33),  # an UPDATE of a declared row in Go
        ("LD703", "code/queries.sql", 10),  # NOWAIT not declared
        ("LD703", "code/queries.sql", 13),  # FOR NO KEY UPDATE, FOR UPDATE declared
        ("LD703", "code/queries.sql", 70),  # a session-level advisory lock
        ("LD704", "code/queries.sql", 49),  # another table
        ("LD705", "code/queries.sql", 64),  # hashtext and 'cart-' for hashtextextended 'cart:'
        ("LD706", "code/queries.sql", 73),  # a key passed in as a parameter
        ("LD707", "code/functions.sql", 43),  # a waiver without a reason
        ("LD709", "code/broken.sql", 4),
        ("LD710", "code/notes.txt", 1),
        ("LD710", "migrations/0002_latin1.sql", 1),
    }
    waived = [d for d in doc["diagnostics"] if d["waived_by"]]
    assert [(d["code"], d["line"]) for d in waived] == [("LD702", 28)]
    assert "append-only" in waived[0]["waived_by"]
    assert doc["coverage"]["statements_waived"] == 0  # the waived lock is on no declared lock


def test_a_waiver_covers_only_its_statement(tmp_path: Path) -> None:
    files = {
        "locks.yaml": (FIXTURE / "locks.yaml").read_text(encoding="utf-8"),
        "code/queries.sql": (FIXTURE / "code" / "queries.sql")
        .read_text(encoding="utf-8")
        .replace(
            "-- name: ReadOrderLines :many\n",
            "-- name: ReadOrderLines :many\n-- lockdocs: ignore LD702 a report, read once\n",
        ),
    }
    root = write_project(tmp_path / "p", files)
    doc = _run("check", "--no-drift", "--format", "json", cwd=root).json()
    by_line = {(d["code"], d["line"]): d for d in doc["diagnostics"]}
    assert by_line[("LD702", 19)]["waived_by"].endswith("a report, read once")
    assert by_line[("LD702", 53)]["waived_by"] is None  # the next statement keeps its finding


def test_scan_of_named_files_and_folders() -> None:
    result = _run("scan", "code/queries.sql", "code/store.go")
    assert result.code == 0
    files = {line.split(":", 1)[0] for line in result.out.splitlines()[:-1]}
    assert files == {"code/queries.sql", "code/store.go"}
    assert result.out.endswith("22 locks in 21 statements of 2 files\n")
    folder = _run("scan", "code", "--format", "json").json()
    assert folder["files"] == [
        "code/broken.sql",
        "code/functions.sql",
        "code/queries.sql",
        "code/repo.py",
        "code/store.go",
    ]  # a folder means its SQL, Python and Go files


def test_scan_without_a_project(tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text("SELECT 1 FROM t FOR UPDATE;\n", encoding="utf-8")
    result = _run("scan", "q.sql", cwd=tmp_path)
    assert result.code == 0
    assert result.out == "q.sql:1:15: -: row FOR UPDATE on t\n1 lock in 1 statement of 1 file\n"
    nothing = _run("scan", cwd=tmp_path)
    assert nothing.code == 2 and "no locks.yaml" in nothing.err and not nothing.out
    missing = _run("scan", "nope.sql", cwd=tmp_path)
    assert missing.code == 2 and "no such file or folder: nope.sql" in missing.err
    cov = _run("scan", "q.sql", "--coverage", cwd=tmp_path)
    assert cov.code == 2 and "--coverage compares with locks.yaml" in cov.err


def test_a_project_without_code_is_not_scanned(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "p",
        {"locks.yaml": (FIXTURE / "locks.yaml").read_text(encoding="utf-8").replace("code:", "#")},
    )
    result = _run("scan", cwd=root)
    assert result.code == 2 and "sets no code:" in result.err
    probe = (
        "import sys\nfrom pathlib import Path\nfrom lockdocs.api import check\n"
        f"check(Path({str(root)!r}), drift=False)\n"
        "print('pglast' in sys.modules, 'lockdocs.scan' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout == "False False\n"  # the check path never pays for the scanner
    probe = probe.replace(repr(str(root)), repr(str(FIXTURE)))
    env = {**os.environ, **NO_CACHE}
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout == "True True\n"


def test_code_patterns_must_stay_inside_the_project(tmp_path: Path) -> None:
    text = (FIXTURE / "locks.yaml").read_text(encoding="utf-8")
    root = write_project(
        tmp_path / "p", {"locks.yaml": text.replace('"migrations/*.sql"', '"../*.sql"')}
    )
    result = _run("check", "--no-drift", cwd=root)
    assert result.code == 2
    assert (
        "locks.yaml:7:18: LD003 error: code: '../*.sql' reaches outside the project" in result.out
    )


def test_the_cache_is_used_and_follows_the_content(tmp_path: Path) -> None:
    root = tmp_path / "p"
    shutil.copytree(FIXTURE, root)
    env = {"LOCKDOCS_CACHE": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = run_cli("scan", "--format", "json", cwd=root, env=env)
    index = list((tmp_path / "cache" / "lockdocs").glob("scan-*.json"))
    assert len(index) == 1
    entries = json.loads(index[0].read_text(encoding="utf-8"))
    assert len(entries) == 7  # one per readable file (the unreadable ones are not cached)
    again = run_cli("scan", "--format", "json", cwd=root, env=env)
    assert again.out == first.out
    query = root / "code" / "queries.sql"
    query.write_text(
        query.read_text(encoding="utf-8").replace("FOR UPDATE NOWAIT", "FOR SHARE NOWAIT"),
        encoding="utf-8",
    )
    changed = run_cli("scan", "--format", "json", cwd=root, env=env).json()
    nowait = next(i for i in changed["locks"] if i["name"] == "LockOrderNoWait")
    assert nowait["mode"] == "for share"
    assert len(json.loads(index[0].read_text(encoding="utf-8"))) == 7  # the old entry is gone
    index[0].write_text("{not json", encoding="utf-8")
    damaged = run_cli("scan", "--format", "json", cwd=root, env=env)
    assert damaged.code == 0 and damaged.json() == changed


HOSTILE = {
    "unterminated.sql": "SELECT 'no end FOR UPDATE;\n",
    "dollar.sql": "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1;\n",
    "badbody.sql": (
        "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM FROM; END $$;\n"
    ),
    "empty.sql": "",
    "comments.sql": "-- lockdocs: ignore\n/* lockdocs: ignore LD101 no */\n",
    "nul.sql": "SELECT 1;\x00\n",
    "bom.sql": "\ufeffSELECT 1 FROM t FOR UPDATE;\n",
    "bad.py": "def f(:\n",
    "strings.go": "package x\nvar a = \"unterminated\nvar b = `raw\nfunc f() { c := '\\'' }\n",
    "deep.sql": "SELECT " + "(" * 5000 + "1" + ")" * 5000 + ";\n",
    "huge.go": "package x\nconst q = `" + "SELECT 1 FROM t FOR UPDATE; " * 20000 + "`\n",
}


def test_hostile_code_never_makes_a_traceback(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "locks.yaml": "lockdocs: 1\npage: {title: L}\ncode: ['code/*']\n"
        "locks:\n  t:\n    title: T\n    kind: row\n    table: t\n",
        **{f"code/{name}": text for name, text in HOSTILE.items()},
        "code/latin1.go": b"package x\n// caf\xe9\n",
    }
    root = write_project(tmp_path / "p", files)
    for args in (("scan",), ("scan", "--format", "json"), ("check", "--no-drift")):
        result = _run(*args, cwd=root)
        assert result.code in (0, 1), (args, result.err)
    warned = {d["file"]: d["code"] for d in _run("scan", "-f", "json", cwd=root).json()["warnings"]}
    assert warned["code/unterminated.sql"] == "LD709"
    assert warned["code/dollar.sql"] == "LD709"
    assert warned["code/badbody.sql"] == "LD709"
    assert warned["code/nul.sql"] == "LD710"
    assert warned["code/bad.py"] == "LD710"
    assert warned["code/latin1.go"] == "LD710"
    check = _run("check", "--no-drift", "--format", "json", cwd=root).json()
    codes = {(d["file"], d["code"]) for d in check["diagnostics"]}
    assert ("code/comments.sql", "LD707") in codes  # ignore without a code, and LD101


def test_the_cli_reference_lists_scan() -> None:
    text = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    assert "lockdocs scan" in text and "--coverage" in text
