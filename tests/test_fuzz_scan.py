"""Fuzzing the scan, one target per channel it reads: SQL files, PL/pgSQL bodies, Go and Python
sources (issue 23). Whatever a file holds, reading it yields findings or nothing (never an
exception: the command would exit 3), every place it names lies in the file, its cache form
round-trips, and no lock of a statement it was given is lost: each is found, or its lines are
reported unread (a check never passes on SQL it did not read).

The default suite runs a sample with a fixed seed; `pytest -m fuzz` (make fuzz) runs the long
one. Every input that once broke the scan is kept in tests/data/scan_crashes/ and read again
by test_the_crash_corpus_reads_cleanly.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from lockdocs.scan.collect import scan_text
from lockdocs.scan.found import FileScan

CORPUS = Path(__file__).parent / "data" / "scan_crashes"
LONG = int(os.environ.get("LOCKDOCS_FUZZ_CASES", "10000")) // 4
SAMPLE = 60
VICTIM = "SELECT id FROM victim WHERE id = $1 FOR UPDATE"

# Pieces that reach every state of Postgres's lexer and of the readers around it.
_SQL = [
    "SELECT 1",
    "SELECT 1x",
    "SELECT 1.5e",
    "SELECT 0x",
    'SELECT ""',
    "SELECT 'a''b'",
    "SELECT '",
    "'",
    '"',
    "$$",
    "$a$",
    "$a$ x $a$",
    "/*",
    "*/",
    "/* /* */",
    "--",
    "-- name: Victim :one",
    "-- lockdocs: ignore LD702 because",
    "-- lockdocs: ignore",
    ";",
    ";;",
    "(",
    ")",
    "E'\\u12'",
    "E'\\x'",
    "U&'\\d800'",
    'U&"\\0000"',
    "B'012'",
    "X'zz'",
    "\\",
    "é",
    "\u202e",
    "\x1b]0;title\x07",
    "\x00",
    "\r",
    "\n",
    " ",
    "FOR UPDATE",
    "FOR NO KEY UPDATE SKIP LOCKED",
    "LOCK TABLE t IN ACCESS EXCLUSIVE MODE",
    "SELECT pg_advisory_xact_lock(hashtextextended('k:' || $1, 0))",
    "SELECT pg_advisory_lock(",
    "UPDATE t SET a = 1",
    "INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET a = 1",
    "DELETE FROM t",
    "WITH x AS (SELECT 1 FROM t FOR UPDATE) SELECT 1 FROM x",
    "CREATE TABLE t (id int PRIMARY KEY)",
    "CREATE UNIQUE INDEX ON t (a)",
    "CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC SELECT 1; END",
    "CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; END $$",
    "DO $$ BEGIN PERFORM 1 FROM t FOR UPDATE; END $$",
    "BEGIN",
    "END",
    "CASE",
    "%s",
    "%(name)s",
    "%",
    "sqlc.arg(id)",
    "1" * 40,
    "(" * 300,
    ")" * 300,
    "-" * 300 + "1",
]

# PL/pgSQL: declarations and statements of a function body.
_DECLS = [
    "v int;",
    "v app.state;",
    "v state;",
    "r record;",
    "r app.jobs%ROWTYPE;",
    "c CURSOR FOR SELECT 1;",
    "a app.item[];",
    "x CONSTANT int := 1;",
    "y int NOT NULL DEFAULT 0;",
    'z text COLLATE "C";',
    "w ALIAS FOR $1;",
    "q int := (SELECT 1 FROM t FOR UPDATE);",
    "",
]
_STMTS = [
    "PERFORM 1 FROM t WHERE id = p FOR UPDATE;",
    "SELECT a, b INTO v, y FROM t FOR UPDATE;",
    "SELECT * INTO r FROM t FOR NO KEY UPDATE;",
    "UPDATE t SET a = 1 WHERE id = p;",
    "v := (SELECT 1 FROM t FOR UPDATE);",
    "r.a := 1;",
    "a[1].qty := 2;",
    "FOREACH v IN ARRAY a LOOP PERFORM 1 FROM t FOR UPDATE; END LOOP;",
    "FOR r IN SELECT * FROM t FOR UPDATE LOOP END LOOP;",
    "IF v THEN LOCK TABLE t; END IF;",
    "PERFORM pg_advisory_xact_lock(42);",
    "EXECUTE 'SELECT 1 FROM t FOR UPDATE';",
    "RETURN;",
    "RETURN NEXT r;",
    "RETURN QUERY SELECT 1 FROM t FOR UPDATE;",
    "EXCEPTION WHEN lock_not_available THEN NULL;",
    "EXCEPTION WHEN no_such_condition THEN NULL;",
    "BEGIN PERFORM 1; END;",
    "DECLARE k int; BEGIN PERFORM 1; END;",
    "PERFORM FROM;",
    "<<lbl>>",
    "$x$",
    "'",
    "/*",
    "",
]
_PARAMS = ["", "p bigint", "p app.item[]", "p item[]", "OUT o int", "VARIADIC v int[]", "p t%TYPE"]
_RETURNS = ["void", "int", "app.state", "SETOF app.jobs", "trigger", "TABLE(a int, b app.item)"]

_PY = [
    "def f():\n",
    "class C:\n",
    "    ",
    "q = ",
    '"SELECT 1 FROM t FOR UPDATE"',
    '"SELECT %s FROM t FOR UPDATE"',
    "'''SELECT 1\nFROM t FOR UPDATE'''",
    'r"SELECT \\x FROM t FOR UPDATE"',
    'f"SELECT {x}"',
    'b"SELECT 1 FROM t"',
    '"\\N{LATIN SMALL LETTER E WITH ACUTE} FOR UPDATE"',
    '"\\x1b]0;t\\x07 FOR UPDATE"',
    " + ",
    " ",
    "(",
    ")",
    "[",
    "]",
    "\n",
    "# lockdocs: ignore LD702 reason\n",
    "# lockdocs: ignore\n",
    "cur.execute(",
    "\\\n",
    '"',
    "'",
]
_GO = [
    "package store\n",
    "func (s *Store) F() {\n",
    "func F() {\n",
    "}\n",
    "const q = ",
    "var (\n",
    ")\n",
    '"SELECT 1 FROM t FOR UPDATE"',
    "`SELECT 1\nFROM t FOR UPDATE`",
    '"\\x1b\\u202e\\U0010ffff\\777\\09"',
    '"\\Uffffffff FOR UPDATE"',
    " + ",
    "'\\''",
    "'",
    '"',
    "`",
    "/*",
    "*/",
    "//",
    "// lockdocs: ignore LD702 reason\n",
    "db.Exec(",
    "(",
    ")",
    "{",
    "}",
    "=",
    ";",
    "\n",
]


def _joined(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces) | st.text(max_size=4), max_size=40).map("".join)


FIXTURES = Path(__file__).parent / "fixtures" / "scan" / "code"


def _mutated(name: str, pieces: list[str]) -> st.SearchStrategy[str]:
    """A real file of the fixture with pieces put in, and spans cut out, at drawn places."""
    original = (FIXTURES / name).read_text(encoding="utf-8")

    @st.composite
    def build(draw: st.DrawFn) -> str:
        text = original
        for _ in range(draw(st.integers(1, 6))):
            at = draw(st.integers(0, len(text)))
            if draw(st.booleans()):
                text = text[:at] + draw(st.sampled_from(pieces) | st.text(max_size=3)) + text[at:]
            else:
                text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        return text

    return build()


SQL_FILES = st.lists(_joined(_SQL), min_size=1, max_size=8) | st.lists(
    _mutated("queries.sql", _SQL) | _mutated("functions.sql", _SQL + _STMTS), min_size=1, max_size=1
)
PLPGSQL = st.tuples(
    st.lists(st.sampled_from(_PARAMS), max_size=3),
    st.sampled_from(_RETURNS),
    st.lists(st.sampled_from(_DECLS), max_size=4),
    st.lists(st.sampled_from(_STMTS) | st.text(max_size=3), max_size=8),
)
PY_FILES = _joined(_PY) | _mutated("repo.py", _PY + _SQL)
GO_FILES = _joined(_GO) | _mutated("store.go", _GO + _SQL)


def _read(name: str, kind: str, text: str) -> FileScan:
    """One file through the scan, with every promise about its result checked."""
    data = text.encode("utf-8", "surrogatepass")
    fs = scan_text(name, kind, data)
    assert FileScan.from_json(fs.to_json()) == fs
    lines = text.count("\n") + 1
    places = [(s.line, s.column) for s in fs.sites] + [(lk.line, lk.column) for lk in fs.locks]
    places += [(w.line, w.column) for w in fs.warnings] + [(u.line, u.column) for u in fs.unread]
    for line, column in places:
        assert 1 <= line <= lines and column >= 1, (line, column, text)
    for u in fs.unread:
        assert 1 <= u.first <= u.last <= lines and fs.sites[u.site].unread
    return fs


def _sql_file(statements: list[str]) -> None:
    """The victim statement, put among the hostile ones: found, or reported unread."""
    middle = len(statements) // 2
    parts = [*statements[:middle], VICTIM, *statements[middle:]]
    text = ";\n".join(parts) + "\n"
    fs = _read("db/q.sql", "sql", text)
    if "\x00" in text:
        return  # a NUL byte: the file is refused whole, with LD710
    line = text[: text.index(VICTIM)].count("\n") + 1
    found = any(lk.table == "victim" and lk.line == line for lk in fs.locks)
    unread = any(u.first <= line <= u.last for u in fs.unread)
    # A lock the victim's text took on in the file (a quote opened before it, a comment) is
    # not the victim's any more: only an unbroken statement must be found.
    if found or unread:
        return
    before = text[: text.index(VICTIM)]
    assert any(q in before for q in ("'", '"', "$", "/*")), text


def _plpgsql(case: tuple[list[str], str, list[str], list[str]]) -> None:
    params, returns, decls, stmts = case
    text = (
        f"CREATE FUNCTION app.f({', '.join(params)}) RETURNS {returns} LANGUAGE plpgsql AS $$\n"
        + ("DECLARE\n  " + "\n  ".join(decls) + "\n" if decls else "")
        + "BEGIN\n  "
        + "\n  ".join(stmts)
        + "\nEND\n$$;\n"
    )
    fs = _read("db/f.sql", "sql", text)
    named = [s for s in fs.sites if s.name == "app.f"]
    # the function is a site: read (its locks, if any, are app.f's) or reported unread
    assert named or fs.unread or fs.warnings, text


def _run(strategy: st.SearchStrategy[object], check: object, cases: int) -> int:
    count = 0

    @settings(
        max_examples=cases,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(value=strategy)
    def one(value: object) -> None:
        nonlocal count
        check(value)  # type: ignore[operator]
        count += 1

    one()
    return count


CHANNELS = {
    "sql": (SQL_FILES, _sql_file),
    "plpgsql": (PLPGSQL, _plpgsql),
    "python": (PY_FILES, lambda text: _read("code/m.py", "python", text)),
    "go": (GO_FILES, lambda text: _read("code/m.go", "go", text)),
}


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_scan_channel_sample(channel: str) -> None:
    strategy, check = CHANNELS[channel]
    assert _run(strategy, check, SAMPLE) == SAMPLE


@pytest.mark.fuzz
@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_scan_channel_long(channel: str) -> None:
    strategy, check = CHANNELS[channel]
    started = time.monotonic()
    assert _run(strategy, check, LONG) == LONG
    assert time.monotonic() - started < 900


def test_the_crash_corpus_reads_cleanly(tmp_path: Path) -> None:
    """Every input that once broke the scan, read again: in-process, and through the real
    command (exit 0: findings on stderr, never a traceback or exit 3)."""
    files = sorted(p for p in CORPUS.iterdir() if p.is_file())
    assert files
    for f in files:
        kind = {".sql": "sql", ".py": "python", ".go": "go"}[f.suffix]
        text = f.read_bytes().decode("utf-8", "surrogateescape")
        if kind == "sql" and "victim" in text:
            _sql_file([text])
        else:
            _read(f.name, kind, text)
    result = run_cli("scan", str(CORPUS), cwd=tmp_path, env={"LOCKDOCS_CACHE": "off"})
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
