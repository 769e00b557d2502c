"""`lockdocs replay` on declarations from a stranger's pull request: nothing they hold runs as
SQL on the server, in an isolation spec or in the terminal.

- A key text is a literal only when it is plain (printable ASCII, no quote, backslash, brace or
  dollar), and a bound parameter otherwise: a text that closes a '...' literal when
  standard_conforming_strings is off (on a server, or for a role) runs nothing, and the key the
  server locks is the one the application computes.
- The isolation spec of a project whose path file name holds a newline and a `setup { ... }`
  block, whose table name holds a brace and whose key text holds both, is run by PostgreSQL's
  own isolationtester as written: the replay's sessions and steps, nothing injected.
- Escape sequences, bidi and zero-width characters in names reach neither the text nor the JSON
  output raw.
- A 100,000-term expression in `table:` is a stand-in table, not a crash.
- An --output that cannot be written is exit 2, and a backtick in `explain --format markdown`
  stays inside its code span.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import markdown as pymarkdown
import psycopg
import pytest
from psycopg import sql

from conftest import run_cli, write_project
from lockdocs import model as m
from lockdocs import pghash
from lockdocs.diagnostics import Location
from lockdocs.postgres import driver
from lockdocs.postgres import statements as sq
from lockdocs.postgres.cases import Case, LockRef, Process, group
from lockdocs.postgres.explain_output import Explained, markdown
from lockdocs.postgres.logs import parse_detail
from lockdocs.postgres.server import Server, scratch_database

ISOLATIONTESTER = Path("/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/isolationtester")
PG_VARIABLES = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")

PATHS = """group: Money
paths:
  post:
    title: Post an entry
    steps:
      - take: first
      - take: second
  close:
    title: Close a ledger
    steps:
      - take: second
      - take: first
"""


def _locks(first: str, second: str) -> str:
    return f"lockdocs: 1\npage: {{title: Locks}}\nlocks:\n{first}{second}"


def _advisory(lock_id: str, text: str) -> str:
    return (
        f"  {lock_id}:\n    title: {lock_id}\n    kind: advisory\n"
        f"    key: {{hashtextextended: {{text: {json.dumps(text)}}}}}\n"
        "    modes: {exclusive: writers}\n"
    )


def _row(lock_id: str, table: str) -> str:
    return (
        f"  {lock_id}:\n    title: {lock_id}\n    kind: row\n    table: {json.dumps(table)}\n"
        "    modes: {for no key update: writers}\n"
    )


# --- SQL injection through a key text --------------------------------------------------------


@pytest.fixture
def canary() -> Iterator[Path]:
    """A file the payload would create: in a folder the server's user can write to."""
    folder = Path(tempfile.mkdtemp(prefix="lockdocs-canary-", dir="/tmp"))
    folder.chmod(0o1777)
    try:
        yield folder / "ran"
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def _payload(canary: Path) -> str:
    # With standard_conforming_strings off, \' is a quote inside a literal: the doubled quote
    # that follows then ends it, and the rest runs as SQL (measured on the code before the
    # fix: the shell command ran as the postgres user).
    return f"\\'', 0)); copy (select 1) to program $${'touch'} {canary}$$; --"


@pytest.fixture
def evil_superuser(pg_server: Server) -> Iterator[str]:
    """A superuser role (replay asks for one, to set deadlock_timeout) whose sessions read
    literals with standard_conforming_strings off."""
    name = f"lockdocs_scs_off_{os.getpid()}"
    with pg_server.connect() as conn:
        conn.execute(sql.SQL("create role {} login superuser").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("alter role {} set standard_conforming_strings = off").format(
                sql.Identifier(name)
            )
        )
    try:
        yield f"host={pg_server.socket_dir} port=5432 user={name} dbname=postgres"
    finally:
        with pg_server.connect() as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(name)))


@pytest.fixture
def server_with_scs_off(pg_server: Server) -> Iterator[str]:
    """The shared server with standard_conforming_strings off for every new session."""
    pg_server.reload(standard_conforming_strings="off")
    try:
        yield pg_server.dsn
    finally:
        pg_server.reload(standard_conforming_strings="on")


