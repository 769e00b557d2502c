"""What the scan cannot read is never passed over (issue 23 item 2, issue 25 item 3): a lexer
error costs the statement that holds it, not the file; the lines not read are an error-weight
finding (LD709, LD712) naming them, coverage counts them, and a taker whose code is unread is
"not checked", never "takes no lock". Also the scan's other hostile inputs: psycopg-templated
.sql files, files measured before they are read, symlinks out of the project, escape sequences
in what the scan prints, linear joining of source literals.

Most tests call lockdocs.api.check in-process (the CLI's own path through it is covered by
test_scan.py); the ones about exit codes and the terminal run the real command.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import run_cli, write_project
from lockdocs.api import check
from lockdocs.diagnostics import Diagnostic

LOCKS = """\
lockdocs: 1
page: {title: Locks}
code: ["db/*.sql"]
locks:
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for update: every writer}
    taken_by:
      - {name: LockAccount, kind: query}
"""
GOOD = "-- name: LockAccount :one\nSELECT id FROM app.accounts WHERE id = $1 FOR UPDATE;\n"
UNDECLARED = "-- name: Sneaky :one\nSELECT id FROM app.accounts WHERE id = $1 FOR SHARE;\n"


@pytest.fixture(autouse=True)
def _no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCKDOCS_CACHE", "off")


def _check(tmp_path: Path, sql: str, locks: str = LOCKS) -> list[Diagnostic]:
    root = write_project(tmp_path / "p", {"locks.yaml": locks, "db/q.sql": sql})
    result = check(root, drift=False)
    assert not result.bad_input, result.diagnostics
    return result.diagnostics


def _codes(diags: list[Diagnostic]) -> set[tuple[str, int]]:
    return {(d.code, d.location.line) for d in diags if not d.waived_by}


# A bad token before the undeclared FOR SHARE: the lexer stops there on main, and the file went
# unread ("0 errors, 1 warning", exit 0).
BAD_TOKENS = {
    "junk after a number": "SELECT 1x;\n",
    "junk after a real": "SELECT 1.5e;\n",
    "a zero-length identifier": 'SELECT "" FROM t;\n',
    "a bad escape": "SELECT E'\\u12' AS x;\n",
    "a bad escape, then more string": "SELECT E'\\u12 ; still the string' AS x;\n",
}


@pytest.mark.parametrize("name", sorted(BAD_TOKENS))
def test_a_lexer_error_costs_one_statement(tmp_path: Path, name: str) -> None:
    sql = GOOD + "\n" + BAD_TOKENS[name] + "\n" + UNDECLARED
    diags = _check(tmp_path, sql)
    codes = _codes(diags)
    assert ("LD702", 7) in codes, diags  # the statement after the bad one is read
    assert not [d for d in diags if d.code == "LD701"]  # and the one before it
    unread = [d for d in diags if d.code == "LD709"]
    assert len(unread) == 1 and unread[0].location.line == 4
    assert unread[0].severity.value == "error"
    assert "line 4 not read" in unread[0].message


@pytest.mark.parametrize(
    "opening", ["'unterminated", '"unterminated', "$$ unterminated", "/* unterminated"]
)
def test_an_unterminated_token_runs_to_the_end_and_says_so(tmp_path: Path, opening: str) -> None:
    # As in Postgres, everything after it is inside it: the FOR SHARE is unread, and says so.
    sql = GOOD + "\nSELECT " + opening + ";\n\n" + UNDECLARED
    diags = _check(tmp_path, sql)
    unread = [d for d in diags if d.code == "LD709"]
    assert len(unread) == 1, diags
    assert "lines 4-7 not read" in unread[0].message
    assert unread[0].blocking  # a check never passes on SQL it did not read
    assert not [d for d in diags if d.code == "LD701"]  # LockAccount, before it, is read


def test_the_cli_exits_1_where_it_exited_0(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "p", {"locks.yaml": LOCKS, "db/q.sql": GOOD + "SELECT 1x;\n" + UNDECLARED}
    )
    result = run_cli("check", "--no-drift", cwd=root, env={"LOCKDOCS_CACHE": "off"})
    assert result.code == 1, result.out
    assert "LD702 error" in result.out and "LD709 error" in result.out


def test_a_named_statement_not_read_is_not_checked_not_missing(tmp_path: Path) -> None:
    sql = "-- name: LockAccount :one\nSELECT id FROM app.accounts WHERE id = $1 FOR UPDATE 1x;\n"
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "db/q.sql": sql})
    result = check(root, drift=False)
    assert not [d for d in result.diagnostics if d.code == "LD701"]
    (unread,) = [d for d in result.diagnostics if d.code == "LD709"]
    assert "'LockAccount' does not parse" in unread.message
    assert "not checked: taker 'LockAccount' of lock 'account'" in unread.details
    cov = result.coverage
    assert cov is not None and cov.unread == 1
    assert cov.locks["account"].unchecked == ["LockAccount"]
    doc = cov.to_json()
    assert (doc["statements_not_read"], doc["takers_not_checked"]) == (1, 1)


def test_an_unread_statement_can_be_waived_above_it(tmp_path: Path) -> None:
    sql = GOOD + "-- lockdocs: ignore LD709 generated, checked by hand\nSELECT 1x;\n"
    diags = _check(tmp_path, sql)
    (unread,) = [d for d in diags if d.code == "LD709"]
    assert unread.waived_by.endswith("generated, checked by hand")
    assert not [d for d in diags if d.blocking]


def test_a_waiver_after_a_semicolon_covers_its_own_statement(tmp_path: Path) -> None:
    # in a file read statement by statement, the comment after `;` belongs to the next chunk
    sql = (
        GOOD + "SELECT 1x;\n" + UNDECLARED.replace(";\n", "; -- lockdocs: ignore LD702 a report\n")
    )
    diags = _check(tmp_path, sql)
    (finding,) = [d for d in diags if d.code == "LD702"]
    assert finding.waived_by.endswith("a report")


def test_begin_atomic_bodies_keep_their_semicolons(tmp_path: Path) -> None:
    sql = (
        "CREATE FUNCTION app.f() RETURNS void LANGUAGE sql BEGIN ATOMIC\n"
        "  SELECT 1;\n  SELECT CASE WHEN true THEN 1 END;\nEND;\n"
        "SELECT 1x;\n" + UNDECLARED
    )
    diags = _check(tmp_path, sql)
    assert _codes(diags) >= {("LD709", 5), ("LD702", 7)}
    assert [d.location.line for d in diags if d.code == "LD709"] == [5]  # the body parsed whole


def test_lexer_errors_are_bounded(tmp_path: Path) -> None:
    # 4 MiB of bad statements: a hundred are read and reported, the rest is one unread span
    sql = GOOD + "SELECT 1x;\n" * 380_000
    started = time.monotonic()
    diags = _check(tmp_path, sql)
    assert time.monotonic() - started < 60
    unread = [d for d in diags if d.code == "LD709"]
    assert 100 <= len(unread) <= 102
    assert unread[-1].message.endswith(
        f"lines {unread[-1].location.line}-380002 not read, so no lock taken there is checked"
    )


# --- templated SQL ------------------------------------------------------------------------------

TEMPLATED = (
    "-- name: LockAccount :one\n"
    "SELECT id FROM app.accounts WHERE id = %(id)s AND note LIKE 'a%%' FOR UPDATE;\n"
    "-- name: Other :one\nSELECT id FROM app.accounts WHERE id = %s FOR SHARE;\n"
)


def test_psycopg_placeholders_need_the_option_and_say_so(tmp_path: Path) -> None:
    plain = _check(tmp_path / "a", TEMPLATED)
    unread = [d for d in plain if d.code == "LD709"]
    assert len(unread) == 2 and "code_placeholders: psycopg" in unread[0].details[0]
    templated = _check(tmp_path / "b", TEMPLATED, LOCKS + "code_placeholders: psycopg\n")
    assert _codes(templated) == {("LD702", 4)}  # both read: Other is the undeclared one


# --- files, links and the terminal -------------------------------------------------------------


def test_a_huge_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "db/q.sql": GOOD})
    with (root / "db" / "huge.sql").open("wb") as fh:
        fh.truncate(3 * 1024**3)  # 3 GB, sparse: reading it would take the memory
    started = time.monotonic()
    result = check(root, drift=False)
    assert time.monotonic() - started < 30
    (skipped,) = [d for d in result.diagnostics if d.code == "LD710"]
    assert skipped.location.file == "db/huge.sql" and "over 4 MiB" in skipped.message


def test_scan_of_a_folder_stays_in_the_project(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.sql"
    secret.parent.mkdir()
    secret.write_text("SELECT 'TOPSECRET\n", encoding="utf-8")
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "db/q.sql": GOOD})
    (root / "db" / "leak.sql").symlink_to(secret)
    (root / "db" / "out").symlink_to(secret.parent)
    result = run_cli("scan", "db", cwd=root, env={"LOCKDOCS_CACHE": "off"})
    assert result.code == 0
    assert "TOPSECRET" not in result.out + result.err
    assert "db/leak.sql:1:1: LD710 warning: a symlink out of the project; not read" in result.err
    assert result.out.endswith("1 lock in 1 statement of 1 file\n")


def test_what_the_scan_prints_cannot_drive_the_terminal(tmp_path: Path) -> None:
    sql = (
        '-- name: Lock\x1b]52;c;cHduZWQ=\x07\nSELECT 1 FROM "t\x1b[2J\u202e" FOR UPDATE;\n'
        "SELECT 'a\x1b]0;title\x07' 1x;\n"
    )
    root = write_project(tmp_path / "p", {"locks.yaml": LOCKS, "db/q.sql": sql})
    for args in (("scan",), ("scan", "--coverage"), ("check", "--no-drift")):
        result = run_cli(*args, cwd=root, env={"LOCKDOCS_CACHE": "off"})
        assert result.code in (0, 1), result.err
        shown = result.out + result.err
        assert not any(c in shown for c in "\x1b\x07\u202e"), (args, shown)
        assert "\\x1b" in shown


def test_source_literals_join_in_linear_time(tmp_path: Path) -> None:
    pieces = 25_000  # 280 KB: 30 s on main for Python, 50 s for Go
    files = {
        "locks.yaml": LOCKS.replace('["db/*.sql"]', '["code/*"]'),
        "code/big.go": "package x\nconst q = " + " + ".join(['"SELECT 1 "'] * pieces) + "\n",
        "code/big.py": "q = (" + " ".join(['"SELECT 1 "'] * pieces) + ")\n",
        "code/deep.py": "q = " + " + ".join(['"SELECT 1 "'] * pieces) + "\n",
    }
    root = write_project(tmp_path / "p", files)
    started = time.monotonic()
    result = check(root, drift=False)
    assert time.monotonic() - started < 20
    skipped = {d.location.file: d.message for d in result.diagnostics if d.code == "LD710"}
    assert skipped == {"code/deep.py": skipped["code/deep.py"]}  # Python's parser refuses it
    assert "nests deeper" in skipped["code/deep.py"]
