"""The parts of `lockdocs observe` one at a time, on small logs in the server's formats: the
parameters of an execution, sqlcommenter tags, log_line_prefix settings, and how sessions
become transactions (blocks, savepoints, errors, several statements in one query, a log
that begins or ends inside a transaction, lines lost). tests/test_pg_observe.py runs the
whole on real server logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke, write_project
from lockdocs.api import check
from lockdocs.observe.locks import Locker
from lockdocs.observe.logged import parameters
from lockdocs.observe.sessions import Transaction, rebuild
from lockdocs.observe.shapes import Shapes, sqlcommenter
from lockdocs.postgres.logprefix import Prefix, detect
from lockdocs.postgres.serverlog import entries

SHOP = Path(__file__).resolve().parent / "fixtures" / "explain" / "shop"


def _log(*lines: tuple[int, int, str]) -> str:
    """(pid, session line, 'LEVEL:  text') -> stderr lines with '%m [%p] %l '."""
    return "".join(f"2026-11-30 10:00:00.000 UTC [{p}] {n} {t}\n" for p, n, t in lines)


def _transactions(text: str) -> list[Transaction]:
    result = check(SHOP, drift=False)
    shapes = Shapes(Locker(result.model, None))
    return list(rebuild(entries(text), shapes))


def _locks(t: Transaction) -> list[tuple[str, str]]:
    return [
        (x.took.seen.locks[0] if x.took.seen.locks else x.took.seen.label, x.took.mode)
        for x in t.takes
    ]


ACCOUNT = "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE"
LEDGER = "SELECT 1 FROM app.ledgers WHERE id = 1 FOR UPDATE"
POOL = "SELECT pg_advisory_xact_lock(hashtextextended('pool:' || $1, 0))"


def test_parameters_as_the_server_logs_them() -> None:
    assert parameters("parameters: $1 = '1', $2 = 'a''b\nc', $3 = NULL") == ("1", "a'b\nc", None)
    assert parameters("parameters: $2 = 'x'") == (None, "x")
    assert parameters("parameters: $1 = 'cut off...'") == ("cut off...",)
    assert parameters("parameters: $1 = 'unterminated") == ()
    assert parameters("parameters: $99999999 = '1'") == ()
    assert parameters("something else") == ()


def test_sqlcommenter_tags() -> None:
    assert sqlcommenter("lockdocs_path='settle-pool',route='%2Fpools%2F%7Bid%7D'") == [
        ("lockdocs_path", "settle-pool"),
        ("route", "/pools/{id}"),
    ]
    assert sqlcommenter("action='it\\'s'") == [("action", "it's")]
    assert sqlcommenter(" not a tag ") == []


def test_log_line_prefixes_are_read_without_backtracking() -> None:
    p = Prefix("%m [%p] %q%u@%d %l %v %x ")
    line = "2026-11-30 10:00:00.123 UTC [42] app@shop 7 3/9 0 LOG:  statement: BEGIN"
    v = p.read(line, line.index("LOG:"))
    assert v is not None and (v.pid, v.user, v.database, v.session_line, v.vxid) == (
        42,
        "app",
        "shop",
        7,
        "3/9",
    )
    # %q: a process that is no session prints only the part before it
    bare = "2026-11-30 10:00:00.123 UTC [1] LOG:  checkpoint starting: time"
    assert p.read(bare, bare.index("LOG:")) is not None
    assert Prefix("%-10a|%p ").read("app       |7 LOG:  x", 13) is not None
    hostile = "a" * 5000 + " LOG:  x"
    assert Prefix("%a %u %d [%p] ").read(hostile, 5000) is None  # at once, not in hours
    found = detect(["2026-11-30 10:00:00 UTC [7]: [3-1] user=u,db=d,app=a,client=h LOG:  x"])
    assert found is not None and found.spec.startswith("%t [%p]: [%l-1]")


def test_blocks_savepoints_and_statements_of_their_own() -> None:
    txs = _transactions(
        _log(
            (1, 1, f"LOG:  statement: {ACCOUNT}"),
            (1, 2, "LOG:  statement: BEGIN"),
            (1, 3, f"LOG:  statement: {LEDGER}"),
            (1, 4, "LOG:  statement: SAVEPOINT a"),
            (1, 5, f"LOG:  statement: {ACCOUNT}"),
            (1, 6, "LOG:  statement: ROLLBACK TO SAVEPOINT a"),
            (1, 7, f"LOG:  execute <unnamed>: {POOL}"),
            (1, 8, "DETAIL:  parameters: $1 = '42'"),  # a line of its own, numbered
            (1, 9, "LOG:  statement: COMMIT"),
        )
    )
    assert [(t.ended, t.cut, _locks(t)) for t in txs] == [
        ("statement", "", [("account", "for update")]),
        (
            "commit",
            "",
            [("ledger", "for update"), ("account", "for update"), ("pool", "exclusive")],
        ),
    ]
    # ROLLBACK TO let the account go: taken in that order, but held by nothing after
    assert [x.released for x in txs[1].takes] == [False, True, False]


def test_statements_one_fingerprint_merges_are_read_each_for_itself() -> None:
    """pglast's fingerprint drops savepoint and alias names (and schema names and parameter
    numbers): the shape cache keyed by it read `SAVEPOINT b` as the `SAVEPOINT a` before it,
    and the second `FOR UPDATE OF x` below as a lock on the accounts."""
    txs = _transactions(
        _log(
            (1, 1, "LOG:  statement: BEGIN"),
            (1, 2, "LOG:  statement: SAVEPOINT a"),
            (1, 3, f"LOG:  statement: {ACCOUNT}"),
            (1, 4, "LOG:  statement: SAVEPOINT b"),
            (1, 5, f"LOG:  statement: {LEDGER}"),
            (1, 6, "LOG:  statement: ROLLBACK TO SAVEPOINT b"),
            (1, 7, f"LOG:  statement: {LEDGER}"),
            (1, 8, "LOG:  statement: ROLLBACK TO SAVEPOINT a"),
            (1, 9, "LOG:  statement: COMMIT"),
            (2, 1, "LOG:  statement: SELECT 1 FROM app.accounts x, app.ledgers y FOR UPDATE OF x"),
            (2, 2, "LOG:  statement: SELECT 1 FROM app.accounts y, app.ledgers x FOR UPDATE OF x"),
        )
    )
    first, of_x, of_y = txs
    # ROLLBACK TO b let the first ledger go; ROLLBACK TO a everything after a
    ledger = ("ledger", "for update")
    assert _locks(first) == [("account", "for update"), ledger, ledger]
    assert [x.released for x in first.takes] == [True, True, True]
    assert _locks(of_x) == [("account", "for update")]
    assert _locks(of_y) == [("ledger", "for update")]


def test_an_error_aborts_the_block_and_marks_what_was_asked() -> None:
    txs = _transactions(
        _log(
            (1, 1, "LOG:  statement: BEGIN"),
            (1, 2, f"LOG:  statement: {ACCOUNT}"),
            (1, 3, f"LOG:  statement: {LEDGER}"),
            (1, 4, "ERROR:  deadlock detected"),
            (1, 5, f"LOG:  statement: {ACCOUNT}"),  # refused: the block is aborted
            (1, 6, "LOG:  statement: ROLLBACK"),
        )
    )
    (t,) = txs
    assert t.ended == "rollback" and len(t.takes) == 2
    assert t.takes[1].failed == "40P01: deadlock detected" and not t.takes[0].failed


def test_several_statements_in_one_query_are_one_transaction() -> None:
    (t,) = _transactions(_log((1, 1, f"LOG:  statement: {LEDGER}; {ACCOUNT}")))
    assert _locks(t) == [("ledger", "for update"), ("account", "for update")]
    txs = _transactions(_log((1, 1, f"LOG:  statement: BEGIN; {LEDGER}; COMMIT; {ACCOUNT}")))
    assert [_locks(t) for t in txs] == [[("ledger", "for update")], [("account", "for update")]]


def test_a_log_that_begins_inside_a_transaction_says_so() -> None:
    txs = _transactions(
        _log(
            (1, 5, f"LOG:  statement: {LEDGER}"),  # the session began before the log
            (1, 6, f"LOG:  statement: {ACCOUNT}"),
            (1, 7, "LOG:  statement: COMMIT"),
            (1, 8, f"LOG:  statement: {ACCOUNT}"),
            (1, 9, "LOG:  statement: BEGIN"),
            (1, 10, f"LOG:  statement: {LEDGER}"),
        )
    )
    assert [(t.cut, t.ended, len(t.takes)) for t in txs] == [
        ("start", "commit", 2),
        ("", "statement", 1),
        ("end", "log end", 1),
    ]


def test_statements_before_a_begin_in_an_unknown_state_were_their_own() -> None:
    txs = _transactions(
        _log(
            (1, 5, f"LOG:  statement: {LEDGER}"),
            (1, 6, f"LOG:  statement: {ACCOUNT}"),
            (1, 7, "LOG:  statement: BEGIN"),
            (1, 8, "LOG:  statement: COMMIT"),
        )
    )
    assert [(t.cut, t.ended, len(t.takes)) for t in txs] == [
        ("", "statement", 1),
        ("", "statement", 1),
        ("", "commit", 0),
    ]


def test_lost_lines_cut_the_transaction_they_fall_in() -> None:
    txs = _transactions(
        _log(
            (1, 1, "LOG:  statement: BEGIN"),
            (1, 2, f"LOG:  statement: {LEDGER}"),
            (1, 9, f"LOG:  statement: {ACCOUNT}"),  # lines 3-8 are not in the log
            (1, 10, "LOG:  statement: COMMIT"),
        )
    )
    assert next((t.cut, len(t.takes)) for t in txs) == ("gap", 1)


def test_observe_without_statements_or_process_ids_is_bad_input(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("2026-11-30 10:00:00.000 UTC [1] LOG:  checkpoint starting: time\n")
    r = invoke("observe", str(log), "--root", str(SHOP))
    assert r.code == 2 and "no statement is logged" in r.err and "log_statement" in r.err
    log.write_text(f"2026-11-30 10:00:00.000 UTC LOG:  statement: {ACCOUNT}\n")
    r = invoke("observe", str(log), "--root", str(SHOP))
    assert r.code == 2 and "carry no process id" in r.err
    r = invoke("observe", str(tmp_path / "missing.log"), "--root", str(SHOP))
    assert r.code == 2 and "cannot read" in r.err and "Traceback" not in r.err


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_every_output_format_of_check(tmp_path: Path, fmt: str) -> None:
    root = write_project(
        tmp_path / "p",
        {
            **{p.name: p.read_text() for p in [SHOP / "locks.yaml"]},
            "paths/shop.yaml": (SHOP / "paths" / "shop.yaml").read_text(),
            "server.log": _log(
                (1, 1, f"LOG:  statement: BEGIN; {LEDGER}; {ACCOUNT}; COMMIT"),
                (2, 1, "LOG:  statement: SELECT 1 FROM app.invoices FOR UPDATE"),
            ),
        },
    )
    r = invoke("observe", "server.log", "--format", fmt, cwd=root)
    assert r.code == 1, r.err
    assert "LD803" in r.out and "Traceback" not in r.err
    if fmt == "text":
        assert "server.log:2:1: LD803 error: SELECT ... FOR UPDATE takes a row lock on " in r.out


def test_an_exception_waives_an_observed_finding_and_is_never_stale_in_check(
    tmp_path: Path,
) -> None:
    locks = (SHOP / "locks.yaml").read_text() + (
        "exceptions:\n  - rule: LD803\n    why: the invoices table is locked by the billing job\n"
    )
    root = write_project(
        tmp_path / "p",
        {
            "locks.yaml": locks,
            "paths/shop.yaml": (SHOP / "paths" / "shop.yaml").read_text(),
            "server.log": _log((2, 1, "LOG:  statement: SELECT 1 FROM app.invoices FOR UPDATE")),
        },
    )
    r = invoke("observe", "server.log", cwd=root)
    assert r.code == 0, r.out
    assert "(waived by exception 1)" in r.out or "waived" in r.out
    assert "LD401" not in invoke("check", "--no-drift", cwd=root).out


# --- takes that order nothing: a row of the transaction's own, a foreign-key re-check -------

LEDGER_LOCKS = """lockdocs: 1
page: {title: Ledger}
locks:
  tenant:
    title: Tenant row
    kind: row
    table: app.tenants
    modes: {for key share: the foreign key of a transfer}
    references: [{table: app.transfers, column: tenant_id}]
  account:
    title: Account row
    kind: row
    table: app.accounts
    modes: {for no key update: balance changes, for update: closing}
  transfer:
    title: Transfer row
    kind: row
    table: app.transfers
    modes: {for update: its own insert and its settling, for no key update: cancels}
  ledger:
    title: Ledger row
    kind: row
    table: app.ledgers
    modes: {for update: postings}
