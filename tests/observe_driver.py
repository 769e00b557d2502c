"""A driver that runs the flagship's code/ functions and sqlc queries on a live server as an
application would: concurrent transactions with psycopg (server-side parameters, so the log
shows extended-protocol executions with their parameters), each statement tagged with its
path in the sqlcommenter format. Three transactions are planted for `lockdocs observe` to
find: an undeclared order that closes a cycle with a declared path, a row lock on a table no
lock declares, and a tagged path that takes its pool row in a mode its steps do not.

`python tests/observe_driver.py DSN` runs it against any server.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

REPO = Path(__file__).resolve().parent.parent
CODE = REPO / "code"

# The statements planted for observe to find, as the log will show them.
PLANTED_ORDER = "-- name: LockGrantPool :one\nSELECT p.pool_id FROM core.resource_pools p JOIN"
PLANTED_LOCK = "SELECT grant_id FROM core.pool_positions"
PLANTED_MODE = "FOR NO KEY UPDATE OF p"

SCHEMA_EXTRA = """
CREATE TABLE core.entitlements (
    pool_id bigint NOT NULL REFERENCES core.resource_pools (pool_id),
    resource_key_id bigint NOT NULL REFERENCES core.resource_keys (resource_key_id),
    PRIMARY KEY (pool_id, resource_key_id)
);
CREATE TABLE core.provisions (source text PRIMARY KEY, status text);
CREATE SEQUENCE core.desired_state_notice_seq;
"""

DATA = """
INSERT INTO core.resource_pools VALUES
    (1, '00000000-0000-0000-0000-000000000001', 'a'),
    (2, '00000000-0000-0000-0000-000000000002', 'b'),
    (3, '00000000-0000-0000-0000-000000000003', 'c');
INSERT INTO core.resource_keys VALUES (1, 'k1', 'p'), (2, 'k2', 'p');
INSERT INTO core.grants VALUES (10, 100, NULL, 1, NULL), (11, 101, NULL, 2, NULL),
    (12, 102, NULL, 3, NULL);
INSERT INTO core.pool_positions VALUES (1, 10, 1, 1), (2, 11, 1, 1), (3, 12, 1, 1);
INSERT INTO core.entitlement_sets VALUES (1, 1);
INSERT INTO core.entitlement_set_rules VALUES (1, 1, 1), (1, 2, 1);
INSERT INTO core.entitlement_set_change_deltas VALUES (7, 1, 1, 2), (7, 1, 2, 2);
INSERT INTO core.entitlement_set_change_obligations VALUES (7, 1, NULL), (7, 2, NULL);
INSERT INTO core.numeric_entitlement_usage VALUES (1, 1, 0), (2, 1, 0);
INSERT INTO fedwiki.sites VALUES ('a.example', '00000000-0000-0000-0000-00000000000a', 'active');
INSERT INTO core.desired_state_records VALUES
    (1, '00000000-0000-0000-0000-0000000000c1', 'member', 'm1', 1, NULL, NULL),
    (2, '00000000-0000-0000-0000-0000000000c1', 'member', 'm2', 1, NULL, NULL);
INSERT INTO core.desired_state_outbox VALUES (1, 1, NULL), (2, 2, NULL);
"""


def _query(name: str) -> str:
    """One sqlc query of code/queries/*.sql, as sqlc sends it: its `-- name:` comment, the
    statement, sqlc.arg(x) as $n."""
    for f in sorted((CODE / "queries").glob("*.sql")):
        text = f.read_text()
        at = text.find(f"-- name: {name} ")
        if at < 0:
            continue
        body = text[at:].split(";", 1)[0]
        n = 0
        while "sqlc.arg(" in body:
            n += 1
            start = body.index("sqlc.arg(")
            end = body.index(")", start)
            body = body[:start] + f"${n}" + body[end + 1 :]
        return body
    raise KeyError(name)


def setup(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((CODE / "schema.sql").read_text())
        conn.execute(SCHEMA_EXTRA)
        for f in sorted((CODE / "functions").glob("*.sql")):
            conn.execute(f.read_text())
        conn.execute(DATA)


class App:
    """One application connection; every statement is tagged with the path it runs."""

    def __init__(self, dsn: str, name: str = "flagship") -> None:
        # RawCursor: $n placeholders, as sqlc and the SQL functions write them, sent as
        # server-side parameters (the log shows `execute` lines with their values).
        self.conn = psycopg.connect(dsn, application_name=name, cursor_factory=psycopg.RawCursor)

    def run(self, path: str | None, body: Callable[[App], None]) -> None:
        self.path = path
        with self.conn.transaction():
            body(self)

    def x(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        tag = f" /*lockdocs_path='{self.path}'*/" if self.path else ""
        self.conn.execute(sql + tag, params)

    def q(self, name: str, *params: Any) -> None:
        self.x(_query(name), params)

    def materializing(self) -> None:
        self.x(
            "SELECT pg_advisory_xact_lock_shared(hashtextextended('entitlement_materialization', 0))"
        )
        self.x("SET LOCAL lock_timeout = '5s'")

    def rule_change(self) -> None:
        self.x("SELECT pg_advisory_xact_lock(hashtextextended('entitlement_materialization', 0))")
        self.x("SET LOCAL lock_timeout = '5s'")

    def materialize(self, pool: int) -> None:
        for key in (1, 2):
            self.x(
                "INSERT INTO core.entitlements (pool_id, resource_key_id) VALUES ($1, $2) "
                "ON CONFLICT DO NOTHING",
                (pool, key),
            )


