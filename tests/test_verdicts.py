"""Issue 24's fixtures against the project's exhaustive oracle (tests/oracle).

Each fixture of issue 24's shapes (tests/fixtures/specs, with exact expected findings) has its
own spec in the oracle's language here, with the same lock and path names, written from what
the declarations mean and what a live server does (tests/test_pg_verdicts.py measures the
Postgres behaviour the specs rely on), not from lockdocs' analysis. The oracle runs every
interleaving of two to four transactions of it; lockdocs' findings on the fixture must explain
exactly the deadlocks found: none missed, none reported without one, and the paths named.
The live-server replays of the same fixtures are tests/test_pg_replay.py (every reporting
fixture), tests/test_pg_silent.py (every silent one) and tests/test_pg_verdicts.py.
"""

from __future__ import annotations

from pathlib import Path as FsPath

import pytest

from lockdocs import api
from oracle import Branch, Commit, Lock, Loop, Path, Spec, Take, explore
from oracle.compare import ORDER_CODES, Finding, compare

SPECS = FsPath(__file__).resolve().parent / "fixtures" / "specs"

KS, NKU, UPD = "for key share", "for no key update", "for update"

_POSTING = Lock("posting", "advisory", True, ("exclusive",))
_ACCOUNT_ROW = Lock("account", "row", True, (KS, UPD))


def _migrations(singleton: bool) -> Spec:
    return Spec(
        (
            Lock("migrate", "advisory", singleton, ("exclusive",)),
            Lock("version", "row", False, (UPD,)),
        ),
        (
            Path(
                "migrate",
                (Take("migrate", "exclusive"), Loop("arbitrary", (Take("version", UPD),))),
            ),
        ),
    )


def _entries(rechecks: bool) -> Spec:
    # The second update's foreign-key check, measured on the server, is a FOR KEY SHARE take.
    second = (Take("account", KS),) if rechecks else ()
    return Spec(
        (_ACCOUNT_ROW, _POSTING),
        (
            Path("correct-entry", (Take("posting", "exclusive"), *second)),
            Path("close-account", (Take("account", UPD), Take("posting", "exclusive"))),
        ),
    )


def _claim(mode: str, claimed: bool) -> Spec:
    job = Lock("job", "row", False, (mode, NKU))
    claim = Loop("sorted", (Take("job", mode, option="skip locked"),), "job")
    update = (
        Take("job", NKU, claimed=True) if claimed else Loop("arbitrary", (Take("job", NKU),), "job")
    )
    return Spec((job,), (Path("claim", (claim, update)),))


_LINES = ("account_id", "currency", "journal_id")


def _ledger(sort: tuple[str, ...]) -> Spec:
    """Shape 1 with advisory locks: the lines' account lock shared and balance lock exclusive,
    the lines sorted by `sort`; close takes accounts exclusive in ascending order."""
    account = Lock("account", "advisory", False, ("shared", "exclusive"), key=("account_id",))
    balance = Lock(
        "balance", "advisory", False, ("exclusive",), key=("journal_id", "account_id", "currency")
    )
    post = Loop(
        "sorted",
        (Take("account", "shared"), Take("balance", "exclusive")),
        columns=_LINES,
        sort=sort,
    )
    close = Loop("sorted", (Take("account", "exclusive"),), columns=("account_id",))
    return Spec(
        (account, balance),
        (Path("post", (post,)), Path("close", (close,))),
        columns=(("account_id", (1, 2)), ("currency", (1, 2)), ("journal_id", (1,))),
    )


def _ledger_rows() -> Spec:
    """Shape 1 with row locks keyed by instances: {key: ...}."""
    account = Lock("account", "row", False, (KS, UPD), key=("account_id",))
    balance = Lock("balance", "row", False, (NKU,), key=("account_id", "currency"))
    post = Loop(
        "sorted", (Take("account", KS), Take("balance", NKU)), columns=("account_id", "currency")
    )
    close = Loop("sorted", (Take("account", UPD),), columns=("account_id",))
    return Spec(
        (account, balance),
        (Path("post", (post,)), Path("close", (close,))),
        columns=(("account_id", (1, 2)), ("currency", (1, 2))),
    )


def _ledger_nested(outer: str) -> Spec:
    """Shape 1 as nested loops: accounts in `outer` order, each account's lines sorted."""
    spec = _ledger(_LINES)
    lines = Loop("sorted", (Take("balance", "exclusive"),), columns=("currency", "journal_id"))
    post = Loop(outer, (Take("account", "shared"), lines), columns=("account_id",))
    return Spec(spec.locks, (Path("post", (post,)), spec.paths[1]), columns=spec.columns)


def _tenants(other: Path) -> Spec:
    orders = Lock("orders", "table", False, ("row exclusive", "share row exclusive"))
    compact = Loop("sorted", (Take("orders", "share row exclusive"),), "orders")
    return Spec((orders,), (Path("compact", (compact,)), other))


