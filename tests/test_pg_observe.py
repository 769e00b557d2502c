"""`lockdocs observe` on real server logs: the session's throwaway cluster (pg_server) logs
every statement (log_statement = 'all') in stderr, csvlog and jsonlog while
tests/observe_driver.py runs the flagship's code/ functions and sqlc queries as concurrent
transactions; observe finds each planted problem at its log line (an undeclared order that
closes a cycle, an undeclared row lock, a tagged path in another mode) and nothing on the
transactions that follow their paths, under several log_line_prefix settings; --propose
drafts declarations `lockdocs check` accepts; and the table locks observe reads from DDL are
the ones the server takes."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

import observe_driver as driver
from conftest import REPO, invoke, run_cli
from lockdocs.postgres.server import Server
from lockdocs.postgres.sqlread import statements

FORMATS = ("stderr", "csvlog", "jsonlog")
PLANTED = {
    "LD801": driver.PLANTED_ORDER.split("\n", 1)[0],
    "LD802": driver.PLANTED_ORDER.split("\n", 1)[0],
    "LD803": driver.PLANTED_LOCK,
    "LD804": driver.PLANTED_MODE,
}


@pytest.fixture(scope="module")
def cluster(pg_server: Server) -> Iterator[Server]:
    """The session's server with the driver's database; the log settings are turned on only
    while a test drives it (`_logging`), so other tests' logs stay as they were."""
    with pg_server.connect() as conn:
        conn.execute("drop database if exists shop with (force)")
        conn.execute("create database shop")
    driver.setup(pg_server.dsn_for("shop"))
    try:
        yield pg_server
    finally:
        with pg_server.connect() as conn:
            conn.execute("drop database if exists shop with (force)")


PREFIX = "%m [%p] %l %v %x %a "


@contextmanager
def _logging(server: Server, prefix: str = PREFIX) -> Iterator[None]:
    """Every statement logged, with this log_line_prefix; the settings as they were after."""
    with server.connect() as conn:
        was = {
            name: conn.execute("select current_setting(%s)", (name,)).fetchone()[0]  # type: ignore[index]
            for name in ("log_statement", "log_line_prefix")
        }
    server.reload(log_statement="'all'", log_line_prefix=f"'{prefix}'")
    try:
        yield
    finally:
        server.reload(**{k: "'" + v.replace("'", "''") + "'" for k, v in was.items()})


def _sizes(server: Server) -> dict[str, int]:
    return {f: server.log_path(f).stat().st_size for f in FORMATS}


def _slices(server: Server, before: dict[str, int], out: Path) -> dict[str, Path]:
    """What the server logged since `before`, in each format, once a marker shows it is all
    written."""
    marker = f"lockdocs-end-{time.monotonic_ns()}"
    with server.connect() as conn:
        conn.execute("select %s::text", (marker,))
    deadline = time.monotonic() + 20
    files = {}
    for f in FORMATS:
        while True:
            with server.log_path(f).open("rb") as fh:
                fh.seek(before[f])
                data = fh.read()
            if marker.encode() in data or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        files[f] = out / f"server.{f}"
        files[f].write_bytes(data)
    return files