# --- the declared paths, as the code runs them ----------------------------------------------


def revoke_grant(app: App, pool: int, grant: int, lineage: int) -> None:
    app.materializing()
    app.q("LockResourcePool", [pool])
    app.q("GetGrantLineageHeadForUpdate", lineage)
    app.x("SELECT core.end_conferral($1, $2)", (pool, grant))
    app.q("LockResourcePool", [pool])  # ResumeReplacedGrantsTx
    app.x("SELECT core.confer($1, $2, $3)", (pool, grant, 1))
    app.x("SELECT core.confer($1, $2, $3)", (pool, grant, 1))  # the floor restoration
    app.materialize(pool)


def extend_waiting_grant(app: App, grant: int, lineage: int) -> None:
    app.materializing()
    app.q("LockGrantPool", grant)
    app.q("GetGrantLineageHeadForUpdate", lineage)


def reconcile_subscription(app: App, subscription: str, pool: int, grant: int) -> None:
    app.materializing()
    app.x("SELECT pg_advisory_xact_lock(hashtext($1)::bigint)", (subscription,))
    app.x("SELECT core.update_conferral_bounds($1, $2, $3)", (pool, grant, 2))
    app.materialize(pool)


def tier_add(app: App, pools: list[int]) -> None:
    app.rule_change()
    for pool in pools:
        app.x("SELECT core.align_conferral_shape($1)", (pool,))
        app.materialize(pool)


def rule_change_commit(app: App) -> None:
    app.rule_change()
    app.q("LockEntitlementSet", 1)
    app.x("SELECT core.commit_rule_change($1)", (7,))
    for pool in (1, 2):
        app.q("LockResourcePool", [pool])
        app.x("SELECT core.settle_obligation($1, $2)", (7, pool))


def registry(app: App) -> None:
    app.x("SELECT pg_advisory_xact_lock(28270013247483507)")


def recompute_address(app: App, recipient: str) -> None:
    app.q("LockDesiredStateAddress", "00000000-0000-0000-0000-0000000000c1", "member", recipient)
    app.q("LockDesiredStateRecord", "00000000-0000-0000-0000-0000000000c1", "member", recipient)


def worker(dsn: str, n: int, rounds: int, errors: list[BaseException]) -> None:
    app = App(dsn)
    try:
        for r in range(rounds):
            pool = 1 + (n + r) % 3
            grant, lineage = 9 + pool, 99 + pool
            app.run("revoke-grant", partial(revoke_grant, pool=pool, grant=grant, lineage=lineage))
            app.run(
                "extend-waiting-grant", partial(extend_waiting_grant, grant=grant, lineage=lineage)
            )
            app.run(
                "reconcile-subscription",
                partial(reconcile_subscription, subscription=f"sub_{n}", pool=pool, grant=grant),
            )
            app.run("recompute-address", partial(recompute_address, recipient=f"m{1 + r % 2}"))
            app.run("registry-with-lock", registry)
            if n == 0:
                app.run("tier-add", partial(tier_add, pools=[pool]))
                app.run("rule-change-commit", rule_change_commit)
            app.path = None
            app.q("ClaimDesiredStateOutbox", 10)  # a statement of its own (autocommit-like)
            app.conn.commit()
    except BaseException as exc:  # noqa: BLE001 (reported by the caller)
        errors.append(exc)
    finally:
        app.conn.close()


def planted(dsn: str) -> None:
    app = App(dsn)
    # An order no declared path has: the lineage head, then its pool (revoke-grant and
    # extend-waiting-grant take the pool first), untagged as code nobody declared would be.
    app.run(None, lambda a: (a.q("GetGrantLineageHeadForUpdate", 101), a.q("LockGrantPool", 11)))
    # A row lock on a table no lock declares.
    app.run(
        None,
        lambda a: a.x(PLANTED_LOCK + " WHERE pool_id = $1 FOR UPDATE", (2,)),
    )

    # A tagged path whose pool row is locked in a mode its steps do not take.
    def departs(a: App) -> None:
        a.materializing()
        a.x(
            "SELECT p.pool_id FROM core.resource_pools p JOIN core.grants g ON g.pool_id = "
            "p.pool_id WHERE g.grant_id = $1 " + PLANTED_MODE,
            (12,),
        )
        a.q("GetGrantLineageHeadForUpdate", 102)

    app.run("extend-waiting-grant", departs)
    app.conn.close()


def drive(dsn: str, threads: int = 3, rounds: int = 4) -> None:
    """The concurrent run, then the planted transactions."""
    errors: list[BaseException] = []
    workers = [
        threading.Thread(target=worker, args=(dsn, n, rounds, errors)) for n in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    planted(dsn)


if __name__ == "__main__":
    setup(sys.argv[1])
    drive(sys.argv[1])
