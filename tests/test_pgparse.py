"""Postgres's parser on statements nested as deep as its grammar allows: every reader of SQL
(scan, explain's statements, replay's table names) answers, and nothing crashes the process.

Before lockdocs.pgparse, a 50,000-term sum killed `replay` and `explain` with SIGSEGV
(pglast's conversion to Python objects overflowed the C stack) and a 500-term one stopped
`scan` with exit 3 (RecursionError in json.loads and the tree walk)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

# Each the deepest the grammar accepts (measured with pglast 7 / PostgreSQL 17's grammar), and
# one past it for the sum.
DEEP = {
    "sum": "select " + "+".join(["1"] * 16_000) + " from t",
    "casts": "select 1" + "::int" * 30_000,
    "unions": " union ".join(["select 1"] * 30_000),
    "subqueries": "select " + "(select " * 3_000 + "1" + ")" * 3_000,
    "too deep for the grammar": "select " + "+".join(["1"] * 100_000),
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_pgparse_reads_or_refuses_without_crashing(name: str) -> None:
    # In a child process: a regression here is a SIGSEGV, which would take the test runner down.
    code = (
        "import sys\n"
        "from lockdocs import pgparse\n"
        "from lockdocs.postgres.sqlread import read, masked\n"
        "text = sys.stdin.read()\n"
        "try:\n"
        "    print(len(pgparse.parse(text)), len(pgparse.parse_json(text)['stmts']))\n"
        "except pgparse.ParseError as exc:\n"
        "    print('refused:', exc.args[0])\n"
        "print(read(text).error or 'read')\n"
        "print(len(masked(text)) > 0)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=DEEP[name],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if name == "too deep for the grammar":
        assert proc.stdout.startswith("refused: stack depth limit exceeded"), proc.stdout
    else:
        assert proc.stdout.splitlines()[0] == "1 1", proc.stdout


def test_scan_reads_the_statements_around_a_deep_one(tmp_path: Path) -> None:
    sql = tmp_path / "q.sql"
    sql.write_text(
        "select " + "+".join(["1"] * 5_000) + " from t for update;\n"
        "select 1 from accounts for update;\n",
        encoding="utf-8",
    )
    res = run_cli("scan", str(sql), cwd=tmp_path)
    assert res.code == 0, res.err
    assert "row FOR UPDATE on t" in res.out
    assert "row FOR UPDATE on accounts" in res.out