@pytest.mark.parametrize("where", ["role", "server"])
def test_a_key_text_never_runs_as_sql_with_standard_conforming_strings_off(
    where: str, request: pytest.FixtureRequest, canary: Path, tmp_path: Path
) -> None:
    dsn = request.getfixturevalue("evil_superuser" if where == "role" else "server_with_scs_off")
    with psycopg.connect(dsn) as conn:  # the setting is what the test says it is
        assert conn.execute("show standard_conforming_strings").fetchone() == ("off",)
    payload = _payload(canary)
    root = write_project(
        tmp_path,
        {
            "locks.yaml": _locks(_advisory("first", payload), _advisory("second", "second")),
            "paths/money.yaml": PATHS,
        },
    )
    r = run_cli("replay", "--root", str(root), "--dsn", dsn, "--format", "json")
    assert not canary.exists(), "the key text ran as SQL"
    assert r.code == 0, r.out + r.err
    (v,) = r.json()["replays"]
    assert (v["answer"], v["as_reported"]) == ("40P01", True)
    # The key went as a parameter, and the server locked the one the application computes.
    assert next(s["params"] for s in v["steps"] if s["lock"] == "first") == [payload]
    tags = {
        w.tag.advisory_tag
        for e in v["errors"]
        for w in parse_detail("\n".join(e["detail"])).waits
        if w.tag.kind == "advisory"
    }
    assert pghash.bigint_to_tag(pghash.hashtextextended(payload)) in tags


HOSTILE_TEXTS = [
    "plain text",
    "it's",
    "\\'', 0)); select 1; --",
    "a\\",
    "$$; select 1; $$",
    "}\nsetup { select 1; }",
    "line\r\nbreak\ttab",
    "\x1b]52;c;cHduZWQ=\x07\x1b[2J",
    "\u202eevil\u200b",
    "ключ 🔒",
]


