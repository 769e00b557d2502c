"""`lockdocs explain` on real server logs: every deadlock and lock timeout that replaying the
reporting spec fixtures produces, in the stderr (under several log_line_prefix settings),
csvlog and jsonlog formats, is traced back to the finding's locks and paths; and a
hand-written production log covers what replay cannot produce (UPDATE statements, a key family
taken with a parameter, an order the declarations miss, an undeclared key, NOWAIT)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from lockdocs.api import check
from lockdocs.postgres import run
from lockdocs.postgres.explain_output import explain
from lockdocs.postgres.replay import Verdict
from lockdocs.postgres.server import Server
from lockdocs.postgres.serverlog import entries, lock_reports
from test_pg_replay import REPORTING

HERE = Path(__file__).resolve().parent
FORMATS = ("stderr", "csvlog", "jsonlog")
PREFIXES = (
    "'%m [%p] '",
    "'%t:%r:%u@%d:[%p]: '",
    "''",
    "'%m [%p] %q%u@%d %e %x '",
    "'pid=%p,time=%n,app=%a,line=%l '",
)


def _sizes(server: Server) -> dict[str, int]:
    return {f: server.log_path(f).stat().st_size for f in FORMATS}


def _slices(server: Server, before: dict[str, int], expected: int) -> dict[str, str]:
    """The log written since `before`, once every format holds the `expected` errors."""
    deadline = time.monotonic() + 10
    while True:
        out = {}
        for f in FORMATS:
            with server.log_path(f).open("rb") as fh:
                fh.seek(before[f])
                out[f] = fh.read().decode("utf-8", errors="replace")
        counts = [len(lock_reports(entries(out[f], f))) for f in FORMATS]
        if all(c >= expected for c in counts) or time.monotonic() > deadline:
            return out
        time.sleep(0.05)


@pytest.fixture(scope="module")
def replayed(pg_server: Server) -> dict[str, tuple[Any, list[Verdict], dict[str, str]]]:
    """Every reporting fixture replayed once, each under the next log_line_prefix; its
    verdicts and the three logs' slices."""
    out: dict[str, tuple[Any, list[Verdict], dict[str, str]]] = {}
    try:
        for n, case in enumerate(REPORTING):
            pg_server.reload(log_line_prefix=PREFIXES[n % len(PREFIXES)])
            result = check(case, drift=False)
            chosen = run.select(result.diagnostics, None, None, None)
            before = _sizes(pg_server)
            with run.database(pg_server.dsn) as db:
                verdicts = run.replay_all(
                    run.scenarios(result.model, chosen), [s.index for s in chosen], db, 10, 1000
                )
            errors = sum(1 for v in verdicts for e in v.errors if e.sqlstate in ("40P01", "55P03"))
            out[case.name] = (result, verdicts, _slices(pg_server, before, errors))
    finally:
        pg_server.reload(log_line_prefix=PREFIXES[0])
    return out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", REPORTING, ids=[d.name for d in REPORTING])
def test_explain_names_the_locks_and_paths_of_every_replayed_deadlock(
    case: Path, fmt: str, replayed: dict[str, tuple[Any, list[Verdict], dict[str, str]]]
) -> None:
    result, verdicts, logs = replayed[case.name]
    cases = explain(result.model, result.diagnostics, logs[fmt], fmt)
    errors = [e for v in verdicts for e in v.errors if e.sqlstate in ("40P01", "55P03")]
    assert sum(len(c.lines) for c in cases) == len(errors), logs[fmt][-3000:]
    for v in verdicts:
        finding = v.scenario
        if v.answer == "hang":
            continue  # a cycle Postgres cannot see: it logs nothing to explain
        # the paths on the cycle: the sessions that ask (a row queue's extra one only holds)
        paths = {finding.sessions[st.session].path for st in finding.steps if st.action == "want"}
        locks = {st.lock for st in finding.steps if st.action == "want"}
        named = [
            c
            for c in cases
            if {lk for p in c.processes for lk in p.wants.locks} <= locks
            and (c.kind != "deadlock" or any(f["code"] == finding.code for f in c.findings))
        ]
        assert named, f"no case of the log names {finding.code} {sorted(locks)}"
        for c in cases:
            wanted = {lk for p in c.processes for lk in p.wants.locks}
            if c.kind == "deadlock":
                assert c.verdict == "reported", c.says
                if wanted != locks:
                    continue  # another finding of the same fixture
                assert any(f["code"] == finding.code for f in c.findings), c.says
                takers = {t.path for p in c.processes for t in p.takers}
                assert takers & paths == paths, (takers, paths)
                for p in c.processes:
                    assert p.holds is not None and set(p.holds.locks) <= locks
            else:
                assert c.verdict == "timeout" and wanted <= locks, c.says


