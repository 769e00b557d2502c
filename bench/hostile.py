"""Benchmark: the time and memory bounds of lockdocs under hostile and careless input.

Each row runs the real CLI in a fresh process on a generated project and prints the median
wall time and CPU time, the child's own peak RSS, the exit code, and the bound the row must
stay under, in CPU seconds and MiB (a row over its bound, or exiting 3, is marked OVER and
makes the script exit 1). The bounds are loose on
purpose: they say "refused early" or "linear", not "fast on this machine".

    python bench/hostile.py            # everything but the 1 GiB git blob
    python bench/hostile.py --big      # also the 1 GiB blob in a diff revision (slow to set up)
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
sys.path.insert(0, str(HERE))

import budget  # noqa: E402
import pathological  # noqa: E402


def measure(cmd: list[str], runs: int, cwd: Path | None = None) -> tuple[float, float, float, int]:
    """Median wall seconds, median CPU seconds (user + system: steadier than wall on a busy
    machine), the median of each run's own peak RSS in MiB, and the last exit code."""
    import statistics
    import time

    walls: list[float] = []
    cpus: list[float] = []
    peaks: list[float] = []
    code = 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        cpus.append(usage.ru_utime + usage.ru_stime)
        peaks.append(usage.ru_maxrss / 1024)
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code
    return statistics.median(walls), statistics.median(cpus), statistics.median(peaks), code


LOCKS = (
    "lockdocs: 1\npage: {title: Hostile}\nlocks:\n"
    "  a: {title: A, kind: advisory, key: {hashtextextended: {text: a}}, modes: {exclusive: x}}\n"
    "  b: {title: B, kind: row, table: app.b, modes: {for update: x}}\n"
)


def one_path_files(root: Path, n: int) -> Path:
    """n path files of one path each (the drift check's worst case: one group per file)."""
    (root / "paths").mkdir(parents=True)
    (root / "locks.yaml").write_text(LOCKS)
    for i in range(n):
        (root / "paths" / f"p{i:06d}.yaml").write_text(
            f"group: Group {i}\npaths:\n  p{i}:\n    title: Path {i}\n"
            "    steps:\n      - take: a\n      - take: b\n"
        )
    return root