def _held_tag(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[int, int, int]:
    row = conn.execute(
        "select classid::bigint, objid::bigint, objsubid from pg_locks "
        "where locktype = 'advisory' and pid = pg_backend_pid()"
    ).fetchone()
    assert row is not None
    return (int(str(row[0])), int(str(row[1])), int(str(row[2])))


@pytest.fixture(scope="module")
def keys_db(pg_server: Server) -> Iterator[str]:
    with scratch_database(pg_server.dsn, prefix="lockdocs_keys") as dsn:
        yield dsn


@pytest.mark.parametrize("text", HOSTILE_TEXTS, ids=range(len(HOSTILE_TEXTS)))
def test_every_form_of_a_key_gives_the_applications_key_whatever_the_setting(
    text: str, keys_db: str
) -> None:
    # As replay sends it (a plain text as a literal, any other bound), written in place (a
    # spec, the text output) and inside the DO block of a try: each locks the key the
    # application computes, with the setting off.
    lock = m.Lock(
        "k",
        "K",
        "advisory",
        "transaction",
        Location("locks.yaml", 1, 1),
        key=m.Key("hashtextextended", text=m.KeyText(text=text)),
    )
    t = sq.target(lock, "advisory", 1)
    expected = pghash.bigint_to_tag(pghash.hashtextextended(text))
    take = sq.take_sql(t, "exclusive")
    tried = sq.take_sql(t, "exclusive", option="try")
    if sq.plain(text):
        assert f"'{text}'" in take and f"'{text}'" in tried and t.params == ()
    else:  # no character of it is in a statement
        assert text not in tried and text not in take and t.params == (sq.Param(text),)
    with psycopg.connect(keys_db, autocommit=True) as conn:
        conn.execute("set standard_conforming_strings = off")
        for form in ("bound", "inline", "try"):
            conn.execute("begin")
            if form == "bound":
                driver.query(conn, take, sq.params_for(take, t))
            elif form == "inline":
                conn.execute(sq.inline(take, sq.params_for(take, t)).encode())
            else:
                assert sq.params_for(tried, t) == ()
                conn.execute(tried.encode())
            assert _held_tag(conn) == expected, form
            conn.execute("rollback")


def test_a_text_the_server_cannot_hold_gets_a_stand_in_key() -> None:
    for text in ("nul\x00byte", "lone \ud800 surrogate"):
        lock = m.Lock(
            "k",
            "K",
            "advisory",
            "transaction",
            Location("locks.yaml", 1, 1),
            key=m.Key("hashtextextended", text=m.KeyText(text=text)),
        )
        t = sq.target(lock, "advisory", 1)
        assert t.stand_in == "the key cannot be computed"
        assert t.key_args == "hashtext('lockdocs stand-in'), hashtext('k#1')"


# --- the isolation spec and the terminal -----------------------------------------------------

FILE_NAME = "paths/m\x1b[2J\u202e\u200b\nsetup { create table lockdocs_pwned_file (); }\n#.yaml"
TABLE = 'app."acc}ounts\x1b]52;c;cHduZWQ=\x07\u202e\u200b\n"'
KEY = "}\nsetup { create table lockdocs_pwned_key (); }\n'$$\\\x1b[2J\u202e"
# Raw, each of these would move the cursor, write the clipboard, reorder or hide text.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069]")


@pytest.fixture(scope="module")
def hostile_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(
        tmp_path_factory.mktemp("hostile"),
        {"locks.yaml": _locks(_row("first", TABLE), _advisory("second", KEY)), FILE_NAME: PATHS},
    )


def test_the_spec_runs_under_isolationtester_as_written(
    hostile_project: Path, pg_database: str
) -> None:
    r = run_cli("replay", "--root", str(hostile_project), "--format", "isolation")
    assert r.code == 0, r.err
    assert not UNSAFE.search(r.out)
    proc = subprocess.run(
        [str(ISOLATIONTESTER), pg_database],
        input=r.out,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # PostgreSQL's own parser of the format read two sessions and the replay's steps, in order.
    assert proc.stdout.startswith("Parsed test spec with 2 sessions\n"), proc.stdout
    started = proc.stdout.split("starting permutation: ", 1)[1].split("\n", 1)[0]
    assert started == (
        "T1 takes first#1 (for no key update) [1] T2 takes second#1 (exclusive) [2] "
        "T1 asks for second#1 (exclusive) [3] T2 asks for first#1 (for no key update) [4] "
        "T2 ends T1 ends"
    )
    assert proc.stdout.count("ERROR:  deadlock detected") == 1, proc.stdout
    with psycopg.connect(pg_database) as conn:
        made = conn.execute(
            "select relname from pg_class where relname like 'lockdocs_pwned%'"
        ).fetchall()
        left = conn.execute(
            "select count(*) from pg_namespace where nspname = 'lockdocs_replay'"
        ).fetchone()
    assert made == []
    assert left == (0,)


def test_names_reach_the_terminal_escaped(hostile_project: Path, pg_server: Server) -> None:
    r = run_cli("replay", "--root", str(hostile_project), "--dsn", pg_server.dsn)
    assert r.code == 0, r.out + r.err
    assert not UNSAFE.search(r.out + r.err), [m.group(0) for m in UNSAFE.finditer(r.out)]
    assert "\\x1b]52;c;cHduZWQ=\\x07\\u202e\\u200b\\n" in r.out  # shown, escaped
    assert r.out.splitlines()[-1] == "1 replayed, 1 as reported, 0 not"
    r = run_cli("replay", "--root", str(hostile_project), "--dsn", pg_server.dsn, "-f", "json")
    assert r.code == 0, r.err
    assert not UNSAFE.search(r.out)
    (v,) = r.json()["replays"]
    assert v["file"] == FILE_NAME  # the data itself is whole
    assert next(s["params"][0] for s in v["steps"] if s["lock"] == "second") == KEY


def test_a_deep_expression_in_table_is_a_stand_in_not_a_crash(
    tmp_path: Path, pg_server: Server
) -> None:
    # 100,000 terms: past the grammar's own depth limit; 16,000: as deep as it reads.
    for terms, how in ((100_000, "--dsn"), (16_000, "--format")):
        expr = "+".join(["1"] * terms)
        root = write_project(
            tmp_path / str(terms),
            {
                "locks.yaml": _locks(
                    _row("first", f"app.accounts where {expr} = 1"), _row("second", "app.ledgers")
                ),
                "paths/money.yaml": PATHS,
            },
        )
        args = ("--dsn", pg_server.dsn) if how == "--dsn" else ("--format", "isolation")
        r = run_cli("replay", "--root", str(root), *args)
        assert r.code == 0, (terms, r.code, r.err[-2000:])
        assert (
            "lockdocs_replay.lockdocs_first" if how == "--format" else "lockdocs.first"
        ) in r.out


# --- environment faults and explain's Markdown -----------------------------------------------


def test_an_output_folder_that_cannot_be_made_is_exit_2(tmp_path: Path) -> None:
    case = Path(__file__).parent / "fixtures" / "specs" / "report-opposite-orders"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for output, why in ((blocker, "File exists"), (blocker / "sub", "Not a directory")):
        r = run_cli("replay", "--root", str(case), "--format", "isolation", "--output", str(output))
        assert r.code == 2, r.err
        assert r.err == (
            f"lockdocs: cannot write the specs to {output}: {why}\n"
            "hint: give --output a folder that can be made and written\n"
        )


def test_a_backtick_stays_inside_explains_code_span() -> None:
    statement = "SELECT `x` FROM t WHERE note = '`</code><img src=x>``'"
    process = Process(
        "P1",
        1,
        LockRef(("account",), "for update", "ShareLock", "the table"),
        None,
        statement,
        statement,
    )
    case = Case("deadlock", "40P01", [process], "reported", [], lines=[2])
    md = markdown(Explained(group([case])), "log`name.log")
    html = pymarkdown.markdown(md, extensions=["tables"])
    assert re.findall(r"<code>(.*?)</code>", html) == [
        "log`name.log",
        "SELECT `x` FROM t WHERE note = '`&lt;/code&gt;&lt;img src=x&gt;``'",
    ]
    assert "<img" not in html
