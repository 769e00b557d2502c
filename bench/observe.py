"""Benchmark: `lockdocs observe` on a server log of 1 million logged statements (the
flagship's paths, as tests/observe_driver.py runs them), in one process, as CI runs it.

With --extended every statement that carries values is an extended-protocol execution (its
text repeats, its values come in the DETAIL), as psycopg 3 and pgx send them.

Prints one Markdown table: wall and CPU time, statements per CPU second and the process's peak
memory (os.wait4) at 100,000 and 1,000,000 statements, so memory that grew with the log would
show.
The log is written once into a temporary folder in the stderr format with log_line_prefix
'%m [%p] %l %v %x %a '; its transactions come from 50 sessions interleaved, a third of them
simple queries whose literals differ every time (one shape, many texts), the rest
extended-protocol executions with their parameters, each tagged with its path.

    python bench/observe.py                 # 100,000 and 1,000,000 statements
    python bench/observe.py --statements 200000
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SESSIONS = 50

RENDEZVOUS = (
    "SELECT pg_advisory_xact_lock_shared(hashtextextended('entitlement_materialization', 0))"
)
POOLS = (
    "-- name: LockResourcePool :many\nSELECT pool_id\nFROM core.resource_pools\n"
    "WHERE pool_id = ANY($1::bigint[])\nORDER BY pool_id\nFOR UPDATE"
)
HEAD = (
    "-- name: GetGrantLineageHeadForUpdate :one\nSELECT g.grant_id, g.pool_id, g.ends_at\n"
    "FROM core.grants g\nWHERE g.lineage_id = $1\n  AND NOT EXISTS (SELECT 1 FROM core.grants "
    "n WHERE n.extends_grant_id = g.grant_id)\nFOR UPDATE OF g"
)


def _transaction(rng: random.Random, n: int, simple: bool = True) -> list[tuple[str, str]]:
    """One transaction's log lines: (kind, text) with kind statement | execute | detail."""
    tag = ""
    kind = n % 4
    if kind == 0:
        tag = " /*lockdocs_path='revoke-grant'*/"
        pool, lineage = rng.randint(1, 10_000), rng.randint(1, 10_000)
        return [
            ("statement", "BEGIN"),
            ("statement", RENDEZVOUS + tag),
            ("statement", "SET LOCAL lock_timeout = '5s'"),
            ("execute", POOLS + tag),
            ("detail", f"parameters: $1 = '{{{pool}}}'"),
            ("execute", HEAD + tag),
            ("detail", f"parameters: $1 = '{lineage}'"),
            ("execute", "SELECT core.end_conferral($1, $2)" + tag),
            ("detail", f"parameters: $1 = '{pool}', $2 = '{lineage}'"),
            ("statement", "COMMIT"),
        ]
    if kind == 1 and not simple:
        tag = " /*lockdocs_path='reconcile-subscription'*/"
        sub = f"sub_{rng.randint(1, 10**9)}"
        return [
            ("statement", "BEGIN"),
            ("statement", RENDEZVOUS + tag),
            ("execute", "SELECT pg_advisory_xact_lock(hashtext($1)::bigint)" + tag),
            ("detail", f"parameters: $1 = '{sub}'"),
            ("execute", "SELECT core.update_conferral_bounds($1, 1, 2)" + tag),
            ("detail", f"parameters: $1 = '{rng.randint(1, 99)}'"),
            ("statement", "COMMIT"),
        ]
    if kind == 1:
        tag = " /*lockdocs_path='reconcile-subscription'*/"
        sub = f"sub_{rng.randint(1, 10**9)}"
        return [
            ("statement", "BEGIN"),
            ("statement", RENDEZVOUS + tag),
            # a simple query: its literal differs every time (one shape, many texts)
            ("statement", f"SELECT pg_advisory_xact_lock(hashtext('{sub}')::bigint){tag}"),
            ("statement", f"SELECT core.update_conferral_bounds({rng.randint(1, 99)}, 1, 2){tag}"),
            ("statement", "COMMIT"),
        ]
    if kind == 2:
        rec = f"m{rng.randint(1, 10**6)}"
        return [
            ("statement", "BEGIN"),
            (
                "execute",
                "-- name: LockDesiredStateAddress :exec\nSELECT pg_advisory_xact_lock(\n"
                "    hashtextextended(\n        'desired-state:' || $1::text\n"
                "            || ':' || $2::text\n            || ':' || $3::text,\n        0\n"
                "    )\n)",
            ),
            ("detail", f"parameters: $1 = 'c1', $2 = 'member', $3 = '{rec}'"),
            (
                "execute",
                "-- name: LockDesiredStateRecord :one\nSELECT record_id, generation\n"
                "FROM core.desired_state_records\nWHERE connection_id = $1 AND recipient_kind "
                "= $2 AND recipient_id = $3\nFOR UPDATE",
            ),
            ("detail", f"parameters: $1 = 'c1', $2 = 'member', $3 = '{rec}'"),
            ("statement", "COMMIT"),
        ]
    if not simple:
        return [
            ("execute", "SELECT * FROM core.grants WHERE grant_id = $1"),
            ("detail", f"parameters: $1 = '{rng.randint(1, 10**6)}'"),
            ("statement", "SELECT pg_advisory_xact_lock(28270013247483507)"),
        ]
    return [
        ("statement", f"SELECT * FROM core.grants WHERE grant_id = {rng.randint(1, 10**6)}"),
        ("statement", "SELECT pg_advisory_xact_lock(28270013247483507)"),
    ]