def _sync(held: str) -> Spec:
    """The sync lock as the path holds it: past the commit (`session`), or only until it
    (`transaction`: the pooler takes the server connection, and the lock, back)."""
    sync = Lock("sync", "advisory", True, ("exclusive",), held)
    rows = (Lock("account", "row", True, (NKU,)), Lock("ledger", "row", True, (NKU,)))
    nightly = (Take("sync", "exclusive"), Commit(), Take("account", NKU), Take("ledger", NKU))
    repair = (Take("sync", "exclusive"), Take("ledger", NKU), Take("account", NKU))
    return Spec((sync, *rows), (Path("nightly", nightly), Path("repair", repair)))


def _orders(name: str, own: tuple[Take, ...]) -> Spec:
    order, stock = Lock("order", "row", True, (UPD,)), Lock("stock", "row", True, (NKU,))
    return Spec(
        (order, stock),
        (
            Path(name, (*own, Take("stock", NKU))),
            Path("cancel-order", (Take("stock", NKU), Take("order", UPD))),
        ),
    )


def _two_connections(commits: bool) -> Spec:
    rows = (Lock("account", "row", True, (NKU,)), Lock("ledger", "row", True, (NKU,)))
    between = (Commit(),) if commits else ()
    post = (Take("account", NKU), *between, Take("ledger", NKU))
    close = (Take("ledger", NKU), Take("account", NKU))
    return Spec(rows, (Path("post", post), Path("close", close)))


CASES: dict[str, Spec] = {
    # shape 1: instances tied to the iteration, whose order refines the lock's
    "silent-keyed-instances-follow-the-sort": _ledger(_LINES),
    "report-keyed-instances-sorted-by-another-column": _ledger(
        ("currency", "account_id", "journal_id")
    ),
    "silent-keyed-rows-follow-the-sort": _ledger_rows(),
    "silent-keyed-instances-in-nested-loops": _ledger_nested("sorted"),
    "report-keyed-instances-outer-loop-unsorted": _ledger_nested("arbitrary"),
    # shape 5: a fixed key is one lock, whatever computes it
    "silent-fixed-application-key-gates": _migrations(singleton=True),
    "report-application-key-family-does-not-gate": _migrations(singleton=False),
    # shape 4: the foreign-key check of a second update
    "report-fk-recheck-after-own-update": _entries(rechecks=True),
    "silent-fk-update-after-another-table": _entries(rechecks=False),
    # OPEN_FN's child-under-two-parents, as a team would name it
    "report-child-under-two-parents": Spec(
        (
            Lock("tenant", "advisory", False, ("shared",)),
            Lock("setting", "row", False, (UPD, NKU), within="tenant"),
        ),
        (
            Path(
                "copy-setting",
                (
                    Take("tenant", "shared", "a"),
                    Take("setting", UPD, under="a"),
                    Take("tenant", "shared"),
                    Take("setting", NKU),
                ),
            ),
        ),
    ),
    # shape 2: an UPDATE of the rows the path claimed
    "silent-update-of-claimed-rows": _claim(UPD, claimed=True),
    "report-update-after-claim-in-no-order": _claim(UPD, claimed=False),
    "report-update-of-rows-claimed-for-share": _claim("for share", claimed=True),
    # shape 6: a cycle through an in-process lock (the oracle's deadlock is a state nobody
    # leaves; whether Postgres can break it is the finding's wording and replay's answer)
    "report-cycle-through-in-process-lock-hangs": Spec(
        (
            Lock("fleet-lockset", "memory", True, ("exclusive",)),
            Lock("fleet", "row", True, (NKU,)),
        ),
        (
            Path("process-fleets", (Take("fleet-lockset", "exclusive"), Take("fleet", NKU))),
            Path("sync-fleet", (Take("fleet", NKU), Take("fleet-lockset", "exclusive"))),
        ),
    ),
    # item 7: a table in per-tenant schemas, a lock with instances
    "silent-tenant-tables-in-order": _tenants(Path("record", (Take("orders", "row exclusive"),))),
    "report-tenant-tables-in-no-order": _tenants(
        Path("migrate", (Loop("arbitrary", (Take("orders", "share row exclusive"),), "orders"),))
    ),
    # item 7: a session lock through a transaction-mode pooler is the transaction's only
    "report-session-lock-through-transaction-pooler": _sync("transaction"),
    "silent-session-lock-held-across-commit": _sync("session"),
    # item 7: a row only the transaction that inserted it can see (the oracle has no such
    # take: nothing else can want it, and it never waits; tests/test_pg_verdicts.py measures it)
    "silent-lock-of-own-inserted-row": _orders("place-order", ()),
    "report-lock-of-an-existing-row": _orders("confirm-order", (Take("order", UPD),)),
    # item 7: a path on two connections (the worker holds what either holds; whether Postgres
    # sees the cycle is the finding's wording and replay's answer)
    "report-cycle-through-two-connections-hangs": _two_connections(commits=False),
    "silent-second-connection-after-commit": _two_connections(commits=True),
    # item 8's messages, on shapes whose verdict stays
    "report-cycle-between-two-branches": Spec(
        (Lock("account", "row", False, (NKU,)), Lock("ledger", "row", False, (NKU,))),
        (
            Path(
                "post",
                (
                    Branch(
                        (
                            (Take("account", NKU), Take("ledger", NKU)),
                            (Take("ledger", NKU), Take("account", NKU)),
                        )
                    ),
                ),
            ),
        ),
    ),
    "report-table-upgrade-every-request-writes": Spec(
        (Lock("events", "table", True, ("row exclusive", "access exclusive")),),
        (
            Path("record", (Take("events", "row exclusive"),)),
            Path("backfill", (Take("events", "row exclusive"), Take("events", "access exclusive"))),
        ),
    ),
}