def test_every_format_and_prefix_was_exercised(
    replayed: dict[str, tuple[Any, list[Verdict], dict[str, str]]],
) -> None:
    stderr = "".join(logs["stderr"] for _, _, logs in replayed.values())
    assert "UTC:[local]:postgres@lockdocs_replay" in stderr  # '%t:%r:%u@%d:[%p]: '
    assert "pid=" in stderr and ",app=lockdocs replay" in stderr
    assert "\nERROR:  deadlock detected" in stderr  # the empty prefix
    assert "40P01 " in stderr  # %e
    assert (
        sum(len(lock_reports(entries(logs["jsonlog"]))) for _, _, logs in replayed.values()) >= 25
    )


SHOP = HERE / "fixtures" / "explain" / "shop"
PRODUCTION = HERE / "data" / "explain" / "production.log"


def test_a_production_log_is_explained_case_by_case() -> None:
    r = run_cli("explain", str(PRODUCTION), "--root", str(SHOP), "--format", "json")
    assert r.code == 1, r.err  # the log shows an order and a lock the declarations miss
    doc = r.json()
    got = [(c["kind"], c["count"], c["verdict"]) for c in doc["cases"]]
    assert got == [
        ("deadlock", 2, "reported"),
        ("deadlock", 1, "missing order"),
        ("deadlock", 1, "undeclared lock"),
        ("lock not available", 1, "timeout"),
    ]
    reported, missing, undeclared, nowait = doc["cases"]
    assert reported["lines"] == [2, 12]
    assert reported["findings"][0]["code"] == "LD201"
    assert [(p["wants"]["locks"], p["holds"]) for p in reported["processes"]] == [
        (["account"], ["ledger"]),
        (["ledger"], ["account"]),
    ]
    assert reported["processes"][0]["takers"] == [
        {"path": "close", "location": "paths/shop.yaml:13:9", "via": ["LockAccount"]}
    ]
    assert reported["processes"][0]["statement"] == (
        "UPDATE app.accounts SET balance = balance - $1 WHERE id = $2"
    )
    pool = next(p for p in missing["processes"] if p["wants"]["locks"] == ["pool"])
    assert pool["wants"]["decoded_from"] == (
        "the key expression of its statement: hashtextextended('pool:...')"
    )
    assert pool["holds"] == ["account"] and pool["takers"] == []
    assert missing["says"] == [
        f"{pool['name']} held account and asked for pool, and no declared path takes pool "
        "while holding account (path refill takes pool before account): the declarations are "
        "missing a path or a step"
    ]
    assert undeclared["processes"][0]["wants"] == {
        "locks": [],
        "mode": "exclusive",
        "postgres": "advisory lock [16384,0,999,1]",
        "decoded_from": "no declared key has this tag",
    }
    assert nowait["processes"][0]["wants"]["locks"] == ["account"]
    assert nowait["processes"][0]["wants"]["mode"] == "for update"


def test_explain_reads_stdin_and_writes_text_and_markdown() -> None:
    text = PRODUCTION.read_text()
    for fmt, first in (
        ("text", "<stdin>: deadlock (40P01), 2 times (lines 2, 12)"),
        ("markdown", "## Lock errors in `<stdin>`"),
    ):
        proc = run_cli("explain", "-", "--root", str(SHOP), "-f", fmt, input=text)
        assert proc.code == 1, proc.err
        assert proc.out.splitlines()[0] == first
        assert "$1" in proc.out and "balance - 10" not in proc.out
    r = run_cli("explain", str(PRODUCTION), "--root", str(SHOP), "--show-literals")
    assert "balance - 10" in r.out


def test_explain_bad_input() -> None:
    r = run_cli("explain", "/nonexistent/server.log", "--root", str(SHOP))
    assert r.code == 2 and r.err.startswith("lockdocs: cannot read /nonexistent/server.log")
    assert "Traceback" not in r.err


def test_the_docs_show_what_explain_prints(tmp_path: Path) -> None:
    doc = (HERE.parent / "docs" / "proving.md").read_text()
    shown = doc.split("`lockdocs explain server.log` prints:\n\n```text\n", 1)[1].split("```", 1)[0]
    (tmp_path / "server.log").write_bytes(PRODUCTION.read_bytes())
    r = run_cli("explain", "server.log", "--root", str(SHOP), cwd=tmp_path)
    assert r.code == 1, r.err
    assert r.out == shown
    excerpt = doc.split("this report:\n\n```text\n", 1)[1].split("```", 1)[0]
    assert excerpt in PRODUCTION.read_text()
