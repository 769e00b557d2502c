"""`lockdocs observe` on logs a stranger wrote: hostile statements, parameters, tags and
session lines are read or said to be unreadable, never a crash, and nothing they hold reaches
a terminal raw. The default suite runs a sample of the fuzz target; `make fuzz` the long run
with its fixed seed. A log that crashes it is kept in the test's tmp_path (never written into
the tree by a run); copied into tests/data/observe/, it is read again by every run."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from lockdocs.api import check
from lockdocs.observe.run import Observer
from lockdocs.postgres.serverlog import LogFile, LogReader
from lockdocs.report import REPORTERS

HERE = Path(__file__).resolve().parent
SHOP = HERE / "fixtures" / "explain" / "shop"
CORPUS = HERE / "data" / "observe"
SEED = int(os.environ.get("LOCKDOCS_ORACLE_SEED", "20261129"))
LONG = int(os.environ.get("LOCKDOCS_FUZZ_CASES", "10000")) // 5
P = "2026-11-30 10:00:00.000 UTC [{pid}] {n} "


@pytest.fixture(scope="module")
def shop() -> object:
    return check(SHOP, drift=False)


def _observe(shop: object, log: Path, tmp: Path) -> str:
    observer = Observer(shop.model, shop.diagnostics, None, propose=True)  # type: ignore[attr-defined]
    observer.feed(LogReader([LogFile(str(log))]).entries())
    result = observer.finish(SHOP)
    assert result.proposer is not None
    result.proposer.write(tmp / "draft", SHOP)
    return REPORTERS["text"](result.diagnostics, "")


_STATEMENTS = [
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "ROLLBACK TO SAVEPOINT s",
    "RELEASE SAVEPOINT nope",
    "PREPARE TRANSACTION 'x'",
    "COMMIT AND CHAIN",
    "SELECT 1 FROM app.accounts WHERE id = $1 FOR UPDATE",
    "SELECT 1 FROM app.ledgers l JOIN app.accounts a ON true FOR NO KEY UPDATE OF l NOWAIT",
    "UPDATE app.accounts SET balance = 0 WHERE id = 1",
    "INSERT INTO app.accounts (id) VALUES (1) ON CONFLICT (id) DO UPDATE SET balance = 1",
    "SELECT pg_advisory_xact_lock(hashtextextended('pool:' || $1, 0))",
    "SELECT pg_advisory_xact_lock(hashtextextended('pool:' || '\x1b[2J', -9))",
    "SELECT pg_advisory_xact_lock($1::bigint)",
    "SELECT pg_advisory_xact_lock(hashtext($2), $1)",
    "SELECT pg_advisory_xact_lock(" + "9" * 30 + ")",
    "LOCK TABLE app.ledgers IN EXCLUSIVE MODE",
    "SELECT " + "(" * 3000 + "1" + ")" * 3000,
    "SELECT 1 /*lockdocs_path='\x1b]0;x\x07'*/",
    "SELECT 1 /*lockdocs_path='%ZZ%',route='" + "a" * 5000 + "'*/",
    "SELECT 1 /* unterminated",
    "SELECT 'unterminated",
    "SELECT E'\\x41' /*lockdocs_path='post'*/",
    "-- name: Weird\u202e :one\nSELECT 1 FROM app.accounts FOR SHARE SKIP LOCKED",
    "BEGIN; SELECT 1 FROM app.ledgers FOR UPDATE; ROLLBACK; SELECT pg_advisory_lock(1)",
    "\x00",
    "",
]
_DETAILS = [
    "parameters: $1 = '7'",
    "parameters: $1 = NULL, $2 = 'x''y'",
    "parameters: $1 = '{1,2,3}'",
    "parameters: $1 = '" + "9" * 4300 + "'",
    "parameters: $1 = 'cut...",
    "parameters: $70000 = '1'",
    "parameters: nonsense",
]


def _log(rng: random.Random) -> str:
    lines = []
    counters: dict[int, int] = {}
    for _ in range(rng.randint(1, 25)):
        pid = rng.choice([1, 2, 3, 4242, 99999999999])
        counters[pid] = counters.get(pid, 0) + rng.choice([1, 1, 1, 2, 0, -1])
        prefix = P.format(pid=pid, n=max(counters[pid], 1))
        roll = rng.random()
        if roll < 0.5:
            lines.append(
                prefix + "LOG:  statement: " + rng.choice(_STATEMENTS).replace("\n", "\n\t")
            )
        elif roll < 0.8:
            lines.append(prefix + "LOG:  execute <unnamed>: " + rng.choice(_STATEMENTS))
            lines.append(prefix + "DETAIL:  " + rng.choice(_DETAILS))
        elif roll < 0.9:
            lines.append(prefix + "ERROR:  " + rng.choice(["deadlock detected", "x", ""]))
        else:
            lines.append(
                prefix
                + rng.choice(
                    [
                        "FATAL:  terminating connection",
                        "LOG:  disconnection: session time: 0:00:00.1",
                        "LOG:  connection authorized: user=a",
                    ]
                )
            )
    return "\n".join(lines) + "\n"


def _fuzz(shop: object, tmp: Path, cases: int, seed: int) -> int:
    rng = random.Random(seed)
    for i in range(cases):
        log = tmp / f"case{i % 20}.log"
        log.write_bytes(_log(rng).encode("utf-8", "surrogateescape"))
        try:
            shown = _observe(shop, log, tmp)
        except Exception as exc:  # a crash: keep the log (outside the tree) to add to CORPUS
            kept = tmp / f"fuzz-{seed}-{i}.log"
            kept.write_bytes(log.read_bytes())
            raise AssertionError(
                f"observe crashed on a generated log, kept as {kept}: copy it into {CORPUS}"
                " once fixed, as a regression file"
            ) from exc
        assert "\x1b" not in shown and "\x07" not in shown, shown
    return cases


@pytest.mark.parametrize(
    "path", sorted(CORPUS.glob("*")) if CORPUS.is_dir() else [], ids=lambda p: p.name
)
def test_every_kept_log_is_read(shop: object, path: Path, tmp_path: Path) -> None:
    _observe(shop, path, tmp_path)


def test_fuzz_sample(shop: object, tmp_path: Path) -> None:
    # a sample: the kept corpus has every hostile piece once, make fuzz runs the long one
    assert _fuzz(shop, tmp_path, 60, SEED) == 60


@pytest.mark.fuzz
def test_fuzz_long(shop: object, tmp_path: Path) -> None:
    assert _fuzz(shop, tmp_path, LONG, SEED + 1) == LONG


@pytest.mark.parametrize("terms", [600, 3000])
def test_a_deeply_built_advisory_key_is_said_not_read(
    shop: object, tmp_path: Path, terms: int
) -> None:
    # The grammar accepts it; computing the key recurses once a level on the calling thread
    # (RecursionError, exit 3, before): it is a statement not read, said at its line.
    key = "'a'" + " || 'b'" * terms
    log = tmp_path / "deep.log"
    log.write_text(
        P.format(pid=1, n=1)
        + f"LOG:  statement: SELECT pg_advisory_xact_lock(hashtext({key}))\n"
        + P.format(pid=1, n=2)
        + f"LOG:  execute <unnamed>: SELECT pg_advisory_xact_lock(hashtext($1{key[3:]}))\n"
        + P.format(pid=1, n=3)
        + "DETAIL:  parameters: $1 = 'x'\n"
    )
    shown = _observe(shop, log, tmp_path)
    assert "LD808" in shown and "its advisory key nests deeper than 200 levels" in shown, shown
    assert "seen 2 times" in shown