# What the hint of report-table-upgrade-every-request-writes proposes: no deadlock then.
HINTED = Spec(
    (
        Lock(
            "events", "table", True, ("share update exclusive", "row exclusive", "access exclusive")
        ),
    ),
    (
        Path("record", (Take("events", "row exclusive"),)),
        Path(
            "backfill",
            (
                Take("events", "share update exclusive"),
                Take("events", "row exclusive"),
                Take("events", "access exclusive"),
            ),
        ),
    ),
)


def test_the_table_upgrade_hint_removes_the_deadlock() -> None:
    assert explore(HINTED).deadlocks == []


def fixture_findings(case: FsPath) -> list[Finding]:
    """lockdocs' lock-order findings on a fixture folder, in-process."""
    model, diags = api.load(case)
    assert model is not None, [d.message for d in diags]
    return [
        Finding(d.code, tuple(d.locks), tuple(d.paths), d.message)
        for d in api.analyse(model)
        if d.code in ORDER_CODES
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_oracle_agrees_with_the_fixture(name: str) -> None:
    case = SPECS / name
    assert (case / "expected.txt").is_file(), name
    spec = CASES[name]
    result = explore(spec)
    assert result.complete
    findings = fixture_findings(case)
    cmp = compare(result.deadlocks, findings)
    assert not cmp.missed, [d.describe() for d in cmp.missed]
    assert not cmp.unconfirmed, [str(f) for f in cmp.unconfirmed]
    assert not cmp.wrong_paths, [str(f) for f in cmp.wrong_paths]
    # a silent fixture is one the oracle finds no deadlock in, a reporting one one it does
    assert bool(result.deadlocks) == name.startswith("report-"), name


def test_a_comma_inside_a_flow_mapping_points_at_the_yaml(tmp_path: FsPath) -> None:
    """Item 8: `{for no key update: posting, closing}` is two fields to YAML; say so, once, at
    the word after the comma (before: "'closing' is not a valid id" and "expected string,
    found null" at the same place)."""
    (tmp_path / "paths").mkdir()
    (tmp_path / "locks.yaml").write_text(
        "lockdocs: 1\npage: {title: Locks}\nlocks:\n"
        "  account: {title: Account, kind: row, table: app.accounts,"
        " modes: {for no key update: posting, closing}}\n"
    )
    (tmp_path / "paths" / "p.yaml").write_text(
        "group: G\npaths:\n  post: {title: Post, steps: [{take: account, note: first, then}]}\n"
    )
    _model, diags = api.load(tmp_path)
    got = [(d.code, str(d.location), d.message) for d in diags]
    assert got == [
        (
            "LD003",
            "locks.yaml:4:97",
            "a comma inside {...} ends the value of 'for no key update': YAML reads 'closing' "
            "as a field of its own",
        ),
        (
            "LD003",
            "paths/p.yaml:3:60",
            "a comma inside {...} ends the value of 'note': YAML reads 'then' as a field of "
            "its own",
        ),
    ]


def test_a_31_bit_key_fills_a_31_bit_range(tmp_path: FsPath) -> None:
    """Item 8: LD104 names the range a bits: 31 family fills (before: '32-bit families')."""
    (tmp_path / "paths").mkdir()
    (tmp_path / "locks.yaml").write_text(
        "lockdocs: 1\npage: {title: Keys}\nlocks:\n"
        "  job: {title: Job, kind: advisory, key: {application: {function: jobKey, algorithm: "
        "crc32, bits: 31, signed: false, prefix: 'job:', parts: [job_id]}}}\n"
        "  deploy: {title: Deploy, kind: advisory, key: {constant: {value: 12345}}}\n"
    )
    (tmp_path / "paths" / "p.yaml").write_text(
        "group: G\npaths:\n  run: {title: Run, steps: [{take: job}, {take: deploy}]}\n"
    )
    model, diags = api.load(tmp_path)
    assert model is not None, diags
    (found,) = [(d.message, d.hint) for d in api.analyse(model) if d.code == "LD104"]
    assert found == (
        "constant key of deploy (12345) lies in the range that 31-bit families (job) fill",
        "use a constant outside [0, 2^31), or a hashtextextended fixed name",
    )