@pytest.fixture(scope="module")
def driven(cluster: Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    with _logging(cluster):
        before = _sizes(cluster)
        driver.drive(cluster.dsn_for("shop"))
        return _slices(cluster, before, tmp_path_factory.mktemp("driven"))


def _line(path: Path, n: int) -> str:
    with path.open(encoding="utf-8") as fh:
        for i, text in enumerate(fh, 1):
            if i == n:
                return text
    raise AssertionError(f"{path} has no line {n}")


def _findings(log: Path, *args: str, root: Path = REPO) -> tuple[int, dict[str, object]]:
    r = invoke("observe", str(log), "--root", str(root), "--format", "json", *args)
    return r.code, r.json()


def _assert_planted(log: Path, doc: dict[str, object]) -> None:
    found = doc["diagnostics"]
    assert isinstance(found, list)
    assert sorted(d["code"] for d in found) == sorted(PLANTED), json.dumps(found, indent=1)
    for d in found:
        text = _line(log, d["line"])
        assert PLANTED[d["code"]] in text, (d["code"], d["line"], text)


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_planted_problem_is_found_at_its_line_and_nothing_else(
    driven: dict[str, Path], fmt: str
) -> None:
    code, doc = _findings(driven[fmt])
    assert code == 1  # LD802 and LD803 are errors
    _assert_planted(driven[fmt], doc)
    by_code = {d["code"]: d for d in doc["diagnostics"]}  # type: ignore[attr-defined]
    assert by_code["LD801"]["locks"] == ["grant-lineage-head", "pool-row"]
    assert set(by_code["LD802"]["locks"]) == {"grant-lineage-head", "pool-row"}
    assert by_code["LD804"]["paths"] == ["extend-waiting-grant"]
    assert "for no key update" in by_code["LD804"]["message"]
    observed = doc["observed"]
    assert observed["transactions"] >= 80 and observed["sessions"] >= 4  # type: ignore[index]
    assert observed["paths"]["tag"] >= 60  # type: ignore[index]
    coverage = doc["coverage"]
    counts = coverage["paths"]["counts"]  # type: ignore[index]
    for path in ("revoke-grant", "extend-waiting-grant", "reconcile-subscription", "tier-add"):
        assert counts[path] >= 1, path
    assert "fedwiki-swap" in coverage["paths"]["unseen"]  # type: ignore[index]
    assert coverage["locks"]["counts"]["domains-registry"] >= 12  # type: ignore[index]


def test_the_text_report_shows_the_proof_and_the_coverage(driven: dict[str, Path]) -> None:
    r = run_cli("observe", str(driven["stderr"]), "--root", str(REPO))
    assert r.code == 1
    assert "LD802 error: logged transactions can deadlock: lock-order cycle: " in r.out
    assert "One interleaving:" in r.out
    assert "coverage: " in r.out and "declared paths seen; never seen: " in r.out
    assert r.out.rstrip().endswith("2 errors, 2 warnings, 0 info, 0 waived")
    for fmt in ("github", "sarif"):
        assert invoke("observe", str(driven["stderr"]), "-f", fmt, "--root", str(REPO)).code == 1


@pytest.mark.parametrize(
    ("prefix", "option"),
    [
        ("%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", False),
        ("%m [%p] %q%u@%d ", False),
        ("pid=%p %c/%l %v ", True),
    ],
    ids=["pgbadger", "debian", "custom"],
)
def test_other_log_line_prefixes(
    cluster: Server, tmp_path: Path, prefix: str, option: bool
) -> None:
    with _logging(cluster, prefix):
        before = _sizes(cluster)
        driver.planted(cluster.dsn_for("shop"))
        app = driver.App(cluster.dsn_for("shop"))
        app.run("revoke-grant", lambda a: driver.revoke_grant(a, 3, 12, 102))
        app.conn.close()
        log = _slices(cluster, before, tmp_path)["stderr"]
    args = ("--log-line-prefix", prefix) if option else ()
    code, doc = _findings(log, *args)
    assert code == 1
    _assert_planted(log, doc)
    if option:  # without the setting, lines that show no [pid] cannot be told apart
        r = invoke("observe", str(log), "--root", str(REPO))
        assert r.code == 2 and "carry no process id" in r.err, r.err


def test_propose_on_an_empty_project_drafts_what_check_accepts(
    driven: dict[str, Path], tmp_path: Path
) -> None:
    empty = tmp_path / "app"
    empty.mkdir()
    r = invoke("observe", str(driven["csvlog"]), "--propose", "draft", cwd=empty)
    assert r.code == 1, r.err  # with nothing declared, every lock is undeclared
    assert "lockdocs: drafted draft/locks.yaml, draft/paths/observed.yaml" in r.err
    draft = empty / "draft"
    locks = (draft / "locks.yaml").read_text()
    assert "  resource-pools-row:  # drafted by lockdocs observe from " in locks
    assert 'instances: {order: "ascending pool_id"}' in locks
    assert "entitlement-materialization:" in locks  # the rendezvous's fixed text
    assert 'prefix: "desired-state:"' in locks
    paths = (draft / "paths" / "observed.yaml").read_text()
    assert "  revoke-grant:  # tagged lockdocs_path='revoke-grant'" in paths
    check = invoke("check", "--root", str(draft), "--no-drift", "--format", "json")
    assert check.code in (0, 1), check.out + check.err
    bad = [d for d in check.json()["diagnostics"] if d["code"].startswith("LD0")]
    assert not bad, bad


def test_propose_adds_what_the_project_lacks(driven: dict[str, Path], tmp_path: Path) -> None:
    project = tmp_path / "project"
    for name in ("locks.yaml", "paths", "code"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, project / name)
        else:
            project.mkdir(exist_ok=True)
            shutil.copy2(src, project / name)
    r = invoke(
        "observe", str(driven["stderr"]), "--root", str(project), "--propose", str(tmp_path / "d")
    )
    assert r.code == 1, r.err
    locks = (tmp_path / "d" / "locks.yaml").read_text()
    assert locks.startswith((REPO / "locks.yaml").read_text().split("\nlocks:\n", 1)[0])
    assert "  pool-positions-row:  # drafted by lockdocs observe" in locks
    paths = (tmp_path / "d" / "paths" / "observed.yaml").read_text()
    assert "an order no declared path has" in paths
    assert "take: grant-lineage-head" in paths
    shutil.copy2(tmp_path / "d" / "locks.yaml", project / "locks.yaml")
    shutil.copy2(tmp_path / "d" / "paths" / "observed.yaml", project / "paths" / "observed.yaml")
    check = invoke("check", "--root", str(project), "--no-drift", "--format", "json")
    assert check.code in (0, 1), check.out + check.err
    codes = {d["code"] for d in check.json()["diagnostics"]}
    assert not {c for c in codes if c.startswith("LD0")}, codes
    assert "LD201" in codes  # the observed order, now declared, is the cycle check reports


DDL = [
    ("ALTER TABLE t ADD COLUMN c int", "AccessExclusiveLock"),
    ("ALTER TABLE t VALIDATE CONSTRAINT t_v", "ShareUpdateExclusiveLock"),
    ("ALTER TABLE t SET (fillfactor = 90)", "ShareUpdateExclusiveLock"),
    ("TRUNCATE t", "AccessExclusiveLock"),
    ("CREATE INDEX ON t (v)", "ShareLock"),
    (
        "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION tf()",
        "ShareRowExclusiveLock",
    ),
    ("LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE", "ShareRowExclusiveLock"),
    ("DROP TABLE t", "AccessExclusiveLock"),
]
_MODES = {
    "AccessExclusiveLock": "access exclusive",
    "ShareUpdateExclusiveLock": "share update exclusive",
    "ShareLock": "share",
    "ShareRowExclusiveLock": "share row exclusive",
}


@pytest.mark.parametrize(("ddl", "server_mode"), DDL, ids=[d.split(" (")[0] for d, _ in DDL])
def test_the_table_locks_of_ddl_are_the_servers(
    cluster: Server, ddl: str, server_mode: str
) -> None:
    with psycopg.connect(cluster.dsn_for("shop"), autocommit=True) as conn:
        conn.execute("drop table if exists t")
        conn.execute("create table t (v int, constraint t_v check (v > 0) not valid)")
        conn.execute(
            "create or replace function tf() returns trigger language plpgsql as "
            "$$ begin return new; end $$"
        )
        with conn.transaction():
            oid = conn.execute("select 't'::regclass::oid").fetchone()[0]  # type: ignore[index]
            conn.execute(ddl)
            held = {
                row[0]
                for row in conn.execute(
                    "select mode from pg_locks where relation = %s and pid = pg_backend_pid()",
                    (oid,),
                )
            }
    strongest = max(held, key=_rank)
    assert strongest == server_mode, held
    (stmt,) = statements(ddl)
    (lock,) = [lk for lk in stmt.locks if lk.kind == "table"]
    assert lock.mode == _MODES[server_mode]


def _rank(mode: str) -> int:
    order = [
        "AccessShareLock",
        "RowShareLock",
        "RowExclusiveLock",
        "ShareUpdateExclusiveLock",
        "ShareLock",
        "ShareRowExclusiveLock",
        "ExclusiveLock",
        "AccessExclusiveLock",
    ]
    return order.index(mode)


def test_gzip_stdin_and_several_files_in_order(driven: dict[str, Path], tmp_path: Path) -> None:
    import gzip
    import subprocess
    import sys

    text = driven["stderr"].read_bytes()
    packed = tmp_path / "server.log.gz"
    packed.write_bytes(gzip.compress(text))
    code, doc = _findings(packed)
    assert code == 1
    assert sorted(d["code"] for d in doc["diagnostics"]) == sorted(PLANTED)
    # stdin
    proc = subprocess.run(
        [sys.executable, "-m", "lockdocs", "observe", "-", "--root", str(REPO), "-f", "json"],
        input=text,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert sorted(d["code"] for d in json.loads(proc.stdout)["diagnostics"]) == sorted(PLANTED)
    # the same log cut in two files between transactions, read in order: the same findings,
    # each at its line in its file
    lines = text.decode().splitlines(keepends=True)
    cut = next(i for i in range(len(lines) // 2, len(lines)) if "statement: COMMIT" in lines[i]) + 1
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text("".join(lines[:cut]))
    second.write_text("".join(lines[cut:]))
    r = invoke("observe", str(first), str(second), "--root", str(REPO), "-f", "json")
    found = r.json()["diagnostics"]
    assert sorted(d["code"] for d in found) == sorted(PLANTED), found
    for d in found:
        log = Path(d["file"]) if Path(d["file"]).is_absolute() else tmp_path / Path(d["file"]).name
        assert PLANTED[d["code"]] in _line(log, d["line"]), d
