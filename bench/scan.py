"""Benchmark: `lockdocs scan` and `lockdocs check` with code: on 2,000 SQL files holding 20,000
statements, with the cache cold and warm, and after one file changed.

Prints one Markdown table. Each figure is the median of several runs of a fresh process; peak
memory is the child's own maximum resident set size (os.wait4).

    python bench/scan.py              # 2,000 files, 10 statements each
    python bench/scan.py --files 200  # a quicker run
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
STATEMENTS_PER_FILE = 10


def _file(i: int, rng: random.Random) -> str:
    """Ten statements: sqlc queries with locking clauses and advisory calls, writes, and a
    PL/pgSQL function that locks in a loop (its body's statements are not counted)."""
    t = f"app.t{i % 50}"
    out = [f"-- generated query file {i}\n"]
    for k in range(STATEMENTS_PER_FILE - 1):
        kind = rng.choice(["lock", "advisory", "update", "select", "cte"])
        out.append(f"-- name: Q{i}x{k} :many\n")
        if kind == "lock":
            clause = rng.choice(
                ["FOR UPDATE OF a", "FOR NO KEY UPDATE OF a", "FOR SHARE OF a SKIP LOCKED"]
            )
            out.append(
                f"SELECT a.id, a.v FROM {t} a JOIN app.parents p ON p.id = a.parent_id\n"
                f"WHERE a.id = ANY($1::bigint[]) ORDER BY a.id {clause};\n\n"
            )
        elif kind == "advisory":
            out.append(
                f"SELECT pg_advisory_xact_lock(hashtextextended('fam{i % 7}:' || $1::text, 0));\n\n"
            )
        elif kind == "update":
            out.append(f"UPDATE {t} SET v = v + 1, note = $2 WHERE id = $1;\n\n")
        elif kind == "select":
            out.append(f"SELECT id, v FROM {t} WHERE id = $1 AND v > (SELECT 1);\n\n")
        else:
            out.append(
                f"WITH x AS (SELECT id FROM {t} WHERE v = $1 LIMIT 5 FOR UPDATE SKIP LOCKED)\n"
                f"UPDATE {t} s SET v = 0 FROM x WHERE s.id = x.id RETURNING s.id;\n\n"
            )
    out.append(
        f"CREATE OR REPLACE FUNCTION app.f{i}(p bigint) RETURNS void LANGUAGE plpgsql AS $$\n"
        "DECLARE r record;\nBEGIN\n"
        f"    FOR r IN SELECT id FROM {t} WHERE parent_id = p ORDER BY id LOOP\n"
        f"        PERFORM 1 FROM {t} WHERE id = r.id FOR UPDATE;\n"
        f"        UPDATE {t} SET v = v + 1 WHERE id = r.id;\n"
        "    END LOOP;\nEND\n$$;\n"
    )
    return "".join(out)


def generate(root: Path, files: int) -> None:
    rng = random.Random(15)
    (root / "db").mkdir(parents=True)
    for i in range(files):
        (root / "db" / f"q{i:05d}.sql").write_text(_file(i, rng), encoding="utf-8")
    locks = [
        "lockdocs: 1\npage: {title: Bench}\ncode: ['db/**/*.sql']\nlocks:\n",
        *(
            f"  t{n}:\n    title: T{n}\n    kind: row\n    table: app.t{n}\n"
            f"    modes: {{for update: x, for no key update: y, for share: z}}\n"
            f"    taken_by: [{{name: app.f{n}, kind: sql-function}}]\n"
            for n in range(50)
        ),
    ]
    (root / "locks.yaml").write_text("".join(locks), encoding="utf-8")


def measure(cmd: list[str], runs: int, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    times: list[float] = []
    peaks: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        times.append(time.perf_counter() - start)
        peaks.append(usage.ru_maxrss / 1024)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed")
    return statistics.median(times), statistics.median(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lockdocs = str(BIN / "lockdocs")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        generate(root, args.files)
        cache = Path(tmp) / "cache"
        warm = {**os.environ, "XDG_CACHE_HOME": str(cache), "LOCKDOCS_CACHE": ""}
        cold = {**os.environ, "LOCKDOCS_CACHE": "off"}
        rows = []
        t, mem = measure([lockdocs, "scan"], args.runs, root, cold)
        rows.append(("scan, no cache", t, mem))
        subprocess.run(
            [lockdocs, "scan"], cwd=root, env=warm, stdout=subprocess.DEVNULL, check=True
        )
        t, mem = measure([lockdocs, "scan"], args.runs, root, warm)
        rows.append(("scan, warm cache", t, mem))
        t, mem = measure([lockdocs, "check", "--no-drift"], args.runs, root, warm)
        rows.append(("check --no-drift, warm cache", t, mem))
        changed = []
        for n in range(args.runs):
            f = root / "db" / "q00000.sql"
            f.write_text(f.read_text(encoding="utf-8") + f"-- edit {n}\n", encoding="utf-8")
            changed.append(measure([lockdocs, "scan"], 1, root, warm))
        rows.append(
            (
                "scan, one file changed",
                statistics.median(c[0] for c in changed),
                statistics.median(c[1] for c in changed),
            )
        )
    statements = args.files * STATEMENTS_PER_FILE
    print(
        f"{args.files:,} SQL files, {statements:,} statements (each file also a PL/pgSQL "
        f"function with a loop); {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; median of {args.runs} runs.\n"
    )
    print("| run | wall time | peak memory |")
    print("| --- | --- | --- |")
    for label, t, mem in rows:
        print(f"| {label} | {t:.2f} s | {mem:.0f} MiB |")


if __name__ == "__main__":
    main()