def many_paths(root: Path, n: int, per_file: int) -> Path:
    (root / "paths").mkdir(parents=True)
    (root / "locks.yaml").write_text(LOCKS)
    for f in range(n // per_file):
        body = "".join(f"  p{f}x{i}: {{title: P, steps: [{{take: a}}]}}\n" for i in range(per_file))
        (root / "paths" / f"f{f:05d}.yaml").write_text(f"group: G{f}\npaths:\n{body}")
    return root


def fixture(root: Path, edit: Callable[[Path], None] | None = None) -> Path:
    shutil.copytree(REPO / "tests" / "fixtures" / "render_project", root)
    if edit is not None:
        edit(root)
    return root


def replace(root: Path, old: str, new: str) -> None:
    locks = root / "locks.yaml"
    locks.write_text(locks.read_text().replace(old, new, 1))


def template(text: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        (root / "templates").mkdir()
        (root / "templates" / "planned.md.j2").write_text(text)

    return edit


def _made(root: Path, make: Callable[[Path], object]) -> Path:
    make(root)
    return root


def big_blob_repo(root: Path, size: int) -> Path:
    fixture(root)
    git = ["git", "-c", "user.email=b@b.invalid", "-c", "user.name=b"]
    subprocess.run([*git, "init", "-q", "."], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=root, check=True)
    with (root / "paths" / "big.yaml").open("wb") as fh:
        chunk = b"#" * (1 << 20) + b"\n"
        for _ in range(size >> 20):
            fh.write(chunk)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "big"], cwd=root, check=True)
    (root / "paths" / "big.yaml").unlink()
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--big", action="store_true", help="include the 1 GiB blob")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    lockdocs = str(BIN / "lockdocs")
    tmp = Path(tempfile.mkdtemp(prefix="lockdocs-hostile-bench-"))
    env_off = {"LOCKDOCS_CACHE": "off"}
    # (label, setup -> root, command, bound seconds, bound MiB, runs)
    rows: list[tuple[str, Callable[[Path], Path], list[str], float, float, int]] = [
        (
            "drift check, 1,000 one-path files",
            lambda p: one_path_files(p, 1_000),
            ["check"],
            30,
            300,
            args.runs,
        ),
        (
            "drift check, 10,000 one-path files (the file limit)",
            lambda p: one_path_files(p, 10_000),
            ["check"],
            300,
            1500,
            1,
        ),
        (
            "10,001 path files: refused (LD009)",
            lambda p: one_path_files(p, 10_001),
            ["validate"],
            10,
            200,
            args.runs,
        ),
        (
            "10^6 paths, 43 MB: refused (LD009, bytes)",
            lambda p: many_paths(p, 10**6, 1000),
            ["validate"],
            10,
            200,
            args.runs,
        ),
        (
            "10^6 tiny paths, 8 MB: refused at 50,000 (LD009)",
            lambda p: many_paths(p, 200_000, 2000),
            ["validate"],
            60,
            600,
            1,
        ),
        (
            "1 MB lock title: build",
            lambda p: fixture(
                p, lambda r: replace(r, "title: Catalog gate", "title: " + "gate " * 200_000)
            ),
            ["build"],
            60,
            600,
            1,
        ),
        (
            "5,000-digit integer: LD001",
            lambda p: fixture(p, lambda r: replace(r, "title: Shop Locks", "title: " + "9" * 5000)),
            ["validate"],
            10,
            200,
            args.runs,
        ),
        (
            "template {{ 'x' * 10**10 }}: LD601",
            lambda p: fixture(p, template("{{ 'x' * 10**10 }}\n")),
            ["build"],
            10,
            300,
            args.runs,
        ),
        (
            "template recursing without end: LD601",
            lambda p: fixture(p, template("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}\n")),
            ["build"],
            10,
            300,
            args.runs,
        ),
        (
            "template doubling a string 30 times: LD601",
            lambda p: fixture(
                p,
                template(
                    "{% set ns = namespace(s='x') %}{% for i in range(30) %}"
                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}\n"
                ),
            ),
            ["build"],
            10,
            300,
            args.runs,
        ),
        (
            "template looping 10^9 times (limit set to 5 s): LD601",
            lambda p: fixture(
                p,
                template(
                    "{% set l = range(1000)|list %}{% for a in l %}{% for b in l %}"
                    "{% for c in l %}{% endfor %}{% endfor %}{% endfor %}\n"
                ),
            ),
            ["build", "--env", "LOCKDOCS_TEMPLATE_SECONDS=5"],
            20,
            300,
            1,
        ),
        (
            "run: chain of 1,200 links, each a path of its own: LD209 at the analysis budget",
            lambda p: _made(p, lambda r: budget.same_lock_chain(r, 1200, True)),
            ["check", "--no-drift"],
            60,
            600,
            1,
        ),
        (
            "export of that chain: refused at the analysis budget",
            lambda p: _made(p, lambda r: budget.same_lock_chain(r, 1200, True)),
            ["export"],
            60,
            600,
            1,
        ),
        (
            "2,000 random paths over 60 locks (1.4 MB), the whole check: LD204 at the budget",
            lambda p: _made(p, lambda r: pathological.random_dense(r, 2000, steps=(6, 17))),
            ["check"],
            60,
            800,
            1,
        ),
        (
            "2,000 paths each way of a pair, each its own, the whole check: page bound",
            lambda p: _made(p, lambda r: pathological.both_orders(r, 2000)),
            ["check"],
            60,
            800,
            1,
        ),
        (
            "code: six nested ** over 40 folders: scanned",
            lambda p: _made(p, lambda r: budget.deep_globs(r, 40)),
            ["check", "--no-drift"],
            10,
            300,
            args.runs,
        ),
    ]
    if args.big:
        rows.append(
            (
                "diff against a revision with a 1 GiB blob: refused",
                lambda p: big_blob_repo(p, 1 << 30),
                ["diff", "HEAD"],
                10,
                200,
                1,
            )
        )
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.platform()}",
        "",
        "| attack | median wall | CPU | peak RSS | exit | bound (CPU, RSS) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    over = False
    for n, (label, setup, command, secs, mib, runs) in enumerate(rows):
        root = setup(tmp / f"case{n}")
        extra_env = {}
        if "--env" in command:
            i = command.index("--env")
            key, _, value = command[i + 1].partition("=")
            extra_env[key] = value
            command = command[:i] + command[i + 2 :]
        os.environ.update({**env_off, **extra_env})
        cwd = root if command[0] == "diff" else None
        argv = [lockdocs, *command] if cwd else [lockdocs, *command, "--root", str(root)]
        wall, t, peak, code = measure(argv, runs, cwd=cwd)
        for key in extra_env:
            os.environ.pop(key, None)
        ok = t <= secs and peak <= mib and code != 3
        over = over or not ok
        lines.append(
            f"| {label} | {wall * 1000:,.0f} ms | {t * 1000:,.0f} ms | {peak:,.0f} MiB | {code} | "
            f"{secs:g} s, {mib:g} MiB{'' if ok else ' OVER'} |"
        )
        shutil.rmtree(root, ignore_errors=True)
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
