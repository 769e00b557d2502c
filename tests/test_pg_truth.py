"""Ground truth from a live server: lockdocs' conflict tables (modes.py) and its hash functions
(pghash.py) against what PostgreSQL itself does, cell by cell and value by value.

Each conflict cell: session A takes one mode, session B asks for the other with NOWAIT (or a
pg_try_ function); B failing at once means B would wait. The statements are the ones replay
sends (lockdocs.postgres.statements), so this also checks that replay takes the modes it says.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lockdocs import model as m
from lockdocs import pghash
from lockdocs.diagnostics import Location
from lockdocs.modes import conflicts
from lockdocs.postgres.statements import (
    TEXT,
    Param,
    Target,
    inline,
    params_for,
    setup_sql,
    take_sql,
    target,
)
from lockdocs.schema.vocabulary import ADVISORY_MODES, ROW_MODES, TABLE_MODES

VECTORS = json.loads(
    (Path(__file__).parent / "data" / "postgres-hash-vectors.json").read_text(encoding="utf-8")
)

HERE = Location("locks.yaml", 1, 1)
ROW_LOCK = m.Lock("account", "Account", "row", "transaction", HERE, table="app.accounts")
TABLE_LOCK = m.Lock("ledger", "Ledger", "table", "transaction", HERE, table="app.ledgers")
ADVISORY_LOCK = m.Lock(
    "books",
    "Books",
    "advisory",
    "transaction",
    HERE,
    key=m.Key("hashtextextended", text=m.KeyText(text="books")),
)


@pytest.fixture(scope="module")
def sessions(pg_server: Any) -> Iterator[tuple[psycopg.Connection[Any], psycopg.Connection[Any]]]:
    """Two sessions on a database of this module's own, with the tables replay would make."""
    from lockdocs.postgres.server import scratch_database

    with scratch_database(pg_server.dsn, prefix="lockdocs_truth") as dsn:
        a = psycopg.connect(dsn, autocommit=True)
        b = psycopg.connect(dsn, autocommit=True)
        try:
            for stmt in setup_sql([target(ROW_LOCK, "row", 1), target(TABLE_LOCK, "table", 1)]):
                a.execute(stmt)  # type: ignore[call-overload]
            yield a, b
        finally:
            a.close()
            b.close()


def _sql(t: Target, sql: str) -> str:
    """The statement with its key's values in place (replay binds them; the tests replay runs
    check that both give one key)."""
    return inline(sql, params_for(sql, t))


def _blocks(
    sessions: tuple[psycopg.Connection[Any], psycopg.Connection[Any]],
    t: Target,
    held: str,
    requested: str,
    scope: str = "transaction",
    same_session: bool = False,
) -> bool:
    """Does a request for `requested` wait while a transaction holds `held`?"""
    a, b = sessions
    asker = a if same_session else b
    a.execute("begin")
    asker.execute("begin") if not same_session else None
    try:
        a.execute(_sql(t, take_sql(t, held, scope)))  # type: ignore[call-overload]
        stmt = _sql(t, take_sql(t, requested, scope, option="nowait"))
        try:
            cur = asker.execute(stmt)  # type: ignore[call-overload]
        except psycopg.errors.LockNotAvailable:
            return True
        # LOCK TABLE returns no row; a pg_try_ function returns false instead of failing.
        return cur.description is not None and cur.fetchone() == (False,)
    finally:
        for s in (a, b):
            s.execute("rollback")
            if scope == "session" or t.kind == "memory":
                s.execute("select pg_advisory_unlock_all()")


@pytest.mark.parametrize(("held", "requested"), list(itertools.product(ROW_MODES, ROW_MODES)))
def test_row_conflicts_agree_with_the_server(sessions: Any, held: str, requested: str) -> None:
    t = target(ROW_LOCK, "row", 1)
    assert _blocks(sessions, t, held, requested) == conflicts("row", requested, held)


@pytest.mark.parametrize(("held", "requested"), list(itertools.product(TABLE_MODES, TABLE_MODES)))
def test_table_conflicts_agree_with_the_server(sessions: Any, held: str, requested: str) -> None:
    t = target(TABLE_LOCK, "table", 1)
    assert _blocks(sessions, t, held, requested) == conflicts("table", requested, held)


@pytest.mark.parametrize("scope", ["transaction", "session"])
@pytest.mark.parametrize(
    ("held", "requested"), list(itertools.product(ADVISORY_MODES, ADVISORY_MODES))
)
def test_advisory_conflicts_agree_with_the_server(
    sessions: Any, held: str, requested: str, scope: str
) -> None:
    t = target(ADVISORY_LOCK, "advisory", 1)
    assert _blocks(sessions, t, held, requested, scope) == conflicts("advisory", requested, held)


@pytest.mark.parametrize(
    ("kind", "lock", "modes"),
    [
        ("row", ROW_LOCK, ROW_MODES),
        ("table", TABLE_LOCK, TABLE_MODES),
        ("advisory", ADVISORY_LOCK, ADVISORY_MODES),
    ],
)
def test_a_transaction_never_waits_for_itself(
    sessions: Any, kind: str, lock: m.Lock, modes: list[str]
) -> None:
    # What the analysis assumes when it calls a second take a re-take or an upgrade.
    t = target(lock, kind, 1)
    for held, requested in itertools.product(modes, modes):
        assert not _blocks(sessions, t, held, requested, same_session=True), (held, requested)