"""
LEDGER_PATHS = """group: Ledger
paths:
  move:
    title: Move money
    steps:
      - take: account
        mode: for no key update
      - write: transfer
        insert: app.transfers
      - take: transfer
        mode: for update
        inserted: true
      - write: status
        update: app.transfers
        columns: [status]
      - commit
  settle:
    title: Settle
    steps:
      - take: transfer
        mode: for update
      - write: status
        update: app.transfers
        columns: [status]
      - write: settled
        update: app.transfers
        columns: [settled_at]
      - commit
  post:
    title: Post
    steps:
      - take: account
        mode: for update
      - take: ledger
      - commit
"""
ACCOUNT_NK = "SELECT 1 FROM app.accounts WHERE id = 1 FOR NO KEY UPDATE"
INSERT_TRANSFER = "INSERT INTO app.transfers (id, tenant_id) VALUES (7, 1)"
OWN_TRANSFER = "SELECT 1 FROM app.transfers WHERE id = 7 FOR UPDATE"
STATUS = "UPDATE app.transfers SET status = 'x' WHERE id = 7"
SETTLED = "UPDATE app.transfers SET settled_at = now() WHERE id = 7"


def _ledger(tmp_path: Path, log: str) -> tuple[Path, dict[str, object]]:
    root = write_project(
        tmp_path / "p",
        {"locks.yaml": LEDGER_LOCKS, "paths/ledger.yaml": LEDGER_PATHS, "server.log": log},
    )
    r = invoke("observe", "server.log", "-f", "json", cwd=root)
    assert r.code in (0, 1), r.err
    return root, r.json()


def test_a_foreign_key_recheck_is_derived_only_after_a_write_of_the_table(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "p", {"locks.yaml": LEDGER_LOCKS, "paths/ledger.yaml": LEDGER_PATHS}
    )
    shapes = Shapes(Locker(check(root, drift=False).model, None))
    log = _log(
        (1, 1, f"LOG:  statement: {STATUS}"),  # a row another transaction wrote: no re-check
        (1, 2, f"LOG:  statement: BEGIN; {INSERT_TRANSFER}; {STATUS}; {SETTLED}; COMMIT"),
        (1, 3, f"LOG:  statement: BEGIN; {STATUS}; {SETTLED}; COMMIT"),
    )
    first, inserted, updated = rebuild(entries(log), shapes)
    assert [(x.took.seen.locks, x.took.recheck) for x in first.takes] == [(("transfer",), None)]
    # the insert's own foreign key is certain; the updates after it are possible re-checks
    assert [(x.took.seen.locks, x.took.mode, x.took.recheck) for x in inserted.takes] == [
        (("tenant",), "for key share", None),
        (("transfer",), "for no key update", None),
        (("tenant",), "for key share", "app.transfers"),
        (("transfer",), "for no key update", None),
        (("tenant",), "for key share", "app.transfers"),
    ]
    assert [(x.took.seen.locks, x.took.recheck) for x in updated.takes] == [
        (("transfer",), None),
        (("transfer",), None),
        (("tenant",), "app.transfers"),
    ]


def test_inserted_rows_and_rechecks_order_nothing(tmp_path: Path) -> None:
    tag = " /*lockdocs_path='{}'*/"
    _, doc = _ledger(
        tmp_path,
        _log(
            # move: its own transfer row, FOR UPDATE while it holds the account (inserted: true)
            (1, 1, "LOG:  statement: BEGIN"),
            (1, 2, f"LOG:  statement: {ACCOUNT_NK}{tag.format('move')}"),
            (1, 3, f"LOG:  statement: {INSERT_TRANSFER}"),
            (1, 4, f"LOG:  statement: {OWN_TRANSFER}"),
            (1, 5, f"LOG:  statement: {STATUS}"),
            (1, 6, "LOG:  statement: COMMIT"),
            # settle: the second update re-checks the tenant, as the path's steps derive
            (2, 1, "LOG:  statement: BEGIN"),
            (2, 2, f"LOG:  statement: {OWN_TRANSFER}{tag.format('settle')}"),
            (2, 3, f"LOG:  statement: {STATUS}"),
            (2, 4, f"LOG:  statement: {SETTLED}"),
            (2, 5, "LOG:  statement: COMMIT"),
            # no path: a possible re-check while holding the account is no order either
            (3, 1, "LOG:  statement: BEGIN"),
            (3, 2, f"LOG:  statement: {STATUS}"),
            (3, 3, "LOG:  statement: SELECT 1 FROM app.ledgers WHERE id = 1 FOR UPDATE"),
            (3, 4, f"LOG:  statement: {SETTLED}"),
            (3, 5, "LOG:  statement: COMMIT"),
        ),
    )
    found = [(d["code"], d["line"], d["locks"]) for d in doc["diagnostics"]]  # type: ignore[index]
    # only the real one: the ledger after the transfer row, which no path does
    assert found == [("LD801", 14, ["transfer", "ledger"])], found
    coverage = doc["coverage"]
    assert coverage["edges"]["counts"]["transfer -> tenant"] == 2  # type: ignore[index]
    assert coverage["paths"]["counts"] == {"move": 1, "post": 0, "settle": 1}  # type: ignore[index]


def test_a_deadlock_is_reported_at_the_undeclared_order(tmp_path: Path) -> None:
    tag = " /*lockdocs_path='post'*/"
    _, doc = _ledger(
        tmp_path,
        _log(
            (1, 1, "LOG:  statement: BEGIN"),
            (1, 2, f"LOG:  statement: SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE{tag}"),
            (1, 3, "LOG:  statement: SELECT 1 FROM app.ledgers WHERE id = 1 FOR UPDATE"),
            (1, 4, "LOG:  statement: COMMIT"),
            (2, 1, "LOG:  statement: BEGIN"),
            (2, 2, "LOG:  statement: SELECT 1 FROM app.ledgers WHERE id = 2 FOR UPDATE"),
            (2, 3, "LOG:  statement: SELECT 1 FROM app.accounts WHERE id = 2 FOR UPDATE"),
            (2, 4, "LOG:  statement: COMMIT"),
        ),
    )
    found = {d["code"]: d for d in doc["diagnostics"]}  # type: ignore[attr-defined]
    assert sorted(found) == ["LD801", "LD802"]
    assert found["LD801"]["line"] == found["LD802"]["line"] == 7
    # the other hop (the declared path's step, or its logged transaction) is a related place
    assert found["LD802"]["related"] and found["LD802"]["related"][0]["line"] in (3, 34)


def test_a_cycle_search_stopped_at_its_budget_is_said(tmp_path: Path) -> None:
    locks = LEDGER_LOCKS.replace(
        "page: {title: Ledger}\n", "page: {title: Ledger}\nlimits: {cycle_search: 1}\n"
    )
    root = write_project(
        tmp_path / "p",
        {
            "locks.yaml": locks,
            "paths/ledger.yaml": LEDGER_PATHS,
            "server.log": _log(
                (2, 1, "LOG:  statement: BEGIN"),
                (2, 2, "LOG:  statement: SELECT 1 FROM app.ledgers WHERE id = 2 FOR UPDATE"),
                (2, 3, "LOG:  statement: SELECT 1 FROM app.accounts WHERE id = 2 FOR UPDATE"),
                (2, 4, "LOG:  statement: COMMIT"),
            ),
        },
    )
    assert "LD204" not in invoke("check", "--no-drift", cwd=root).out
    doc = invoke("observe", "server.log", "-f", "json", cwd=root).json()
    codes = sorted(d["code"] for d in doc["diagnostics"])
    assert codes == ["LD204", "LD801"], codes


def test_sequences_past_the_bound_are_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lockdocs.observe import orders

    monkeypatch.setattr(orders, "MAX_SEQUENCES", 1)
    account = "SELECT 1 FROM app.accounts WHERE id = 1 FOR UPDATE"
    ledger = "SELECT 1 FROM app.ledgers WHERE id = 1 FOR UPDATE"
    root = write_project(
        tmp_path / "p",
        {
            "locks.yaml": LEDGER_LOCKS,
            "paths/ledger.yaml": LEDGER_PATHS,
            "server.log": _log(
                (1, 1, f"LOG:  statement: BEGIN; {account}; {ledger}; COMMIT"),
                (2, 1, f"LOG:  statement: BEGIN; {ledger}; {account}; COMMIT"),
            ),
        },
    )
    r = invoke("observe", "server.log", cwd=root)
    assert (
        "not searched for deadlocks: 1 transaction whose lock sequence was none of the "
        "first 1 distinct ones" in r.out
    ), r.out
