"""`lockdocs replay` on a real server: every reporting spec fixture deadlocks as reported, the
CLI's outputs, the isolation spec under PostgreSQL's own isolationtester, and the judge's
ability to say so when a replay goes otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from conftest import run_cli
from lockdocs import model as m
from lockdocs.analysis.events import Held
from lockdocs.analysis.proof import Hop, Proof
from lockdocs.api import check
from lockdocs.diagnostics import Diagnostic, Location, Severity
from lockdocs.postgres import run
from lockdocs.postgres.replay import replay
from lockdocs.postgres.scenario import from_finding
from lockdocs.postgres.server import Server, scratch_database

SPECS = Path(__file__).resolve().parent / "fixtures" / "specs"
REPLAYABLE = ("LD201", "LD202", "LD203")


def _reporting() -> list[Path]:
    out = []
    for d in sorted(p for p in SPECS.iterdir() if p.is_dir()):
        codes = {
            line.split()[0]
            for line in (d / "expected.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
        if codes & set(REPLAYABLE) and not (d / "xfail.txt").exists():
            out.append(d)
    return out


REPORTING = _reporting()


@pytest.fixture(scope="module")
def replay_db(pg_server: Server) -> Iterator[str]:
    with scratch_database(pg_server.dsn, prefix="lockdocs_suite") as dsn:
        yield dsn


@pytest.mark.parametrize("case", REPORTING, ids=[d.name for d in REPORTING])
def test_every_reporting_fixture_replays_as_reported(case: Path, replay_db: str) -> None:
    result = check(case, drift=False)
    assert result.model is not None
    chosen = run.select(result.diagnostics, None, None, None)
    assert {s.diagnostic.code for s in chosen} <= set(REPLAYABLE)
    verdicts = run.replay_all(
        run.scenarios(result.model, chosen), [s.index for s in chosen], replay_db, 10, 1000
    )
    for v in verdicts:
        assert v.replayed, v.scenario.unsupported
        assert v.as_reported, (v.scenario.message, v.answer, v.differences)
        if v.answer == "hang":  # a cycle through an in-process lock: nothing broke it
            assert not v.errors
            continue
        # Postgres's DETAIL names every session of the cycle, in the declarations' words (the
        # sessions that ask: a row queue's extra session only holds the row).
        deadlock = next(e for e in v.errors if e.sqlstate == v.answer)
        if deadlock.sqlstate == "40P01":
            asking = sorted({st.session for st in v.scenario.steps if st.action == "want"})
            assert len(deadlock.mapped) == len(asking)
            for s in (v.scenario.sessions[i] for i in asking):
                assert any(f"{s.name} ({s.path}) waits for" in w for w in deadlock.mapped)


def test_the_fixtures_expect_both_answers() -> None:
    # Each replay above is as reported only when Postgres gave the answer its scenario expects,
    # so the fixtures cover both answers when their scenarios expect both (the bounded fixture:
    # 55P03). Counted here, without a server, so no test depends on which worker ran which case.
    seen: dict[str, int] = {}
    for case in REPORTING:
        result = check(case, drift=False)
        assert result.model is not None
        chosen = run.select(result.diagnostics, None, None, None)
        for sc in run.scenarios(result.model, chosen):
            seen[sc.expected] = seen.get(sc.expected, 0) + 1
    assert seen.get("40P01", 0) >= 20 and seen.get("55P03", 0) >= 1, seen
    assert seen.get("hang", 0) >= 2, seen  # the cycles through in-process locks


def test_the_cli_replays_a_finding_and_maps_the_answer(pg_server: Server) -> None:
    r = run_cli(
        "replay",
        "--root",
        str(SPECS / "report-opposite-orders"),
        "--dsn",
        pg_server.dsn,
        "--format",
        "json",
    )
    assert r.code == 0, r.err
    (v,) = r.json()["replays"]
    assert (v["code"], v["answer"], v["as_reported"]) == ("LD201", "40P01", True)
    assert [s["path"] for s in v["sessions"]] == ["post", "close"]
    assert [(s["session"], s["action"], s["outcome"]) for s in v["steps"]] == [
        ("T1", "take", "granted"),
        ("T2", "take", "granted"),
        ("T1", "want", "waited"),
        ("T2", "want", "error"),
    ]
    (err,) = v["errors"]
    assert err["session"] == "T2"  # the session that closes the cycle, every run
    assert err["hint"] == "See server log for query details."
    assert all(line.startswith("Process ") for line in err["detail"])
    assert sorted(err["waits"]) == [
        "T1 (post) waits for ledger#1 (for no key update): it waits for T2's transaction to "
        "end, blocked by T2 (close)",
        "T2 (close) waits for account#1 (for no key update): it waits for T1's transaction to "
        "end, blocked by T1 (post)",
    ]
    # The scratch database is gone again.
    with pg_server.connect() as conn:
        left = conn.execute(
            "select datname from pg_database where datname like 'lockdocs_replay%'"
        ).fetchall()
    assert left == []


def test_text_output_names_each_step_and_the_verdict(pg_server: Server) -> None:
    r = run_cli("replay", "--root", str(SPECS / "report-upgrade"), "--dsn", pg_server.dsn)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == (
        "paths/catalog.yaml:8:9: LD203: path 'publish' holds catalog (shared) and then asks "
        "for it exclusive"
    )
    assert "  1. T1 takes catalog#1 (shared): granted" in lines
    assert "       select pg_advisory_xact_lock_shared(hashtextextended('catalog', 0))" in lines
    assert any(
        x.startswith("  4. T2 asks for catalog#1 (exclusive)") and "ERROR 40P01" in x for x in lines
    )
    assert (
        "  as reported: 40P01 (two upgrades of one lock: Postgres's early deadlock check)" in lines
    )
    assert lines[-1] == "1 replayed, 1 as reported, 0 not"


def test_replay_starts_its_own_server_without_a_dsn() -> None:
    env: dict[str, str | None] = dict.fromkeys(run.PG_ENVIRONMENT)  # removed: no server named
    r = run_cli("replay", "--root", str(SPECS / "report-three-path-cycle"), env=env)
    assert r.code == 0, r.err
    assert r.out.splitlines()[-1] == "1 replayed, 1 as reported, 0 not"


def test_a_replay_that_goes_otherwise_is_a_failure_that_names_the_step(replay_db: str) -> None:
    # A made-up "cycle" of two FOR SHARE takes: they never wait for each other, so Postgres
    # grants everything, and the judge must say which step went differently.
    here = Location("locks.yaml", 1, 1)
    lock = m.Lock(
        "doc",
        "Doc",
        "row",
        "transaction",
        here,
        table="app.docs",
        modes=(("for share", "readers"),),
    )
    other = m.Lock(
        "page",
        "Page",
        "row",
        "transaction",
        here,
        table="app.pages",
        modes=(("for share", "readers"),),
    )
    model = m.Model("", m.Page("x"), {"doc": lock, "page": other}, {}, {}, (), {}, (), ())
    hops = (
        Hop(
            "read",
            here,
            "doc",
            "for share",
            "",
            "page",
            "for share",
            (Held("doc", "for share", ""),),
        ),
        Hop(
            "scan",
            here,
            "page",
            "for share",
            "",
            "doc",
            "for share",
            (Held("page", "for share", ""),),
        ),
    )
    d = Diagnostic("LD201", Severity.ERROR, "made up", here, extra={"proof": Proof("cycle", hops)})
    v = replay(from_finding(model, d), replay_db)
    assert not v.as_reported
    assert v.answer == ""
    assert v.differences == [
        "step 3 (T1 asks for page#1 (for share) (locks.yaml:1:1)) was granted at once: no other session held "
        "page#1 in a mode it waits for",
        "every step finished without an error: Postgres saw no deadlock and no lock timeout",
    ]


def test_bad_selections_are_usage_errors(pg_server: Server, tmp_path: Path) -> None:
    case = str(SPECS / "report-opposite-orders")
    for args, words in [
        (("--index", "7"), "there is no finding 7: check --format json lists 1 (0 to 0)"),
        (("--code", "LD203"), "no LD203 finding to replay (the project has LD201 findings)"),
        (("--path", "nobody"), "no on path 'nobody' finding to replay"),
        (("--deadlock-timeout", "soon"), "--deadlock-timeout 'soon' is not a duration"),
    ]:
        r = run_cli("replay", "--root", case, "--dsn", pg_server.dsn, *args)
        assert r.code == 2, (args, r.out, r.err)
        assert words in r.err, r.err
        assert "Traceback" not in r.err
    r = run_cli("replay", "--root", str(SPECS / "report-external-call-under-lock"), "--index", "0")
    assert r.code == 2 and "finding 0 is LD302" in r.err
    nowhere = f"host={tmp_path} port=5432 user=postgres dbname=postgres connect_timeout=2"
    r = run_cli("replay", "--root", case, "--dsn", nowhere)
    assert r.code == 2 and "lockdocs: cannot use the server:" in r.err, r.err
    assert "Traceback" not in r.err


def _isolationtester() -> str | None:
    found = shutil.which("isolationtester")
    if found:
        return found
    hits = sorted(Path("/usr/lib/postgresql").glob("*/lib/pgxs/src/test/isolation/isolationtester"))
    return str(hits[-1]) if hits else None


@pytest.mark.parametrize(
    ("case", "sessions"),
    [("report-opposite-orders", 2), ("report-three-path-cycle", 3), ("report-upgrade", 2)],
)
def test_the_isolation_spec_deadlocks_under_postgres_own_isolationtester(
    case: str, sessions: int, pg_database: str
) -> None:
    tester = _isolationtester()
    if tester is None:
        if os.environ.get("LOCKDOCS_REQUIRE_POSTGRES") == "1":
            pytest.fail("isolationtester (postgresql-client) is not installed")
        pytest.skip("isolationtester (postgresql-client) is not installed")
    r = run_cli("replay", "--root", str(SPECS / case), "--format", "isolation")
    assert r.code == 0, r.err
    proc = subprocess.run(
        [tester, pg_database],
        input=r.out,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"Parsed test spec with {sessions} sessions")
    assert proc.stdout.count("ERROR:  deadlock detected") == 1, proc.stdout
    # The closer is the one that fails, and the spec cleans up after itself.
    assert f"step T{sessions} asks for" in proc.stdout.split("ERROR:  deadlock detected")[0]
    with psycopg.connect(pg_database) as conn:
        assert conn.execute(
            "select count(*) from pg_namespace where nspname = 'lockdocs_replay'"
        ).fetchone() == (0,)


def test_isolation_needs_one_finding_or_a_folder(tmp_path: Path) -> None:
    root = str(SPECS / "report-upgrade-gated-only-against-itself")
    r = run_cli("replay", "--root", root, "--format", "isolation")
    assert r.code == 2 and "2 findings to write; an isolation spec holds one" in r.err
    r = run_cli("replay", "--root", root, "--format", "isolation", "--output", str(tmp_path))
    assert r.code == 0, r.err
    written = sorted(p.name for p in tmp_path.iterdir())
    assert len(written) == 2 and all(n.startswith("lockdocs-ld203-") for n in written)
    assert r.out == "".join(f"wrote {tmp_path / n}\n" for n in written)


def test_the_pg_environment_names_the_server() -> None:
    saved = {v: os.environ.pop(v, None) for v in run.PG_ENVIRONMENT}
    try:
        assert run.dsn_from_environment(None) is None
        assert run.dsn_from_environment("host=/x") == "host=/x"
        os.environ["PGHOST"] = "/somewhere"
        assert run.dsn_from_environment(None) == ""
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


def _masked(text: str) -> str:
    """Postgres's pids and transaction ids change from run to run; nothing else may."""
    import re

    return re.sub(r"(Process|process|transaction) \d+", r"\1 N", text)


def test_the_docs_show_what_replay_prints(pg_server: Server) -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "proving.md").read_text()
    shown = doc.split("This is a real run:\n\n```text\n", 1)[1].split("```", 1)[0]
    r = run_cli("replay", "--root", str(SPECS / "report-opposite-orders"), "--dsn", pg_server.dsn)
    assert r.code == 0, r.err
    assert _masked(r.out) == _masked(shown)


def test_the_flagship_project_replays_as_reported(pg_server: Server) -> None:
    # The repository's own declarations: its one waived LD202 is a real deadlock on the server.
    repo = Path(__file__).resolve().parents[1]
    r = run_cli("replay", "--root", str(repo), "--dsn", pg_server.dsn, "--format", "json")
    assert r.code == 0, r.err
    replays = r.json()["replays"]
    assert replays and all(v["as_reported"] for v in replays)
    assert {v["answer"] for v in replays} == {"40P01"}