def write_log(path: Path, statements: int, seed: int = 7, simple: bool = True) -> int:
    """The log, `statements` logged statements long; returns its size in bytes. Sessions
    interleave statement by statement; an execution's DETAIL follows it at once, as the
    server writes a message and its fields together."""
    rng = random.Random(seed)
    lines = [0] * SESSIONS
    vxids = [""] * SESSIONS
    queues: list[Iterator[tuple[str, str]]] = [iter(()) for _ in range(SESSIONS)]
    written = n = 0
    with path.open("w", encoding="utf-8") as out:
        while written < statements:
            s = rng.randrange(SESSIONS)
            item = next(queues[s], None)
            if item is None:
                n += 1
                vxids[s] = f"{s}/{n}"
                queues[s] = iter(_transaction(rng, n, simple))
                continue
            kind, text = item
            parts = [item]
            if kind == "execute":
                parts.append(next(queues[s]))
            for kind, text in parts:
                lines[s] += 1  # every prefixed line counts, DETAIL included
                prefix = f"2026-11-30 10:00:00.000 UTC [{1000 + s}] {lines[s]} {vxids[s]} 0 app "
                body = text.replace("\n", "\n\t")
                if kind == "detail":
                    out.write(f"{prefix}DETAIL:  {body}\n")
                    continue
                word = "statement" if kind == "statement" else "execute <unnamed>"
                out.write(f"{prefix}LOG:  {word}: {body}\n")
                written += 1
    return path.stat().st_size


def _peak_of(log: Path) -> tuple[float, float, float, str]:
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lockdocs", "observe", str(log), "--root", str(REPO)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    _, _, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    lines = [x for x in out.splitlines() if x.startswith("observed:")]
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, cpu, usage.ru_maxrss / 1024, lines[0] if lines else out[-200:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument(
        "--extended",
        action="store_true",
        help="every statement with literals an extended-protocol execution (one text, many "
        "parameters), as psycopg 3 and pgx send them; by default a third are simple queries "
        "with their literals inlined",
    )
    args = parser.parse_args()
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs\n"
    )
    # CPU time beside wall time: on a machine others share, the wall time is theirs too.
    print("| statements | log | wall | CPU | statements/s (CPU) | peak memory |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.statements:
            log = Path(tmp) / f"server-{count}.log"
            size = write_log(log, count, simple=not args.extended)
            seconds, cpu, peak, said = _peak_of(log)
            print(
                f"| {count:,} | {size / 2**20:.0f} MiB | {seconds:.1f} s | {cpu:.1f} s | "
                f"{count / cpu:,.0f} | {peak:.0f} MiB |",
                flush=True,
            )
            print(f"<!-- {said} -->", flush=True)
            log.unlink()


if __name__ == "__main__":
    main()