def test_int4pair_and_bigint_key_spaces_are_apart(sessions: Any) -> None:
    a, b = sessions
    both = (1 << 32) | 1
    assert pghash.bigint_to_tag(both)[:2] == pghash.int4pair_to_tag(1, 1)[:2]
    a.execute("begin")
    b.execute("begin")
    try:
        a.execute("select pg_advisory_xact_lock(%s::bigint)", (both,))
        a.execute("select pg_advisory_xact_lock(hashtext('domains'))")
        rows = a.execute(
            "select classid::bigint, objid::bigint, objsubid from pg_locks "
            "where locktype = 'advisory' and pid = pg_backend_pid() order by objid"
        ).fetchall()
        expected = {pghash.bigint_to_tag(both), pghash.bigint_to_tag(pghash.hashtext("domains"))}
        assert set(rows) == expected
        # The same middle fields in the pair space are another lock; so is hashtextextended.
        assert b.execute("select pg_try_advisory_xact_lock(1, 1)").fetchone() == (True,)
        assert b.execute(
            "select pg_try_advisory_xact_lock(hashtextextended('domains', 0))"
        ).fetchone() == (True,)
        assert b.execute("select pg_try_advisory_xact_lock(hashtext('domains'), 0)").fetchone() == (
            True,
        )
        assert b.execute("select pg_try_advisory_xact_lock(%s::bigint)", (both,)).fetchone() == (
            False,
        )
    finally:
        a.execute("rollback")
        b.execute("rollback")


def _texts() -> list[str]:
    """Generated inputs: every length around the 12-byte blocks, ASCII, Latin-1, CJK, emoji,
    combining marks and a few hostile characters (no NUL: text cannot hold one)."""
    rng = random.Random(20261201)
    alphabets = [
        "abcxyz0123456789:_-/ ",
        "éèüßñçøåÆŒ",
        "日本語漢字中文한국어",
        "😀🚀🔒🧪👩‍💻",
        "a\u0301e\u0308\u200d\ufeff\t\n'\"\\",
    ]
    out = [""]
    for n in range(1, 40):
        out.append("".join(rng.choice(alphabets[n % len(alphabets)]) for _ in range(n)))
    for _ in range(160):
        chars = "".join(alphabets)
        out.append("".join(rng.choice(chars) for _ in range(rng.randrange(0, 64))))
    return out


def test_pghash_agrees_with_the_server_on_the_shared_vectors(sessions: Any) -> None:
    a, _ = sessions
    vectors = VECTORS["vectors"]
    seeds = [0, 1, *(int(s) for s in VECTORS["extra_seeds"])]
    texts = [v["text"] for v in vectors]
    rows = a.execute(
        "select t, hashtext(t), array_agg(hashtextextended(t, s) order by o) "
        "from unnest(%s::text[]) with ordinality as x(t, n), "
        "unnest(%s::bigint[]) with ordinality as y(s, o) group by n, t order by n",
        (texts, seeds),
    ).fetchall()
    assert len(rows) == len(texts)
    for text, h32, h64 in rows:
        assert pghash.hashtext(text) == h32, text
        assert [pghash.hashtextextended(text, s) for s in seeds] == h64, text


def test_pghash_agrees_with_the_server_on_generated_strings(sessions: Any) -> None:
    a, _ = sessions
    rng = random.Random(7)
    texts = _texts()
    seeds = [rng.randrange(-(2**63), 2**63) for _ in texts]
    rows = a.execute(
        "select t, hashtext(t), hashtextextended(t, s), octet_length(t) "
        "from unnest(%s::text[], %s::bigint[]) as x(t, s)",
        (texts, seeds),
    ).fetchall()
    assert len(rows) == len(texts) >= 200
    assert any(octet != len(t) for t, _, _, octet in rows)  # non-ASCII really went through
    for (text, h32, h64, _), seed in zip(rows, seeds, strict=True):
        assert (pghash.hashtext(text), pghash.hashtextextended(text, seed)) == (h32, h64), text


def test_the_advisory_key_replay_sends_is_the_lock_tag_lockdocs_computes(sessions: Any) -> None:
    a, _ = sessions
    locks = [
        ADVISORY_LOCK,
        m.Lock("c", "C", "advisory", "transaction", HERE, key=m.Key("constant", value=-42)),
        m.Lock(
            "p",
            "P",
            "advisory",
            "transaction",
            HERE,
            key=m.Key("int4pair", first=7, second=m.KeyText(text="ns")),
        ),
        m.Lock(
            "f",
            "F",
            "advisory",
            "transaction",
            HERE,
            key=m.Key(
                "hashtext", text=m.KeyText(prefix="pool:", parts=("org", "id"), separator="/")
            ),
        ),
    ]
    expected = {
        pghash.bigint_to_tag(pghash.hashtextextended("books")),
        pghash.bigint_to_tag(-42),
        pghash.int4pair_to_tag(7, pghash.hashtext("ns")),
        pghash.bigint_to_tag(pghash.hashtext("pool:2/2")),
    }
    a.execute("begin")
    try:
        for lk in locks:
            t = target(lk, "advisory", 2)
            a.execute(_sql(t, take_sql(t, "exclusive")))  # type: ignore[call-overload]
        rows = a.execute(
            "select classid::bigint, objid::bigint, objsubid from pg_locks "
            "where locktype = 'advisory' and pid = pg_backend_pid()"
        ).fetchall()
    finally:
        a.execute("rollback")
    assert set(rows) == expected
    # A text with a quote is written in hex digits, which no setting reads otherwise.
    assert Param("it's", TEXT).inline() == "convert_from(decode('69742773', 'hex'), 'UTF8')"
